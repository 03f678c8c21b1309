"""Built-in compliance models against the specification (docs/models.md, section 1).

Every expected value below is computed independently in this file: the closed forms of
docs/models.md re-implemented in NumPy, central finite differences, or the numbers printed in the
papers / docs/models.md. Nothing is compared against an earlier output of asr itself.
"""

import math

import numpy as np
import pytest
from conftest import require

import asr

BUILTIN = ("rigid", "sea", "sea_damped", "awas2", "bavs", "qbmove_advanced", "qbmove")
COMPLIANT = BUILTIN[1:]
TWO_PI = 2.0 * math.pi

# ---------------------------------------------------------------------------- references


def _sat(x, m):
    return np.minimum(np.maximum(x, -m), m)


def _count(*raws_and_limits):
    """Number of springs whose raw deflection is beyond the limit."""
    return sum((np.abs(r) > m).astype(int) for r, m in raws_and_limits)


def _zeros_like(x):
    return np.zeros(np.shape(x))


def ref_rigid(q, th1, th2, qd=0.0, th1d=0.0, th2d=0.0):
    z = np.zeros(np.broadcast_shapes(np.shape(q), np.shape(th1), np.shape(th2)))
    return dict(
        tau1=z,
        tau2=z,
        tau_link=z,
        stiffness=z,
        damping=z,
        load1=z,
        load2=z,
        defl1=z,
        defl2=z,
        clamped=z.astype(int),
    )


def ref_sea(q, th1, th2, qd=0.0, th1d=0.0, th2d=0.0, k=10.0, max_def=0.8):
    raw = q - th1 + 0.0 * th2
    phi = _sat(raw, max_def)
    tau1 = -k * phi
    z = _zeros_like(tau1)
    return dict(
        tau1=tau1,
        tau2=z,
        tau_link=tau1,
        stiffness=k + z,
        damping=z,
        load1=-tau1,
        load2=z,
        defl1=phi,
        defl2=z,
        clamped=_count((raw, max_def)),
    )


def ref_sea_damped(q, th1, th2, qd=0.0, th1d=0.0, th2d=0.0, Kt=188.0, Dt=0.5, max_def=np.inf):
    # [Kamedula2016] eq. 3: tau_t = Kt (th - q) + Dt (thd - qd) on the link, -tau_t on the motor
    raw = q - th1 + 0.0 * th2
    phi = _sat(raw, max_def)
    tau_t = Kt * (-phi) + Dt * (th1d - qd)
    z = _zeros_like(tau_t)
    return dict(
        tau1=tau_t,
        tau2=z,
        tau_link=tau_t,
        stiffness=Kt + z,
        damping=Dt + z,
        load1=-tau_t,
        load2=z,
        defl1=phi,
        defl2=z,
        clamped=_count((raw, max_def)),
    )


def ref_awas2(q, th1, th2, qd=0.0, th1d=0.0, th2d=0.0, Ks=10.0, L=0.05, r_t=0.015, max_def=0.3):
    s = th2
    raw = q - th1 + 0.0 * s
    phi = _sat(raw, max_def)
    G = (L / r_t) * s / (L - s)
    tau1 = -Ks * G**2 * np.sin(2.0 * phi)
    sigma = 2.0 * Ks * G**2 * np.cos(2.0 * phi)
    z = _zeros_like(tau1)
    return dict(
        tau1=tau1,
        tau2=z,
        tau_link=tau1,
        stiffness=sigma,
        damping=z,
        load1=-tau1,
        load2=z,
        defl1=phi,
        defl2=z,
        clamped=_count((raw, max_def)),
    )


def ref_bavs(
    q, th1, th2, qd=0.0, th1d=0.0, th2d=0.0, a=1.21e-6, b=2.38e-6, k=1.60e5, ke=8.71, max_def=0.27
):
    raw1, raw2 = th1 - q, th2 - q  # opposite deflection sign
    p1, p2 = _sat(raw1, max_def), _sat(raw2, max_def)
    tau1 = k * (b * np.exp(ke * p1) - a * np.exp(-ke * p1))
    tau2 = k * (a * np.exp(ke * p2) - b * np.exp(-ke * p2))
    sigma = (
        k
        * ke
        * (b * np.exp(ke * p1) + a * np.exp(-ke * p1) + a * np.exp(ke * p2) + b * np.exp(-ke * p2))
    )
    tau1, tau2, sigma = np.broadcast_arrays(tau1, tau2, sigma)
    return dict(
        tau1=tau1,
        tau2=tau2,
        tau_link=tau1 + tau2,
        stiffness=sigma,
        damping=_zeros_like(sigma),
        load1=-tau1,
        load2=-tau2,
        defl1=np.broadcast_to(p1, sigma.shape),
        defl2=np.broadcast_to(p2, sigma.shape),
        clamped=_count((raw1, max_def), (raw2, max_def)),
    )


def ref_qbmove_advanced(
    q,
    th1,
    th2,
    qd=0.0,
    th1d=0.0,
    th2d=0.0,
    k1=0.0019,
    a1=8.9992,
    k2=0.0019,
    a2=8.9992,
    max_def=0.8,
    kc=0.0,
):
    raw1, raw2 = q - th1, q - th2
    p1, p2 = _sat(raw1, max_def), _sat(raw2, max_def)
    tau1 = -k1 * np.sinh(a1 * p1)
    tau2 = -k2 * np.sinh(a2 * p2)
    sigma = a1 * k1 * np.cosh(a1 * p1) + a2 * k2 * np.cosh(a2 * p2)
    g = kc * (th1 - th2)  # motor-coupling spring
    tau1, tau2, sigma, g = np.broadcast_arrays(tau1, tau2, sigma, g)
    return dict(
        tau1=tau1,
        tau2=tau2,
        tau_link=tau1 + tau2,
        stiffness=sigma,
        damping=_zeros_like(sigma),
        load1=-tau1 - g,
        load2=-tau2 + g,
        defl1=np.broadcast_to(p1, sigma.shape),
        defl2=np.broadcast_to(p2, sigma.shape),
        clamped=_count((raw1, max_def), (raw2, max_def)),
    )


