"""benchmarks/bench_warp.py runs its three sections at --quick sizes on the Warp device there is
(the CPU device here) and writes figures that hold together: rates positive and finite, each
ratio the quotient of the two rates it names, the device named."""

import json
import math
import os
import sys

import pytest

from tests.conftest import require
from tests.support.paths import ROOT

BENCH = os.path.join(str(ROOT), "benchmarks")


@pytest.mark.slow
def test_bench_warp_quick_writes_consistent_figures(tmp_path):
    require("warp")
    require("mujoco_warp")
    sys.path.insert(0, BENCH)
    try:
        import bench_warp
    finally:
        sys.path.remove(BENCH)
    out = tmp_path / "warp.json"
    fig = bench_warp.main(quick=True, out=str(out), quiet=True)
    written = json.loads(out.read_text())
    assert written["warp_device"] == fig["warp_device"] != ""
    rates = {k: v for k, v in fig.items() if "_per_s" in k}
    assert any(k.startswith("coupled_env_steps_per_s") for k in rates)
    assert any(k.startswith("bare_mjw_env_steps_per_s") for k in rates)
    assert rates and all(math.isfinite(v) and v > 0 for v in rates.values()), rates
    for key in (k for k in fig if k.startswith("coupled_overhead_")):
        tag = key[len("coupled_overhead_") :]
        ratio = fig[f"bare_mjw_env_steps_per_s_{tag}"] / fig[f"coupled_env_steps_per_s_{tag}"]
        assert fig[key] == pytest.approx(ratio, rel=1e-9)
    for dtype in ("float32", "float64"):
        warp_rate = next(v for k, v in fig.items() if k.endswith(f"_{dtype}") and "_per_s_" in k)
        ratio = warp_rate / fig["actuator_steps_per_s_c"]
        assert fig[f"ratio_warp_vs_c_{dtype}"] == pytest.approx(ratio, rel=1e-9)
