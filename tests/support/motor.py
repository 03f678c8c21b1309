"""Toolbox defaults, batch builders and the independent references (closed forms, SciPy right-
hand sides, drive maps) that tests/core/test_motor_*.py share.

The core integrates the motors with a first-order (linearly implicit Euler) sub-step h, so its
global error against a continuous solution is O(h): tolerances in those tests are either a bound
on that error at a small h (1e-5 s) or a check that the error falls about tenfold when h does.
"""

import numpy as np

import asr

# Toolbox defaults (docs/models.md sec. 2 and 3).
J0, D0, KP0, KD0, FS0, KF0, TAU_MAX0 = 0.0233, 0.2698, 125.0, 4.5, 0.02, 1e3, 6.0
RTOL, ATOL = 1e-10, 1e-12


# ---------------------------------------------------------------------------- helpers


def sea(mode, n=1, max_substep=1e-3, scheme="euler", **params):
    """A batch of n linear-SEA joints; friction off and no deflection clamp unless given, so
    that the spring load on the motor is exactly k (q - th)."""
    p = {"friction": 0.0, "max_def": 100.0}
    p.update(params)
    return asr.Batch([asr.Joint("sea", mode, p)], n, max_substep=max_substep, motor_scheme=scheme)


def refs(r1, r2=0.0):
    return np.array([r1, r2], dtype=float)


def second_order(J, c, K, F, x0, v0, t):
    """Closed form of J x'' + c x' + K x = F, x(0) = x0, x'(0) = v0 (not critically damped)."""
    xss = F / K
    l1, l2 = np.roots([J, c, K]).astype(complex)
    a = (v0 - l2 * (x0 - xss)) / (l1 - l2)
    b = (x0 - xss) - a
    x = xss + np.real(a * np.exp(l1 * t) + b * np.exp(l2 * t))
    v = np.real(a * l1 * np.exp(l1 * t) + b * l2 * np.exp(l2 * t))
    return x, v


def dahl_rhs(fs, K):
    """Continuous Dahl / Hayward-Armstrong friction: returns (tau_f, dw/dt) for (th, v, w).
    The stick point w moves with the motor only while the presliding spring is at its limit
    and the motor moves outward."""
    z = fs / K

    def f(th, v, w):
        d = th - w
        dw = v if ((d >= z and v > 0) or (d <= -z and v < 0)) else 0.0
        return K * np.clip(d, -z, z), dw

    return f


def voltage(u, dz=0.3, vs=8.0):
    """Hand computation of the PWM / H-bridge map of [Parnenzini2015] (docs/models.md, qbmove): dead
    zone, saturation at |u| = 1, sign of u kept (the published plugin's sign bug is not copied)."""
    u = np.asarray(u, dtype=float)
    us = np.clip(u, -1.0, 1.0)
    return np.where(np.abs(u) > dz, vs * (us - dz * np.sign(u)) / (1.0 - dz), 0.0)
