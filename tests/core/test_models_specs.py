"""The built-in models' specifications: names, defaults, units, presets and the rules that
user models share with them (docs/models.md).
"""

import math

import numpy as np
import pytest

import asr
from tests.conftest import require
from tests.support.models import BUILTIN, TWO_PI
from tests.support.paths import TESTS  # noqa: E402

# ---------------------------------------------------------------------------- specs


SPEC_DEFAULTS = {
    "sea": {"k": 10.0, "max_def": 0.8},
    "awas2": {"Ks": 10.0, "L": 0.05, "r_t": 0.015, "max_def": 0.3},
    "bavs": {"a": 1.21e-6, "b": 2.38e-6, "k": 1.60e5, "ke": 8.71, "max_def": 0.27},
    "qbmove_advanced": {
        "k1": 0.0019,
        "a1": 8.9992,
        "k2": 0.0019,
        "a2": 8.9992,
        "max_def": 0.8,
        "kc": 0.0,
    },
    "qbmove": {"k": 0.022, "a": 6.85},
}

SPEC_UNITS = {
    "sea": {"k": "N m/rad", "max_def": "rad"},
    "sea_damped": {"Kt": "N m/rad", "Dt": "N m s/rad", "max_def": "rad"},
    "awas2": {"L": "m", "r_t": "m", "max_def": "rad"},
    "bavs": {"k": "N m", "ke": "1/rad", "max_def": "rad"},
    "qbmove_advanced": {"k1": "N m", "a1": "1/rad", "k2": "N m", "a2": "1/rad", "max_def": "rad"},
    "qbmove": {"k": "N m", "a": "1/rad"},
}

TOOLBOX_COMMON = {
    "motor_J": 0.0233,
    "motor_D": 0.2698,
    "tau_max": 6.0,
    "friction": 0.02,
    "friction_K": 1e3,
    "kp": 125.0,
    "ki": 0.0,
    "kd": 4.5,
    "link_kp": 0.8,
    "link_ki": 0.0,
    "link_kd": 0.2,
    "motor_Kb": 0.3,
}

COMMON_DEFAULTS = {
    "sea": TOOLBOX_COMMON,
    "sea_damped": {"motor_J": 0.0742, "motor_D": 24.768, "kp": 1000.0, "kd": 0.0, "tau_max": 33.0},
    "qbmove": {
        "motor_J": 0.001,
        "motor_D": 0.01,
        "drive": 1.0,
        "motor_Kt": 0.8,
        "motor_Kb": 0.3,
        "motor_R": 2.3,
        "V_supply": 8.0,
        "dead_zone": 0.3,
        "friction": 0.8,
        "friction_K": 0.8 / 0.03,
        "link_friction": 0.01,
        "link_friction_K": 0.01 / 0.03,
        "ki": 0.0,
        "kp": 0.001 * 65536 / TWO_PI,
        "kd": 0.008 * 65536 / TWO_PI * 1e-3,
        "ctrl_period": 1e-3,
    },
}


def test_model_names():
    names = list(asr.models())
    assert names[: len(BUILTIN)] == list(BUILTIN)
    specs = asr.models()
    assert [specs[n].nmotor for n in BUILTIN] == [0, 1, 1, 1, 2, 2, 2]
    assert specs["awas2"].kinematic_th2 is True
    assert not any(specs[n].kinematic_th2 for n in BUILTIN if n != "awas2")
    for n in BUILTIN:
        assert specs[n].name == n and isinstance(specs[n].doc, str) and specs[n].doc


@pytest.mark.parametrize("model", sorted(SPEC_DEFAULTS))
def test_model_defaults(model):
    spec = asr.models()[model]
    got = {p.name: p.default for p in spec.params}
    for name, value in SPEC_DEFAULTS[model].items():
        assert got[name] == pytest.approx(value, rel=1e-15), name


def test_sea_damped_defaults_in_validation_set():
    own = {p.name: p for p in asr.models()["sea_damped"].params}
    assert own["Kt"].default in (100.0, 188.0, 500.0)
    assert own["Dt"].default in (0.3, 0.5, 1.5)
    assert own["max_def"].default == np.inf  # no deflection limit by default


def test_sea_damped_array_param_with_unlimited_deflection():
    """max_def = inf is the valid default of sea_damped; an array-valued Kt must still work."""
    Kt = np.array([100.0, 188.0, 500.0])
    Dt = np.array([0.3, 0.5, 1.5])
    r = asr.compliance("sea_damped", 0.2, -0.1, qd=0.5, theta1_d=0.1, Kt=Kt, Dt=Dt)
    np.testing.assert_allclose(r.tau_link, Kt * (-0.3) + Dt * (0.1 - 0.5), rtol=1e-13)
    np.testing.assert_allclose(r.stiffness, Kt, rtol=0)
    np.testing.assert_allclose(r.damping, Dt, rtol=0)