def ref_qbmove(q, th1, th2, qd=0.0, th1d=0.0, th2d=0.0, k=0.022, a=6.85, th_max=3.1497):
    # [Parnenzini2015]: tau_i = k sinh(a (q - th_i)) act on the link with a minus sign; no clamp
    raw1, raw2 = q - th1, q - th2
    tau1 = -k * np.sinh(a * raw1)
    tau2 = -k * np.sinh(a * raw2)
    sigma = a * k * np.cosh(a * raw1) + a * k * np.cosh(a * raw2)
    tau1, tau2, sigma = np.broadcast_arrays(tau1, tau2, sigma)
    return dict(
        tau1=tau1,
        tau2=tau2,
        tau_link=tau1 + tau2,
        stiffness=sigma,
        damping=_zeros_like(sigma),
        load1=-tau1,
        load2=-tau2,
        defl1=np.broadcast_to(raw1, sigma.shape),
        defl2=np.broadcast_to(raw2, sigma.shape),
        clamped=np.zeros(sigma.shape, dtype=int),
    )


REF = {
    "rigid": ref_rigid,
    "sea": ref_sea,
    "sea_damped": ref_sea_damped,
    "awas2": ref_awas2,
    "bavs": ref_bavs,
    "qbmove_advanced": ref_qbmove_advanced,
    "qbmove": ref_qbmove,
}


def refmap_closed(model, eq, preset, **p):
    """Reference maps of docs/models.md section 1."""
    eq, preset = np.asarray(eq, float), np.asarray(preset, float)
    if model in ("sea", "sea_damped"):
        return eq, None  # th1 = eq; preset unused
    if model == "awas2":
        return eq, preset  # th1 = eq, pivot s = preset
    if model in ("bavs", "qbmove_advanced"):
        return eq + preset, eq - preset
    if model == "qbmove":
        m = p.get("th_max", 3.1497)
        return np.clip(eq + preset, -m, m), np.clip(eq - preset, -m, m)
    raise KeyError(model)


FIELDS = ("tau1", "tau2", "tau_link", "stiffness", "damping", "load1", "load2", "defl1", "defl2")


def assert_matches(res, ref, rtol=1e-12, fields=FIELDS, clamped=True, what=""):
    for f in fields:
        actual = np.asarray(getattr(res, f) if not isinstance(res, dict) else res[f], float)
        expected = np.broadcast_to(np.asarray(ref[f], float), actual.shape)
        scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
        np.testing.assert_allclose(
            actual, expected, rtol=rtol, atol=rtol * scale, err_msg=f"{what} field {f}"
        )
    if clamped:
        actual = np.asarray(res.clamped if not isinstance(res, dict) else res["clamped"])
        np.testing.assert_array_equal(
            actual, np.broadcast_to(ref["clamped"], actual.shape), err_msg=f"{what} field clamped"
        )


# ---------------------------------------------------------------------------- grids

Q = np.linspace(-1.3, 1.3, 9)[:, None, None]
TH1 = np.linspace(-1.1, 0.9, 7)[None, :, None]
TH2 = np.linspace(-0.8, 1.2, 6)[None, None, :]
S_GRID = np.linspace(0.0, 0.046, 6)[None, None, :]  # awas2 pivot positions in [0, L)


def _th2_grid(model):
    return S_GRID if model == "awas2" else TH2


# Non-default parameter sets, all inside the valid ranges.
NONDEFAULT = {
    "rigid": {},
    "sea": {"k": 200.0, "max_def": 0.35},
    "sea_damped": {"Kt": 500.0, "Dt": 1.5, "max_def": 0.6},
    "awas2": {"Ks": 25.0, "L": 0.06, "r_t": 0.02, "max_def": 0.5},
    "bavs": {"a": 2.0e-6, "b": 3.1e-6, "k": 9.0e4, "ke": 7.5, "max_def": 0.4},
    "qbmove_advanced": {
        "k1": 0.01038,
        "a1": 6.257,
        "k2": 0.08918,
        "a2": 3.9,
        "max_def": 0.5,
        "kc": 0.7,
    },
    "qbmove": {"k": 0.05, "a": 5.0},
}


def _per_point_params(model, shape, rng):
    """Array-valued parameters, one value per grid point (inside the ranges)."""
    u = lambda lo, hi: rng.uniform(lo, hi, size=shape)  # noqa: E731
    return {
        "rigid": {},
        "sea": {"k": u(1.0, 400.0), "max_def": u(0.2, 1.5)},
        "sea_damped": {"Kt": u(100.0, 500.0), "Dt": u(0.0, 1.5), "max_def": u(0.3, 2.0)},
        # L above the largest pivot of S_GRID so every point stays valid
        "awas2": {
            "Ks": u(1.0, 30.0),
            "L": u(0.05, 0.08),
            "r_t": u(0.01, 0.03),
            "max_def": u(0.1, 0.78),
        },
        "bavs": {
            "a": u(0.5e-6, 3e-6),
            "b": u(1e-6, 4e-6),
            "k": u(5e4, 2e5),
            "ke": u(5.0, 10.0),
            "max_def": u(0.1, 0.5),
        },
        "qbmove_advanced": {
            "k1": u(0.001, 0.1),
            "a1": u(3.0, 9.0),
            "k2": u(0.001, 0.1),
            "a2": u(3.0, 9.0),
            "max_def": u(0.2, 1.0),
            "kc": u(0.0, 2.0),
        },
        "qbmove": {"k": u(0.01, 0.05), "a": u(4.0, 8.0)},
    }[model]


