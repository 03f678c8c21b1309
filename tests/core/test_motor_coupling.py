"""The motor sub-step on a moving link, and the two motor schemes.

The spring acts on the deflection th - q, so the implicit motor update must take the link's
motion over the sub-step into account (csrc/core/motor.h). Checked here against references written
in this file: SciPy solve_ivp at rtol 1e-10 for a motor riding on a prescribed link motion,
closed forms of the undamped motor oscillation, and the exact momentum balance of the discrete
coupling with MuJoCo derived below.
"""

import mujoco
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import asr

RTOL, ATOL = 1e-10, 1e-12
J0 = 0.0233  # kg m^2, the toolbox's motor inertia
SCHEMES = ("euler", "trapezoid")


def free_sea(k, n=1, mode=4, scheme="euler", max_substep=1e-3):
    """A linear SEA whose motor is free: no damping, no friction, no clamp in reach."""
    p = {"k": k, "max_def": 100.0, "motor_D": 0.0, "friction": 0.0, "motor_J": J0}
    return asr.Batch([asr.Joint("sea", mode, p)], n, max_substep=max_substep, motor_scheme=scheme)


def smooth_start(t, speed, t_ramp):
    """Link angle and speed: from rest to `speed` rad/s over t_ramp with a minimum-jerk speed
    profile, then constant speed (so the motor starts riding without a free oscillation)."""
    s = np.clip(t / t_ramp, 0.0, 1.0)
    v = speed * (10 * s**3 - 15 * s**4 + 6 * s**5)
    # the integral of the speed profile, continued linearly after the ramp
    q_ramp = speed * t_ramp * (2.5 * s**4 - 3 * s**5 + s**6)
    q = np.where(t < t_ramp, q_ramp, speed * t_ramp * 0.5 + speed * (t - t_ramp))
    return q, v


@pytest.mark.parametrize("scheme", SCHEMES)
def test_free_motor_follows_a_link_at_constant_speed(scheme):
    """A free motor on a link turning at 1 rad/s has no reason to lag it: the mean deflection
    over the constant-speed phase is below 1e-6 rad (a motor update that takes the spring's far
    end as fixed lags by h qd = 1e-3 rad and drags the link with k h qd). The motor angle
    matches solve_ivp of J th'' = k (q(t) - th) with the same prescribed q(t)."""
    k, speed, dt, t_ramp, T = 10.0, 1.0, 1e-3, 2.0, 12.0
    n = int(round(T / dt))
    t0 = dt * np.arange(n)  # the link state given to step k is at its start
    q, qd = smooth_start(t0, speed, t_ramp)
    b = free_sea(k, scheme=scheme)
    b.reset()
    out = b.rollout(
        n, dt, np.zeros(2), q=q[None, :, None], qd=qd[None, :, None], record=("th1", "th1d")
    )
    th = out["th1"][0, :, 0]  # motor angle at the end of step k, t = (k + 1) dt
    q_end, _ = smooth_start(t0 + dt, speed, t_ramp)
    cruise = t0 + dt > t_ramp + 1.0
    defl = th[cruise] - q_end[cruise]
    assert abs(defl.mean()) < 1e-6, defl.mean()

    def rhs(t, y):
        qt, _ = smooth_start(np.array(t), speed, t_ramp)
        return [y[1], k * (float(qt) - y[0]) / J0]

    sol = solve_ivp(
        rhs,
        (0.0, T),
        [0.0, 0.0],
        method="DOP853",
        rtol=RTOL,
        atol=ATOL,
        t_eval=t0 + dt,
        max_step=0.05,
    )
    err = np.abs(th - sol.y[0]).max()
    # the spring oscillation the ramp excites is 1e-3 rad (J qdd / k) at w = 20.7 rad/s; the
    # scheme's phase error on it stays far below the 1e-3 rad lag of the old update
    assert err < 1e-4, err


