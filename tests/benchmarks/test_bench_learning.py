"""Smoke test of the learning benchmark: it runs and writes the figures the issue asks for."""

import json
import os
import sys

from tests.support.paths import ROOT  # noqa: E402

sys.path.insert(0, os.path.join(str(ROOT), "benchmarks"))

import bench_learning as bench  # noqa: E402


def test_bench_learning_writes_its_figures(tmp_path):
    out = tmp_path / "learning.json"
    fig = bench.main(sizes=(1, 4), sync_sizes=(1,), steps=5, ilc=False, out=str(out), quiet=True)
    saved = json.loads(out.read_text())
    assert saved == fig
    for key in ("vecenv_steps_per_s_n1", "vecenv_steps_per_s_n4", "syncvecenv_steps_per_s_n1"):
        assert saved[key] > 0