# ---------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("model", BUILTIN)
def test_closed_form_defaults(model):
    th2 = _th2_grid(model)
    res = asr.compliance(model, Q, TH1, th2)
    shape = np.broadcast_shapes(Q.shape, TH1.shape, th2.shape)
    for f in FIELDS + ("clamped",):
        assert np.shape(getattr(res, f)) == shape, f
    assert_matches(res, REF[model](Q, TH1, th2), what=f"{model} defaults")


@pytest.mark.parametrize("model", BUILTIN)
def test_closed_form_nondefault_params(model):
    th2 = _th2_grid(model)
    p = NONDEFAULT[model]
    res = asr.compliance(model, Q, TH1, th2, **p)
    assert_matches(res, REF[model](Q, TH1, th2, **p), what=f"{model} {p}")


@pytest.mark.parametrize("model", COMPLIANT)
def test_closed_form_array_valued_params(model):
    rng = np.random.default_rng(1234)
    th2 = _th2_grid(model)
    shape = np.broadcast_shapes(Q.shape, TH1.shape, th2.shape)
    p = _per_point_params(model, shape, rng)
    res = asr.compliance(model, Q, TH1, th2, **p)
    assert res.tau_link.shape == shape
    assert_matches(res, REF[model](Q, TH1, th2, **p), what=f"{model} per-point params")
    # a parameter that varies along one axis only broadcasts against the inputs
    name = asr.models()[model].params[0].name
    col = np.linspace(0.5, 2.0, Q.shape[0])[:, None, None] * asr.models()[model].params[0].default
    res = asr.compliance(model, Q, TH1, th2, **{name: col})
    assert_matches(res, REF[model](Q, TH1, th2, **{name: col}), what=f"{model} {name} column")


def test_sea_damped_velocities():
    qd = np.array([-2.0, 0.0, 0.7, 3.0])[:, None]
    th1d = np.array([-1.0, 0.0, 0.4, 5.0])[None, :]
    q, th1 = 0.21, -0.13
    for p in ({}, {"Kt": 100.0, "Dt": 0.3}, {"Kt": 500.0, "Dt": 1.5, "max_def": 0.2}):
        res = asr.compliance("sea_damped", q, th1, qd=qd, theta1_d=th1d, **p)
        assert_matches(res, ref_sea_damped(q, th1, 0.0, qd, th1d, **p), what=f"sea_damped {p}")
    # the damping is -d tau_link / d qd: finite difference
    h = 1e-4
    tp = asr.compliance("sea_damped", q, th1, qd=0.5 + h, theta1_d=0.2).tau_link
    tm = asr.compliance("sea_damped", q, th1, qd=0.5 - h, theta1_d=0.2).tau_link
    d = asr.compliance("sea_damped", q, th1, qd=0.5, theta1_d=0.2).damping
    np.testing.assert_allclose(-(tp - tm) / (2 * h), d, rtol=1e-8)
    # velocity grid with a full position grid and per-point parameters
    rng = np.random.default_rng(7)
    qd_g = rng.uniform(-3, 3, size=(9, 7, 6))
    th1d_g = rng.uniform(-3, 3, size=(9, 7, 6))
    p = _per_point_params("sea_damped", (9, 7, 6), rng)
    res = asr.compliance("sea_damped", Q, TH1, TH2, qd=qd_g, theta1_d=th1d_g, **p)
    assert_matches(
        res, ref_sea_damped(Q, TH1, TH2, qd_g, th1d_g, **p), what="sea_damped velocity grid"
    )


def test_rigid_has_no_spring():
    res = asr.compliance("rigid", Q, TH1, TH2, qd=1.0, theta1_d=2.0)
    for f in FIELDS:
        assert np.all(getattr(res, f) == 0.0), f
    assert np.all(res.clamped == 0)
    assert asr.models()["rigid"].nmotor == 0
    assert asr.models()["rigid"].params == ()


# ---------------------------------------------------------------------------- finite differences


FD_POINTS = {
    # (q, th1, th2, params): all deflections well inside max_def
    "sea": [(0.3, 0.1, 0.0, {}), (-0.5, 0.2, 0.0, {"k": 300.0})],
    "sea_damped": [(0.3, 0.1, 0.0, {}), (-0.1, 0.3, 0.0, {"Kt": 500.0, "max_def": 0.7})],
    "awas2": [
        (0.1, 0.0, 0.005, {}),
        (0.25, 0.05, 0.04, {}),
        (-0.2, 0.05, 0.03, {"max_def": 0.7}),
        (0.6, 0.0, 0.02, {"max_def": 0.7, "Ks": 3.0}),
    ],
    "bavs": [
        (0.0, 0.0, 0.0, {}),
        (0.1, 0.2, -0.1, {}),
        (-0.05, 0.1, 0.05, {}),
        (0.2, 0.3, 0.1, {"ke": 6.0, "max_def": 0.5}),
    ],
    "qbmove_advanced": [
        (0.0, 0.2, -0.2, {}),
        (0.3, 0.7, -0.2, {}),
        (-0.4, 0.0, -0.6, {}),
        (0.1, 0.4, -0.3, {"k1": 0.1015, "a1": 3.383, "k2": 0.05944, "a2": 7.011, "kc": 1.0}),
    ],
    "qbmove": [(0.0, 0.3, -0.3, {}), (0.5, 0.0, 1.2, {}), (-1.0, 0.4, -0.2, {"a": 5.0})],
}