@pytest.mark.parametrize("scheme", SCHEMES)
def test_link_and_motor_momentum_balance_with_mujoco(scheme):
    """Link + free motor + linear spring, no damping, no gravity, no friction, one motor
    sub-step per MuJoCo step h, pushed by an external torque for the first 0.1 s.

    Discrete momentum balance (derived for this test): MuJoCo's Euler step gives the link
    I (qd_{n+1} - qd_n) = h (k d_n + tau_ext_n), with d_n = th_n - q_n; the motor step sees the
    spring linearised about the link extrapolated to q_n + h qd_n, i.e. a force
    -k (d_{n+1} + h (qd_{n+1} - qd_n)) for backward Euler and the mean of that and -k d_n for
    the trapezoidal rule (weight w = 1 and 1/2 on the end value). Summed over the steps the
    spring terms telescope:
        L_N - L_0 - h sum tau_ext = w h k (d_0 - d_N) - w h^2 k (qd_N - qd_0),
    with L = I qd + J thd. So momentum is conserved to O(h) and the error does not grow with
    time: asserted as this identity to round-off, and as the bound w h k (|d_0| + |d_N|) +
    w h^2 k |qd_N - qd_0|. A motor step that takes the link as fixed adds -w h^2 k qd_n per step,
    a drift of -w h k (q_N - q_0) that grows with every turn of the link (checked to fail the
    bound by orders of magnitude)."""
    k = 2.0
    sim = asr.Sim(
        "pendulum_1dof",
        1,
        variant="sea",
        motor_scheme=scheme,
        params={
            "joint": {
                "k": k,
                "max_def": 100.0,
                "motor_D": 0.0,
                "friction": 0.0,
                "motor_J": J0,
                "link_friction": 0.0,
            }
        },
        mujoco_params={"dof_damping": {"joint": 0.0}},
    )
    sim.models[0].opt.gravity[:] = 0.0
    sim.batch.set_mode(0, 4)
    h = sim.dt
    assert h <= sim.batch.max_substep  # one motor sub-step per step
    sim.reset(q0=0.0)
    mujoco.mj_forward(sim.models[0], sim.datas[0])
    inertia_row = np.zeros(1)  # M e_0: the link's inertia about its axis, kg m^2
    mujoco.mj_mulM(sim.models[0], sim.datas[0], inertia_row, np.ones(1))
    inertia = float(inertia_row[0])
    steps, push = 40000, 1000
    ext = np.zeros((1, steps, 1))
    ext[0, :push, 0] = 0.5  # N m for 0.1 s: an impulse of 0.05 N m s
    out = sim.rollout(steps, np.zeros((1, 2)), tau_ext=ext, record=("q", "qd", "th1", "th1d"))
    q, qd = out["q"][0, :, 0], out["qd"][0, :, 0]
    th, thd = out["th1"][0, :, 0], out["th1d"][0, :, 0]
    assert q[-1] > 2 * np.pi  # the link has turned more than once
    L_end = inertia * qd[-1] + J0 * thd[-1]
    d_end = th[-1] - q[-1]
    w = 1.0 if scheme == "euler" else 0.5
    impulse = h * ext.sum()
    lhs = L_end - 0.0 - impulse
    rhs = w * h * k * (0.0 - d_end) - w * h * h * k * (qd[-1] - 0.0)
    assert lhs == pytest.approx(rhs, abs=1e-12), (lhs, rhs)
    bound = w * h * k * abs(d_end) + w * h * h * k * abs(qd[-1])
    assert abs(lhs) <= bound * (1 + 1e-6) + 1e-13, (lhs, bound)
    # the drift of a fixed-link motor update would have been w h k (q_N - q_0)
    assert w * h * k * q[-1] > 100 * bound


def _oscillation(scheme, h, T, amp=0.1, k=10.0):
    """Free motor against a fixed link, released at th = amp: J th'' = -k th."""
    b = free_sea(k, mode=5, scheme=scheme, max_substep=h)
    b.reset(refs=np.array([amp, 0.0]))  # mode 5 places the motor at its reference
    b.set_mode(0, 4)
    n = int(round(T / h))
    out = b.rollout(n, h, np.zeros(2), record=("th1", "th1d"))
    t = h * np.arange(1, n + 1)
    w = np.sqrt(k / J0)
    return t, out["th1"][0, :, 0], out["th1d"][0, :, 0], w


