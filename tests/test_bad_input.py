"""Every bad input raises the documented error (ValueError for bad values and shapes, TypeError
for bad types) with a message naming the parameter, the bad value and the valid range; nothing
crashes, and the batch keeps working afterwards with its parameters unchanged."""

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


# ---------------------------------------------------------------- cases on a live batch
# (id, call(b), exception, message parts)


def _pivot_refs(value, joint=1):
    r = good_refs()
    r[1, joint, 1] = value
    return r


def _nan_at(shape, index, value=NAN):
    a = np.zeros(shape)
    a[index] = value
    return a


BATCH_CASES = [
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
    # dt
    ("dt = 0", lambda b: b.step(0.0, 0.0, good_refs(), 0.0), ValueError, ["dt", "0", "(0, inf)"]),
    (
        "dt < 0",
        lambda b: b.step(0.0, 0.0, good_refs(), -1e-3),
        ValueError,
        ["dt", "-0.001", "(0, inf)"],
    ),
    (
        "dt = nan",
        lambda b: b.step(0.0, 0.0, good_refs(), NAN),
        ValueError,
        ["dt", "nan", "(0, inf)"],
    ),
    (
        "dt = inf",
        lambda b: b.step(0.0, 0.0, good_refs(), INF),
        ValueError,
        ["dt", "inf", "(0, inf)"],
    ),
    ("dt str", lambda b: b.step(0.0, 0.0, good_refs(), "1e-3"), TypeError, ["dt", "str"]),
    (
        "rollout dt = 0",
        lambda b: b.rollout(2, 0.0, good_refs()),
        ValueError,
        ["dt", "0", "(0, inf)"],
    ),
    (
        "rollout dt = nan",
        lambda b: b.rollout(2, NAN, good_refs()),
        ValueError,
        ["dt", "nan", "(0, inf)"],
    ),
    (
        "dt / max_substep too many sub-steps",
        lambda b: (setattr(b, "max_substep", 1e-9), b.step(0.0, 0.0, good_refs(), 1.0)),
        ValueError,
        ["dt", "max_substep", "1e-09"],
    ),
    # shapes of the inputs
    (
        "q shape",
        lambda b: b.step(np.zeros((N + 1, J)), 0.0, good_refs(), DT),
        ValueError,
        ["q", f"({N + 1}, {J})", f"({N}, {J})"],
    ),
    (
        "qd shape",
        lambda b: b.step(0.0, np.zeros((N, J + 1)), good_refs(), DT),
        ValueError,
        ["qd", f"({N}, {J + 1})", f"({N}, {J})"],
    ),
    (
        "refs shape",
        lambda b: b.step(0.0, 0.0, np.zeros((N, J, 3)), DT),
        ValueError,
        ["refs", f"({N}, {J}, 3)", f"({N}, {J}, 2)"],
    ),
    (
        "refs missing last axis",
        lambda b: b.step(0.0, 0.0, np.zeros((N, J)), DT),
        ValueError,
        ["refs", f"({N}, {J})", f"({N}, {J}, 2)"],
    ),
    (
        "tau_ext shape",
        lambda b: b.step(0.0, 0.0, good_refs(), DT, tau_ext=np.zeros((2, J))),
        ValueError,
        ["tau_ext", f"(2, {J})", f"({N}, {J})"],
    ),
    (
        "tau_ff shape",
        lambda b: b.step(0.0, 0.0, good_refs(), DT, tau_ff=np.zeros(J + 2)),
        ValueError,
        ["tau_ff", f"({J + 2},)", f"({N}, {J})"],
    ),
    ("reset q0 shape", lambda b: b.reset(np.zeros(5)), ValueError, ["q0", "(5,)", f"({N}, {J})"]),
    (
        "rollout refs trajectory shape",
        lambda b: b.rollout(4, DT, np.zeros((N, 5, J, 2))),
        ValueError,
        ["refs", f"({N}, 4, {J}, 2)", f"({N}, 5, {J}, 2)"],
    ),
    (
        "rollout q trajectory shape",
        lambda b: b.rollout(4, DT, good_refs(), np.zeros((N, 3, J))),
        ValueError,
        ["q", f"({N}, 4, {J})", f"({N}, 3, {J})"],
    ),
    (
        "rollout tau_ext trajectory shape",
        lambda b: b.rollout(4, DT, good_refs(), tau_ext=np.zeros((N, 4, J + 1))),
        ValueError,
        ["tau_ext", f"({N}, 4, {J})", f"({N}, 4, {J + 1})"],
    ),
    # dtypes of the inputs
    (
        "q complex",
        lambda b: b.step(np.zeros((N, J), complex), 0.0, good_refs(), DT),
        TypeError,
        ["q", "complex"],
    ),
    (
        "qd object",
        lambda b: b.step(0.0, np.zeros((N, J), object), good_refs(), DT),
        TypeError,
        ["qd", "object"],
    ),
    (
        "refs str",
        lambda b: b.step(0.0, 0.0, np.full((N, J, 2), "0"), DT),
        TypeError,
        ["refs", "dtype"],
    ),
    (
        "tau_ext complex",
        lambda b: b.step(0.0, 0.0, good_refs(), DT, tau_ext=1j),
        TypeError,
        ["tau_ext", "complex"],
    ),
    ("q bool", lambda b: b.step(True, 0.0, good_refs(), DT), TypeError, ["q", "bool"]),
    (
        "q ragged list",
        lambda b: b.step([[0.0], [0.0, 1.0]], 0.0, good_refs(), DT),
        TypeError,
        ["q"],
    ),
    (
        "rollout refs object",
        lambda b: b.rollout(2, DT, np.zeros((N, J, 2), object)),
        TypeError,
        ["refs", "object"],
    ),
    # NaN / inf in the inputs, with the index
    (
        "q nan",
        lambda b: b.step(_nan_at((N, J), (1, 2)), 0.0, good_refs(), DT),
        ValueError,
        ["q", "nan", "(1, 2)"],
    ),
    (
        "qd inf",
        lambda b: b.step(0.0, _nan_at((N, J), (2, 0), INF), good_refs(), DT),
        ValueError,
        ["qd", "inf", "(2, 0)"],
    ),
    (
        "refs nan",
        lambda b: b.step(0.0, 0.0, _nan_at((N, J, 2), (0, 2, 1)), DT),
        ValueError,
        ["refs", "nan", "(0, 2, 1)"],
    ),
    (
        "refs -inf",
        lambda b: b.step(0.0, 0.0, _nan_at((N, J, 2), (2, 0, 0), -INF), DT),
        ValueError,
        ["refs", "-inf", "(2, 0, 0)"],
    ),
    (
        "tau_ext nan",
        lambda b: b.step(0.0, 0.0, good_refs(), DT, tau_ext=_nan_at((N, J), (0, 1))),
        ValueError,
        ["tau_ext", "nan", "(0, 1)"],
    ),
    (
        "tau_ff inf",
        lambda b: b.step(0.0, 0.0, good_refs(), DT, tau_ff=_nan_at((N, J), (1, 0), INF)),
        ValueError,
        ["tau_ff", "inf", "(1, 0)"],
    ),
    ("scalar q nan", lambda b: b.step(NAN, 0.0, good_refs(), DT), ValueError, ["q", "nan"]),
    (
        "reset q0 nan",
        lambda b: b.reset(_nan_at((N, J), (2, 2))),
        ValueError,
        ["q0", "nan", "(2, 2)"],
    ),
    (
        "rollout q trajectory nan",
        lambda b: b.rollout(3, DT, good_refs(), _nan_at((N, 3, J), (1, 2, 0))),
        ValueError,
        ["q", "nan", "(1, 2, 0)"],
    ),
    (
        "rollout tau_ext inf",
        lambda b: b.rollout(3, DT, good_refs(), tau_ext=_nan_at((N, J), (0, 0), INF)),
        ValueError,
        ["tau_ext", "inf", "(0, 0)"],
    ),
    # feed-forward on a two-motor joint
    (
        "tau_ff on qbmove",
        lambda b: b.step(0.0, 0.0, good_refs(), DT, tau_ff=_nan_at((N, J), (0, 2), 1.0)),
        ValueError,
        ["tau_ff", "2", "qbmove_advanced"],
    ),
    # rollout out=
    (
        "out float32",
        lambda b: b.rollout(4, DT, good_refs(), out=np.zeros((1, N, 4, J), np.float32)),
        TypeError,
        ["out", "float32", "float64"],
    ),
    (
        "out non-contiguous",
        lambda b: b.rollout(4, DT, good_refs(), out=np.zeros((1, N, 4, J, 2))[..., 0]),
        ValueError,
        ["out", "contiguous"],
    ),
    (
        "out fortran order",
        lambda b: b.rollout(4, DT, good_refs(), out=np.asfortranarray(np.zeros((1, N, 4, J)))),
        ValueError,
        ["out", "contiguous"],
    ),
    (
        "out read-only",
        lambda b: b.rollout(4, DT, good_refs(), out=_read_only((1, N, 4, J))),
        ValueError,
        ["out", "writ", "read-only"],
    ),
    (
        "out wrong shape",
        lambda b: b.rollout(4, DT, good_refs(), out=np.zeros((2, N, 4, J))),
        ValueError,
        ["out", f"(1, {N}, 4, {J})", f"(2, {N}, 4, {J})"],
    ),
    (
        "out wrong steps",
        lambda b: b.rollout(4, DT, good_refs(), out=np.zeros((1, N, 5, J))),
        ValueError,
        ["out", f"(1, {N}, 4, {J})", f"(1, {N}, 5, {J})"],
    ),
    (
        "out list",
        lambda b: b.rollout(1, DT, good_refs(), out=[[[[0.0] * J]] * N]),
        TypeError,
        ["out", "list"],
    ),
    # rollout and step options
    (
        "on_error bogus step",
        lambda b: b.step(0.0, 0.0, good_refs(), DT, on_error="bogus"),
        ValueError,
        ["on_error", "bogus", "raise", "flag"],
    ),
    (
        "on_error bogus rollout",
        lambda b: b.rollout(2, DT, good_refs(), on_error="bogus"),
        ValueError,
        ["on_error", "bogus", "raise", "flag"],
    ),
    (
        "record nonexistent",
        lambda b: b.rollout(2, DT, good_refs(), record=("nonexistent",)),
        ValueError,
        ["record", "nonexistent", "tau_joint"],
    ),
    (
        "record one bad of two",
        lambda b: b.rollout(2, DT, good_refs(), record=("th1", "thx")),
        ValueError,
        ["record", "thx"],
    ),
    ("steps = 0", lambda b: b.rollout(0, DT, good_refs()), ValueError, ["steps", "0", "[1,"]),
    ("steps = 2.5", lambda b: b.rollout(2.5, DT, good_refs()), TypeError, ["steps", "2.5"]),
    (
        "field nonexistent",
        lambda b: b.field("nonexistent"),
        ValueError,
        ["nonexistent", "tau_joint"],
    ),
    # threads and max_substep on a live batch
    ("threads = 0", lambda b: setattr(b, "threads", 0), ValueError, ["threads", "0", "[1, 1024]"]),
    ("threads = 1.5", lambda b: setattr(b, "threads", 1.5), TypeError, ["threads", "1.5"]),
    (
        "max_substep = 0",
        lambda b: setattr(b, "max_substep", 0.0),
        ValueError,
        ["max_substep", "0", "(0, inf)"],
    ),
    (
        "max_substep = -1",
        lambda b: setattr(b, "max_substep", -1.0),
        ValueError,
        ["max_substep", "-1", "(0, inf)"],
    ),
    (
        "max_substep = nan",
        lambda b: setattr(b, "max_substep", NAN),
        ValueError,
        ["max_substep", "nan", "(0, inf)"],
    ),
]