@pytest.mark.parametrize("model", sorted(FD_POINTS))
def test_stiffness_is_minus_dtau_dq(model):
    h = 1e-6
    for q, th1, th2, p in FD_POINTS[model]:
        r0 = asr.compliance(model, q, th1, th2, **p)
        assert int(r0.clamped) == 0
        tp = asr.compliance(model, q + h, th1, th2, **p).tau_link
        tm = asr.compliance(model, q - h, th1, th2, **p).tau_link
        fd = -(tp - tm) / (2 * h)
        scale = max(abs(float(r0.stiffness)), 1e-3)
        assert abs(float(r0.stiffness) - float(fd)) <= 1e-6 * scale, (model, q, th1, th2, p)
        assert float(r0.stiffness) > 0.0


def test_stiffness_fd_on_a_grid():
    """-d tau_link/dq by finite differences on whole grids, away from the clamp."""
    h = 1e-6
    q = np.linspace(-0.12, 0.12, 11)[:, None]
    th = np.linspace(-0.1, 0.1, 5)[None, :]
    for model, th1, th2 in (
        ("sea", th, 0.0),
        ("awas2", th, 0.03),
        ("bavs", th, -th),
        ("qbmove_advanced", th + 0.3, th - 0.3),
        ("qbmove", th + 0.5, th),
    ):
        r = asr.compliance(model, q, th1, th2)
        assert np.all(r.clamped == 0)
        fd = -(
            asr.compliance(model, q + h, th1, th2).tau_link
            - asr.compliance(model, q - h, th1, th2).tau_link
        ) / (2 * h)
        np.testing.assert_allclose(r.stiffness, fd, rtol=1e-6, err_msg=model)


# ---------------------------------------------------------------------------- reference maps


EQ = np.linspace(-1.0, 1.0, 5)[:, None]


def test_reference_map_sea():
    pre = np.array([0.0, 0.3, -2.0])[None, :]
    for model in ("sea", "sea_damped"):
        th1, _ = asr.reference_map(model, EQ, pre)
        np.testing.assert_array_equal(th1, np.broadcast_to(EQ, (5, 3)))


def test_reference_map_awas2():
    pre = np.array([0.0, 0.005, 0.04, 0.0499])[None, :]
    th1, th2 = asr.reference_map("awas2", EQ, pre)
    np.testing.assert_array_equal(th1, np.broadcast_to(EQ, (5, 4)))
    np.testing.assert_array_equal(th2, np.broadcast_to(pre, (5, 4)))
    # the pivot must lie in [0, L): s >= L is singular and rejected
    for bad in (0.05, 0.07, -0.001):
        with pytest.raises(ValueError):
            asr.reference_map("awas2", 0.0, bad)
    with pytest.raises(ValueError):
        asr.reference_map("awas2", 0.0, 0.055, L=0.055)
    th1, th2 = asr.reference_map("awas2", 0.2, 0.055, L=0.06)
    assert float(th1) == 0.2 and float(th2) == 0.055


@pytest.mark.parametrize("model", ("bavs", "qbmove_advanced"))
def test_reference_map_antagonistic(model):
    pre = np.array([0.0, 0.001, 0.2, 0.22, 0.6])[None, :]
    th1, th2 = asr.reference_map(model, EQ, pre)
    np.testing.assert_allclose(th1, EQ + pre, rtol=0, atol=1e-15)
    np.testing.assert_allclose(th2, EQ - pre, rtol=0, atol=1e-15)


def test_reference_map_qbmove_clamped():
    eq = np.array([-3.0, -1.0, 0.0, 1.0, 2.9, 3.1])[:, None]
    pre = np.array([0.0, 0.2, 0.5, 1.0])[None, :]
    th1, th2 = asr.reference_map("qbmove", eq, pre)
    np.testing.assert_allclose(th1, np.clip(eq + pre, -3.1497, 3.1497), rtol=0, atol=1e-15)
    np.testing.assert_allclose(th2, np.clip(eq - pre, -3.1497, 3.1497), rtol=0, atol=1e-15)
    assert np.max(np.abs(th1)) == pytest.approx(3.1497, abs=1e-15)
    assert np.max(np.abs(th2)) == pytest.approx(3.1497, abs=1e-15)
    assert np.all(np.abs(th1) <= 3.1497) and np.all(np.abs(th2) <= 3.1497)
    # no factor 2 (the paper's 2(q + s) counts half-resolution ticks)
    th1, th2 = asr.reference_map("qbmove", 0.4, 0.1)
    assert float(th1) == pytest.approx(0.5, abs=1e-15)
    assert float(th2) == pytest.approx(0.3, abs=1e-15)


