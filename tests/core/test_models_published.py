"""Built-in compliance models against the numbers printed in the papers and docs/models.md,
their sign convention and their parameter checks.
"""

import numpy as np
import pytest

import asr
from tests.support.models import COMPLIANT, TH1, Q, _th2_grid, assert_matches, ref_qbmove_advanced

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
