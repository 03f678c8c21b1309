"""Vectorised NumPy reference of the C core for `qbmove_advanced` joints in mode 6.

The same equations as csrc/core/joint_kernel.h (compliant_step, advance_motors, motor_substep, pid,
drive_torque), csrc/core/motor.h (motor_friction, motor_advance) and csrc/core/model_qbmove.c
(sinh_pair, antagonistic_refmap), written as a Python loop over steps with NumPy over all joints
at once. It is the baseline of benchmarks/bench_core.py and is checked against the C core by
tests/core/test_numpy_reference.py, so the benchmark compares like with like.

One step of length dt, per joint (N joints, the two motors stacked on a leading axis of size 2):

    targets       th1* = eq + preset, th2* = eq - preset
    springs       phi_i = sat(q - th_i, max_def), tau_i = -k_i sinh(a_i phi_i),
                  load_i = -tau_i -/+ kc (th1 - th2), kload_i = a_i k_i cosh(a_i phi_i) + kc
                  (evaluated with the link state given to the step and the motors at its start;
                  tau_link = tau_1 + tau_2 - tau_fq, tau_fq the output-shaft friction)
    sub-steps     nsub = ceil(dt / max_substep), h = dt / nsub; from the second sub-step on the
                  springs are re-evaluated at q + qd s h
    PID           e = th* - th, I' = sat(I + e h, i_max / ki) (0 when ki = 0),
                  u' = kp e + ki I' - kd v; I <- I' unless |u'| > tau_max and e u' > 0,
                  u = kp e + ki I - kd v
    drive         tau = sat(u, tau_max), gain = 1 if |u| < tau_max else 0
    motor         F = tau + load - D v, k = gain kp + kload, c = D + gain kd, r = kload qd (the
                  spring acts on the deflection: the link's motion over the sub-step); one
                  linearly implicit Euler step  E(F, k):
                  v+ = v + h (F + h r - h k v) / (J + h c + h^2 k),
                  v+ = sat(v+, vel_max), th+ = clamp(th + h v+, pos_min, pos_max), at a stop
                  only the velocity that leaves the stop is kept
    friction      implicit Dahl stick point (tau_fs static friction, K presliding stiffness,
                  z = tau_fs / K): a stick trial E(F - K (th - w), k + K); if it ends within
                  the presliding band, |th+ - w| <= z, the motor sticks (w kept,
                  tau_f = K (th+ - w)); otherwise it slides: E(F - tau_fs sign(th_trial - w), k)
                  from the start again, w <- th+ - sat(th+ - w, z), tau_f = K (th+ - w).
                  (tau_fs = 0: no trial, w follows th, tau_f = 0.)
    link          output-shaft friction on q: w_q <- q - sat(q - w_q, z_q),
                  tau_fq = K_q (q - w_q).

Supported: the torque drive (drive = 0) with the controller evaluated every sub-step
(ctrl_period = 0), i.e. the qbmove_advanced defaults. Floating-point operations are written in
the order C evaluates them (the core is built with -ffp-contract=off), so the two agree to a few
ulps (NumPy's exp may differ from libm's by an ulp).
"""

import math

import numpy as np

INF = math.inf

# Toolbox defaults of qbmove_advanced (docs/models.md; csrc/core/params.c, model_qbmove.c).
DEFAULTS = {
    # compliance model
    "k1": 0.0019,
    "a1": 8.9992,
    "k2": 0.0019,
    "a2": 8.9992,
    "max_def": 0.8,
    "kc": 0.0,
    # motor
    "motor_J": 0.0233,
    "motor_D": 0.2698,
    "tau_max": 6.0,
    "vel_max": INF,
    "pos_min": -INF,
    "pos_max": INF,
    # motor friction
    "friction": 0.02,
    "friction_K": 1e3,
    # motor PID
    "kp": 125.0,
    "ki": 0.0,
    "kd": 4.5,
    "i_max": INF,
    "ctrl_period": 0.0,
    # output-shaft friction, electrical drive
    "link_friction": 0.0,
    "link_friction_K": 1e3,
    "drive": 0.0,
}


def _sat(x, m):
    """sat(x, m) = min(max(x, -m), m), as num_sat."""
    return np.minimum(np.maximum(x, -m), m)


def _friction(w, th, K, z):
    """Stick point on a coordinate given from outside (motor_friction): returns (w, tau_f)."""
    w = th - _sat(th - w, z)
    return w, K * (th - w)