def _read_only(shape):
    a = np.zeros(shape)
    a.flags.writeable = False
    return a


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
    assert list(b.status) == [0, asr._ffi.lib.ASR_ERR_NONFINITE]
    count = b.step_count
    b.max_substep = 1e-9
    check(ValueError, lambda: b.step(0.0, 0.0, 0.0, 1.0, on_error="flag"), "dt", "max_substep")
    assert b.step_count == count


# ---------------------------------------------------------------- construction


CONSTRUCT_CASES = [
    (
        "unknown model",
        lambda: asr.Batch("nope"),
        ValueError,
        ["nope", "rigid", "sea", "sea_damped", "awas2", "bavs", "qbmove_advanced", "qbmove"],
    ),
    (
        "unknown model in Joint",
        lambda: asr.Batch([asr.Joint("sea"), asr.Joint("seaa", 5)]),
        ValueError,
        ["seaa", "sea_damped"],
    ),
    ("model not a str", lambda: asr.Batch(asr.Joint(3)), TypeError, ["model", "int"]),
    ("joint of wrong type", lambda: asr.Batch([1.5]), TypeError, ["joints[0]", "float"]),
    ("no joints", lambda: asr.Batch([]), ValueError, ["joints"]),
    ("dict without model", lambda: asr.Batch([{"mode": 5}]), ValueError, ["model"]),
    (
        "unknown Joint param",
        lambda: asr.Batch(asr.Joint("sea", 5, {"kk": 1.0})),
        ValueError,
        ["kk", "k", "max_def"],
    ),
    (
        "Joint param str",
        lambda: asr.Batch(asr.Joint("sea", 5, {"k": "200"})),
        TypeError,
        ["k", "dtype"],
    ),
    (
        "Joint param negative",
        lambda: asr.Batch(asr.Joint("sea", 5, {"k": -1.0})),
        ValueError,
        ["k", "-1", "(0, inf)"],
    ),
    (
        "Joint motor_J = 0",
        lambda: asr.Batch(asr.Joint("bavs", 3, {"motor_J": 0.0})),
        ValueError,
        ["motor_J", "0", "(0, inf)"],
    ),
    (
        "Joint param array length",
        lambda: asr.Batch(asr.Joint("sea", 5, {"k": [1.0, 2.0]}), 3),
        ValueError,
        ["k", "(3,)", "(2,)"],
    ),
    (
        "Joint pos_min > pos_max",
        lambda: asr.Batch(asr.Joint("sea", 5, {"pos_min": 1.0, "pos_max": -1.0})),
        ValueError,
        ["pos_max", "-1", "pos_min", "1"],
    ),
    ("mode 7", lambda: asr.Batch(asr.Joint("sea", 7)), ValueError, ["mode", "7", "[0, 6]"]),
    ("mode -1", lambda: asr.Batch(asr.Joint("qbmove", -1)), ValueError, ["mode", "-1", "[0, 6]"]),
    (
        "mode 2 on rigid",
        lambda: asr.Batch(asr.Joint("rigid", 2)),
        ValueError,
        ["mode", "2", "rigid", "0", "1"],
    ),
    (
        "mode 6 on rigid",
        lambda: asr.Batch(asr.Joint("rigid", 6)),
        ValueError,
        ["mode", "6", "rigid"],
    ),
    ("mode str", lambda: asr.Batch(asr.Joint("sea", "5")), TypeError, ["mode", "str"]),
    ("n_instances = 0", lambda: asr.Batch("sea", 0), ValueError, ["n_instances", "0", "[1,"]),
    ("n_instances = -1", lambda: asr.Batch("sea", -1), ValueError, ["n_instances", "-1", "[1,"]),
    ("n_instances = 2.5", lambda: asr.Batch("sea", 2.5), TypeError, ["n_instances", "2.5"]),
    ("n_instances = True", lambda: asr.Batch("sea", True), TypeError, ["n_instances", "bool"]),
    ("n_instances = '3'", lambda: asr.Batch("sea", "3"), TypeError, ["n_instances", "str"]),
    (
        "threads = 0",
        lambda: asr.Batch("sea", 2, threads=0),
        ValueError,
        ["threads", "0", "[1, 1024]"],
    ),
    ("threads = -2", lambda: asr.Batch("sea", 2, threads=-2), ValueError, ["threads", "-2"]),
    (
        "threads = 5000",
        lambda: asr.Batch("sea", 2, threads=5000),
        ValueError,
        ["threads", "5000", "[1, 1024]"],
    ),
    (
        "max_substep = 0",
        lambda: asr.Batch("sea", 2, max_substep=0.0),
        ValueError,
        ["max_substep", "0", "(0, inf)"],
    ),
    (
        "max_substep < 0",
        lambda: asr.Batch("sea", 2, max_substep=-1e-3),
        ValueError,
        ["max_substep", "-0.001", "(0, inf)"],
    ),
    (
        "max_substep = inf",
        lambda: asr.Batch("sea", 2, max_substep=INF),
        ValueError,
        ["max_substep", "inf", "(0, inf)"],
    ),
]


