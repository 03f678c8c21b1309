"""Motor dynamics, limits and low-level controllers (docs/models.md sections 2 and 3,
[Mengacci2021] eq. 7-11): step response, torque / velocity / position limits, the held
controller and anti-windup.

Every expected value is computed here independently of the C core: closed-form solutions of
linear ODEs and SciPy solve_ivp of the continuous equations (rtol 1e-10, atol 1e-12); on the
tolerances see tests/support/motor.py.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import asr
from tests.support.motor import ATOL, D0, J0, KD0, KP0, RTOL, TAU_MAX0, refs, sea, second_order

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
