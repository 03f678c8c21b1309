"""Motor dynamics, friction, limits, low-level controllers and numerical stability
(docs/models.md sections 2 and 3, [Mengacci2021] eq. 7-11, [Kamedula2016] eq. 4 and 7,
[Parnenzini2015]).

Every expected value is computed here independently of the C core: closed-form solutions of
linear ODEs, SciPy solve_ivp of the continuous equations (rtol 1e-10, atol 1e-12), hand
computations of the drive maps, and energy bookkeeping.

The core integrates the motors with a first-order (linearly implicit Euler) sub-step h, so its
global error against a continuous solution is O(h): tolerances below are either a bound on that
error at a small h (1e-5 s) or a check that the error falls about tenfold when h does.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

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


# ---------------------------------------------------------------------------- step response


@pytest.mark.parametrize("kd, label", [(0.5, "underdamped"), (4.5, "overdamped")])
def test_motor_loop_step_response_matches_closed_form(kd, label):
    """Mode 5, SEA with the link fixed at q = 0: J th'' + (D + kd) th' + (kp + k) th = kp r
    (PD with the derivative on the measured velocity, spring load -k th). Closed-form solution
    vs asr at sub-steps 1e-3, 1e-4, 1e-5."""
    J, D, kp, k, r = J0, D0, KP0, 10.0, 0.1
    c, K = D + kd, kp + k
    zeta = c / (2.0 * np.sqrt(J * K))
    assert (zeta < 1.0) == (label == "underdamped")
    dt, n = 1e-3, 300
    t = dt * np.arange(1, n + 1)
    x_ref, v_ref = second_order(J, c, K, kp * r, 0.0, 0.0, t)
    errs = []
    for h in (1e-3, 1e-4, 1e-5):
        b = sea(5, max_substep=h, k=k, kd=kd, tau_max=1e3)  # tau_max: no saturation
        b.reset()
        out = b.rollout(n, dt, refs(r), record=("th1", "th1d"))
        errs.append(np.max(np.abs(out["th1"][0, :, 0] - x_ref)))
        if h == 1e-5:
            # velocity, also first order: measured 9e-4 (underdamped) and 5e-4 (overdamped) of
            # its peak at h = 1e-5; bound 3e-3
            assert np.max(np.abs(out["th1d"][0, :, 0] - v_ref)) < 3e-3 * np.max(np.abs(v_ref))
    # first order: the error falls ~10x per decade of h (allow 7..14 for the O(h^2) remainder)
    for e_big, e_small in zip(errs[:-1], errs[1:]):
        assert 7.0 < e_big / e_small < 14.0, errs
    # at h = 1e-5 the global error is C h with C ~ r * omega (omega ~ 76 rad/s): measured
    # 5.8e-5 (underdamped) and 6.8e-6 rad (overdamped) on the 0.1 rad step; bound 1e-4
    assert errs[-1] < 1e-3 * r, errs


def test_motor_loop_with_moving_link_matches_solve_ivp():
    """Mode 5 with a prescribed link q(t) = A sin(w t) (the link moves inside each step: asr
    extrapolates q + qd t) against solve_ivp of J th'' = kp (r - th) - kd th' - D th' +
    k (q(t) - th)."""
    J, D, kp, kd, k, r = J0, D0, KP0, KD0, 200.0, 0.3
    A, w = 0.2, 8.0
    dt, n = 1e-3, 600
    tk = dt * np.arange(n)
    q, qd = A * np.sin(w * tk), A * w * np.cos(w * tk)

    def rhs(t, y):
        th, v = y
        return [v, (kp * (r - th) - (kd + D) * v + k * (A * np.sin(w * t) - th)) / J]

    sol = solve_ivp(
        rhs,
        (0.0, n * dt),
        [0.0, 0.0],
        method="DOP853",
        rtol=RTOL,
        atol=ATOL,
        t_eval=dt * np.arange(1, n + 1),
    )
    errs = []
    for h in (1e-4, 1e-5):
        b = sea(5, max_substep=h, k=k, tau_max=1e3)  # no saturation
        b.reset()
        out = b.rollout(n, dt, refs(r), q=q[None, :, None], qd=qd[None, :, None], record=("th1",))
        errs.append(np.max(np.abs(out["th1"][0, :, 0] - sol.y[0])))
    # O(h) from the motor update plus O(dt^2 |q''|) from the linear extrapolation of the link
    # inside a step (A w^2 dt^2 / 2 ~ 6e-6 rad): bounded by 1e-4 rad at h = 1e-5 on a 0.3 rad
    # response (measured 3.2e-4 at h = 1e-4, 3.2e-5 at 1e-5), and the error must shrink with h
    assert errs[1] < 1e-4, errs
    assert errs[1] < 0.3 * errs[0], errs


# ---------------------------------------------------------------------------- limits


def test_torque_limit_holds_and_saturated_response_matches_solve_ivp():
    """|tau_m1| <= tau_max always, = tau_max during a large step, and the whole saturated
    response equals solve_ivp of J th'' = sat(kp e - kd th', tau_max) - D th' - k th."""
    J, D, kp, kd, k, r, tm = J0, D0, KP0, KD0, 10.0, 1.0, TAU_MAX0
    dt, n = 1e-3, 500
    b = sea(5, max_substep=1e-5, k=k)
    b.reset()
    out = b.rollout(n, dt, refs(r), record=("th1", "tau_m1"))
    tau = out["tau_m1"][0, :, 0]
    assert np.all(np.abs(tau) <= tm * (1 + 1e-12))
    # kp r = 125 >> 6: the first 50 ms are saturated at +tau_max exactly
    assert np.all(tau[:50] == tm)

    def rhs(t, y):
        th, v = y
        return [v, (np.clip(kp * (r - th) - kd * v, -tm, tm) - D * v - k * th) / J]

    sol = solve_ivp(
        rhs,
        (0.0, n * dt),
        [0.0, 0.0],
        method="DOP853",
        rtol=RTOL,
        atol=ATOL,
        t_eval=dt * np.arange(1, n + 1),
    )
    # first order on a 0.93 rad response: measured 8.4e-4 rad at h = 1e-4 and 8.4e-5 rad at
    # h = 1e-5; bound 2e-4 rad
    assert np.max(np.abs(out["th1"][0, :, 0] - sol.y[0])) < 2e-4

    # mode 4: the commanded motor torque is saturated too (docs/models.md: sat(tau_m, tau_max))
    b = sea(4, n=3, k=k)
    b.reset()
    b.step(0.0, 0.0, np.array([[10.0, 0.0], [-10.0, 0.0], [5.0, 0.0]])[:, None, :], dt)
    assert np.array_equal(b.tau_m1[:, 0], [tm, -tm, 5.0])


def test_velocity_limit_is_applied():
    """docs/models.md sec. 2: the toolbox declares a velocity limit but never applies it; asr
    must."""
    vmax, dt, n, k = 0.5, 1e-3, 3000, 2.0
    b = sea(5, n=2, k=k, vel_max=np.array([vmax, np.inf]))
    b.reset()
    out = b.rollout(n, dt, refs(1.0), record=("th1", "th1d"))
    th, v = out["th1"][..., 0].T, out["th1d"][..., 0].T  # (steps, N)
    assert np.max(np.abs(v[:, 0])) <= vmax * (1 + 1e-12)
    assert np.max(np.abs(v[:, 0])) >= vmax * (1 - 1e-12)  # reached: the limit is active
    assert np.max(np.abs(v[:, 1])) > 4 * vmax  # without the limit the motor is much faster
    steps = np.diff(np.concatenate([[0.0], th[:, 0]]))
    assert np.all(np.abs(steps) <= vmax * dt * (1 + 1e-9))
    # still reaches its PD steady state kp r / (kp + k) eventually
    assert th[-1, 0] == pytest.approx(KP0 * 1.0 / (KP0 + k), abs=1e-6)

    # mode 4: constant torque 3 N m on a free motor would reach 3 / D = 11 rad/s
    b = sea(4, k=1e-9, vel_max=1.0)
    b.reset()
    out = b.rollout(1000, dt, refs(3.0), record=("th1d",))
    v = out["th1d"][0, :, 0]
    assert np.max(np.abs(v)) <= 1.0 * (1 + 1e-12)
    assert v[-1] == pytest.approx(1.0, rel=1e-12)


def test_position_limits_stop_the_motor():
    lo, hi, dt = -0.2, 0.3, 1e-3
    b = sea(5, k=10.0, pos_min=lo, pos_max=hi)
    b.reset()
    out = b.rollout(1000, dt, refs(1.0), record=("th1", "th1d"))
    th, v = out["th1"][0, :, 0], out["th1d"][0, :, 0]
    assert np.all(th <= hi) and np.all(th >= lo)
    assert th[-1] == hi and v[-1] == 0.0  # at the stop, at rest
    out = b.rollout(1000, dt, refs(-1.0), record=("th1", "th1d"))
    th, v = out["th1"][0, :, 0], out["th1d"][0, :, 0]
    assert np.all(th <= hi) and np.all(th >= lo)
    assert th[-1] == lo and v[-1] == 0.0
    # mode 4: a torque pushing into the stop does not move the motor past it
    b = sea(4, k=1e-9, pos_max=hi)
    b.reset()
    out = b.rollout(500, dt, refs(2.0), record=("th1", "th1d"))
    assert np.max(out["th1"]) == hi and out["th1d"][0, -1, 0] == 0.0


# ---------------------------------------------------------------------------- friction


def _kick(b, v0, dt):
    """Give the motors of a mode-2 batch the velocity v0: one mode-2 step to th = v0 dt sets
    th1d = (th - 0)/dt (finite difference of the references)."""
    n = v0.size
    b.step(0.0, 0.0, np.stack([v0 * dt, np.zeros(n)], -1)[:, None, :], dt)


@pytest.mark.parametrize("scheme", ["euler", "trapezoid"])
@pytest.mark.parametrize("h", [1e-3, 25e-3], ids=["h1ms", "h25ms_no_substeps"])
@pytest.mark.parametrize("drive_mode", [4, 5])
def test_friction_never_creates_energy(h, drive_mode, scheme):
    """No input (mode 4 with zero torque, or mode 5 with kp = ki = kd = 0), random initial
    motor velocities, a spring to a fixed link and no viscous damping: the only dissipation is
    friction. The total energy 1/2 J v^2 + 1/2 k th^2 + 1/2 K (th - w)^2 (presliding spring)
    must never increase beyond round-off, and |tau_f| <= friction always. docs/models.md sec. 2:
    the friction model 'is passive and independent of the time step' (so also without
    sub-stepping at the toolbox's 25 ms world step)."""
    n, J, k, fs, K = 64, J0, 10.0, FS0, KF0
    z = fs / K
    rng = np.random.default_rng(12)
    b = sea(
        2,
        n=n,
        max_substep=h,
        scheme=scheme,
        k=k,
        motor_D=0.0,
        friction=fs,
        friction_K=K,
        kp=0.0,
        ki=0.0,
        kd=0.0,
    )
    b.reset()
    v0 = rng.uniform(-3.0, 3.0, n)
    _kick(b, v0, h)
    b.set_mode(0, drive_mode)

    def energy(th, v, w):
        w = th - np.clip(th - w, -z, z)  # stick point as the next friction update sees it
        return 0.5 * J * v**2 + 0.5 * k * th**2 + 0.5 * K * (th - w) ** 2

    E0 = energy(b.th1[:, 0].copy(), b.th1d[:, 0].copy(), b.w1[:, 0].copy())
    steps = int(round(10.0 / h))
    out = b.rollout(steps, h, refs(0.0), record=("th1", "th1d", "w1", "tau_f1"))
    E = np.vstack([E0[None], energy(out["th1"][..., 0], out["th1d"][..., 0], out["w1"][..., 0]).T])
    dE = np.diff(E, axis=0)
    # round-off: energies ~0.1 J, a few ulps each
    worst = np.max(dE / E0)
    assert worst <= 1e-12, f"energy grew by {worst:.3g} of E0 in one step"
    # friction dissipated everything but what a motor stuck by friction can hold:
    # |k th| <= fs and |K (th - w)| <= fs, i.e. E <= fs^2/(2k) + fs^2/(2K)
    assert np.all(E[-1] <= fs**2 / (2 * k) + fs**2 / (2 * K) + 1e-15)
    # |tau_f| <= tau_fs up to the round-off of K (th - w) with |th| <~ 0.2 rad
    assert np.max(np.abs(out["tau_f1"])) <= fs + K * 1e-15


@pytest.mark.parametrize("h", [1e-3, 25e-3])
def test_friction_holds_a_motor_below_the_breakaway_torque(h):
    """Mode 4 on a free motor (negligible spring, w starts at th = 0). The presliding spring K
    with the motor inertia is a lightly damped oscillator, so a torque step overshoots to at
    most 2 tau/K: a step below fs/2 and a slow ramp to 0.9 fs never reach the band edge
    fs/K (continuous model: no sliding, the stick point w never moves) and the motor comes to
    rest at th = tau/K. A step above fs makes it slide at (tau - fs)/D."""
    fs, K, dt = FS0, KF0, h
    b = sea(4, n=3, max_substep=h, k=1e-9, friction=fs, friction_K=K)
    b.reset()
    steps = int(round(3.0 / dt))
    t = dt * np.arange(steps)
    tau = np.zeros((3, steps, 1, 2))
    tau[0, :, 0, 0] = 0.45 * fs  # step below fs/2
    tau[1, :, 0, 0] = 0.9 * fs * np.minimum(t / 1.0, 1.0)  # slow ramp to 0.9 fs
    tau[2, :, 0, 0] = 1.25 * fs  # step above fs
    out = b.rollout(steps, dt, tau, record=("th1", "th1d", "w1"))
    th, v, w = (out[f][..., 0].T for f in ("th1", "th1d", "w1"))  # (steps, N)
    for i in (0, 1):
        assert np.all(w[:, i] == 0.0)  # never slides
        assert np.max(np.abs(th[:, i])) <= fs / K * (1 + 1e-9)
        assert th[-1, i] == pytest.approx(tau[i, -1, 0, 0] / K, rel=1e-4)
        assert abs(v[-1, i]) < 1e-6
    # above breakaway: slides at (tau - fs)/D after the transient, 0.0185 rad/s
    assert v[-1, 2] == pytest.approx(0.25 * fs / D0, rel=1e-6)
    assert th[-1, 2] > 100 * fs / K


# ---------------------------------------------------------------------------- stability


def _toolbox_semi_implicit_euler(h, T, r, k, tau_max=np.inf):
    """The toolbox's integration ([Mengacci2021] eq. 10, docs/models.md sec. 2): PD computed every
    step, velocity first, then position with the new velocity; Dahl friction; spring to q = 0."""
    th = v = w = 0.0
    z = FS0 / KF0
    xs = []
    for _ in range(int(round(T / h))):
        w = th - np.clip(th - w, -z, z)
        tf = KF0 * (th - w)
        u = np.clip(KP0 * (r - th) - KD0 * v, -tau_max, tau_max)
        v = v + h / J0 * (u - D0 * v - tf - k * th)
        th = th + h * v
        xs.append(th)
        if not abs(th) < 1e6:
            break
    return np.array(xs)


def _critical_step(J, c, kstiff):
    """Largest h with h c/J < 2 and h^2 k/J + 2 h c/J < 4 (docs/models.md sec. 2)."""
    a, bb = kstiff / J, 2 * c / J
    h2 = (-bb + np.sqrt(bb * bb + 16 * a)) / (2 * a)
    return min(2 * J / c, h2)


def test_toolbox_semi_implicit_euler_is_unstable_at_25ms():
    """The reference integration of the toolbox is stable only below ~8.8 ms with its motor PD
    defaults; at its shipped 25 ms world step it diverges (linear loop) or, with the torque
    limit, never settles."""
    hc_pd = _critical_step(J0, D0 + KD0, KP0)
    assert 8.7e-3 < hc_pd < 8.8e-3  # "h < 8.8 ms" of docs/models.md
    k, r = 10.0, 0.5
    hc = _critical_step(J0, D0 + KD0, KP0 + k)  # with the spring of the SEA: 8.70 ms
    th_ss = KP0 * r / (KP0 + k)
    band = FS0 / (KP0 + k)
    stable = _toolbox_semi_implicit_euler(0.9 * hc, 5.0, r, k)
    assert abs(stable[-1] - th_ss) <= band * (1 + 1e-6)
    diverged = _toolbox_semi_implicit_euler(25e-3, 5.0, r, k)
    assert not abs(diverged[-1]) < 1e3
    cycling = _toolbox_semi_implicit_euler(25e-3, 5.0, r, k, tau_max=TAU_MAX0)
    assert np.ptp(cycling[-40:]) > 0.1  # a limit cycle of tenths of a radian


@pytest.mark.parametrize("scheme", ["euler", "trapezoid"])
@pytest.mark.parametrize("tau_max", [TAU_MAX0, 1e9])
def test_asr_is_stable_at_25ms_without_substeps(tau_max, scheme):
    """Same loop in asr at dt = 25 ms with max_substep = 25 ms (one sub-step per step): bounded
    and settled at the PD/spring steady state within the friction band, with either scheme."""
    k, r = 10.0, 0.5
    b = sea(5, max_substep=25e-3, scheme=scheme, k=k, friction=FS0, tau_max=tau_max)
    b.reset()
    out = b.rollout(200, 25e-3, refs(r), record=("th1",))
    th = out["th1"][0, :, 0]
    th_ss, band = KP0 * r / (KP0 + k), FS0 / (KP0 + k)
    assert np.all(np.abs(th) < 2 * r)
    assert np.all(np.abs(th[-40:] - th_ss) <= band * (1 + 1e-6))


def test_asr_at_25ms_with_substeps_matches_solve_ivp_with_friction():
    """Toolbox defaults (friction 0.02 N m, K 1e3, tau_max 6), dt = 25 ms, SEA k = 10 to a
    fixed link: the default sub-stepping (1 ms) follows solve_ivp of the continuous equations
    with Dahl friction; the error is first order in the sub-step."""
    k, r, dt, n = 10.0, 0.5, 25e-3, 60
    fric = dahl_rhs(FS0, KF0)

    def rhs(t, y):
        th, v, w = y
        tf, dw = fric(th, v, w)
        u = np.clip(KP0 * (r - th) - KD0 * v, -TAU_MAX0, TAU_MAX0)
        return [v, (u - D0 * v - tf - k * th) / J0, dw]

    # DOP853: Radau is needlessly slow on the friction kinks
    sol = solve_ivp(
        rhs,
        (0.0, n * dt),
        [0.0, 0.0, 0.0],
        method="DOP853",
        rtol=RTOL,
        atol=ATOL,
        t_eval=dt * np.arange(1, n + 1),
    )
    errs = []
    for h in (1e-3, 1e-4):
        b = sea(5, max_substep=h, k=k, friction=FS0)
        b.reset()
        out = b.rollout(n, dt, refs(r), record=("th1",))
        errs.append(np.max(np.abs(out["th1"][0, :, 0] - sol.y[0])))
    # default 1 ms sub-step: O(h) error of a few 1e-3 rad on a 0.46 rad response (0.4 %)
    assert errs[0] < 4e-3, errs
    assert errs[1] < 0.2 * errs[0], errs


# ---------------------------------------------------------------------------- held controller


def test_held_controller_matches_zero_order_hold_reference():
    """[Kamedula2016] eq. 7 and sec. 5.1: f_c = 1 kHz controller, f_s = 2 kHz simulation. The PD
    command is computed at the 1 kHz ticks from the state at the tick and held (zero-order
    hold); between ticks the motor of the visco-elastic SEA (fixed link) is integrated by
    solve_ivp. asr with ctrl_period = 1 ms and dt = 0.5 ms must follow it and differ measurably
    from the same controller evaluated continuously."""
    Bm, Dm, Kp, Kd, tmax, Kt, Dt = 0.0742, 24.768, 1000.0, 0.0, 33.0, 188.0, 0.5
    r, Tc, dt, T = 0.02, 1e-3, 5e-4, 0.2
    y = np.zeros(2)
    ref = []
    for tick in range(int(round(T / Tc))):
        u = np.clip(Kp * (r - y[0]) - Kd * y[1], -tmax, tmax)

        def rhs(t, s, u=u):
            return [s[1], (u - Dm * s[1] - Kt * s[0] - Dt * s[1]) / Bm]

        sol = solve_ivp(
            rhs,
            (tick * Tc, (tick + 1) * Tc),
            y,
            method="DOP853",
            rtol=RTOL,
            atol=ATOL,
            t_eval=[tick * Tc + dt, (tick + 1) * Tc],
        )
        ref += [sol.y[0, 0], sol.y[0, 1]]
        y = sol.y[:, 1]
    ref = np.array(ref)
    n = ref.size
    res = {}
    for period in (Tc, 0.0):
        b = asr.Batch([asr.Joint("sea_damped", 5, {"ctrl_period": period})], 1, max_substep=1e-5)
        b.reset()
        res[period] = b.rollout(n, dt, refs(r), record=("th1", "cmd1", "tau_m1"))
    held = res[Tc]["th1"][0, :, 0]
    err_held = np.max(np.abs(held - ref))
    err_cont = np.max(np.abs(res[0.0]["th1"][0, :, 0] - ref))
    # O(h) with h = 1e-5 s on a 17 mrad response: measured ~1.4e-6 rad; bound 1e-5 rad
    assert err_held < 1e-5, err_held
    # the hold changes the response by ~1.4e-4 rad: far beyond the integration error
    assert err_cont > 20 * err_held, (err_cont, err_held)
    # the command is really held over the two simulation steps of each controller period
    cmd = res[Tc]["cmd1"][0, :, 0]
    assert np.all(cmd[0::2] == cmd[1::2])
    assert np.all(cmd[2:200:2] != cmd[1:199:2])  # and changes at every tick (first 0.1 s)
    # and it is the PD of the state at the tick (the state after steps 2m-1, 2m, ...)
    th_tick = np.concatenate([[0.0], held[1:-1:2]])
    assert np.allclose(
        cmd[0::2], np.clip(Kp * (r - th_tick), -tmax, tmax), rtol=0, atol=Kp * 1e-5 + 1e-9
    )


# ---------------------------------------------------------------------------- anti-windup


def test_anti_windup_bounds_overshoot_and_integral():
    """PID with ki > 0 and a step that saturates the torque. A plain integrator (solve_ivp
    reference without anti-windup) winds up and overshoots by ~0.4 rad; with asr's anti-windup
    the integral does not grow while the output is saturated, the overshoot stays small, the
    integral term is bounded by i_max, and the steady state is the one of the bounded integral."""
    J, D, kp, kd, ki, k, tm, r = J0, D0, KP0, KD0, 1000.0, 2.0, TAU_MAX0, 1.0
    dt, n = 1e-3, 3000

    def rhs(t, y):
        th, v, integral = y
        u = np.clip(kp * (r - th) + ki * integral - kd * v, -tm, tm)
        return [v, (u - D * v - k * th) / J, r - th]

    naive = solve_ivp(
        rhs,
        (0.0, n * dt),
        [0.0, 0.0, 0.0],
        method="DOP853",
        rtol=RTOL,
        atol=ATOL,
        t_eval=dt * np.arange(1, n + 1),
    )
    naive_overshoot = naive.y[0].max() - r
    assert naive_overshoot > 0.3  # the reference does wind up

    i_max = np.array([np.inf, 0.5])
    b = sea(5, n=2, max_substep=1e-4, k=k, ki=ki, i_max=i_max)
    b.reset()
    out = b.rollout(n, dt, refs(r), record=("th1", "int1", "tau_m1"))
    th, integ, tau = (out[f][..., 0].T for f in ("th1", "int1", "tau_m1"))  # (steps, N)
    sat = np.abs(tau[:, 0]) >= tm * (1 - 1e-12)
    assert sat[:20].all()  # a saturated phase exists
    # integral frozen while saturated: far below what the plain integrator accumulates there
    assert np.max(np.abs(integ[sat, 0])) <= 0.01 * np.max(naive.y[2][sat])
    assert th[:, 0].max() - r < 0.25 * naive_overshoot
    # |ki I| <= i_max always
    assert np.max(np.abs(ki * integ[:, 1])) <= 0.5 * (1 + 1e-12)
    # steady states: unbounded integral removes the error; bounded one leaves
    # kp (r - th) + i_max = k th (spring load to the link at 0)
    assert th[-1, 0] == pytest.approx(r, abs=1e-6)
    assert th[-1, 1] == pytest.approx((kp * r + 0.5) / (kp + k), abs=1e-6)


# ---------------------------------------------------------------------------- voltage drive


def test_voltage_drive_static_map_dead_zone_saturation_and_sign():
    """drive = 1, mode 4 (ref1 is the normalised PWM command u): drive torque
    Kt/R * V(u) with V = Vs (sat(u,1) - dz sign u)/(1 - dz) for |u| > dz, 0 inside the dead
    zone. The torque has the sign of u (the published plugin's wrong sign for 0.3 < |u| <= 1
    is not reproduced)."""
    u = np.array([-2.0, -1.0, -0.7, -0.31, -0.3, -0.1, 0.0, 0.1, 0.3, 0.31, 0.5, 0.7, 1.0, 1.5])
    n = u.size
    Kt, R, Vs, dz = 0.8, 2.3, 8.0, 0.3
    b = sea(
        4, n=n, max_substep=1e-5, k=1e-9, drive=1, motor_Kt=Kt, motor_R=R, V_supply=Vs, dead_zone=dz
    )
    b.reset()
    b.step(0.0, 0.0, np.stack([u, np.zeros(n)], -1)[:, None, :], 1e-5)
    tau = b.tau_m1[:, 0]
    expected = Kt / R * voltage(u, dz, Vs)
    assert np.allclose(tau, expected, rtol=1e-12, atol=0)
    live = np.abs(u) > dz
    assert np.all(np.sign(tau[live]) == np.sign(u[live]))
    assert np.all(tau[~live] == 0.0)
    assert np.allclose(np.abs(tau[np.abs(u) >= 1]), Kt / R * Vs, rtol=1e-12)
    # u = 0.5: V = 8 * 0.2 / 0.7 = 2.2857 V, torque 0.7950 N m, by hand
    assert tau[u == 0.5][0] == pytest.approx(0.8 / 2.3 * 8 * 0.2 / 0.7, rel=1e-12)


@pytest.mark.parametrize("Kb", [0.3, 1.3, 0.0])
def test_voltage_drive_back_emf_damps_the_motor(Kb):
    """Free motor (negligible spring, no friction), constant command u: J v' = Kt/R V -
    (D + Kt Kb/R) v, so v(t) = v_ss (1 - exp(-t c/J)) with v_ss = Kt V/(R c)."""
    J, D, Kt, R, u = 0.001, 0.01, 0.8, 2.3, 0.8
    V = float(voltage(u))
    c = D + Kt * Kb / R
    v_ss = Kt * V / (R * c)
    dt, n = 1e-3, 400
    b = sea(
        4,
        max_substep=1e-5,
        k=1e-9,
        drive=1,
        motor_J=J,
        motor_D=D,
        motor_Kt=Kt,
        motor_R=R,
        motor_Kb=Kb,
    )
    b.reset()
    out = b.rollout(n, dt, refs(u), record=("th1d",))
    t = dt * np.arange(1, n + 1)
    v_ref = v_ss * (1 - np.exp(-t * c / J))
    # first order, h = 1e-5, time constant J/c >= 2.2 ms: relative error ~ h c/J < 0.5 %
    # (measured 1.8e-5, 2.1e-4, 8.5e-4 for Kb = 0, 0.3, 1.3); bound 5e-3
    assert np.max(np.abs(out["th1d"][0, :, 0] - v_ref)) < 5e-3 * v_ss


def test_voltage_drive_position_loop_matches_solve_ivp():
    """Mode 5 with the voltage drive and a continuous PD (u = kp e - kd v, normalised), SEA to a
    fixed link: the command crosses the saturation, the linear range and the dead zone. Against
    solve_ivp of J th'' = Kt/R (V(u) - Kb th') - D th' - k th."""
    J, D, Kt, Kb, R, kp, kd, k, r = 0.001, 0.01, 0.8, 0.3, 2.3, 2.0, 0.05, 0.5, 0.8

    def rhs(t, y):
        th, v = y
        V = float(voltage(kp * (r - th) - kd * v))
        return [v, (Kt / R * (V - Kb * v) - D * v - k * th) / J]

    dt, n = 1e-3, 500
    sol = solve_ivp(
        rhs,
        (0.0, n * dt),
        [0.0, 0.0],
        method="DOP853",
        rtol=RTOL,
        atol=ATOL,
        t_eval=dt * np.arange(1, n + 1),
    )
    errs = []
    for h in (1e-4, 1e-5):
        b = sea(
            5,
            max_substep=h,
            k=k,
            drive=1,
            motor_J=J,
            motor_D=D,
            motor_Kt=Kt,
            motor_Kb=Kb,
            motor_R=R,
            kp=kp,
            kd=kd,
        )
        b.reset()
        out = b.rollout(n, dt, refs(r), record=("th1",))
        errs.append(np.max(np.abs(out["th1"][0, :, 0] - sol.y[0])))
    # the reference ends (nearly, 1e-4) at rest where the drive torque balances the spring,
    # having crossed the saturated (u > 1) and linear ranges of the drive
    u_ref = kp * (r - sol.y[0]) - kd * sol.y[1]
    assert u_ref.max() > 1.0 and u_ref.min() < 0.5
    assert Kt / R * float(voltage(kp * (r - sol.y[0, -1]))) == pytest.approx(
        k * sol.y[0, -1], rel=1e-4
    )
    # first order on a 0.65 rad response: measured 4.0e-4 rad at h = 1e-4, 4.0e-5 at 1e-5
    assert errs[1] < 5e-4, errs
    assert errs[1] < 0.3 * errs[0], errs


def test_voltage_drive_dead_zone_holds_the_motor():
    """A position error whose command kp e lies inside the dead zone produces no torque at all:
    the motor (no friction, spring to a link at its position) does not move."""
    b = sea(5, n=2, k=10.0, drive=1, kp=1.0, kd=0.0)
    b.reset()
    r = np.array([[0.25, 0.0], [0.5, 0.0]])[:, None, :]  # u = 0.25 (dead) and 0.5 (live)
    out = b.rollout(200, 1e-3, r, record=("th1", "tau_m1"))
    assert np.all(out["th1"][0, :, 0] == 0.0) and np.all(out["tau_m1"][0, :, 0] == 0.0)
    assert out["th1"][1, -1, 0] > 0.01