@pytest.mark.parametrize(
    "model,preset",
    [
        ("sea", 0.0),
        ("sea_damped", 0.0),
        ("awas2", 0.02),
        ("bavs", 0.1),
        ("qbmove_advanced", 0.3),
        ("qbmove", 0.2),
    ],
)
def test_equilibrium_of_the_map_has_zero_torque(model, preset):
    """The link torque vanishes at q = eq with the motors where the map puts them."""
    eq = np.linspace(-0.6, 0.6, 7)
    th1, th2 = asr.reference_map(model, eq, preset)
    r = asr.compliance(model, eq, th1, th2)
    np.testing.assert_allclose(r.tau_link, 0.0, atol=1e-12)


# ---------------------------------------------------------------------------- clamping


def test_clamp_sea():
    for k, m in ((10.0, 0.8), (200.0, 0.35)):
        raw = np.array([-(m + 0.5), -(m + 0.01), m + 0.01, m + 0.3, m + 1.0])
        th1 = 0.2
        r = asr.compliance("sea", th1 + raw, th1, k=k, max_def=m)
        np.testing.assert_allclose(r.tau1, -k * np.sign(raw) * m, rtol=1e-14)
        np.testing.assert_allclose(r.stiffness, k, rtol=1e-14)
        np.testing.assert_allclose(r.defl1, np.sign(raw) * m, rtol=1e-14)
        np.testing.assert_array_equal(r.clamped, 1)
        inside = asr.compliance("sea", th1 + 0.9 * m, th1, k=k, max_def=m)
        assert int(inside.clamped) == 0
        assert float(inside.tau1) == pytest.approx(-k * 0.9 * m, rel=1e-14)


def test_clamp_sea_damped():
    # default: no deflection limit
    r = asr.compliance("sea_damped", 5.0, 0.0)
    assert int(r.clamped) == 0 and float(r.tau1) == pytest.approx(-188.0 * 5.0, rel=1e-14)
    assert asr.models()["sea_damped"].param("max_def").default == np.inf
    r = asr.compliance("sea_damped", np.array([0.5, -0.9]), 0.0, qd=0.4, theta1_d=-0.1, max_def=0.2)
    np.testing.assert_allclose(
        r.tau1, -188.0 * np.array([0.2, -0.2]) + 0.5 * (-0.1 - 0.4), rtol=1e-14
    )
    np.testing.assert_allclose(r.defl1, [0.2, -0.2], rtol=1e-14)
    np.testing.assert_array_equal(r.clamped, 1)


def test_clamp_awas2():
    Ks, L, r_t, m = 10.0, 0.05, 0.015, 0.3
    s = 0.03
    G = (L / r_t) * s / (L - s)
    raw = np.array([-0.7, -0.31, 0.31, 0.5, 0.75])
    r = asr.compliance("awas2", 0.1 + raw, 0.1, s)
    np.testing.assert_allclose(r.tau1, -Ks * G**2 * np.sin(2 * np.sign(raw) * m), rtol=1e-13)
    np.testing.assert_allclose(r.stiffness, 2 * Ks * G**2 * np.cos(2 * m), rtol=1e-13)
    np.testing.assert_allclose(r.defl1, np.sign(raw) * m, rtol=1e-14)
    np.testing.assert_array_equal(r.clamped, 1)
    # torque saturates: identical beyond the limit
    assert np.ptp(r.tau1[raw > 0]) == 0.0 and np.ptp(r.tau1[raw < 0]) == 0.0


def test_clamp_bavs():
    m = 0.27
    # spring 1 beyond the limit, spring 2 inside; then both beyond
    r = asr.compliance("bavs", 0.0, np.array([0.4, 0.6, -0.5]), np.array([0.1, 0.1, -0.1]))
    np.testing.assert_array_equal(r.clamped, [1, 1, 1])
    np.testing.assert_allclose(r.defl1, [m, m, -m], rtol=1e-14)
    np.testing.assert_allclose(r.defl2, [0.1, 0.1, -0.1], rtol=1e-14)
    k, a, b, ke = 1.6e5, 1.21e-6, 2.38e-6, 8.71
    t1 = k * (b * np.exp(ke * m) - a * np.exp(-ke * m))
    np.testing.assert_allclose(r.tau1[:2], t1, rtol=1e-13)
    r2 = asr.compliance("bavs", 0.0, np.array([0.3, 0.9]), np.array([-0.3, -0.9]))
    np.testing.assert_array_equal(r2.clamped, [2, 2])
    sigma_clamp = (
        k
        * ke
        * (b * np.exp(ke * m) + a * np.exp(-ke * m) + a * np.exp(-ke * m) + b * np.exp(ke * m))
    )
    np.testing.assert_allclose(r2.stiffness, sigma_clamp, rtol=1e-13)
    assert r2.tau_link[0] == r2.tau_link[1]


def test_clamp_qbmove_advanced():
    m, k, a = 0.8, 0.0019, 8.9992
    q = np.array([1.0, 1.2, -1.2])
    r = asr.compliance("qbmove_advanced", q, 0.0, 0.5)
    raw2 = q - 0.5  # 0.5 (inside), 0.7 (inside), -1.7 (clamped)
    np.testing.assert_array_equal(r.clamped, [1, 1, 2])
    np.testing.assert_allclose(r.defl1, np.sign(q) * m, rtol=1e-14)
    np.testing.assert_allclose(r.defl2, np.clip(raw2, -m, m), rtol=1e-14)
    np.testing.assert_allclose(r.tau1, -k * np.sinh(a * np.sign(q) * m), rtol=1e-13)
    np.testing.assert_allclose(
        r.stiffness, a * k * np.cosh(a * m) + a * k * np.cosh(a * np.clip(raw2, -m, m)), rtol=1e-13
    )


