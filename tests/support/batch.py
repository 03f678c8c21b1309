"""Helpers and the five-joint sweep that tests/core/test_batch_*.py share.

References are independent runs of the same core (single-instance batches, one thread,
step-by-step), compared with np.array_equal: the design promises bit-identical results.
"""

import numpy as np

import asr

DT = 2e-3  # two motor sub-steps per step at the default max_substep


# ---------------------------------------------------------------- helpers


def state_of(b):
    """Every state field, copied, as {name: (N, J) array}."""
    return {f: b.field(f).copy() for f in asr.FIELDS}


def assert_states_equal(a, b, what=""):
    for f in asr.FIELDS:
        assert np.array_equal(a[f], b[f]), f"{what}: field {f} differs"


def run_steps(b, inputs, on_error="raise"):
    """Step b through inputs (list of dicts of step keyword arrays); record every field."""
    rec = {f: [] for f in asr.FIELDS}
    for kw in inputs:
        b.step(
            kw["q"],
            kw["qd"],
            kw["refs"],
            DT,
            tau_ext=kw.get("tau_ext"),
            tau_ff=kw.get("tau_ff"),
            on_error=on_error,
        )
        for f in asr.FIELDS:
            rec[f].append(b.field(f).copy())
    return {f: np.stack(v) for f, v in rec.items()}


def slice_inputs(inputs, i):
    """The inputs of instance i as a one-instance batch sees them."""
    return [{k: (None if v is None else v[i : i + 1]) for k, v in kw.items()} for kw in inputs]


# Five joints of five models and three different modes, with per-instance parameter arrays.
N_SWEEP = 5
SWEEP_JOINTS = [
    (
        "qbmove_advanced",
        6,
        {
            "kp": [60.0, 125.0, 200.0, 90.0, 300.0],
            "k1": [0.0019, 0.003, 0.01, 0.0025, 0.006],
            "a2": [8.9992, 7.0, 9.5, 6.0, 8.0],
            "ki": [0.0, 5.0, 0.0, 10.0, 1.0],
            "ctrl_period": [0.0, 1e-3, 0.0, 2e-3, 0.0],
        },
    ),
    (
        "sea",
        5,
        {
            "k": [100.0, 200.0, 300.0, 400.0, 50.0],
            "kd": [1.0, 4.5, 2.0, 3.0, 0.5],
            "friction": [0.0, 0.02, 0.1, 0.05, 0.2],
        },
    ),
    ("bavs", 3, {"ke": [8.71, 6.0, 10.0, 7.5, 9.0], "max_def": [0.27, 0.2, 0.3, 0.25, 0.27]}),
    (
        "qbmove",
        6,
        {"k": [0.022, 0.03, 0.015, 0.022, 0.05], "V_supply": [8.0, 12.0, 8.0, 6.0, 24.0]},
    ),
    ("awas2", 6, {"L": [0.05, 0.06, 0.05, 0.04, 0.05], "Ks": [10.0, 20.0, 5.0, 10.0, 15.0]}),
]
SINGLE_MOTOR = [1, 4]  # sea and awas2 take a feed-forward torque


def sweep_joints(i=None):
    """The joints with per-instance arrays (i None) or instance i's scalars."""
    out = []
    for model, mode, params in SWEEP_JOINTS:
        p = {k: (np.array(v) if i is None else float(v[i])) for k, v in params.items()}
        out.append(asr.Joint(model, mode, p))
    return out


def sweep_inputs(steps, n=N_SWEEP):
    """Time-varying references, a moving prescribed link q(t), qd(t), external and
    feed-forward torques, different for every instance and joint."""
    nj = len(SWEEP_JOINTS)
    i = np.arange(n)[:, None]
    j = np.arange(nj)[None, :]
    inputs = []
    for k in range(steps):
        t = k * DT
        q = 0.3 * np.sin(2.5 * t + 0.7 * i + 0.4 * j)
        qd = 0.75 * np.cos(2.5 * t + 0.7 * i + 0.4 * j)
        refs = np.zeros((n, nj, 2))
        ii = np.arange(n)
        refs[:, 0, 0] = 0.5 * np.sin(2 * np.pi * 1.5 * t + 0.3 * ii)
        refs[:, 0, 1] = 0.2 + 0.1 * ii
        refs[:, 1, 0] = 0.4 * np.sin(2 * np.pi * t + ii)
        refs[:, 2, 0] = 0.3 * np.sin(3 * t + 0.2 * ii)
        refs[:, 2, 1] = 0.05 + 0.03 * ii
        refs[:, 3, 0] = 0.6 * np.sin(2 * t + ii)
        refs[:, 3, 1] = 0.3
        refs[:, 4, 0] = 0.2 * np.sin(4 * t + ii)
        refs[:, 4, 1] = 0.005 + 0.004 * ii + 0.002 * np.sin(t)
        tau_ext = 0.05 * np.cos(t + i + j)
        tau_ff = np.zeros((n, nj))
        tau_ff[:, SINGLE_MOTOR] = 0.1 * np.sin(5 * t + i)
        inputs.append({"q": q, "qd": qd, "refs": refs, "tau_ext": tau_ext, "tau_ff": tau_ff})
    return inputs
