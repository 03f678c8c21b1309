"""Every bad input to a live batch raises the documented error (ValueError for bad values and
shapes, TypeError for bad types) with a message naming the parameter, the bad value and the
valid range; nothing crashes, and the batch keeps working afterwards with its parameters
unchanged."""

import numpy as np
import pytest

import asr
from tests.support.bad_input import (
    DT,
    INF,
    NAN,
    J,
    N,
    _pivot_refs,
    assert_still_works,
    check,
    good_refs,
    make_batch,
    params_of,
)
from tests.support.bad_input_step_cases import STEP_CASES

# ---------------------------------------------------------------- cases on a live batch
# (id, call(b), exception, message parts): parameters, modes and the AwAS-II pivot here, the
# step and rollout inputs in STEP_CASES (tests/support/bad_input_step_cases.py)
PARAM_CASES = [
    # unknown parameter names
    (
        "set_param unknown name",
        lambda b: b.set_param(0, "stiffnes", 1.0),
        ValueError,
        ["stiffnes", "k", "max_def", "motor_J"],
    ),
    (
        "set_params unknown name",
        lambda b: b.set_params(2, k1=0.1, bogus=2.0),
        ValueError,
        ["bogus", "k1", "a1"],
    ),
    ("get_param unknown name", lambda b: b.get_param(1, "nope"), ValueError, ["nope", "Ks"]),
    # parameter types
    ("set_param str", lambda b: b.set_param(0, "k", "abc"), TypeError, ["k", "dtype"]),
    (
        "set_param str array",
        lambda b: b.set_param(0, "k", ["1", "2", "3"]),
        TypeError,
        ["k", "dtype"],
    ),
    ("set_param complex", lambda b: b.set_param(0, "k", 1 + 2j), TypeError, ["k", "complex"]),
    ("set_param bool", lambda b: b.set_param(0, "kp", True), TypeError, ["kp", "bool"]),
    ("set_param None", lambda b: b.set_param(0, "kp", None), TypeError, ["kp"]),
    # parameter ranges
    ("sea k = -1", lambda b: b.set_param(0, "k", -1.0), ValueError, ["k", "-1", "(0, inf)"]),
    ("sea k = 0", lambda b: b.set_param(0, "k", 0.0), ValueError, ["k", "0", "(0, inf)"]),
    ("sea k = inf", lambda b: b.set_param(0, "k", INF), ValueError, ["k", "inf", "(0, inf)"]),
    ("sea k = nan", lambda b: b.set_param(0, "k", NAN), ValueError, ["k", "nan", "(0, inf)"]),
    (
        "motor_J = 0",
        lambda b: b.set_param(0, "motor_J", 0.0),
        ValueError,
        ["motor_J", "0", "(0, inf)"],
    ),
    (
        "motor_J = -1",
        lambda b: b.set_param(1, "motor_J", -1.0),
        ValueError,
        ["motor_J", "-1", "(0, inf)"],
    ),
    (
        "motor_J per instance one bad",
        lambda b: b.set_param(0, "motor_J", [0.1, -2.0, 0.1]),
        ValueError,
        ["motor_J", "-2", "(0, inf)"],
    ),
    (
        "sea max_def = 0",
        lambda b: b.set_param(0, "max_def", 0.0),
        ValueError,
        ["max_def", "0", "(0, inf)"],
    ),
    (
        "sea max_def = -0.1",
        lambda b: b.set_param(0, "max_def", -0.1),
        ValueError,
        ["max_def", "-0.1", "(0, inf)"],
    ),
    (
        "awas2 max_def > pi/4",
        lambda b: b.set_param(1, "max_def", 1.0),
        ValueError,
        ["max_def", "1", "0.785398"],
    ),
    (
        "awas2 max_def = 0",
        lambda b: b.set_param(1, "max_def", 0.0),
        ValueError,
        ["max_def", "0", "(0, 0.785398]"],
    ),
    (
        "qbmove max_def = -1",
        lambda b: b.set_param(2, "max_def", -1.0),
        ValueError,
        ["max_def", "-1", "(0, inf)"],
    ),
    (
        "tau_max = 0",
        lambda b: b.set_param(0, "tau_max", 0.0),
        ValueError,
        ["tau_max", "0", "(0, inf)"],
    ),
    (
        "tau_max = -5",
        lambda b: b.set_param(2, "tau_max", -5.0),
        ValueError,
        ["tau_max", "-5", "(0, inf)"],
    ),
    (
        "drive = 0.5",
        lambda b: b.set_param(0, "drive", 0.5),
        ValueError,
        ["drive", "0.5", "[0, 1]", "integer"],
    ),
    ("drive = 2", lambda b: b.set_param(0, "drive", 2.0), ValueError, ["drive", "2", "[0, 1]"]),
    (
        "dead_zone = 1",
        lambda b: b.set_param(0, "dead_zone", 1.0),
        ValueError,
        ["dead_zone", "1", "[0, 1)"],
    ),
    ("kp = -1", lambda b: b.set_param(0, "kp", -1.0), ValueError, ["kp", "-1", "[0, inf)"]),
    ("awas2 L = 0", lambda b: b.set_param(1, "L", 0.0), ValueError, ["L", "0", "(0, inf)"]),
    (
        "pos_min >= pos_max",
        lambda b: (b.set_param(0, "pos_min", 1.0), b.set_param(0, "pos_max", 0.5)),
        ValueError,
        ["pos_max", "0.5", "pos_min", "1"],
    ),
    (
        "pos_min = pos_max",
        lambda b: (b.set_param(0, "pos_max", 1.0), b.set_param(0, "pos_min", 1.0)),
        ValueError,
        ["pos_min", "1", "pos_max"],
    ),
    (
        "pos_min > pos_max per instance",
        lambda b: (
            b.set_param(0, "pos_max", [1.0, 2.0, 3.0]),
            b.set_param(0, "pos_min", [0.0, 2.5, 0.0]),
        ),
        ValueError,
        ["pos_min", "2.5", "pos_max"],
    ),
    # per-instance arrays of the wrong length
    (
        "param array too short",
        lambda b: b.set_param(0, "k", [100.0, 200.0]),
        ValueError,
        ["k", f"({N},)", "(2,)"],
    ),
    (
        "param array too long",
        lambda b: b.set_param(2, "k1", np.full(N + 1, 0.01)),
        ValueError,
        ["k1", f"({N},)", f"({N + 1},)"],
    ),
    (
        "param array 2-d",
        lambda b: b.set_param(0, "kp", np.ones((N, 2))),
        ValueError,
        ["kp", f"({N},)", f"({N}, 2)"],
    ),
    # modes
    ("set_mode 7", lambda b: b.set_mode(0, 7), ValueError, ["mode", "7", "[0, 6]"]),
    ("set_mode -1", lambda b: b.set_mode(0, -1), ValueError, ["mode", "-1", "[0, 6]"]),
    ("set_mode 2.0", lambda b: b.set_mode(0, 2.0), TypeError, ["mode", "2.0"]),
    ("joint index", lambda b: b.set_param(J, "kp", 1.0), ValueError, ["joint", str(J), "[0, 2]"]),
    # AwAS-II pivot in the references, modes 6 (joint 1 as built) and 3
    (
        "awas2 pivot = L mode 6",
        lambda b: b.step(0.0, 0.0, _pivot_refs(0.05), DT),
        ValueError,
        ["refs", "0.05", "[0, L)"],
    ),
    (
        "awas2 pivot > L mode 6",
        lambda b: b.step(0.0, 0.0, _pivot_refs(0.2), DT),
        ValueError,
        ["refs", "0.2", "[0, L)"],
    ),
    (
        "awas2 pivot < 0 mode 6",
        lambda b: b.step(0.0, 0.0, _pivot_refs(-0.01), DT),
        ValueError,
        ["refs", "-0.01", "[0, L)"],
    ),
    (
        "awas2 pivot = L mode 3",
        lambda b: (b.set_mode(1, 3), b.step(0.0, 0.0, _pivot_refs(0.05), DT)),
        ValueError,
        ["refs", "0.05", "[0, L)"],
    ),
    (
        "awas2 pivot >= per-instance L",
        lambda b: (
            b.set_param(1, "L", [0.05, 0.01, 0.05]),
            b.step(0.0, 0.0, _pivot_refs(0.02), DT),
        ),
        ValueError,
        ["refs", "0.02", "[0, L)", "0.01"],
    ),
    (
        "awas2 pivot rollout",
        lambda b: b.rollout(3, DT, _pivot_refs(0.07)),
        ValueError,
        ["refs", "0.07", "[0, L)"],
    ),
    (
        "awas2 pivot rollout trajectory",
        lambda b: b.rollout(2, DT, np.stack([good_refs(), _pivot_refs(0.06)], axis=1)),
        ValueError,
        ["refs", "0.06", "[0, L)"],
    ),
    (
        "awas2 pivot reset",
        lambda b: b.reset(0.0, _pivot_refs(0.05)),
        ValueError,
        ["refs", "0.05", "[0, L)"],
    ),
]
BATCH_CASES = PARAM_CASES + STEP_CASES


