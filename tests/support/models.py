"""Independent references for the built-in compliance models (tests/core/test_models_*.py).

The closed forms of docs/models.md section 1 re-implemented in NumPy, the reference maps, the
grids they are evaluated on and the non-default parameter sets. Nothing here is an earlier output
of asr itself.
"""

import math

import numpy as np

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
