"""asr.datasheet against closed forms of docs/models.md sec. 1 and the published stiffness of
the qbmove Advanced ([Mengacci2021]); asr.models()' compact repr."""

import json

import numpy as np
import pytest

import asr
from asr.analysis.datasheet import Datasheet, datasheet
from tests.conftest import require

QBA = asr.models()["qbmove_advanced"].defaults()
K1, A1, K2, A2, QBA_MAX = QBA["k1"], QBA["a1"], QBA["k2"], QBA["a2"], QBA["max_def"]


def _sat(x, m):
    return np.clip(x, -m, m)


def _qba_spring_energy(k, a, u, m):
    """Antiderivative of k sinh(a sat(u, m)) in u: k/a cosh(a sat(u)) inside the clamp, then a
    straight line of slope k sinh(a m) (the saturated torque)."""
    return k / a * np.cosh(a * _sat(u, m)) + k * np.sinh(a * m) * np.maximum(np.abs(u) - m, 0.0)


def test_qbmove_advanced_published_stiffness():
    """[Mengacci2021]: 0.0342, 0.106, 0.626, 3.78 N m/rad at presets 0, 0.2, 0.4, 0.6 rad."""
    d = datasheet("qbmove_advanced", presets=[0.0, 0.2, 0.4, 0.6])
    zero = int(np.argmin(np.abs(d.deflection)))
    assert d.deflection[zero] == 0.0
    three_figures = [float(f"{s:.3g}") for s in d.stiffness[:, zero]]
    assert three_figures == [0.0342, 0.106, 0.626, 3.78]


def test_qbmove_advanced_closed_forms():
    """sigma(phi = 0) = a1 k1 cosh(a1 p) + a2 k2 cosh(a2 p) over the whole preset range; torque
    -k1 sinh(a1 sat(phi - p)) - k2 sinh(a2 sat(phi + p)); energy
    E(phi) = sum_i F_i(phi - t_i) - F_i(-t_i), t = (p, -p), F_i of _qba_spring_energy."""
    d = datasheet(
        "qbmove_advanced", presets=[0.0, 0.3, 0.6], deflections=np.linspace(-1.2, 1.5, 271)
    )
    p = d.preset_grid
    assert p[0] == 0.0 and p[-1] == 0.8
    sigma0 = A1 * K1 * np.cosh(A1 * p) + A2 * K2 * np.cosh(A2 * p)
    np.testing.assert_allclose(d.stiffness_vs_preset, sigma0, rtol=1e-12)
    assert d.stiffness_range == pytest.approx((sigma0.min(), sigma0.max()), rel=1e-12)
    pre, phi = d.presets[:, None], d.deflection[None, :]
    torque = -K1 * np.sinh(A1 * _sat(phi - pre, QBA_MAX)) - K2 * np.sinh(
        A2 * _sat(phi + pre, QBA_MAX)
    )
    np.testing.assert_allclose(d.torque, torque, rtol=1e-12, atol=1e-15)
    energy = sum(
        _qba_spring_energy(k, a, phi - t, QBA_MAX) - _qba_spring_energy(k, a, -t, QBA_MAX)
        for k, a, t in ((K1, A1, pre), (K2, A2, -pre))
    )
    np.testing.assert_allclose(d.energy, energy, rtol=1e-5, atol=1e-9)
    assert d.max_deflection == QBA_MAX
    # torque at link deflection +/-max_def: spring 1 at max_def - p, spring 2 clamped
    at_limit = K1 * np.sinh(A1 * (QBA_MAX - d.presets)) + K2 * np.sinh(A2 * QBA_MAX)
    np.testing.assert_allclose(d.max_torque, at_limit, rtol=1e-12)


