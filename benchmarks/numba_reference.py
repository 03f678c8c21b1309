"""Numba reference of the C core for `qbmove_advanced` joints in mode 6: the second baseline of
benchmarks/bench_core.py.

The same equations, in the same floating-point order, as benchmarks/numpy_reference.py
(QbmoveAdvancedMode6, whose docstring lists them), written as scalar code compiled by Numba:
one jitted call per rollout loops over the instances and, for each, over the steps. Instances
are independent given their inputs (the link is prescribed), so each one runs all its steps
with its state hot in cache, and the parallel variant (`parallel=True`) splits the instances
over Numba's threads with `numba.prange` in a single parallel region per rollout.
tests/core/test_numba_reference.py checks both variants against the C core to 1e-12.

Units: SI (rad, rad/s, N m, s). Shapes: N instances of one joint; two motors per joint.
    refs    (N, 2) held or (steps, N, 2) per step: (equilibrium, preset), rad
    q, qd   scalar, (N,) held or (steps, N): link angle, rad, and velocity, rad/s
    state   attributes th, v, w, integral, cmd, tau_m, tau_f, tau_el, defl: (2, N) (motor first,
            as the NumPy reference); stiffness, wq, tau_fq, tau_link: (N,)
Exponentials are libm's (math.exp), as in the core; fastmath stays off so that Numba/LLVM
neither reorders nor fuses (FMA) the operations (the core is built with -ffp-contract=off).
Numba compiles on the first call for each argument type: warm up before timing.
"""

import math

import numba
import numpy as np
from numba import prange
from numpy_reference import DEFAULTS

# Columns of the per-instance state row, (N, NSTATE) float64. Per-motor fields take two
# consecutive columns (motor 1, motor 2).
TH, V, W, INT, CMD, TAU_M, TAU_F, TAU_EL, DEFL = 0, 2, 4, 6, 8, 10, 12, 14, 16
STIFF, WQ, TAU_FQ, TAU_LINK = 18, 19, 20, 21
NSTATE = 22
# state attribute -> (first column, number of columns)
FIELDS = {
    "th": (TH, 2),
    "v": (V, 2),
    "w": (W, 2),
    "integral": (INT, 2),
    "cmd": (CMD, 2),
    "tau_m": (TAU_M, 2),
    "tau_f": (TAU_F, 2),
    "tau_el": (TAU_EL, 2),
    "defl": (DEFL, 2),
    "stiffness": (STIFF, 1),
    "wq": (WQ, 1),
    "tau_fq": (TAU_FQ, 1),
    "tau_link": (TAU_LINK, 1),
}

# Columns of the per-instance parameter row, (N, NPARAM) float64 (derived values precomputed as
# the NumPy reference does, so the products are bit-identical).
(
    A1,
    A2,
    MKH1,
    MKH2,
    AKH1,
    AKH2,
    MAX_DEF,
    KC,
    J_M,
    D_M,
    TAU_MAX,
    VEL_MAX,
    POS_MIN,
    POS_MAX,
    FS,
    K_F,
    Z_F,
    KP,
    KI,
    KD,
    I_LIM,
    K_Q,
    Z_Q,
) = range(23)
NPARAM = 23

# IEEE division as in C (error_model="numpy": x / 0 is inf, not a ZeroDivisionError check on
# every division); fastmath off (the default) keeps C's operation order.
_jit = numba.njit(error_model="numpy")


# ------------------------------------------------------------ scalar equations (jitted)


@_jit
def _sat(x, m):
    """sat(x, m) = min(max(x, -m), m), as num_sat."""
    return min(max(x, -m), m)


@_jit
def _sign(x):
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


@_jit
def _spring(q, th, a, mk_half, ak_half, max_def):
    """One sinh spring at link angle q, rad: (tau N m, kload N m/rad, deflection rad)."""
    phi = _sat(q - th, max_def)
    e = math.exp(a * phi)
    r = 1.0 / e
    return mk_half * (e - r), ak_half * (e + r), phi


@_jit
def _euler(th, v, h, J, F, k, c, r, vel_max, pos_min, pos_max):
    """One linearly implicit Euler step with velocity and position limits: (th rad, v rad/s)."""
    vn = v + h * (F + h * r - h * k * v) / (J + h * c + h * h * k)
    vn = _sat(vn, vel_max)
    tn = th + h * vn
    tc = min(max(tn, pos_min), pos_max)
    # at a stop the motor keeps only the velocity that leaves the stop
    if (tc > tn and vn < 0.0) or (tc < tn and vn > 0.0):
        vn = 0.0
    return tc, vn


@_jit
def _pid(x, m, p, target, h):
    """pid(): derivative on the measurement, bounded and conditional integral; updates the
    integral and returns the command u, N m."""
    kp, ki, kd, tau_max = p[KP], p[KI], p[KD], p[TAU_MAX]
    e = target - x[TH + m]
    v = x[V + m]
    i_new = _sat(x[INT + m] + e * h, p[I_LIM])
    u = kp * e + ki * i_new - kd * v
    if not (abs(u) > tau_max and e * u > 0.0):  # frozen while winding up
        x[INT + m] = i_new
    return kp * e + ki * x[INT + m] - kd * v


