"""The batch: per-instance parameters touch only their instance; parameter names, units, docs
and rules come from the C core's one list."""

import numpy as np
import pytest

import asr
from tests.support.batch import DT, state_of, sweep_inputs

# ---------------------------------------------------------------- parameters


def test_set_param_per_instance_changes_only_those_instances():
    n = 5
    joints = [asr.Joint("qbmove_advanced", 6), asr.Joint("sea", 5)]
    a, b = asr.Batch(joints, n), asr.Batch(joints, n)
    k1 = b.get_param(0, "k1")
    assert np.array_equal(k1, np.full(n, 0.0019))
    k1[3] = 0.01
    b.set_param(0, "k1", k1)
    assert np.array_equal(b.get_param(0, "k1"), k1)
    assert np.array_equal(b.get_param(1, "k"), np.full(n, 10.0))  # other joint untouched
    inputs = sweep_inputs(80, n)
    for kw in inputs:
        refs = kw["refs"][:, :2].copy()
        for x in (a, b):
            x.step(kw["q"][:, :2], kw["qd"][:, :2], refs, DT)
    sa, sb = state_of(a), state_of(b)
    others = [0, 1, 2, 4]
    for f in asr.FIELDS:
        assert np.array_equal(sa[f][others], sb[f][others]), f
    assert not np.array_equal(sa["tau_joint"][3], sb["tau_joint"][3])


def test_get_param_round_trips():
    n = 4
    b = asr.Batch([asr.Joint("sea", 5), asr.Joint("bavs", 3)], n)
    v = np.array([150.0, 250.0, 1e-3, 1e6])
    b.set_param(0, "k", v)
    got = b.get_param(0, "k")
    assert np.array_equal(got, v)
    got[0] = -5.0  # a copy: changing it changes nothing
    assert np.array_equal(b.get_param(0, "k"), v)
    b.set_param(0, "k", 42.0)  # back to one shared value
    assert np.array_equal(b.get_param(0, "k"), np.full(n, 42.0))
    b.set_param(1, "ke", [1.0, 2.0, 3.0, 4.0])  # lists work
    assert np.array_equal(b.get_param(1, "ke"), [1.0, 2.0, 3.0, 4.0])
    b.set_params(1, a=[0.0, 1e-6, 2e-6, 3e-6], max_def=0.2)
    assert np.array_equal(b.get_param(1, "a"), [0.0, 1e-6, 2e-6, 3e-6])
    assert np.array_equal(b.get_param(1, "max_def"), np.full(n, 0.2))
    b.set_param(0, "drive", np.array([0, 1, 1, 0]))  # integer parameter, per instance
    assert np.array_equal(b.get_param(0, "drive"), [0.0, 1.0, 1.0, 0.0])
    # defaults of every parameter are reported as the model spec says
    spec = asr.models()["bavs"]
    for p in spec.all_params:
        if p.name not in ("ke", "a", "max_def"):
            assert np.array_equal(b.get_param(1, p.name), np.full(n, p.default)), p.name


def test_field_units_and_docs_come_from_one_list():
    from asr.core.batch import FIELD_DOCS, FIELD_UNITS

    assert set(FIELD_UNITS) == set(FIELD_DOCS) == set(asr.FIELDS)
    assert asr.FIELD_UNITS is FIELD_UNITS and "FIELD_UNITS" in asr.__all__  # exported
    assert FIELD_UNITS["q"] == "rad" and FIELD_UNITS["stiffness"] == "N m/rad"
    assert FIELD_UNITS["clamp_steps"] == ""
    assert all(FIELD_DOCS[f].endswith(f", {u}") for f, u in FIELD_UNITS.items() if u)
    assert asr.FIELDS.index("tau_joint") == 0 and asr.FIELDS.index("q") == 25
    assert len(asr.FIELDS) == 32


def test_parameter_rules_are_the_c_cores():
    """Range and ordering checks live in C (asr_batch_set_param, asr_param_valid); Python's
    ParamSpec.valid calls the same rule and set_param only explains C's refusal: the value, the
    valid range (or the pos_min < pos_max rule with the other bound) and nothing is changed."""
    spec = asr.ParamSpec("x", 1.0, lo=0.0, hi=2.0, lo_open=True, integer=True)
    values = [np.nan, -np.inf, 0.0, 1e-300, 1.0, 1.5, 2.0, 2.0 + 1e-15, np.inf]
    assert spec.valid(values).tolist() == [
        False,
        False,
        False,
        False,
        True,
        False,
        True,
        False,
        False,
    ]
    b = asr.Batch(["sea"], 3)
    b.set_param(0, "pos_min", np.array([-1.0, 0.0, 1.0]))
    with pytest.raises(
        ValueError,
        match=r"joint 0 \(sea\) pos_max: got 0.5, valid range: "
        r"pos_min < pos_max \(the other bound, pos_min, is 1\)",
    ):
        b.set_param(0, "pos_max", np.array([2.0, 2.0, 0.5]))
    with pytest.raises(ValueError, match=r"pos_max: got 0.5, .*pos_min, is -1 to 1 across"):
        b.set_param(0, "pos_max", 0.5)
    with pytest.raises(ValueError, match=r"kp: got -1, valid range \[0, inf\) N m/rad"):
        b.set_param(0, "kp", np.array([1.0, -1.0, 2.0]))
    assert b.get_param(0, "pos_max").tolist() == [np.inf] * 3
