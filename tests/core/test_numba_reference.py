"""The Numba reference of benchmarks/ (the core benchmark's second baseline) agrees with the C
core, one-threaded and parallel, so the benchmark compares like with like."""

import os
import sys

import numpy as np
import pytest

import asr
from tests.conftest import require
from tests.support.paths import ROOT  # noqa: E402

BENCH = os.path.join(str(ROOT), "benchmarks")
sys.path.insert(0, BENCH)

# The same instances (parameters exercising every branch) and inputs as the NumPy reference's
# test, so that both baselines are held to the same comparison.
from tests.support.numpy_reference import PARAMS, N, reference_inputs  # noqa: E402

FIELDS = (
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


@pytest.fixture(scope="module")
def numba_reference():
    require("numba")  # fails in CI, skips elsewhere, when numba is missing
    import numba_reference

    return numba_reference


def _core(dt, max_substep, refs, q, qd):
    """The C core's rollout, step first: {field: (steps, N)}."""
    b = asr.Batch([asr.Joint("qbmove_advanced", 6, PARAMS)], N, max_substep=max_substep)
    b.reset(0.05, refs[0][:, None, :])
    # Batch.rollout is instance first (N, steps, J); the references are step first (steps, N)
    c = b.rollout(
        refs.shape[0],
        dt,
        refs.transpose(1, 0, 2)[:, :, None, :],
        q=q.T[:, :, None],
        qd=qd.T[:, :, None],
        record=FIELDS,
    )
    return {k: v[:, :, 0].T for k, v in c.items()}


def _numba(mod, parallel, dt, max_substep, refs, q, qd):
    """The Numba reference's rollout under the core's field names: {field: (steps, N)}."""
    ref = mod.QbmoveAdvancedMode6(N, max_substep=max_substep, parallel=parallel, **PARAMS)
    ref.reset(0.05, refs[0])
    r = ref.rollout(
        refs.shape[0],
        dt,
        refs,
        q=q,
        qd=qd,
        record=("tau_link", "th", "v", "tau_m", "tau_f", "stiffness", "integral"),
    )
    out = {"tau_link": r["tau_link"], "stiffness": r["stiffness"]}
    for name, field in (
        ("th", "th"),
        ("th", "v"),
        ("tau_m", "tau_m"),
        ("tau_f", "tau_f"),
        ("int", "integral"),
    ):
        for m in (0, 1):
            key = f"{name}{m + 1}" + ("d" if field == "v" else "")
            out[key] = r[field][:, m]
    return out


@pytest.mark.parametrize("parallel", [False, True], ids=["njit", "parallel"])
@pytest.mark.parametrize("dt,max_substep", [(1e-3, 1e-3), (2.5e-3, 1e-3)])
@pytest.mark.slow
def test_numba_reference_matches_core(numba_reference, parallel, dt, max_substep):
    refs, q, qd = reference_inputs(400, dt)
    c = _core(dt, max_substep, refs, q, qd)
    r = _numba(numba_reference, parallel, dt, max_substep, refs, q, qd)
    assert set(r) == set(FIELDS)
    for name in FIELDS:
        assert r[name].shape == c[name].shape == (400, N), name
        scale = max(1.0, float(np.max(np.abs(c[name]))))
        err = float(np.max(np.abs(c[name] - r[name])))
        assert err <= 1e-12 * scale, (name, err, scale)


@pytest.mark.slow
def test_numba_reference_matches_core_when_stepped_and_held(numba_reference):
    """step() per step with held scalar link inputs ends where one rollout of the core does
    (the API the benchmark and the NumPy reference share)."""
    steps, dt = 300, 1e-3
    refs, _, _ = reference_inputs(steps, dt)
    c = _core(dt, 1e-3, refs, np.full((steps, N), 0.1), np.full((steps, N), -0.2))
    ref = numba_reference.QbmoveAdvancedMode6(N, **PARAMS)
    ref.reset(0.05, refs[0])
    tau = np.array([ref.step(0.1, -0.2, refs[t], dt) for t in range(steps)])
    scale = max(1.0, float(np.max(np.abs(c["tau_link"]))))
    assert np.max(np.abs(tau - c["tau_link"])) <= 1e-12 * scale
    assert np.max(np.abs(ref.th[0] - c["th1"][-1])) <= 1e-12 * max(1.0, np.max(np.abs(ref.th)))


@pytest.mark.slow
def test_parallel_variant_is_bitwise_the_serial_one(numba_reference):
    """Splitting the instances over threads changes no result (instances are independent),
    over many instances with different phases."""
    n, steps, dt = 257, 200, 1e-3
    t = np.arange(steps) * dt
    phase = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    refs = np.empty((steps, n, 2))
    refs[..., 0] = 0.5 * np.sin(2.0 * np.pi * 3.0 * t[:, None] + phase)
    refs[..., 1] = 0.4
    out = []
    for parallel in (False, True):
        ref = numba_reference.QbmoveAdvancedMode6(n, parallel=parallel)
        ref.reset(0.0, refs[0])
        out.append(ref.rollout(steps, dt, refs, q=0.0, qd=0.0, record=("tau_link", "th")))
    assert np.array_equal(out[0]["th"], out[1]["th"])
    assert np.array_equal(out[0]["tau_link"], out[1]["tau_link"])
    # the phases make the instances differ, so the comparison is not of n copies of one joint
    assert np.ptp(out[0]["th"][-1, 0]) > 0.1


def test_rejects_what_it_does_not_model(numba_reference):
    with pytest.raises(ValueError):
        numba_reference.QbmoveAdvancedMode6(3, stiffness_knob=1.0)
    with pytest.raises(NotImplementedError):
        numba_reference.QbmoveAdvancedMode6(3, drive=1.0)