@pytest.mark.parametrize(
    "call, exc_type, parts", [c[1:] for c in BATCH_CASES], ids=[c[0] for c in BATCH_CASES]
)
def test_bad_batch_input(call, exc_type, parts):
    b = make_batch()
    b.step(0.0, 0.0, good_refs(), DT)
    check(exc_type, lambda: call(b), *parts)
    # the batch keeps working; a rejected call changed nothing that matters for the next step.
    # (cases that set something valid first are allowed their valid change, so reset those)
    b.max_substep = 1e-3
    b.set_mode(1, 6)
    b.set_param(0, "pos_min", -INF)
    b.set_param(0, "pos_max", INF)
    b.set_param(1, "L", 0.05)
    assert_still_works(b)


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.set_param(0, "k", -1.0),
        lambda b: b.set_param(0, "motor_J", [0.1, 0.0, 0.1]),
        lambda b: b.set_param(0, "k", [1.0, 2.0]),
        lambda b: b.set_param(1, "max_def", 2.0),
        lambda b: b.set_param(0, "drive", 0.5),
        lambda b: b.set_param(0, "pos_max", -INF),
        lambda b: b.set_param(2, "k1", "x"),
        lambda b: b.set_mode(0, 9),
    ],
    ids=["k", "motor_J", "length", "max_def", "drive", "pos_max", "str", "mode"],
)
def test_rejected_set_changes_nothing(call):
    b = make_batch()
    before = params_of(b)
    modes = b.modes
    with pytest.raises((ValueError, TypeError)):
        call(b)
    assert np.array_equal(b.modes, modes)
    assert_still_works(b, before)


