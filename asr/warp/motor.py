# mypy: ignore-errors
# (the kernels are Warp's language: annotations such as wp.array3d(dtype=F) are calls mypy cannot
# read, and the bodies follow Warp's typing, not Python's)
"""The motor sub-step in Warp: a hand-kept port of csrc/core/motor.h (stick-point friction, the
voltage drive, the linearly implicit Euler and trapezoidal sub-steps, the friction cases),
generic over the float type.

One Warp thread holds one instance, so the C lane code's selects become branches and its
all-lanes fast path (motor_advance) is the case analysis of motor_advance_cases, which the C
comments state gives the same result for every lane. Operations are written in the C formulas'
order; tests/warp/test_kernels.py compares the whole step with the C core on random states for
every model and mode, both schemes, friction on and off.

`build(F)` returns: friction(w, th, z, K) -> (w, tau_f); drive_voltage(u, dead_zone, v_supply)
-> (voltage, dV/du); Step, the struct motor_step (one motor's data for a sub-step); advance(th,
v, w, h, step) -> (th, v, w, tau_f), one sub-step of length h of one motor.
"""

import types
from typing import Any

from asr.core.ffi import lib
from asr.warp import springs
from asr.warp.runtime import warp

wp = warp()

EULER = wp.constant(int(lib.ASR_MOTOR_EULER))
TRAPEZOID = wp.constant(int(lib.ASR_MOTOR_TRAPEZOID))
EDGE_ALLOWANCE = 2.0**-20  # motor_band_edge: z - z 2^-20

_BUILT: dict[Any, types.SimpleNamespace] = {}


def build(F: Any) -> types.SimpleNamespace:
    """The motor functions for float type F, built once per type."""
    if F in _BUILT:
        return _BUILT[F]
    S = springs.build(F)

    @wp.func
    def friction(w: F, th: F, z: F, K: F):
        """motor_friction: the stick point follows th at distance z at most."""
        w_new = th - S.sat(th - w, z)
        return w_new, K * (th - w_new)

    @wp.func
    def drive_voltage(u: F, dz: F, vs: F):
        """motor_drive_voltage: (voltage, dV/du)."""
        us = S.sat(u, F(1.0))
        live = S.one_if(wp.abs(u) > dz)
        gain = F(0.0)
        if wp.abs(u) < F(1.0):
            gain = live * vs / (F(1.0) - dz)
        return live * vs * (us - dz * S.sign(u)) / (F(1.0) - dz), gain

    @wp.struct
    class Step:
        """motor_step: one motor's data for one sub-step (symbols of motor.h)."""

        J: F  # inertia, kg m^2
        torque: F  # F of motor.h: drive + load - damping torques at the current state, N m
        k: F  # their local stiffness, N m/rad
        c: F  # their local damping, N m s/rad
        r: F  # dF/dt from the link's motion, N m/s
        vel_max: F
        pos_min: F
        pos_max: F
        tau_fs: F  # static friction, N m
        K: F  # presliding stiffness, N m/rad
        z: F  # tau_fs / K, rad
        z_edge: F  # the band edge less the allowance, rad
        scheme: int

    @wp.func
    def update(th: F, v: F, h: F, m: Step, dF: F, kf: F, scheme: int):
        """motor_update: one linearly implicit sub-step under m.torque + dF, then the limits."""
        f = m.torque + dF
        vn = v
        tn = th
        if scheme == TRAPEZOID:
            kt = F(0.5) * m.k + kf
            vn = v + h * (f + F(0.5) * h * m.r - h * kt * v) / (
                m.J + F(0.5) * h * m.c + F(0.5) * h * h * kt
            )
            vn = S.sat(vn, m.vel_max)
            tn = th + F(0.5) * h * (v + vn)
        else:
            kt = m.k + kf
            vn = v + h * (f + h * m.r - h * kt * v) / (m.J + h * m.c + h * h * kt)
            vn = S.sat(vn, m.vel_max)
            tn = th + h * vn
        tc = S.clamp(tn, m.pos_min, m.pos_max)
        vout = vn
        if (tc > tn and vn < F(0.0)) or (tc < tn and vn > F(0.0)):
            vout = F(0.0)  # at a stop only the velocity that leaves it is kept
        return tc, vout

    @wp.func
    def advance(th: F, v: F, w: F, h: F, m: Step):
        """motor_advance_cases for one motor: (a) slide on, (b) stick, (c) slide; returns
        (th, v, w, tau_f)."""
        d0 = th - w
        s = S.sign(d0)
        if wp.abs(d0) >= m.z_edge:
            ta, va = update(th, v, h, m, -m.tau_fs * s, F(0.0), m.scheme)
            wa = ta - s * m.z
            if s * (ta - w) > m.z or m.z == F(0.0):
                return ta, va, wa, m.K * (ta - wa)
        tb, vb = update(th, v, h, m, -m.K * d0, m.K, EULER)
        d = tb - w
        if wp.abs(d) <= m.z:
            return tb, vb, w, m.K * d
        tc, vc = update(th, v, h, m, -m.tau_fs * S.sign(d), F(0.0), EULER)
        wc = tc - S.sat(tc - w, m.z)
        return tc, vc, wc, m.K * (tc - wc)

    ns = types.SimpleNamespace(
        friction=friction, drive_voltage=drive_voltage, Step=Step, advance=advance
    )
    _BUILT[F] = ns
    return ns
