"""Motor friction and numerical stability ([Kamedula2016] eq. 4 and 7, [Parnenzini2015]):
friction never creates energy and holds a motor below breakaway; the toolbox's semi-implicit
Euler is unstable at 25 ms where asr is not.

Expected values are computed independently of the C core: energy bookkeeping, the toolbox's
scheme re-implemented here and SciPy solve_ivp of the continuous equations.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from tests.support.motor import (
    ATOL,
    D0,
    FS0,
    J0,
    KD0,
    KF0,
    KP0,
    RTOL,
    TAU_MAX0,
    dahl_rhs,
    refs,
    sea,
)

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