@pytest.mark.parametrize(
    "call, exc_type, parts", [c[1:] for c in CONSTRUCT_CASES], ids=[c[0] for c in CONSTRUCT_CASES]
)
def test_bad_construction(call, exc_type, parts):
    check(exc_type, call, *parts)
    # the core is still usable afterwards
    b = make_batch()
    assert_still_works(b)


# ---------------------------------------------------------------- pure functions


FUNCTION_CASES = [
    (
        "compliance unknown model",
        lambda: asr.compliance("nope", 0.0, 0.0),
        ValueError,
        ["nope", "qbmove_advanced"],
    ),
    (
        "reference_map unknown model",
        lambda: asr.reference_map("nope", 0.0, 0.0),
        ValueError,
        ["nope", "bavs"],
    ),
    (
        "compliance unknown param",
        lambda: asr.compliance("sea", 0.1, 0.0, stiffness=3.0),
        ValueError,
        ["stiffness", "k", "max_def"],
    ),
    (
        "reference_map unknown param",
        lambda: asr.reference_map("qbmove", 0.1, 0.0, kk=3.0),
        ValueError,
        ["kk", "th_max"],
    ),
    (
        "compliance param str",
        lambda: asr.compliance("sea", 0.1, 0.0, k="200"),
        TypeError,
        ["k", "dtype"],
    ),
    (
        "compliance awas2 param str",
        lambda: asr.compliance("awas2", 0.1, 0.0, 0.01, L="x"),
        TypeError,
        ["L", "dtype"],
    ),
    (
        "reference_map awas2 param str",
        lambda: asr.reference_map("awas2", 0.1, 0.01, L="x"),
        TypeError,
        ["L", "dtype"],
    ),
    (
        "compliance k = -1",
        lambda: asr.compliance("sea", 0.1, 0.0, k=-1.0),
        ValueError,
        ["k", "-1", "(0, inf)"],
    ),
    (
        "compliance k array one bad",
        lambda: asr.compliance("sea", 0.1, 0.0, k=[1.0, -3.0]),
        ValueError,
        ["k", "-3", "(0, inf)"],
    ),
    (
        "compliance max_def = 0",
        lambda: asr.compliance("bavs", 0.1, 0.0, max_def=0.0),
        ValueError,
        ["max_def", "0", "(0, inf)"],
    ),
    (
        "compliance awas2 max_def",
        lambda: asr.compliance("awas2", 0.1, 0.0, 0.01, max_def=0.9),
        ValueError,
        ["max_def", "0.9", "0.785398"],
    ),
    (
        "compliance awas2 L nan",
        lambda: asr.compliance("awas2", 0.1, 0.0, 0.01, L=NAN),
        ValueError,
        ["L", "nan"],
    ),
    (
        "compliance awas2 pivot = L",
        lambda: asr.compliance("awas2", 0.1, 0.0, 0.05),
        ValueError,
        ["theta2", "0.05", "[0, L)"],
    ),
    (
        "compliance awas2 pivot > L",
        lambda: asr.compliance("awas2", 0.1, 0.0, 0.03, L=0.02),
        ValueError,
        ["theta2", "0.03", "[0, L)", "0.02"],
    ),
    (
        "compliance awas2 pivot < 0",
        lambda: asr.compliance("awas2", 0.1, 0.0, -0.001),
        ValueError,
        ["theta2", "-0.001", "[0, L)"],
    ),
    (
        "compliance awas2 pivot array",
        lambda: asr.compliance("awas2", 0.1, 0.0, [0.0, 0.01, 0.051]),
        ValueError,
        ["theta2", "0.051", "[0, L)"],
    ),
    (
        "reference_map awas2 preset = L",
        lambda: asr.reference_map("awas2", 0.1, 0.05),
        ValueError,
        ["preset", "0.05", "[0, L)"],
    ),
    (
        "reference_map awas2 preset > L",
        lambda: asr.reference_map("awas2", 0.1, 1.0, L=0.5),
        ValueError,
        ["preset", "1", "[0, L)", "0.5"],
    ),
    ("compliance q nan", lambda: asr.compliance("sea", NAN, 0.0), ValueError, ["q", "nan"]),
    (
        "compliance theta1 inf",
        lambda: asr.compliance("sea", 0.0, [0.0, INF]),
        ValueError,
        ["theta1", "inf", "(1,)"],
    ),
    (
        "compliance qd nan",
        lambda: asr.compliance("sea_damped", 0.0, 0.0, qd=NAN),
        ValueError,
        ["qd", "nan"],
    ),
    (
        "reference_map eq nan",
        lambda: asr.reference_map("bavs", [0.0, NAN], 0.1),
        ValueError,
        ["equilibrium", "nan", "(1,)"],
    ),
    (
        "reference_map preset inf",
        lambda: asr.reference_map("bavs", 0.0, -INF),
        ValueError,
        ["preset", "-inf"],
    ),
    ("compliance complex q", lambda: asr.compliance("sea", 1j, 0.0), TypeError, ["q", "complex"]),
    (
        "compliance object theta1",
        lambda: asr.compliance("sea", 0.0, np.zeros(2, object)),
        TypeError,
        ["theta1", "object"],
    ),
    (
        "reference_map str eq",
        lambda: asr.reference_map("sea", "0.1", 0.0),
        TypeError,
        ["equilibrium"],
    ),
    (
        "compliance shapes",
        lambda: asr.compliance("sea", np.zeros(3), np.zeros(2)),
        ValueError,
        ["broadcast"],
    ),
    (
        "reference_map shapes",
        lambda: asr.reference_map("sea", np.zeros(3), np.zeros(4)),
        ValueError,
        ["broadcast"],
    ),
    (
        "compliance param shape",
        lambda: asr.compliance("sea", np.zeros(3), 0.0, k=[1.0, 2.0]),
        ValueError,
        ["broadcast"],
    ),
]