def test_batch_sets_the_model_parameter_named():
    """A Joint's parameter by name reaches the spring: sea_damped's own Kt (N m/rad)."""
    b = asr.Batch([asr.Joint("sea_damped", 2, {"Kt": 500.0, "Dt": 0.0})], 1)
    b.reset(0.0, np.zeros((1, 1, 2)))
    b.step(0.01, 0.0, np.zeros((1, 1, 2)), 1e-3)
    assert float(b.stiffness[0, 0]) == 500.0
    assert float(b.tau_link[0, 0]) == pytest.approx(-5.0, rel=1e-14)


@pytest.mark.parametrize("model", sorted(COMMON_DEFAULTS))
def test_common_defaults(model):
    common = {p.name: p for p in asr.models()[model].common}
    for name, value in COMMON_DEFAULTS[model].items():
        assert common[name].default == pytest.approx(value, rel=1e-12, abs=0), name


@pytest.mark.parametrize("model", sorted(SPEC_UNITS))
def test_model_units(model):
    own = {p.name: p for p in asr.models()[model].params}
    for name, unit in SPEC_UNITS[model].items():
        assert own[name].unit == unit, name


@pytest.mark.parametrize("model", BUILTIN)
def test_every_spec_is_consistent(model):
    spec = asr.models()[model]
    names = [p.name for p in spec.all_params]
    dup = sorted({n for n in names if names.count(n) > 1})
    assert not dup, f"{model}: parameter names used twice (Batch addresses them by name): {dup}"
    for p in spec.params:
        assert spec.param(p.name) is p, f"{model}: param({p.name!r}) is not the model's own"
    assert spec.all_params == spec.common + spec.params
    for p in spec.all_params:
        assert isinstance(p, asr.ParamSpec)
        assert isinstance(p.unit, str), p.name
        assert isinstance(p.doc, str) and p.doc, p.name
        assert p.group in ("spring", "motor", "friction", "controller", "electrical", "link")
        d = p.default
        assert not math.isnan(d)
        assert (d > p.lo) if p.lo_open else (d >= p.lo), p.name
        assert (d < p.hi) if p.hi_open else (d <= p.hi), p.name
        if p.integer:
            assert d == math.floor(d)
        assert float(p.check(d)) == d or (math.isinf(d) and float(p.check(d)) == d)
        assert isinstance(p.range_text, str) and p.range_text
    for p in spec.params:
        assert p.group == "spring"
    assert all(p.unit for p in spec.params if p.name in ("max_def",))


# ---------------------------------------------------------------- second reference and preset

# The dashboard's table before the presets moved into the model definitions (written out here
# as the independent expected values): kind, lo, hi, soft, stiff, unit (and the parameter).
PRESETS_BEFORE = {
    "qbmove_advanced": dict(kind="ref", lo=0.0, hi=0.8, soft=0.2, stiff=0.6, unit="rad"),
    "qbmove": dict(kind="ref", lo=0.0, hi=1.0, soft=0.2, stiff=0.6, unit="rad"),
    "bavs": dict(kind="ref", lo=0.0, hi=0.27, soft=0.05, stiff=0.2, unit="rad"),
    "awas2": dict(kind="ref", lo=0.0, hi=0.045, soft=0.005, stiff=0.04, unit="m"),
    "sea": dict(
        kind="param", param="k", lo=0.0, hi=1000.0, soft=200.0, stiff=400.0, unit="N m/rad"
    ),
    "sea_damped": dict(
        kind="param", param="Kt", lo=0.0, hi=1000.0, soft=100.0, stiff=400.0, unit="N m/rad"
    ),
    "rigid": dict(kind="none", lo=0.0, hi=0.0, soft=0.0, stiff=0.0, unit=""),
}


@pytest.mark.parametrize("model", BUILTIN)
def test_builtin_preset_metadata(model):
    p = asr.models()[model].preset
    d = p.as_dict()
    assert d.pop("meaning") == p.meaning and p.meaning
    assert d == PRESETS_BEFORE[model]
    # only AwAS-II bounds its second reference by a parameter: the pivot s in [0, L)
    assert p.below_param == ("L" if model == "awas2" else None)


def test_dashboard_preset_spec_is_the_package_one():
    require("fastapi")
    from asr_dashboard import references

    for model in BUILTIN:
        assert references.preset_spec(model) == asr.models()[model].preset.as_dict()


def test_docs_preset_table_is_the_model_definitions():
    import os

    path = os.path.join(str(TESTS), os.pardir, "docs", "models.md")
    with open(path, encoding="utf-8") as f:
        docs = f.read()
    from asr.core.models import preset_table

    specs = asr.models()
    assert preset_table({n: specs[n] for n in BUILTIN}) in docs


PIVOT_CASES = [
    (0.05, {}, "0.05", None),
    (-0.001, {}, "-0.001", None),
    (0.03, {"L": 0.02}, "0.03", "0.02"),
    (0.07, {}, "0.07", None),
]