@_jit
def _motor(x, m, p, target, load, kload, qd, h):
    """motor_substep of motor m (0, 1) of one joint: PID, torque drive, implicit Euler with the
    stick-point friction (stick trial, else slide at the friction limit). In place on x."""
    u = _pid(x, m, p, target, h)
    x[CMD + m] = u
    tau_max, kp = p[TAU_MAX], p[KP]
    gain = 1.0 if abs(u) < tau_max else 0.0
    tau = _sat(u, tau_max)
    th, v, w = x[TH + m], x[V + m], x[W + m]
    J, D, K, z = p[J_M], p[D_M], p[K_F], p[Z_F]
    lim = (p[VEL_MAX], p[POS_MIN], p[POS_MAX])
    F = tau + load - D * v
    k = gain * kp + kload
    c = D + gain * p[KD]
    r = kload * qd
    stick, th_n, v_n = False, th, v
    if z > 0.0:
        th_n, v_n = _euler(th, v, h, J, F - K * (th - w), k + K, c, r, lim[0], lim[1], lim[2])
        stick = abs(th_n - w) <= z
        slip = _sign(th_n - w)
    else:
        slip = _sign(th - w)
    if not stick:
        th_n, v_n = _euler(th, v, h, J, F - p[FS] * slip, k, c, r, lim[0], lim[1], lim[2])
        w = th_n - _sat(th_n - w, z)
    x[TH + m], x[V + m], x[W + m] = th_n, v_n, w
    x[TAU_F + m] = K * (th_n - w)
    x[TAU_M + m] = tau


@_jit
def _loads(x, p, q):
    """Both springs at link angle q, rad, the motors as they are: (tau1, tau2, load1, load2,
    kload1, kload2), N m and N m/rad (kload without the coupling kc)."""
    tau1, kl1, _ = _spring(q, x[TH], p[A1], p[MKH1], p[AKH1], p[MAX_DEF])
    tau2, kl2, _ = _spring(q, x[TH + 1], p[A2], p[MKH2], p[AKH2], p[MAX_DEF])
    coupling = p[KC] * (x[TH] - x[TH + 1])
    return tau1, tau2, -tau1 - coupling, -tau2 + coupling, kl1, kl2


@_jit
def _step(x, p, q, qd, eq, preset, nsub, h):
    """One step (nsub sub-steps of h, s) of one joint, in place on its state row x."""
    tau1, tau2, load1, load2, kl1, kl2 = _loads(x, p, q)
    x[STIFF] = kl1 + kl2
    x[TAU_EL], x[TAU_EL + 1] = tau1, tau2
    x[DEFL] = _sat(q - x[TH], p[MAX_DEF])
    x[DEFL + 1] = _sat(q - x[TH + 1], p[MAX_DEF])
    tau_link = tau1 + tau2
    for s in range(nsub):
        if s > 0:  # springs re-evaluated where the link has moved to
            _, _, load1, load2, kl1, kl2 = _loads(x, p, q + qd * (s * h))
        _motor(x, 0, p, eq + preset, load1, kl1 + p[KC], qd, h)
        _motor(x, 1, p, eq - preset, load2, kl2 + p[KC], qd, h)
    # output-shaft friction (0 with the default link_friction = 0)
    x[WQ] = q - _sat(q - x[WQ], p[Z_Q])
    x[TAU_FQ] = p[K_Q] * (q - x[WQ])
    x[TAU_LINK] = tau_link - x[TAU_FQ]


def _rollout(S, P, refs, q, qd, nsub, h, cols, rec):
    """All steps of all instances. S (N, NSTATE) state, P (N, NPARAM) parameters, refs
    (steps, N, 2) rad, q, qd (steps, N) rad, rad/s (any strides), cols (R,) int64 state columns
    recorded into rec (steps, R, N) after every step."""
    for i in prange(S.shape[0]):
        x, p = S[i], P[i]
        for t in range(refs.shape[0]):
            _step(x, p, q[t, i], qd[t, i], refs[t, i, 0], refs[t, i, 1], nsub, h)
            for j in range(cols.shape[0]):
                rec[t, j, i] = x[cols[j]]


# one source, two compilations: prange runs as range without parallel=True
_rollout_serial = _jit(_rollout)
_rollout_parallel = numba.njit(parallel=True, error_model="numpy")(_rollout)


# ------------------------------------------------------------ Python API (as numpy_reference)


