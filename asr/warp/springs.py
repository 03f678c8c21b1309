# mypy: ignore-errors
# (the kernels are Warp's language: annotations such as wp.array3d(dtype=F) are calls mypy cannot
# read, and the bodies follow Warp's typing, not Python's)
"""The built-in compliance models and reference maps in Warp: a hand-kept port of
csrc/core/springs.h (and of the lane operations of csrc/core/lanes.h they use), generic over the
float type.

Each formula performs the IEEE operations of the C lane formula in the same order (no fused
multiply-add is written; selects of the C code become branches), so that in float64 on Warp's
CPU device a model gives the C core's bits up to the last-place differences of libm's sin/cos
(AwAS-II) between compilers. The exponential is the C core's own (lanes.h lane_exp: argument
reduction by ln 2 and a degree-13 Taylor polynomial, 2^n applied in two exact halves) in float64,
Warp's exp in float32. tests/warp/test_kernels.py compares the whole step (asr.warp.batch) with
the C core on random states for every model and mode.

Nothing of the C tables is retyped here: parameter indices come from the models' specs
(asr.core.models: common parameters first, then the model's own by name), the models' order from
asr.core.models.BUILTIN_MODELS.

`build(F)` returns the Warp functions for the float type F (wp.float64 or wp.float32):
spring(kind, p, prow, j, q, qd, th1, th2, th1d, th2d) -> the 12 real outputs of asr_elastic_out
(tau1, tau2, stiffness, damping, load1, load2, kload1, kload2, cload1, cload2, defl1, defl2), the
clamp count and a flag (1: the model is undefined there, ASR_ERR_RANGE); refmap(kind, p, prow, j,
eq, preset) -> (th1, th2, flag); and the lane operations clamp, sat, sign, one_if. p is a joint
parameter table (rows, J, n_param) indexed [prow, j, k], k as asr.Batch orders parameters.
"""

import math
import types
from typing import Any

from asr.core.ffi import lib
from asr.core.models import BUILTIN_MODELS, get_model
from asr.warp.runtime import warp

wp = warp()

# The spring kinds, as csrc/core/springs.h numbers them: 0 a user model, then the built-in models in
# asr.core.models.BUILTIN_MODELS order.
KIND: dict[str, int] = {name: k + 1 for k, name in enumerate(BUILTIN_MODELS)}


def param_index(model: str, name: str) -> int:
    """Index of parameter `name` of built-in `model` in a joint's parameter row (the common
    parameters first, then the model's own, as asr.Batch orders them)."""
    names = [p.name for p in get_model(model).spec.all_params]
    return names.index(name)


def _c(value: float) -> Any:
    return wp.constant(value)


K_RIGID = _c(KIND["rigid"])
K_SEA = _c(KIND["sea"])
K_SEA_DAMPED = _c(KIND["sea_damped"])
K_AWAS2 = _c(KIND["awas2"])
K_BAVS = _c(KIND["bavs"])
K_QBA = _c(KIND["qbmove_advanced"])
K_QB = _c(KIND["qbmove"])

SEA_K = _c(param_index("sea", "k"))
SEA_MAX_DEF = _c(param_index("sea", "max_def"))
SD_KT = _c(param_index("sea_damped", "Kt"))
SD_DT = _c(param_index("sea_damped", "Dt"))
SD_MAX_DEF = _c(param_index("sea_damped", "max_def"))
AW_KS = _c(param_index("awas2", "Ks"))
AW_L = _c(param_index("awas2", "L"))
AW_R_T = _c(param_index("awas2", "r_t"))
AW_MAX_DEF = _c(param_index("awas2", "max_def"))
BV_A = _c(param_index("bavs", "a"))
BV_B = _c(param_index("bavs", "b"))
BV_K = _c(param_index("bavs", "k"))
BV_KE = _c(param_index("bavs", "ke"))
BV_MAX_DEF = _c(param_index("bavs", "max_def"))
QA_K1 = _c(param_index("qbmove_advanced", "k1"))
QA_A1 = _c(param_index("qbmove_advanced", "a1"))
QA_K2 = _c(param_index("qbmove_advanced", "k2"))
QA_A2 = _c(param_index("qbmove_advanced", "a2"))
QA_MAX_DEF = _c(param_index("qbmove_advanced", "max_def"))
QA_KC = _c(param_index("qbmove_advanced", "kc"))
QB_K = _c(param_index("qbmove", "k"))
QB_A = _c(param_index("qbmove", "a"))
QB_TH_MAX = _c(param_index("qbmove", "th_max"))

assert lib.ASR_NCOMMON == len(get_model("sea").spec.common)

# lane_exp's constants (csrc/core/lanes.h), as Python doubles (exact in a float64 kernel)
_LOG2E = 1.4426950408889634074
_SHIFTER = 6755399441055744.0  # 0x1.8p52
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_FACT = tuple(1.0 / math.factorial(k) for k in range(2, 14))  # 1/2!, ..., 1/13!

_BUILT: dict[Any, types.SimpleNamespace] = {}