@pytest.mark.parametrize("pivot,params,shown,bound", PIVOT_CASES)
def test_awas2_pivot_rule_is_the_same_everywhere(pivot, params, shown, bound):
    """Batch.step, asr.compliance and asr.reference_map reject the same pivots with the same
    message (but for the argument's name)."""
    b = asr.Batch([asr.Joint("awas2", mode=3, params=params)], n_instances=1)
    refs = np.array([[[0.0, pivot]]])
    messages = []
    for name, call in (
        ("refs[..., 0, 1]", lambda: b.step(0.0, 0.0, refs, 1e-3)),
        ("theta2", lambda: asr.compliance("awas2", 0.1, 0.0, pivot, **params)),
        ("preset", lambda: asr.reference_map("awas2", 0.1, pivot, **params)),
    ):
        with pytest.raises(ValueError) as exc:
            call()
        text = str(exc.value)
        assert text.startswith(name + ": AwAS-II pivot position s = " + shown + " m"), text
        assert "valid range [0, L)" in text and (bound is None or bound in text)
        messages.append(text[len(name) :])
    assert messages[0] == messages[1] == messages[2]
    # inside [0, L) all three accept it
    ok = 0.01
    b.step(0.0, 0.0, np.array([[[0.0, ok]]]), 1e-3)
    asr.compliance("awas2", 0.1, 0.0, ok, **params)
    asr.reference_map("awas2", 0.1, ok, **params)


def _cubic(q, qd, th1, th2, th1d, th2d, k3, **_):
    d = q - th1
    return {"tau1": -k3 * d**3, "stiffness": 3 * k3 * d**2}


def test_user_model_preset_spec():
    p = asr.PresetSpec(
        kind="ref",
        lo=0.0,
        hi=2.0,
        soft=0.5,
        stiff=1.5,
        unit="rad",
        meaning="spring pretension angle",
    )
    params = (asr.ParamSpec("k3", 1.0, 0.0, float("inf"), lo_open=True),)
    spec = asr.register_model("test_preset_user", _cubic, params=params, preset=p)
    try:
        assert spec.preset == p and asr.models()["test_preset_user"].preset == p
        spec2 = asr.register_model(
            "test_preset_user2",
            _cubic,
            params=params,
            preset=dict(
                kind="param", param="k3", lo=0.0, hi=10.0, soft=1.0, stiff=5.0, unit="N m/rad^3"
            ),
        )
        assert spec2.preset.kind == "param" and spec2.preset.param == "k3"
        default = asr.register_model("test_preset_user3", _cubic, params=params)
        assert default.preset == asr.PresetSpec()
        assert default.preset.as_dict() == dict(
            kind="ref", lo=0.0, hi=1.0, soft=0.2, stiff=0.6, unit="", meaning="preset"
        )
    finally:
        for n in ("test_preset_user", "test_preset_user2", "test_preset_user3"):
            if n in asr.models():
                asr.unregister_model(n)


@pytest.mark.parametrize(
    "preset,match",
    [
        (dict(kind="spring"), "kind"),
        (dict(soft=2.0), "soft"),
        (dict(kind="param"), "param"),
        (dict(kind="param", param="nope"), "nope"),
        (dict(below_param="nope"), "nope"),
        (dict(lo=float("nan")), "lo"),
    ],
)
def test_user_model_bad_preset_spec(preset, match):
    params = (asr.ParamSpec("k3", 1.0, 0.0, float("inf"), lo_open=True),)
    with pytest.raises(ValueError, match=match):
        asr.register_model("test_preset_bad", _cubic, params=params, preset=preset)
    assert "test_preset_bad" not in asr.models()


def test_user_model_below_param_rule():
    """A user model bounding its second reference by a parameter gets the AwAS-II style check
    in Batch.step, compliance and reference_map."""
    params = (
        asr.ParamSpec("k3", 1.0, 0.0, float("inf"), lo_open=True),
        asr.ParamSpec("smax", 0.5, 0.0, float("inf"), lo_open=True, unit="m"),
    )
    p = asr.PresetSpec(
        lo=0.0,
        hi=0.4,
        soft=0.1,
        stiff=0.3,
        unit="m",
        meaning="slider position x",
        below_param="smax",
    )
    asr.register_model(
        "test_preset_below",
        _cubic,
        lambda eq, pre, k3, smax: (eq, pre),
        params=params,
        nmotor=1,
        kinematic_th2=True,
        preset=p,
    )
    try:
        with pytest.raises(
            ValueError,
            match=r"theta2: slider position x = 0\.6 m, valid range "
            r"\[0, smax\) with smax = 0\.5 m",
        ):
            asr.compliance("test_preset_below", 0.0, 0.0, 0.6)
        with pytest.raises(ValueError, match=r"preset: slider position x = 0\.5 m"):
            asr.reference_map("test_preset_below", 0.0, 0.5)
        b = asr.Batch([asr.Joint("test_preset_below", mode=3)], n_instances=1)
        with pytest.raises(ValueError, match=r"refs\[\.\.\., 0, 1\]: slider position x = -0\.1 m"):
            b.step(0.0, 0.0, np.array([[[0.0, -0.1]]]), 1e-3)
        b.step(0.0, 0.0, np.array([[[0.0, 0.2]]]), 1e-3)
    finally:
        asr.unregister_model("test_preset_below")