def test_backward_euler_damps_an_undamped_motor_by_h_omega_over_two():
    """The documented numerical damping of the default scheme: ratio about h w / 2."""
    h, T, amp = 1e-3, 3.0, 0.1
    t, th, thd, w = _oscillation("euler", h, T, amp)
    energy = 0.5 * J0 * thd**2 + 0.5 * 10.0 * th**2
    rate = -np.polyfit(t, np.log(energy), 1)[0] / 2  # amplitude decay rate, 1/s
    zeta = rate / w
    assert zeta == pytest.approx(h * w / 2, rel=0.02), (zeta, h * w / 2)


def test_trapezoid_keeps_the_energy_of_an_undamped_motor():
    """The trapezoidal rule conserves the quadratic energy of a linear oscillator exactly."""
    t, th, thd, w = _oscillation("trapezoid", 1e-3, 3.0)
    energy = 0.5 * J0 * thd**2 + 0.5 * 10.0 * th**2
    assert np.abs(energy / (0.5 * 10.0 * 0.1**2) - 1).max() < 1e-12


@pytest.mark.parametrize("scheme, order", [("euler", 1), ("trapezoid", 2)])
def test_scheme_order_against_the_closed_form(scheme, order):
    """Error of th(t) against amp cos(w t) over 1 s: halving h divides it by 2^order."""
    errs = []
    for h in (1e-3, 5e-4, 2.5e-4):
        t, th, _, w = _oscillation(scheme, h, 1.0)
        errs.append(np.abs(th - 0.1 * np.cos(w * t)).max())
    ratios = [errs[0] / errs[1], errs[1] / errs[2]]
    for r in ratios:
        assert r == pytest.approx(2.0**order, rel=0.1), (errs, ratios)


def test_motor_scheme_is_validated():
    with pytest.raises(ValueError, match="motor_scheme.*'rk4'.*euler, trapezoid"):
        free_sea(10.0, scheme="rk4")
    with pytest.raises(ValueError, match="motor_scheme"):
        free_sea(10.0, scheme=["euler"])
    b = free_sea(10.0)
    b.motor_scheme = "trapezoid"
    assert b.motor_scheme == "trapezoid"


def test_trapezoid_keeps_the_energy_balance_of_a_sliding_motor():
    """A motor sliding against Coulomb friction under a constant drive torque is a linear
    oscillator with a constant force, J th'' = tau - tau_fs - k th: the trapezoidal rule keeps
    I = J thd^2 / 2 + k th^2 / 2 - (tau - tau_fs) th exactly while the motor slides on. The
    stick point it leaves, w = th - z, is rounded, so th - w often falls a few ulps short of the
    band z = tau_fs / K; a sub-step that took that for sticking went by the Euler step and lost
    energy (the core did, about one sub-step in four)."""
    k, tau, tau_fs, K = 10.0, 1.0, 0.02, 1000.0
    p = {
        "k": k,
        "max_def": 100.0,
        "motor_D": 0.0,
        "friction": tau_fs,
        "friction_K": K,
        "motor_J": J0,
    }
    b = asr.Batch([asr.Joint("sea", 4, p)], 1, motor_scheme="trapezoid")
    h, n = 1e-3, 140  # half a period is pi sqrt(J0 / k) = 152 ms
    out = b.rollout(n, h, np.array([tau, 0.0]), record=("th1", "th1d", "w1"))
    th, thd, w = out["th1"][0, :, 0], out["th1d"][0, :, 0], out["w1"][0, :, 0]
    z = tau_fs / K
    sliding = np.flatnonzero(np.abs(th - w - z) <= 1e-12)
    first = sliding[0]
    assert first < 5 and np.array_equal(sliding, np.arange(first, n)), sliding
    assert np.all(thd[first:] > 0.0)
    invariant = 0.5 * J0 * thd**2 + 0.5 * k * th**2 - (tau - tau_fs) * th
    drift = invariant[first:] - invariant[first]
    scale = 0.5 * J0 * thd.max() ** 2
    assert np.abs(drift).max() < 1e-12 * scale, (np.abs(drift).max(), scale)  # 1.5e-15 here