def test_qbmove_has_no_clamp():
    k, a = 0.022, 6.85
    raw = np.array([-2.0, -1.0, 0.9, 1.7, 2.5])
    r = asr.compliance("qbmove", raw, 0.0, -raw)
    np.testing.assert_array_equal(r.clamped, 0)
    np.testing.assert_allclose(r.defl1, raw, rtol=1e-14)
    np.testing.assert_allclose(r.defl2, 2 * raw, rtol=1e-14)
    np.testing.assert_allclose(r.tau1, -k * np.sinh(a * raw), rtol=1e-12)
    np.testing.assert_allclose(r.tau2, -k * np.sinh(a * 2 * raw), rtol=1e-12)
    np.testing.assert_allclose(
        r.stiffness, a * k * (np.cosh(a * raw) + np.cosh(2 * a * raw)), rtol=1e-12
    )


# ---------------------------------------------------------------------------- published figures


def _printed(x, sig):
    return float(f"{x:.{sig}g}")


def test_published_qbmove_advanced_stiffness():
    for preset, printed, sig in (
        (0.0, 0.0342, 3),
        (0.2, 0.106, 3),
        (0.4, 0.626, 3),
        (0.6, 3.78, 3),
    ):
        for eq in (0.0, 0.5, -0.3):
            th1, th2 = asr.reference_map("qbmove_advanced", eq, preset)
            r = asr.compliance("qbmove_advanced", eq, th1, th2)
            assert _printed(float(r.stiffness), sig) == printed, (preset, float(r.stiffness))
            assert abs(float(r.tau_link)) < 1e-12
    # stiffness grows with the preset
    th1, th2 = asr.reference_map("qbmove_advanced", 0.0, np.linspace(0, 0.6, 13))
    s = asr.compliance("qbmove_advanced", 0.0, th1, th2).stiffness
    assert np.all(np.diff(s) > 0)


def test_published_bavs_pretension():
    q = np.array([-0.4, 0.0, 0.3])
    r = asr.compliance("bavs", q, q, q)  # zero deflection of both springs
    np.testing.assert_array_equal(np.round(r.tau1, 4), 0.1872)
    np.testing.assert_array_equal(np.round(r.tau2, 4), -0.1872)
    np.testing.assert_allclose(r.tau1, 1.6e5 * (2.38e-6 - 1.21e-6), rtol=1e-12)
    np.testing.assert_allclose(r.tau_link, 0.0, atol=1e-12)
    np.testing.assert_array_equal(np.round(r.stiffness, 3), 10.006)
    # soft / stiff presets of the paper: the stiff one is stiffer
    soft = asr.compliance("bavs", 0.0, *asr.reference_map("bavs", 0.0, 0.001)).stiffness
    stiff = asr.compliance("bavs", 0.0, *asr.reference_map("bavs", 0.0, 0.22)).stiffness
    assert float(stiff) > float(soft) > 10.0


def test_published_qbmove_stiffness():
    th = np.array([-1.0, 0.0, 0.5])
    r = asr.compliance("qbmove", th, th, th)
    np.testing.assert_array_equal(np.round(r.stiffness, 4), 0.3014)
    np.testing.assert_allclose(r.stiffness, 2 * 0.022 * 6.85, rtol=1e-12)


def test_published_awas2_soft_vs_stiff():
    soft = asr.compliance("awas2", 0.0, 0.0, 0.005)
    stiff = asr.compliance("awas2", 0.0, 0.0, 0.04)
    G_soft = (0.05 / 0.015) * 0.005 / 0.045
    G_stiff = (0.05 / 0.015) * 0.04 / 0.01
    assert float(soft.stiffness) == pytest.approx(2 * 10.0 * G_soft**2, rel=1e-12)
    assert float(stiff.stiffness) == pytest.approx(2 * 10.0 * G_stiff**2, rel=1e-12)
    assert float(stiff.stiffness) > 100 * float(soft.stiffness)
    s = np.linspace(0.0, 0.049, 50)
    sig = asr.compliance("awas2", 0.0, 0.0, s).stiffness
    assert sig[0] == 0.0 and np.all(np.diff(sig) > 0)


ILC = {
    # docs/models.md: the paper's printed names are swapped; in the formula's terms
    1: {"k1": 0.01038, "a1": 6.257, "k2": 0.08918, "a2": 3.9},
    2: {"k1": 0.1015, "a1": 3.383, "k2": 0.05944, "a2": 7.011},
}


@pytest.mark.parametrize("joint", (1, 2))
def test_ilc_identified_parameters(joint):
    p = ILC[joint]
    eq = np.linspace(0.0, 0.8, 5)[:, None]
    th1, th2 = asr.reference_map("qbmove_advanced", eq, 0.2, **p)
    q = eq + np.linspace(-0.3, 0.3, 7)[None, :]
    r = asr.compliance("qbmove_advanced", q, th1, th2, **p)
    p1, p2 = q - th1, q - th2
    tau1 = -p["k1"] * np.sinh(p["a1"] * p1)
    tau2 = -p["k2"] * np.sinh(p["a2"] * p2)
    sigma = p["a1"] * p["k1"] * np.cosh(p["a1"] * p1) + p["a2"] * p["k2"] * np.cosh(p["a2"] * p2)
    np.testing.assert_allclose(r.tau1, tau1, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r.tau2, tau2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r.tau_link, tau1 + tau2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r.stiffness, sigma, rtol=1e-12)
    # with this reading the preset changes the stiffness substantially
    s0 = asr.compliance(
        "qbmove_advanced", 0.0, *asr.reference_map("qbmove_advanced", 0.0, 0.0, **p), **p
    ).stiffness
    s2 = asr.compliance(
        "qbmove_advanced", 0.0, *asr.reference_map("qbmove_advanced", 0.0, 0.2, **p), **p
    ).stiffness
    assert float(s2) > 1.1 * float(s0)