def _param_table(n, params):
    """(N, NPARAM) parameter rows from scalars or (N,) arrays (names of DEFAULTS)."""
    unknown = set(params) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown parameters {sorted(unknown)}; valid: {sorted(DEFAULTS)}")
    p = {}
    for name, default in DEFAULTS.items():
        v = np.asarray(params.get(name, default), dtype=np.float64)
        if v.ndim not in (0, 1) or (v.ndim == 1 and v.shape != (n,)):
            raise ValueError(f"{name}: expected a scalar or shape ({n},), got {v.shape}")
        p[name] = np.broadcast_to(v, (n,))
    if np.any(p["drive"] != 0.0) or np.any(p["ctrl_period"] != 0.0):
        raise NotImplementedError("the reference covers drive = 0 and ctrl_period = 0 only")
    P = np.empty((n, NPARAM))
    P[:, A1], P[:, A2] = p["a1"], p["a2"]
    P[:, MKH1], P[:, MKH2] = -p["k1"] * 0.5, -p["k2"] * 0.5
    P[:, AKH1], P[:, AKH2] = p["a1"] * p["k1"] * 0.5, p["a2"] * p["k2"] * 0.5
    for col, name in (
        (MAX_DEF, "max_def"),
        (KC, "kc"),
        (J_M, "motor_J"),
        (D_M, "motor_D"),
        (TAU_MAX, "tau_max"),
        (VEL_MAX, "vel_max"),
        (POS_MIN, "pos_min"),
        (POS_MAX, "pos_max"),
        (FS, "friction"),
        (K_F, "friction_K"),
        (KP, "kp"),
        (KI, "ki"),
        (KD, "kd"),
        (K_Q, "link_friction_K"),
    ):
        P[:, col] = p[name]
    P[:, Z_F] = p["friction"] / p["friction_K"]
    P[:, Z_Q] = p["link_friction"] / p["link_friction_K"]
    ki = p["ki"]
    with np.errstate(divide="ignore", invalid="ignore"):
        P[:, I_LIM] = np.where(ki > 0.0, p["i_max"] / np.where(ki > 0.0, ki, 1.0), 0.0)
    return P


class QbmoveAdvancedMode6:
    """N independent qbmove_advanced joints in mode 6, as numpy_reference.QbmoveAdvancedMode6
    (same constructor, reset, step, rollout and state attributes), compiled with Numba.
    parallel: split the instances over Numba's threads (numba.set_num_threads)."""

    def __init__(self, n, max_substep=1e-3, parallel=False, **params):
        self.n = int(n)
        self.max_substep = float(max_substep)
        self._P = _param_table(self.n, params)
        self._run = _rollout_parallel if parallel else _rollout_serial
        self.reset()

    def reset(self, q0=0.0, refs0=None):
        """As asr_batch_reset: motors where the references (N, 2), rad, put them (else at q0,
        rad), stick points on the motors, everything else zero."""
        n = self.n
        q0 = np.broadcast_to(np.asarray(q0, dtype=np.float64), (n,))
        S = np.zeros((n, NSTATE))
        if refs0 is None:
            S[:, TH], S[:, TH + 1] = q0, q0
        else:
            r = np.broadcast_to(np.asarray(refs0, dtype=np.float64), (n, 2))
            S[:, TH], S[:, TH + 1] = r[:, 0] + r[:, 1], r[:, 0] - r[:, 1]
        S[:, W : W + 2] = S[:, TH : TH + 2]
        S[:, WQ] = q0
        self._S = S

    def __getattr__(self, name):
        # state attributes as views of the state rows: (2, N) per motor, (N,) per joint
        s = self.__dict__.get("_S")
        if name not in FIELDS or s is None:
            raise AttributeError(name)
        col, width = FIELDS[name]
        return s[:, col : col + 2].T if width == 2 else s[:, col]

    def _series(self, x, steps, shape):
        """Inputs as (steps, *shape) float64 arrays (held ones broadcast, no copy)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == len(shape) + 1:
            if x.shape != (steps, *shape):
                raise ValueError(f"expected ({steps}, {shape}), got {x.shape}")
            return x
        return np.broadcast_to(x, (steps, *shape))

    def rollout(self, steps, dt, refs, q=0.0, qd=0.0, record=()):
        """`steps` steps of dt, s, in one jitted call; refs (N, 2) held or (steps, N, 2), rad;
        q, qd scalars, (N,) held or (steps, N), rad, rad/s. record: state attribute names copied
        after every step. Returns {name: (steps, 2, N) or (steps, N) array}."""
        n = self.n
        refs = self._series(refs, steps, (n, 2))
        q = self._series(q, steps, (n,))
        qd = self._series(qd, steps, (n,))
        unknown = set(record) - set(FIELDS)
        if unknown:
            raise ValueError(f"record: unknown fields {sorted(unknown)}; valid: {sorted(FIELDS)}")
        cols = np.array(
            [FIELDS[f][0] + k for f in record for k in range(FIELDS[f][1])], dtype=np.int64
        )
        rec = np.empty((steps, cols.size, n))
        nsub = int(math.ceil(dt / self.max_substep))
        self._run(self._S, self._P, refs, q, qd, nsub, dt / nsub, cols, rec)
        out, j = {}, 0
        for f in record:
            width = FIELDS[f][1]
            out[f] = rec[:, j : j + 2] if width == 2 else rec[:, j]
            j += width
        return out

    def step(self, q, qd, refs, dt):
        """One step of length dt, s: link angles q, rad, and velocities qd, rad/s, (N,) or
        scalars, references refs (N, 2), rad. Returns tau_link (N,), N m."""
        return self.rollout(1, dt, refs, q, qd, record=("tau_link",))["tau_link"][0]
