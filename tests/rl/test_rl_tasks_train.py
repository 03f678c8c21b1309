"""Every registered asr task trains from the command line (`asr train`, a few PPO steps) and its
held-out metric is right: the final evaluation written to config.json equals the same policy
driven through an independent path (gymnasium's SyncVectorEnv of single envs, each episode's
metric read where it ends: |q - target| from the observation for the tasks with targets, the
ballistic landing point from the release state for Throw)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import require

require("stable_baselines3")
gymnasium = require("gymnasium")

import asr  # noqa: E402,F401  (registers the asr/ ids)
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

ROOT = str(ROOT_PATH)
G = 9.81  # m/s^2, the MJCF's gravity
EPISODES = 2  # held-out episodes of the final evaluation
TASKS = sorted(k for k in gymnasium.registry if k.startswith("asr/"))


def test_the_registry_lists_every_task():
    assert {"asr/EquilibriumTracking-v0", "asr/Reach2DOF-v0", "asr/Throw-v0"} <= set(TASKS)


def run_train(task, out):
    argv = [sys.executable, "-m", "asr.cli", "train", "--task", task, "--total-steps", "64"]
    argv += ["--num-envs", "2", "--seed", "3", "--out", str(out), "--no-progress"]
    for kv in ("n_steps=32", "batch_size=64", "eval_episodes=2", f"final_eval_episodes={EPISODES}"):
        argv += ["--set", kv]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def episode_metrics(res, task):
    """The task's metric per held-out episode, the policy driving a SyncVectorEnv of single
    envs (seeds EVAL_SEED_BASE + k), read at the step that ends each episode."""
    from asr.rl._results import EVAL_SEED_BASE

    envs = gymnasium.make_vec(task, num_envs=EPISODES, vectorization_mode="sync")
    obs, _ = envs.reset(seed=[EVAL_SEED_BASE + k for k in range(EPISODES)])
    j = envs.single_action_space.shape[0] // 2  # joints of the tasks with targets
    out = np.full(EPISODES, np.nan)
    while np.isnan(out).any():
        obs, _, term, trunc, info = envs.step(res.predict(obs))
        for k in np.flatnonzero((term | trunc) & np.isnan(out)):
            if task == "asr/Throw-v0":
                out[k] = landing_x(info, k)
            elif task == "asr/Impact2DOF-v0":  # arrival time + 1 s/N beyond 50 N
                out[k] = info["arrival_time"][k] + max(info["peak_force"][k] - 50.0, 0.0)
            elif task == "asr/Periodic2DOF-v0":  # J per cycle + 100 J/rad beyond 0.05 rad
                excess = max(info["tracking_error"][k] - 0.05, 0.0)
                out[k] = info["energy_per_cycle"][k] + 100.0 * excess
            else:  # the observation ends with q - target (J entries, rad)
                out[k] = np.linalg.norm(obs[k, -j:])
    envs.close()
    return out


def landing_x(info, k):
    """Closed form: the ball leaves the tip at (x, z) with (vx, vz) and lands on z = 0 at
    x + vx t_f, t_f = (vz + sqrt(vz^2 + 2 g z)) / g; 0 when it was not released."""
    if not info["released"][k]:
        assert info["distance"][k] == 0.0
        return 0.0
    (x, z), (vx, vz) = info["release_pos"][k], info["release_vel"][k]
    t_f = (vz + np.sqrt(vz * vz + 2 * G * z)) / G
    assert info["distance"][k] == pytest.approx(x + vx * t_f, abs=1e-12)
    return x + vx * t_f


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_every_task_trains_from_the_cli(task, tmp_path):
    from asr.rl import load_checkpoint

    p = run_train(task, tmp_path / "run")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "64 env-steps" in p.stdout, p.stdout
    with open(tmp_path / "run" / "curve.json") as f:
        curve = json.load(f)
    assert [r["steps"] for r in curve] == [64] and np.isfinite(curve[0]["metric"])
    res = load_checkpoint(tmp_path / "run")
    cfg = res.config
    assert cfg["task"] == task and cfg["final_eval"]["episodes"] == EPISODES
    unit = {"asr/Throw-v0": "m", "asr/Impact2DOF-v0": "s", "asr/Periodic2DOF-v0": "J"}.get(
        task, "rad"
    )
    assert cfg["metric_unit"] == unit and res.metric.unit == unit
    assert res.final_metric == cfg["final_eval"]["metric"]
    if unit == "rad":
        assert res.final_error_rad == res.final_metric
    else:
        assert res.final_error_rad is None
    # the metric the trainer wrote, against the same policy driven independently
    assert res.final_metric == pytest.approx(np.mean(episode_metrics(res, task)), abs=1e-9)