def build(F: Any) -> types.SimpleNamespace:
    """The model functions for float type F (wp.float64 or wp.float32), built once per type."""
    if F in _BUILT:
        return _BUILT[F]
    c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13 = _INV_FACT

    @wp.func
    def clamp(x: F, lo: F, hi: F) -> F:
        """lane_clamp: min(max(x, lo), hi) with a NaN x kept."""
        y = x
        if x < lo:
            y = lo
        if y > hi:
            y = hi
        return y

    @wp.func
    def sat(x: F, m: F) -> F:
        return clamp(x, -m, m)

    @wp.func
    def sign(x: F) -> F:
        r = F(0.0)
        if x > F(0.0):
            r = F(1.0)
        elif x < F(0.0):
            r = F(-1.0)
        return r

    @wp.func
    def one_if(c: bool) -> F:
        r = F(0.0)
        if c:
            r = F(1.0)
        return r

    @wp.func
    def pow2(n: F) -> F:
        """2^n for integer-valued n in [-600, 600], exactly, by binary powers."""
        k = int(wp.abs(n))
        r = F(1.0)
        b = F(2.0)
        for _ in range(11):
            if k % 2 == 1:
                r = r * b
            b = b * b
            k = k // 2
        if n < F(0.0):
            r = F(1.0) / r
        return r

    @wp.func
    def exp_core(x: F) -> F:
        """lane_exp of csrc/core/lanes.h, operation for operation."""
        xc = clamp(x, F(-746.0), F(710.0))
        n = (xc * F(_LOG2E) + F(_SHIFTER)) - F(_SHIFTER)
        r = (xc - n * F(_LN2_HI)) - n * F(_LN2_LO)
        r2 = r * r
        r4 = r2 * r2
        r8 = r4 * r4
        p01 = F(c2) + r * F(c3)
        p23 = F(c4) + r * F(c5)
        p45 = F(c6) + r * F(c7)
        p67 = F(c8) + r * F(c9)
        p89 = F(c10) + r * F(c11)
        pab = F(c12) + r * F(c13)
        p = (p01 + r2 * p23) + r4 * (p45 + r2 * p67) + r8 * (p89 + r2 * pab)
        hi = F(1.0) + r
        lo = (F(1.0) - hi) + r
        e = hi + (lo + r2 * p)
        n1 = (n * F(0.5) + F(_SHIFTER)) - F(_SHIFTER)
        res = e * F(0.0)  # NaN in, NaN out (pow2 of a NaN is not defined)
        if wp.isfinite(n):
            res = e * pow2(n1) * pow2(n - n1)
        return res

    @wp.func
    def exp_fast(x: F) -> F:
        return wp.exp(x)

    expf = exp_core if F is wp.float64 else exp_fast

    @wp.func
    def spring_sea(p: wp.array3d(dtype=F), r: int, j: int, q: F, th1: F):
        k = p[r, j, SEA_K]
        max_def = p[r, j, SEA_MAX_DEF]
        raw = q - th1
        phi = sat(raw, max_def)
        tau1 = -k * phi
        z = F(0.0)
        cl = one_if(wp.abs(raw) > max_def)
        return tau1, z, k, z, -tau1, z, k, z, z, z, phi, z, cl, 0

    @wp.func
    def spring_sea_damped(p: wp.array3d(dtype=F), r: int, j: int, q: F, qd: F, th1: F, th1d: F):
        kt = p[r, j, SD_KT]
        dt = p[r, j, SD_DT]
        max_def = p[r, j, SD_MAX_DEF]
        raw = q - th1
        phi = sat(raw, max_def)
        tau1 = -kt * phi + dt * (th1d - qd)
        z = F(0.0)
        cl = one_if(wp.abs(raw) > max_def)
        return tau1, z, kt, dt, -tau1, z, kt, z, dt, z, phi, z, cl, 0

    @wp.func
    def spring_awas2(p: wp.array3d(dtype=F), r: int, j: int, q: F, th1: F, th2: F):
        s = th2
        L = p[r, j, AW_L]
        max_def = p[r, j, AW_MAX_DEF]
        bad = 1
        if s >= F(0.0) and s < L:
            bad = 0
        raw = q - th1
        phi = sat(raw, max_def)
        G = (L / p[r, j, AW_R_T]) * s / (L - s)
        kg = p[r, j, AW_KS] * G * G
        sn = wp.sin(F(2.0) * phi)
        cs = wp.cos(F(2.0) * phi)
        tau1 = -kg * sn
        stiffness = F(2.0) * kg * cs
        z = F(0.0)
        cl = one_if(wp.abs(raw) > max_def)
        return tau1, z, stiffness, z, -tau1, z, stiffness, z, z, z, phi, z, cl, bad

    @wp.func
    def clamp_pair(raw1: F, raw2: F, max_def: F):
        """Two deflections clamped to max_def, and how many were clamped."""
        cl = one_if(wp.abs(raw1) > max_def) + one_if(wp.abs(raw2) > max_def)
        return sat(raw1, max_def), sat(raw2, max_def), cl

    @wp.func
    def exp_pair(x1: F, x2: F):
        """exp of two arguments and their reciprocals."""
        e1 = expf(x1)
        e2 = expf(x2)
        return e1, e2, F(1.0) / e1, F(1.0) / e2

    @wp.func
    def spring_bavs(p: wp.array3d(dtype=F), r: int, j: int, q: F, th1: F, th2: F):
        a = p[r, j, BV_A]
        b = p[r, j, BV_B]
        k = p[r, j, BV_K]
        ke = p[r, j, BV_KE]
        m = p[r, j, BV_MAX_DEF]
        phi1, phi2, cl = clamp_pair(th1 - q, th2 - q, m)
        e1, e2, r1, r2 = exp_pair(ke * phi1, ke * phi2)
        tau1 = k * (b * e1 - a * r1)
        tau2 = k * (a * e2 - b * r2)
        kload1 = k * ke * (b * e1 + a * r1)
        kload2 = k * ke * (a * e2 + b * r2)
        z = F(0.0)
        return (
            tau1, tau2, kload1 + kload2, z, -tau1, -tau2, kload1, kload2, z, z, phi1, phi2, cl, 0
        )  # fmt: skip

    @wp.func
    def spring_sinh_pair(k1: F, a1: F, k2: F, a2: F, max_def: F, kc: F, q: F, th1: F, th2: F):
        phi1, phi2, cl = clamp_pair(q - th1, q - th2, max_def)
        e1, e2, r1, r2 = exp_pair(a1 * phi1, a2 * phi2)
        coupling = kc * (th1 - th2)
        tau1 = -k1 * F(0.5) * (e1 - r1)
        tau2 = -k2 * F(0.5) * (e2 - r2)
        kload1 = a1 * k1 * F(0.5) * (e1 + r1)
        kload2 = a2 * k2 * F(0.5) * (e2 + r2)
        stiffness = kload1 + kload2
        load1 = -tau1 - coupling
        load2 = -tau2 + coupling
        z = F(0.0)
        return (
            tau1, tau2, stiffness, z, load1, load2, kload1 + kc, kload2 + kc, z, z, phi1, phi2,
            cl, 0,
        )  # fmt: skip

    @wp.func
    def sinh_params(kind: int, p: wp.array3d(dtype=F), r: int, j: int):
        """(k1, a1, k2, a2, max_def, kc) of a sinh spring pair: qbmove Advanced's parameters;
        the 2015 qbmove has one spring law for both, no clamp and no coupling."""
        if kind == K_QB:
            k = p[r, j, QB_K]
            a = p[r, j, QB_A]
            return k, a, k, a, F(wp.inf), F(0.0)
        k1 = p[r, j, QA_K1]
        a1 = p[r, j, QA_A1]
        return k1, a1, p[r, j, QA_K2], p[r, j, QA_A2], p[r, j, QA_MAX_DEF], p[r, j, QA_KC]

    @wp.func
    def spring(
        kind: int,
        p: wp.array3d(dtype=F),
        r: int,
        j: int,
        q: F,
        qd: F,
        th1: F,
        th2: F,
        th1d: F,
        th2d: F,
    ):
        """lane_spring: the built-in model `kind` at one point (see the module doc)."""
        if kind == K_SEA:
            return spring_sea(p, r, j, q, th1)
        if kind == K_SEA_DAMPED:
            return spring_sea_damped(p, r, j, q, qd, th1, th1d)
        if kind == K_AWAS2:
            return spring_awas2(p, r, j, q, th1, th2)
        if kind == K_BAVS:
            return spring_bavs(p, r, j, q, th1, th2)
        if kind == K_QBA or kind == K_QB:
            k1, a1, k2, a2, max_def, kc = sinh_params(kind, p, r, j)
            return spring_sinh_pair(k1, a1, k2, a2, max_def, kc, q, th1, th2)
        z = F(0.0)
        return z, z, z, z, z, z, z, z, z, z, z, z, z, 0  # rigid: no spring

    @wp.func
    def refmap(kind: int, p: wp.array3d(dtype=F), r: int, j: int, eq: F, preset: F):
        """lane_refmap: (eq, preset) -> motor targets (th1, th2) and a flag (1: preset out of
        the model's range)."""
        if kind == K_BAVS or kind == K_QBA:
            return eq + preset, eq - preset, 0
        if kind == K_QB:
            th_max = p[r, j, QB_TH_MAX]
            return sat(eq + preset, th_max), sat(eq - preset, th_max), 0
        if kind == K_RIGID:
            return eq, F(0.0), 0
        if kind == K_AWAS2:
            bad = 1
            if preset >= F(0.0) and preset < p[r, j, AW_L]:
                bad = 0
            return eq, preset, bad
        return eq, preset, 0

    ns = types.SimpleNamespace(
        clamp=clamp, sat=sat, sign=sign, one_if=one_if, exp=expf, spring=spring, refmap=refmap
    )
    _BUILT[F] = ns
    return ns
