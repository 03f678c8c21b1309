"""Bad step and rollout inputs on a live batch (tests/core/test_bad_input_batch.py): dt, shapes,
dtypes, NaN / inf, feed-forward, rollout out= and options, threads and max_substep."""

import numpy as np

from tests.support.bad_input import (
    DT,
    INF,
    NAN,
    J,
    N,
    _nan_at,
    _read_only,
    good_refs,
)

# (id, call(b), exception, message parts)
STEP_CASES = [
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