def _implicit_euler(th, v, h, J, F, k, c, r, vel_max, pos_min, pos_max):
    """motor_update (Euler scheme): one linearly implicit Euler step with velocity and
    position limits; r is the rate of change of F from the link's motion."""
    vn = v + h * (F + h * r - h * k * v) / (J + h * c + h * h * k)
    vn = _sat(vn, vel_max)
    tn = th + h * vn
    tc = np.minimum(np.maximum(tn, pos_min), pos_max)
    # at a stop the motor keeps only the velocity that leaves the stop
    vn = np.where(((tc > tn) & (vn < 0.0)) | ((tc < tn) & (vn > 0.0)), 0.0, vn)
    return tc, vn


class QbmoveAdvancedMode6:
    """N independent qbmove_advanced joints in mode 6 (equilibrium, preset references -> map ->
    PID per motor -> motor dynamics), as N instances x 1 joint of an asr.Batch.

    Parameters are the names of asr's qbmove_advanced joint (see DEFAULTS): a scalar shared by
    all joints or an (N,) array, one value per joint. max_substep as asr.Batch's.
    """

    def __init__(self, n, max_substep=1e-3, **params):
        unknown = set(params) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)}; valid: {sorted(DEFAULTS)}")
        self.n = int(n)
        self.max_substep = float(max_substep)
        p = {}
        for name, default in DEFAULTS.items():
            v = np.asarray(params.get(name, default), dtype=np.float64)
            if v.ndim not in (0, 1) or (v.ndim == 1 and v.shape != (self.n,)):
                raise ValueError(f"{name}: expected a scalar or shape ({self.n},), got {v.shape}")
            p[name] = v
        if np.any(p["drive"] != 0.0) or np.any(p["ctrl_period"] != 0.0):
            raise NotImplementedError("the reference covers drive = 0 and ctrl_period = 0 only")
        self.p = p
        # Per-motor spring parameters, (2, N) or (2, 1); loop-invariant products precomputed
        # (bit-identical to C, which forms them in the same order every sub-step).
        k = np.stack(np.broadcast_arrays(p["k1"], p["k2"])).reshape(2, -1)
        a = np.stack(np.broadcast_arrays(p["a1"], p["a2"])).reshape(2, -1)
        self._a = a
        self._mk_half = -k * 0.5  # tau_i = (-k_i * 0.5) * (e - 1/e)
        self._ak_half = a * k * 0.5  # kload_i = (a_i * k_i * 0.5) * (e + 1/e)
        self._z = p["friction"] / p["friction_K"]
        self._zq = p["link_friction"] / p["link_friction_K"]
        ki = p["ki"]
        with np.errstate(divide="ignore", invalid="ignore"):
            self._i_lim = np.where(ki > 0.0, p["i_max"] / np.where(ki > 0.0, ki, 1.0), 0.0)
        self.reset()

    # ------------------------------------------------------------ state

    def reset(self, q0=0.0, refs0=None):
        """As asr_batch_reset: motors where the references (N, 2) put them (else at q0), stick
        points on the motors, everything else zero."""
        n = self.n
        q0 = np.broadcast_to(np.asarray(q0, dtype=np.float64), (n,)).copy()
        if refs0 is None:
            self.th = np.stack([q0, q0])
        else:
            r = np.broadcast_to(np.asarray(refs0, dtype=np.float64), (n, 2))
            self.th = np.stack([r[:, 0] + r[:, 1], r[:, 0] - r[:, 1]])
        self.v = np.zeros((2, n))
        self.w = self.th.copy()
        self.integral = np.zeros((2, n))
        self.cmd = np.zeros((2, n))
        self.tau_m = np.zeros((2, n))
        self.tau_f = np.zeros((2, n))
        self.wq = q0
        self.tau_el = np.zeros((2, n))
        self.defl = np.zeros((2, n))
        self.stiffness = np.zeros(n)
        self.tau_fq = np.zeros(n)
        self.tau_link = np.zeros(n)

    # ------------------------------------------------------------ equations

    def _springs(self, q):
        """sinh_pair at link angle q (N,) and the current motor angles: tau, load, kload (2, N),
        stiffness (N,), deflections (2, N)."""
        p = self.p
        phi = _sat(q - self.th, p["max_def"])
        e = np.exp(self._a * phi)
        r = 1.0 / e
        tau = self._mk_half * (e - r)
        kload = self._ak_half * (e + r)
        stiffness = kload[0] + kload[1]
        coupling = p["kc"] * (self.th[0] - self.th[1])
        load = -tau
        load[0] -= coupling
        load[1] += coupling
        kload += p["kc"]
        return tau, load, kload, stiffness, phi

    def _motor_substep(self, target, load, kload, qd, h):
        """motor_substep for both motors of every joint (mode 6, torque drive, controller every
        sub-step)."""
        p = self.p
        th, v = self.th, self.v
        kp, ki, kd, tau_max = p["kp"], p["ki"], p["kd"], p["tau_max"]
        # pid(): derivative on the measurement, bounded and conditional integral
        e = target - th
        i_new = _sat(self.integral + e * h, self._i_lim)
        u = kp * e + ki * i_new - kd * v
        winding = (np.abs(u) > tau_max) & (e * u > 0.0)
        self.integral = np.where(winding, self.integral, i_new)
        u = kp * e + ki * self.integral - kd * v
        self.cmd = u
        # drive_torque(): torque drive saturated at tau_max
        gain = (np.abs(u) < tau_max).astype(np.float64)
        tau = _sat(u, tau_max)
        # motor_advance(): linearly implicit Euler, the PID part of the linearisation, the
        # stick-point friction implicit (stick trial, else slide at the friction limit)
        D, J, K, fs, z = p["motor_D"], p["motor_J"], p["friction_K"], p["friction"], self._z
        lim = (p["vel_max"], p["pos_min"], p["pos_max"])
        w = self.w
        F = tau + load - D * v
        k = gain * kp + kload
        c = D + gain * kd
        r = kload * qd
        th_s, v_s = _implicit_euler(th, v, h, J, F - K * (th - w), k + K, c, r, *lim)
        has_band = z > 0.0
        stick = has_band & (np.abs(th_s - w) <= z)
        slip = np.sign(np.where(has_band, th_s, th) - w)
        th_l, v_l = _implicit_euler(th, v, h, J, F - fs * slip, k, c, r, *lim)
        w_l = th_l - _sat(th_l - w, z)
        self.th = np.where(stick, th_s, th_l)
        self.v = np.where(stick, v_s, v_l)
        self.w = np.where(stick, w, w_l)
        self.tau_f = K * (self.th - self.w)
        self.tau_m = tau

    def step(self, q, qd, refs, dt):
        """One step of length dt: link angles q and velocities qd (N,) (or scalars), references
        refs (N, 2) = (equilibrium, preset). Returns tau_link (N,), N m."""
        n = self.n
        q = np.broadcast_to(np.asarray(q, dtype=np.float64), (n,))
        qd = np.broadcast_to(np.asarray(qd, dtype=np.float64), (n,))
        refs = np.asarray(refs, dtype=np.float64)
        eq, preset = refs[..., 0], refs[..., 1]
        target = np.stack(np.broadcast_arrays(eq + preset, eq - preset))
        nsub = int(math.ceil(dt / self.max_substep))
        h = dt / nsub
        tau, load, kload, self.stiffness, self.defl = self._springs(q)
        self.tau_el = tau
        tau_link = tau[0] + tau[1]
        for s in range(nsub):
            if s > 0:
                load, kload = self._springs(q + qd * (s * h))[1:3]
            self._motor_substep(target, load, kload, qd, h)
        # output-shaft friction (0 with the default link_friction = 0)
        self.wq, self.tau_fq = _friction(self.wq, q, self.p["link_friction_K"], self._zq)
        self.tau_link = tau_link - self.tau_fq
        return self.tau_link

    def rollout(self, steps, dt, refs, q=0.0, qd=0.0, record=()):
        """`steps` steps; refs (N, 2) held or (steps, N, 2); q, qd scalars, (N,) held or
        (steps, N). record: attribute names (tau_link, th, v, ...) copied after every step.
        Returns {name: (steps, ...) array}."""
        refs = np.asarray(refs, dtype=np.float64)
        q, qd = np.asarray(q, dtype=np.float64), np.asarray(qd, dtype=np.float64)
        timed_refs = refs.ndim == 3
        timed_q = q.ndim == 2
        out = {name: [] for name in record}
        for t in range(steps):
            self.step(
                q[t] if timed_q else q,
                qd[t] if timed_q else qd,
                refs[t] if timed_refs else refs,
                dt,
            )
            for name in record:
                out[name].append(np.array(getattr(self, name)))
        return {name: np.stack(v) for name, v in out.items()}
