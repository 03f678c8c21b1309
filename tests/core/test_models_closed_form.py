"""Built-in compliance models against their closed forms (docs/models.md, section 1).

Every expected value is computed independently: the closed forms re-implemented in NumPy
(tests/support/models.py) and central finite differences; the reference maps and the clamping
of each model.
"""

import numpy as np
import pytest

import asr
from tests.support.models import (
    BUILTIN,
    COMPLIANT,
    FIELDS,
    NONDEFAULT,
    REF,
    TH1,
    TH2,
    Q,
    _per_point_params,
    _th2_grid,
    assert_matches,
    ref_sea_damped,
)

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