# ---------------------------------------------------------------------------- sign convention


@pytest.mark.parametrize(
    "model,preset",
    [
        ("sea", 0.0),
        ("sea_damped", 0.0),
        ("awas2", 0.02),
        ("bavs", 0.1),
        ("qbmove_advanced", 0.3),
        ("qbmove", 0.2),
    ],
)
def test_link_torque_is_restoring(model, preset):
    eq = 0.4
    th1, th2 = asr.reference_map(model, eq, preset)
    d = np.array([-0.2, -0.05, -0.001, 0.001, 0.05, 0.2])
    r = asr.compliance(model, eq + d, th1, th2)
    assert np.all(np.sign(r.tau_link) == -np.sign(d)), r.tau_link
    assert np.all(r.stiffness > 0)
    # moving the motors moves the equilibrium: the link is pulled toward them
    th1b, th2b = asr.reference_map(model, eq + 0.1, preset)
    assert float(asr.compliance(model, eq, th1b, th2b).tau_link) > 0
    if model == "sea_damped":
        # damping resists link velocity relative to the motor
        r = asr.compliance(model, eq, th1, qd=np.array([-1.0, 1.0]))
        assert r.tau_link[0] > 0 > r.tau_link[1]


@pytest.mark.parametrize("model", COMPLIANT)
def test_motor_loads_are_spring_reactions(model):
    th2 = _th2_grid(model)
    r = asr.compliance(model, Q, TH1, th2)
    np.testing.assert_allclose(r.load1, -r.tau1, rtol=0, atol=0)
    np.testing.assert_allclose(r.load2, -r.tau2, rtol=0, atol=0)
    np.testing.assert_allclose(r.tau_link, r.tau1 + r.tau2, rtol=1e-15, atol=0)


def test_qbmove_advanced_coupling_spring_loads():
    kc = np.array([0.0, 0.5, 3.0])[:, None, None, None]
    q = np.linspace(-0.5, 0.5, 4)[None, :, None, None]
    th1 = np.array([-0.3, 0.1, 0.6])[None, None, :, None]
    th2 = np.array([-0.5, 0.0, 0.4])[None, None, None, :]
    r = asr.compliance("qbmove_advanced", q, th1, th2, kc=kc)
    ref = ref_qbmove_advanced(q, th1, th2, kc=kc)
    assert_matches(r, ref, what="coupling")
    g = kc * (th1 - th2)
    np.testing.assert_allclose(r.load1, -r.tau1 - g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r.load2, -r.tau2 + g, rtol=1e-12, atol=1e-15)
    # the coupling spring acts between the motors only: the link does not feel it
    r0 = asr.compliance("qbmove_advanced", q, th1, th2)
    np.testing.assert_array_equal(r.tau_link, np.broadcast_to(r0.tau_link, r.tau_link.shape))
    np.testing.assert_array_equal(r.stiffness, np.broadcast_to(r0.stiffness, r.tau_link.shape))


# ---------------------------------------------------------------------------- parameter checks


def test_parameters_are_validated():
    with pytest.raises(ValueError, match="k"):
        asr.compliance("sea", 0.1, 0.0, k=-1.0)
    with pytest.raises(ValueError, match="k"):
        asr.compliance("sea", 0.1, 0.0, k=0.0)
    with pytest.raises(ValueError, match="max_def"):
        asr.compliance("sea", 0.1, 0.0, max_def=np.array([0.5, -0.1]))
    with pytest.raises(ValueError, match="nope"):
        asr.compliance("sea", 0.1, 0.0, nope=1.0)
    with pytest.raises(ValueError):
        asr.compliance("no_such_model", 0.1, 0.0)
    # awas2: the pivot must stay in [0, L)
    for s in (0.05, 0.06, -0.01):
        with pytest.raises(ValueError):
            asr.compliance("awas2", 0.1, 0.0, s)
    with pytest.raises(ValueError):
        asr.compliance("awas2", 0.1, 0.0, np.array([0.01, 0.05]))
    with pytest.raises(ValueError, match="max_def"):
        asr.compliance("awas2", 0.1, 0.0, 0.01, max_def=1.0)  # beyond pi/4


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


# ---------------------------------------------------------------------------- in a Batch


def _batch_grid(model, n, rng):
    q = rng.uniform(-1.2, 1.2, n)
    th1 = rng.uniform(-1.0, 1.0, n)
    if model == "awas2":
        th2 = rng.uniform(0.0, 0.045, n)
    elif model in ("sea", "sea_damped"):
        th2 = np.zeros(n)  # single-motor joints: the second motor does not exist
    else:
        th2 = rng.uniform(-1.0, 1.0, n)
    return q, th1, th2