@pytest.mark.parametrize(
    "call, exc_type, parts", [c[1:] for c in FUNCTION_CASES], ids=[c[0] for c in FUNCTION_CASES]
)
def test_bad_function_input(call, exc_type, parts):
    check(exc_type, call, *parts)
    r = asr.compliance("sea", 0.1, 0.0, k=200.0)  # still works
    assert float(r.tau_link) == pytest.approx(-20.0)


def test_messages_show_plain_numbers():
    """Messages print values as numbers ('0.05'), not as NumPy reprs ('np.float64(0.05)')."""
    b = make_batch()
    msgs = [
        check(ValueError, lambda: asr.compliance("awas2", 0.1, 0.0, 0.05), "0.05"),
        check(ValueError, lambda: asr.reference_map("awas2", 0.1, 0.07), "0.07"),
        check(ValueError, lambda: b.step(0.0, 0.0, _pivot_refs(0.06), DT), "0.06"),
        check(ValueError, lambda: b.step(_nan_at((N, J), (0, 0)), 0.0, good_refs(), DT), "nan"),
        check(
            ValueError,
            lambda: (b.set_param(0, "pos_min", 2.0), b.set_param(0, "pos_max", 1.0)),
            "pos_min",
        ),
        check(ValueError, lambda: b.set_param(0, "motor_J", [0.1, -2.0, 0.1]), "-2"),
    ]
    for msg in msgs:
        assert "np.float64" not in msg, msg