def test_motor_torques_hold_the_springs_with_coupling():
    """Each motor holds its own spring and the coupling g = kc (th1 - th2) = 2 kc p
    (docs/models.md sec. 1): motor 1 applies tau1 + g, motor 2 tau2 - g; they sum to the link
    torque (static balance)."""
    kc = 0.05
    d = datasheet("qbmove_advanced", presets=[0.2, 0.5], deflections=[-0.3, 0.0, 0.1, 0.4], kc=kc)
    pre, phi = d.presets[:, None], d.deflection[None, :]
    tau1 = -K1 * np.sinh(A1 * _sat(phi - pre, QBA_MAX))
    tau2 = -K2 * np.sinh(A2 * _sat(phi + pre, QBA_MAX))
    g = kc * 2 * pre
    np.testing.assert_allclose(d.motor_torque[..., 0], tau1 + g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(d.motor_torque[..., 1], tau2 - g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(d.motor_torque.sum(axis=-1), d.torque, rtol=1e-12, atol=1e-15)


def test_sea_linear_spring():
    """sea: stiffness k, torque -k sat(phi), energy k phi^2 / 2 (k m^2 / 2 + k m (|phi| - m)
    past the clamp m), max torque k max_def; the preset is k."""
    d = datasheet("sea", presets=[200.0, 400.0], max_def=0.5)
    k = d.presets[:, None]
    assert d.preset_kind == "param" and d.preset_unit == "N m/rad"
    assert d.deflection[0] == -0.5 and d.deflection[-1] == 0.5 and d.deflection.size == 201
    np.testing.assert_allclose(d.stiffness, np.broadcast_to(k, d.stiffness.shape), rtol=1e-15)
    np.testing.assert_allclose(d.torque, -k * d.deflection, rtol=1e-14, atol=1e-12)
    np.testing.assert_allclose(d.energy, k * d.deflection**2 / 2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d.max_torque, [200 * 0.5, 400 * 0.5], rtol=1e-15)
    np.testing.assert_allclose(d.motor_torque[..., 0], d.torque, rtol=1e-15)
    assert not d.motor_torque[..., 1].any()
    np.testing.assert_allclose(d.stiffness_vs_preset, d.preset_grid, rtol=1e-15)
    past = datasheet("sea", presets=300.0, deflections=[-1.0, 0.2, 0.9], max_def=0.5)
    m, phi = 0.5, np.abs(past.deflection)
    exact = np.where(phi <= m, 300 * phi**2 / 2, 300 * m**2 / 2 + 300 * m * (phi - m))
    np.testing.assert_allclose(past.energy[0], exact, rtol=1e-6)


def test_param_preset_defaults_to_the_given_parameter():
    assert datasheet("sea", k=250.0).presets.tolist() == [250.0]
    default = datasheet("sea")
    assert default.presets.min() > 0 and default.presets.max() == 1000.0
    with pytest.raises(ValueError, match="presets and k"):
        datasheet("sea", presets=[200.0], k=250.0)


def test_sea_damped_has_no_deflection_limit():
    d = datasheet("sea_damped", presets=[100.0])
    assert d.max_deflection == np.inf
    assert d.deflection[-1] == pytest.approx(0.5)  # the stated default range without a limit
    assert d.max_torque[0] == pytest.approx(100.0 * 0.5, rel=1e-14)
    assert json.loads(json.dumps(d.as_dict(), allow_nan=False))["max_deflection"] is None


def test_bavs_closed_form():
    """docs/models.md sec. 1: phi_i = sat(th_i - q), th = +/-p, q = phi;
    sigma = k ke (b e^(ke phi1) + a e^(-ke phi1) + a e^(ke phi2) + b e^(-ke phi2)),
    compared where no spring is clamped."""
    prm = asr.models()["bavs"].defaults()
    a, b, k, ke, m = (prm[n] for n in ("a", "b", "k", "ke", "max_def"))
    d = datasheet("bavs", presets=[0.0, 0.1, 0.2])
    pre, phi = d.presets[:, None], d.deflection[None, :]
    p1, p2 = pre - phi, -pre - phi
    sigma = (
        k
        * ke
        * (b * np.exp(ke * p1) + a * np.exp(-ke * p1) + a * np.exp(ke * p2) + b * np.exp(-ke * p2))
    )
    tau = k * (b * np.exp(ke * p1) - a * np.exp(-ke * p1)) + k * (
        a * np.exp(ke * p2) - b * np.exp(-ke * p2)
    )
    inside = (np.abs(p1) <= m) & (np.abs(p2) <= m)
    assert inside.sum() > 300
    np.testing.assert_allclose(d.stiffness[inside], sigma[inside], rtol=1e-12)
    np.testing.assert_allclose(d.torque[inside], tau[inside], rtol=1e-11, atol=1e-12)
    # zero deflection (phi1 = p, phi2 = -p): sigma = 2 k ke (b e^(ke p) + a e^(-ke p)),
    # 2 k ke (a + b) = 10.006 N m/rad at p = 0 (docs/models.md)
    g = d.preset_grid
    np.testing.assert_allclose(
        d.stiffness_vs_preset, 2 * k * ke * (b * np.exp(ke * g) + a * np.exp(-ke * g)), rtol=1e-12
    )
    assert d.stiffness_vs_preset[0] == pytest.approx(10.006, abs=5e-4)


def test_awas2_closed_form():
    """docs/models.md sec. 1: G = (L / r_t) s / (L - s), sigma = 2 Ks G^2 cos(2 phi); the
    preset s must stay below L."""
    L = 0.03
    prm = asr.models()["awas2"].defaults()
    Ks, r_t, m = prm["Ks"], prm["r_t"], prm["max_def"]
    d = datasheet("awas2", presets=[0.005, 0.02], L=L)
    s, phi = d.presets[:, None], d.deflection[None, :]
    G = (L / r_t) * s / (L - s)
    assert np.abs(d.deflection).max() == m
    np.testing.assert_allclose(d.stiffness, 2 * Ks * G**2 * np.cos(2 * phi), rtol=1e-12)
    np.testing.assert_allclose(d.torque, -Ks * G**2 * np.sin(2 * phi), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        d.energy, Ks * G**2 * (1 - np.cos(2 * phi)) / 2, rtol=1e-6, atol=1e-12
    )
    assert d.preset_grid.max() < L  # the preset grid stops below the singular s = L
    with pytest.raises(ValueError, match="presets.*L"):
        datasheet("awas2", presets=[0.03], L=L)


def _linear_spring(q, qd, th1, th2, th1d, th2d, k):
    return {"tau1": -k * (q - th1), "tau2": -k * (q - th2), "stiffness": 2 * k}


@pytest.fixture
def user_model():
    name = "h1_datasheet_linear"
    asr.register_model(
        name,
        _linear_spring,
        params=[asr.ParamSpec("k", 3.0, lo=0.0, lo_open=True, unit="N m/rad")],
        preset={"kind": "ref", "lo": 0.0, "hi": 0.5, "soft": 0.1, "stiff": 0.4, "unit": "rad"},
    )
    try:
        yield name
    finally:
        asr.unregister_model(name)


def test_user_python_model(user_model):
    """Two linear springs on motors at +/-p (the default map): torque -2 k phi, motors hold
    tau_i = -k (phi -/+ p), energy k phi^2."""
    d = datasheet(user_model, presets=[0.1, 0.4], deflections=np.linspace(-1, 1, 21), k=5.0)
    pre, phi = d.presets[:, None], d.deflection[None, :]
    np.testing.assert_allclose(d.torque, np.broadcast_to(-10.0 * phi, d.torque.shape), atol=1e-12)
    np.testing.assert_allclose(d.motor_torque[..., 0], -5.0 * (phi - pre), atol=1e-12)
    np.testing.assert_allclose(d.motor_torque[..., 1], -5.0 * (phi + pre), atol=1e-12)
    np.testing.assert_allclose(d.energy, np.broadcast_to(5.0 * phi**2, d.energy.shape), atol=1e-12)
    assert d.max_deflection == np.inf and d.stiffness_range == (10.0, 10.0)


def test_user_model_without_preset():
    """Preset kind "none": one curve, presets refused, the operating point's preset ignored."""
    name = "h1_datasheet_fixed"
    asr.register_model(
        name,
        _linear_spring,
        params=[asr.ParamSpec("k", 2.0, lo=0.0)],
        preset={"kind": "none", "lo": 0.0, "hi": 0.0, "soft": 0.0, "stiff": 0.0},
    )
    try:
        d = datasheet(name, deflections=[-0.5, 0.0, 0.5])
        assert d.presets.tolist() == [0.0] and d.torque.tolist() == [[2.0, 0.0, -2.0]]
        marks = [
            t for t in d.figure(operating_point=(None, 0.5)).data if t.name == "operating point"
        ]
        assert len(marks) == 4 and marks[0].y[0] == -2.0
        assert d.figure().layout.xaxis3.title.text == "preset (unused: no stiffness command)"
        with pytest.raises(ValueError, match="presets: model 'h1_datasheet_fixed' has no"):
            datasheet(name, presets=[0.1])
    finally:
        asr.unregister_model(name)


def test_figure_panels_units_and_operating_point():
    go = require("plotly.graph_objects")
    d = datasheet("qbmove_advanced", presets=[0.2, 0.6])
    fig = d.figure(operating_point=(0.3, 0.1))
    assert isinstance(fig, go.Figure)
    titles = {
        ax: fig.layout[ax].title.text
        for ax in ("xaxis", "yaxis", "xaxis2", "yaxis2", "xaxis3", "yaxis3", "xaxis4", "yaxis4")
    }
    assert titles == {
        "xaxis": "deflection (rad)",
        "yaxis": "torque (N m)",
        "xaxis2": "deflection (rad)",
        "yaxis2": "stiffness (N m/rad)",
        "xaxis3": "preset (rad)",
        "yaxis3": "stiffness (N m/rad)",
        "xaxis4": "deflection (rad)",
        "yaxis4": "energy (J)",
    }
    curves = [t for t in fig.data if t.name != "operating point"]
    assert len(curves) == 3 * 2 + 1
    marks = {t.xaxis: t for t in fig.data if t.name == "operating point"}
    assert sorted(marks) == ["x", "x2", "x3", "x4"]
    torque = -K1 * np.sinh(A1 * (0.1 - 0.3)) - K2 * np.sinh(A2 * (0.1 + 0.3))
    assert marks["x"].x[0] == 0.1 and marks["x"].y[0] == pytest.approx(torque, rel=1e-12)
    assert marks["x3"].x[0] == 0.3
    assert marks["x3"].y[0] == pytest.approx(A1 * K1 * np.cosh(A1 * 0.3) * 2, rel=1e-12)
    energy = K1 / A1 * (np.cosh(A1 * -0.2) - np.cosh(A1 * 0.3)) + K2 / A2 * (
        np.cosh(A2 * 0.4) - np.cosh(A2 * 0.3)
    )
    assert marks["x4"].y[0] == pytest.approx(energy, rel=1e-5)
    assert len(d.figure().data) == len(curves)


def test_as_dict_is_json_and_arrays_read_only():
    d = datasheet("bavs", n=11)
    out = json.loads(json.dumps(d.as_dict(), allow_nan=False))
    assert np.array(out["torque"]).shape == (5, 11) and np.array(out["motor_torque"]).shape == (
        5,
        11,
        2,
    )
    assert out["model"] == "bavs" and out["params"]["ke"] == 8.71
    assert isinstance(d, Datasheet)
    with pytest.raises(ValueError):
        d.torque[0, 0] = 1.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: datasheet("no_such_model"), "unknown model 'no_such_model'"),
        (lambda: datasheet("sea", stiffnes=3.0), "unknown parameter 'stiffnes'"),
        (lambda: datasheet("sea", k=-1.0), "k: got -1"),
        (
            lambda: datasheet("qbmove_advanced", presets=[0.2, 0.9]),
            r"presets: got 0.9 rad, valid "
            r"range \[0, 0.8\]",
        ),
        (lambda: datasheet("sea", presets=[0.0]), r"presets: got 0 N m/rad.*k in \(0, inf\)"),
        (lambda: datasheet("bavs", n=2), r"n: got 2, valid range \[3"),
        (lambda: datasheet("bavs", n=2.5), "n: expected an int"),
        (lambda: datasheet("bavs", deflections=[0.0, np.nan]), "deflections: must be finite"),
        (lambda: datasheet("bavs", deflections=[[0.1]]), "deflections: expected a non-empty 1-D"),
        (lambda: datasheet("rigid"), "'rigid' has no spring"),
        (lambda: datasheet("bavs").figure(operating_point=0.1), "operating_point"),
        (lambda: datasheet("bavs").at(0.5, 0.0), "preset: got 0.5 rad"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_models_repr_is_a_short_table():
    specs = asr.models()
    assert isinstance(specs, dict) and specs["sea"].nmotor == 1 and "qbmove" in specs
    text = repr(specs)
    assert len(text) < 3000 and str(specs) == text
    rows = text.splitlines()
    for name, spec in specs.items():
        row = next(r for r in rows if r.split()[0] == name)
        assert row.split()[1:3] == [str(spec.nmotor), str(len(spec.params))]
    assert 'asr.models()["qbmove_advanced"]' in text.replace("'", '"')
    assert "<table>" in specs._repr_html_()
