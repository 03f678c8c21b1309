"""Bad input to the Batch constructor and the pure functions raises the documented error with
a message naming the parameter, the bad value and the valid range; the core keeps working."""

import numpy as np
import pytest

import asr
from tests.support.bad_input import (
    DT,
    INF,
    NAN,
    J,
    N,
    _nan_at,
    _pivot_refs,
    assert_still_works,
    check,
    good_refs,
    make_batch,
)

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
