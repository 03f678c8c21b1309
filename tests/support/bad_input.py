"""The batch, inputs and checks that tests/core/test_bad_input_*.py share."""

import numpy as np
import pytest

import asr

N, J = 3, 3
DT = 1e-3
INF, NAN = float("inf"), float("nan")


def make_batch():
    """sea mode 5, awas2 mode 6, qbmove_advanced mode 3: three instances."""
    return asr.Batch(
        [asr.Joint("sea", 5), asr.Joint("awas2", 6), asr.Joint("qbmove_advanced", 3)], N
    )


def good_refs():
    r = np.zeros((N, J, 2))
    r[:, 0, 0] = 0.2
    r[:, 1, 1] = 0.02  # awas2 pivot, inside [0, L)
    r[:, 2, 1] = 0.3  # qbmove preset
    return r


def params_of(b):
    return {
        (j, p.name): b.get_param(j, p.name).copy()
        for j, s in enumerate(b.specs)
        for p in s.all_params
    }


def assert_still_works(b, before=None):
    """After a rejected call the batch steps normally and its parameters did not change."""
    if before is not None:
        after = params_of(b)
        for key, v in before.items():
            assert np.array_equal(v, after[key]), f"parameter {key} changed by a rejected call"
    count = b.step_count
    tau = b.step(0.05, 0.0, good_refs(), DT)
    assert tau.shape == (N, J)
    assert np.all(np.isfinite(tau))
    assert np.all(b.status == 0)
    assert b.step_count == count + 1
    res = b.rollout(2, DT, good_refs(), 0.05)
    assert np.all(np.isfinite(res["tau_joint"]))


def check(exc_type, fn, *parts):
    """fn() raises exc_type (exactly that family) whose message contains every part."""
    with pytest.raises(exc_type) as ei:
        fn()
    msg = str(ei.value)
    for part in parts:
        assert part in msg, f"{part!r} not in message {msg!r}"
    return msg


def _pivot_refs(value, joint=1):
    r = good_refs()
    r[1, joint, 1] = value
    return r


def _nan_at(shape, index, value=NAN):
    a = np.zeros(shape)
    a[index] = value
    return a


def _read_only(shape):
    a = np.zeros(shape)
    a.flags.writeable = False
    return a