def test_rejected_step_does_not_advance():
    b = make_batch()
    b.step(0.1, 0.0, good_refs(), DT)
    state = {f: b.field(f).copy() for f in asr.FIELDS}
    for bad in (
        lambda: b.step(NAN, 0.0, good_refs(), DT),
        lambda: b.step(0.0, 0.0, _pivot_refs(0.05), DT),
        lambda: b.step(0.0, 0.0, good_refs(), -1.0),
        lambda: b.rollout(5, DT, good_refs(), out=np.zeros((1, N, 5, J), np.float32)),
    ):
        with pytest.raises((ValueError, TypeError)):
            bad()
        assert b.step_count == 1
        for f in asr.FIELDS:
            assert np.array_equal(b.field(f), state[f]), f
    assert_still_works(b)


def test_substep_limit_raises_even_with_a_frozen_instance_in_flag_mode():
    """A configuration error is not an instance failure: it must raise whatever on_error says
    and whether or not some instance is already frozen."""
    b = asr.Batch(asr.Joint("qbmove_advanced", 3, {"a1": np.array([8.9992, 2000.0])}), 2)
    b.step(0.5, 0.0, 0.0, DT, on_error="flag")  # exp(2000 * 0.5) overflows: instance 1 frozen
    assert list(b.status) == [0, asr.core.ffi.lib.ASR_ERR_NONFINITE]
    count = b.step_count
    b.max_substep = 1e-9
    check(ValueError, lambda: b.step(0.0, 0.0, 0.0, 1.0, on_error="flag"), "dt", "max_substep")
    assert b.step_count == count
