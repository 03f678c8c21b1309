"""A training run leaves nothing behind but its own folder: Stable-Baselines3's default logger
made an empty folder <tmp>/SB3-<time> per run (hundreds after a test session)."""

import os
import subprocess
import sys

import pytest

from tests.conftest import require
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

require("stable_baselines3")
ROOT = str(ROOT_PATH)


@pytest.mark.slow
def test_training_makes_no_temporary_folders(tmp_path):
    code = (
        "import asr.rl as r; r.train('asr/Reach2DOF-v0', algo='sb3', total_steps=128, "
        "num_envs=2, n_steps=64, batch_size=64, final_eval_episodes=1, eval_every=0)"
    )
    env = dict(os.environ, TMPDIR=str(tmp_path), OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=300)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("SB3-")] == []