@pytest.mark.parametrize("model", COMPLIANT)
@pytest.mark.parametrize("variant", ("defaults", "nondefault", "per_instance"))
def test_batch_mode2_closed_form(model, variant):
    rng = np.random.default_rng(99)
    n = 40
    q, th1, th2 = _batch_grid(model, n, rng)
    qd = rng.uniform(-2, 2, n)
    params = {
        "defaults": {},
        "nondefault": dict(NONDEFAULT[model]),
        "per_instance": _per_point_params(model, (n,), rng),
    }[variant]
    jparams = dict(params)
    if model == "qbmove":
        jparams["link_friction"] = 0.0  # isolate the springs (shaft friction tested below)
    b = asr.Batch([asr.Joint(model, 2, jparams)], n)
    refs = np.stack([th1, th2], axis=-1)[:, None, :]
    b.reset(q[:, None], refs)
    out = b.step(q[:, None], qd[:, None], refs, 1e-3)
    ref = REF[model](q, th1, th2, qd, 0.0, 0.0, **params)
    got = {
        "tau1": b.tau_el1[:, 0],
        "tau2": b.tau_el2[:, 0],
        "stiffness": b.stiffness[:, 0],
        "tau_link": b.tau_link[:, 0],
        "defl1": b.defl1[:, 0],
        "defl2": b.defl2[:, 0],
        "clamped": b.clamped[:, 0],
    }
    assert_matches(
        got,
        ref,
        fields=("tau1", "tau2", "stiffness", "tau_link", "defl1", "defl2"),
        what=f"batch {model} {variant}",
    )
    np.testing.assert_array_equal(got["clamped"], ref["clamped"])
    np.testing.assert_allclose(
        np.asarray(out)[:, 0],
        ref["tau_link"],
        rtol=1e-12,
        atol=1e-12 * max(1.0, np.max(np.abs(ref["tau_link"]))),
    )
    # motors are ideal position sources: they sit exactly at the references
    np.testing.assert_array_equal(b.th1[:, 0], th1)
    if model != "sea" and model != "sea_damped":
        np.testing.assert_array_equal(b.th2[:, 0], th2)
    assert np.all(b.status == 0)


@pytest.mark.parametrize(
    "model,preset",
    [("sea", 0.0), ("awas2", 0.03), ("bavs", 0.15), ("qbmove_advanced", 0.4), ("qbmove", 0.3)],
)
def test_batch_mode3_maps_then_closed_form(model, preset):
    n = 12
    eq = np.linspace(-3.0, 3.0, n) if model == "qbmove" else np.linspace(-0.8, 0.8, n)
    q = eq + np.linspace(-0.3, 0.25, n)
    jp = {"link_friction": 0.0} if model == "qbmove" else {}
    b = asr.Batch([asr.Joint(model, 3, jp)], n)
    refs = np.stack([eq, np.full(n, preset)], axis=-1)[:, None, :]
    b.reset(q[:, None], refs)
    b.step(q[:, None], 0.0, refs, 2e-3)
    th1, th2 = refmap_closed(model, eq, preset)
    np.testing.assert_allclose(b.th1[:, 0], th1, rtol=0, atol=1e-15)
    if th2 is None:
        th2 = np.zeros(n)
    else:
        np.testing.assert_allclose(b.th2[:, 0], th2, rtol=0, atol=1e-15)
    ref = REF[model](q, th1, th2)
    got = {
        "tau1": b.tau_el1[:, 0],
        "tau2": b.tau_el2[:, 0],
        "stiffness": b.stiffness[:, 0],
        "tau_link": b.tau_link[:, 0],
    }
    assert_matches(got, ref, fields=tuple(got), clamped=False, what=f"mode 3 {model}")


def test_batch_sea_damped_position_source_velocity():
    """Mode 2: a motor that jumps from r0 to r1 over dt moves at (r1 - r0)/dt, which enters the
    damper of [Kamedula2016] eq. 3."""
    n, dt = 5, 1e-3
    r0 = np.linspace(-0.2, 0.2, n)
    r1 = r0 + np.linspace(-0.01, 0.02, n)
    q, qd = np.full(n, 0.05), np.linspace(-1, 1, n)
    b = asr.Batch([asr.Joint("sea_damped", 2, {"Dt": 0.3})], n)
    b.reset(q[:, None], np.stack([r0, 0 * r0], -1)[:, None, :])
    b.step(q[:, None], qd[:, None], np.stack([r1, 0 * r1], -1)[:, None, :], dt)
    th1d = (r1 - r0) / dt
    expected = 188.0 * (r1 - q) + 0.3 * (th1d - qd)
    np.testing.assert_allclose(b.tau_link[:, 0], expected, rtol=1e-12, atol=1e-12)


def test_batch_qbmove_shaft_friction():
    """qbmove: tau_link = -tau1 - tau2 - tau_friction_shaft, static friction 0.01 N m with a
    presliding width of 0.03 rad on the output shaft."""
    n = 4
    d = np.array([0.01, -0.02, 0.1, -0.3])  # link moved from q0 = 0 by d
    b = asr.Batch([asr.Joint("qbmove", 2, {})], n)
    refs = np.zeros((n, 1, 2))
    b.reset(0.0, refs)
    b.step(d[:, None], 0.0, refs, 1e-3)
    tau_f = (0.01 / 0.03) * np.clip(d, -0.03, 0.03)
    elastic = ref_qbmove(d, 0.0, 0.0)["tau_link"]
    np.testing.assert_allclose(b.tau_fq[:, 0], tau_f, rtol=1e-12)
    np.testing.assert_allclose(b.tau_link[:, 0], elastic - tau_f, rtol=1e-12, atol=1e-15)
    assert np.all(np.abs(b.tau_fq) <= 0.01 + 1e-15)


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
    from dashboard import references

    for model in BUILTIN:
        assert references.preset_spec(model) == asr.models()[model].preset.as_dict()


def test_docs_preset_table_is_the_model_definitions():
    import os

    path = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "models.md")
    with open(path, encoding="utf-8") as f:
        docs = f.read()
    from asr.models import preset_table

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
