"""The NumPy reference of benchmarks/ agrees with the C core (so the benchmark compares like with
like), and the core benchmark's main timing function runs and writes its figures."""

import json
import os
import sys

import numpy as np
import pytest

import asr
from tests.support.paths import ROOT  # noqa: E402

BENCH = os.path.join(str(ROOT), "benchmarks")
sys.path.insert(0, BENCH)

import bench_core  # noqa: E402
from numpy_reference import DEFAULTS, QbmoveAdvancedMode6  # noqa: E402

from tests.support.numpy_reference import PARAMS, N, reference_inputs  # noqa: E402


def _both(dt, max_substep, steps=400):
    refs, q, qd = reference_inputs(steps, dt)
    b = asr.Batch([asr.Joint("qbmove_advanced", 6, PARAMS)], N, max_substep=max_substep)
    ref = QbmoveAdvancedMode6(N, max_substep=max_substep, **PARAMS)
    b.reset(0.05, refs[0][:, None, :])
    ref.reset(0.05, refs[0])
    fields = (
        "tau_link",
        "th1",
        "th2",
        "th1d",
        "th2d",
        "tau_m1",
        "tau_m2",
        "tau_f1",
        "tau_f2",
        "stiffness",
        "int1",
        "int2",
    )
    # Batch.rollout is instance first (N, steps, J); the reference is step first (steps, N)
    c = b.rollout(
        steps,
        dt,
        refs.transpose(1, 0, 2)[:, :, None, :],
        q=q.T[:, :, None],
        qd=qd.T[:, :, None],
        record=fields,
    )
    c = {k: v[:, :, 0].T for k, v in c.items()}
    r = ref.rollout(
        steps,
        dt,
        refs,
        q=q,
        qd=qd,
        record=("tau_link", "th", "v", "tau_m", "tau_f", "stiffness", "integral"),
    )
    pairs = {
        "tau_link": r["tau_link"],
        "stiffness": r["stiffness"],
        "th1": r["th"][:, 0],
        "th2": r["th"][:, 1],
        "th1d": r["v"][:, 0],
        "th2d": r["v"][:, 1],
        "tau_m1": r["tau_m"][:, 0],
        "tau_m2": r["tau_m"][:, 1],
        "tau_f1": r["tau_f"][:, 0],
        "tau_f2": r["tau_f"][:, 1],
        "int1": r["integral"][:, 0],
        "int2": r["integral"][:, 1],
    }
    return c, pairs


def test_defaults_match_the_model_spec():
    spec = asr.models()["qbmove_advanced"].defaults()
    for name, value in DEFAULTS.items():
        assert spec[name] == value, name


@pytest.mark.parametrize("dt,max_substep", [(1e-3, 1e-3), (2.5e-3, 1e-3)])
def test_numpy_reference_matches_core(dt, max_substep):
    c, r = _both(dt, max_substep)
    for name, ref in r.items():
        scale = max(1.0, float(np.max(np.abs(ref))))
        err = float(np.max(np.abs(c[name] - ref)))
        assert err <= 1e-12 * scale, (name, err, scale)


def test_reference_exercises_the_nonlinear_branches():
    """The comparison above is only meaningful if the saturation, integral, friction and limit
    branches are actually taken."""
    c, _ = _both(1e-3, 1e-3)
    tau_max = PARAMS["tau_max"]
    assert np.any(np.abs(c["tau_m1"][:, 1]) == tau_max[1])  # torque saturation
    saturated = np.abs(c["tau_m1"][1:, 2]) == tau_max[2]
    frozen = np.diff(c["int1"][:, 2]) == 0.0
    assert np.any(np.abs(c["int1"][:, 2]) > 0.0)  # integral in use ...
    assert np.any(saturated & frozen)  # ... frozen while winding
    assert np.any(
        np.isclose(np.abs(c["int1"][:, 3]) * PARAMS["ki"][3], PARAMS["i_max"][3], rtol=1e-12)
    )  # anti-windup bound
    friction = np.abs(c["tau_f1"][:, 2])
    assert np.any(np.isclose(friction, 0.3, rtol=1e-9))  # sliding friction ...
    assert np.any(friction < 0.3 * (1 - 1e-6))  # ... and sticking
    assert np.any(np.abs(c["th1d"][:, 4]) == 3.0)  # velocity limit
    assert np.any(c["th1"][:, 4] == 0.9) and np.any(c["th2"][:, 4] == -0.2)  # stops


@pytest.mark.slow
def test_bench_core_smoke(tmp_path):
    path = tmp_path / "core.json"
    figures = bench_core.main(
        sizes=(8, 40),
        threads=(1, 2),
        target_s=0.01,
        numpy_target_s=0.01,
        reps=1,
        out=str(path),
        write=True,
        quiet=True,
    )
    on_disk = json.loads(path.read_text())
    assert on_disk == figures
    for n in (8, 40):
        for key in (
            f"actuator_steps_per_s_n{n}_t1",
            f"actuator_steps_per_s_n{n}_t2",
            f"numpy_steps_per_s_n{n}",
            f"ratio_vs_numpy_n{n}",
            f"thread_speedup_n{n}",
        ):
            assert key in figures and figures[key] > 0, key
    assert all(isinstance(v, (int, float)) for v in figures.values())
