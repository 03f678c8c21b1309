"""The seven operation modes (docs/models.md sec. 4, [Mengacci2021] sec. 3.1), the external link
torque and the feed-forward motor torque ([Kamedula2016] eq. 4).

Expected values are computed here from the formulas of docs/models.md (compliance models written
out again in NumPy, reference maps, PID by hand), from closed-form steady states and from SciPy
solve_ivp of the continuous motor equations (rtol 1e-10, atol 1e-12); never from asr itself.
Motor sign convention (docs/models.md): each motor feels the reaction of its own spring, i.e. minus
the spring's torque on the link.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import asr

RTOL, ATOL = 1e-10, 1e-12


# ---------------------------------------------------------------------------- formulas


def sat(x, m):
    return np.clip(x, -m, m)


def spring_torques(model, p, q, th1, th2, qd=0.0, th1d=0.0):
    """(tau1, tau2, stiffness) of the springs on the link, docs/models.md sec. 1."""
    if model == "sea":
        phi = sat(q - th1, p.get("max_def", 0.8))
        k = p.get("k", 10.0)
        return -k * phi, 0.0 * phi, k + 0.0 * phi
    if model == "sea_damped":
        phi = sat(q - th1, p.get("max_def", np.inf))
        Kt, Dt = p.get("Kt", 188.0), p.get("Dt", 0.5)
        return -Kt * phi + Dt * (th1d - qd), 0.0 * phi, Kt + 0.0 * phi
    if model == "awas2":
        L, rt, Ks = p.get("L", 0.05), p.get("r_t", 0.015), p.get("Ks", 10.0)
        phi = sat(q - th1, p.get("max_def", 0.3))
        G = (L / rt) * th2 / (L - th2)
        return -Ks * G**2 * np.sin(2 * phi), 0.0 * phi, 2 * Ks * G**2 * np.cos(2 * phi)
    if model == "bavs":
        a, b, k, ke = p.get("a", 1.21e-6), p.get("b", 2.38e-6), p.get("k", 1.6e5), p.get("ke", 8.71)
        m = p.get("max_def", 0.27)
        p1, p2 = sat(th1 - q, m), sat(th2 - q, m)
        t1 = k * (b * np.exp(ke * p1) - a * np.exp(-ke * p1))
        t2 = k * (a * np.exp(ke * p2) - b * np.exp(-ke * p2))
        s = (
            k
            * ke
            * (
                b * np.exp(ke * p1)
                + a * np.exp(-ke * p1)
                + a * np.exp(ke * p2)
                + b * np.exp(-ke * p2)
            )
        )
        return t1, t2, s
    if model == "qbmove_advanced":
        k1, a1 = p.get("k1", 0.0019), p.get("a1", 8.9992)
        k2, a2 = p.get("k2", 0.0019), p.get("a2", 8.9992)
        m = p.get("max_def", 0.8)
        p1, p2 = sat(q - th1, m), sat(q - th2, m)
        return (
            -k1 * np.sinh(a1 * p1),
            -k2 * np.sinh(a2 * p2),
            a1 * k1 * np.cosh(a1 * p1) + a2 * k2 * np.cosh(a2 * p2),
        )
    if model == "qbmove":
        k, a = p.get("k", 0.022), p.get("a", 6.85)
        # tau_i = k sinh(a (q - th_i)) acting with a minus sign, no clamp
        return (
            -k * np.sinh(a * (q - th1)),
            -k * np.sinh(a * (q - th2)),
            a * k * (np.cosh(a * (q - th1)) + np.cosh(a * (q - th2))),
        )
    raise KeyError(model)


def ref_map(model, p, eq, preset):
    """(th1, th2) from (equilibrium, preset), docs/models.md sec. 1."""
    if model in ("sea", "sea_damped"):
        return eq, 0.0 * eq
    if model == "awas2":
        return eq, preset
    if model in ("bavs", "qbmove_advanced"):
        return eq + preset, eq - preset
    if model == "qbmove":
        m = p.get("th_max", 3.1497)
        return sat(eq + preset, m), sat(eq - preset, m)
    raise KeyError(model)


def inputs(n, rng, steps):
    q = rng.uniform(-0.3, 0.3, (steps, n, 1))
    qd = rng.uniform(-1.0, 1.0, (steps, n, 1))
    return q, qd


# ---------------------------------------------------------------------------- modes 0 and 1


def test_mode0_link_torque_is_ref1_rigid_and_sea():
    rng = np.random.default_rng(0)
    b = asr.Batch([asr.Joint("rigid", 0), asr.Joint("sea", 0)], 4)
    b.reset()
    for _ in range(5):
        r = rng.normal(size=(4, 2, 2))
        ext = rng.normal(size=(4, 2))
        tau = b.step(rng.normal(size=(4, 2)), rng.normal(size=(4, 2)), r, 1e-3, tau_ext=ext)
        assert np.array_equal(b.tau_link, r[..., 0])
        assert np.array_equal(tau, r[..., 0] + ext)


def test_mode1_link_pid_by_hand():
    """tau = sat(link_kp e + link_ki I - link_kd qd, link_tau_max), e = ref1 - q,
    I = sum of e dt including the current step (derivative on the measured link velocity)."""
    kp, ki, kd, dt, steps = 0.8, 2.0, 0.2, 1e-2, 60
    rng = np.random.default_rng(1)
    b = asr.Batch([asr.Joint("rigid", 1, dict(link_kp=kp, link_ki=ki, link_kd=kd))], 3)
    b.reset()
    integral = np.zeros(3)
    for _ in range(steps):
        q, qd, r = rng.uniform(-1, 1, 3), rng.uniform(-2, 2, 3), rng.uniform(-1, 1, 3)
        tau = b.step(q[:, None], qd[:, None], np.stack([r, 0 * r], -1)[:, None, :], dt)
        integral += (r - q) * dt
        expected = kp * (r - q) + ki * integral - kd * qd
        assert np.allclose(tau[:, 0], expected, rtol=1e-12, atol=1e-14)

    # saturated output: +/- link_tau_max exactly, and a bounded integral term
    b = asr.Batch(
        [asr.Joint("rigid", 1, dict(link_kp=kp, link_ki=ki, link_kd=kd, link_tau_max=0.3))], 3
    )
    b.reset()
    q = np.array([0.0, 0.0, 0.2])
    r = np.array([2.0, -2.0, 0.25])
    out = b.rollout(
        400, dt, np.stack([r, 0 * r], -1)[:, None, :], q=q[:, None], record=("tau_link", "intq")
    )
    tau = out["tau_link"][..., 0].T  # (steps, N)
    assert np.all(tau[:, 0] == 0.3) and np.all(tau[:, 1] == -0.3)
    assert np.max(np.abs(ki * out["intq"])) <= 0.3 * (1 + 1e-12)
    # unsaturated instance: kp 0.05 + ki I grows by ki e dt per step until it saturates
    assert tau[0, 2] == pytest.approx(kp * 0.05 + ki * 0.05 * dt, rel=1e-12)
    # ... and then stays at the limit, up to one integral increment ki e dt (conditional
    # integration stops the integral just before the output would cross the limit)
    assert 0.3 - ki * 0.05 * dt * (1 + 1e-9) <= tau[-1, 2] <= 0.3


# ---------------------------------------------------------------------------- modes 2 and 3


POSITION_CASES = [
    ("sea", {"k": 200.0}),
    ("sea_damped", {}),
    ("bavs", {}),
    ("qbmove_advanced", {"k1": 0.01, "a1": 6.0}),
    ("qbmove", {"link_friction": 0.0}),
]


@pytest.mark.parametrize("model, params", POSITION_CASES, ids=[c[0] for c in POSITION_CASES])
def test_mode2_motors_are_ideal_position_sources(model, params):
    """Mode 2: th_i = ref_i, the link torque is the elastic torque at those motor positions
    (springs clamped at max_def), th_i' = finite difference of the references / dt."""
    n, steps, dt = 4, 30, 2e-3
    rng = np.random.default_rng(2)
    spec = asr.models()[model]
    b = asr.Batch([asr.Joint(model, 2, dict(params))], n)
    r0 = rng.uniform(-0.2, 0.2, (n, 1, 2))
    b.reset(q0=0.0, refs=r0)
    prev = r0[:, 0, :].copy()
    q, qd = inputs(n, rng, steps)
    for s in range(steps):
        # large excursions now and then so that the clamps are exercised
        r = rng.uniform(-0.3, 0.3, (n, 1, 2)) * (4.0 if s % 7 == 3 else 1.0)
        tau = b.step(q[s], qd[s], r, dt)
        th1, th2 = r[:, 0, 0], (r[:, 0, 1] if spec.nmotor == 2 else np.zeros(n))
        assert np.array_equal(b.th1[:, 0], th1)
        assert np.array_equal(b.th2[:, 0], th2)
        v1 = (th1 - prev[:, 0]) / dt
        assert np.allclose(b.th1d[:, 0], v1, rtol=1e-12, atol=1e-12)
        if spec.nmotor == 2:
            assert np.allclose(b.th2d[:, 0], (th2 - prev[:, 1]) / dt, rtol=1e-12, atol=1e-12)
        t1, t2, sig = spring_torques(model, params, q[s, :, 0], th1, th2, qd[s, :, 0], v1)
        assert np.allclose(tau[:, 0], t1 + t2, rtol=1e-11, atol=1e-12)
        assert np.allclose(b.tau_el1[:, 0], t1, rtol=1e-11, atol=1e-12)
        assert np.allclose(b.tau_el2[:, 0], t2, rtol=1e-11, atol=1e-12)
        assert np.allclose(b.stiffness[:, 0], sig, rtol=1e-11, atol=1e-12)
        prev = np.stack([th1, r[:, 0, 1] if spec.nmotor == 2 else np.zeros(n)], -1)


MAP_CASES = [
    ("sea", {"k": 400.0}, (-0.5, 0.5), (0.0, 1.0)),
    ("awas2", {}, (-0.4, 0.4), (0.0, 0.045)),
    ("bavs", {}, (-0.5, 0.5), (0.0, 0.22)),
    ("qbmove_advanced", {}, (-0.5, 0.5), (0.0, 0.6)),
    ("qbmove", {"link_friction": 0.0}, (-3.0, 3.0), (0.0, 1.0)),  # th_max clamp reached
]


@pytest.mark.parametrize(
    "model, params, eq_range, pre_range", MAP_CASES, ids=[c[0] for c in MAP_CASES]
)
def test_mode3_maps_equilibrium_and_preset(model, params, eq_range, pre_range):
    """Mode 3: (eq, preset) -> (th1, th2) by the model's map (sea th1 = eq; awas2 th1 = eq,
    th2 = pivot s; bavs / qbmove_advanced th = eq +/- preset; qbmove the same clamped to
    th_max), then as mode 2."""
    n, steps, dt = 6, 20, 1e-3
    rng = np.random.default_rng(3)
    b = asr.Batch([asr.Joint(model, 3, dict(params))], n)
    b.reset()
    q, qd = inputs(n, rng, steps)
    for s in range(steps):
        eq = rng.uniform(*eq_range, n)
        pre = rng.uniform(*pre_range, n)
        tau = b.step(q[s], qd[s], np.stack([eq, pre], -1)[:, None, :], dt)
        th1, th2 = ref_map(model, params, eq, pre)
        assert np.allclose(b.th1[:, 0], th1, rtol=0, atol=1e-15)
        assert np.allclose(b.th2[:, 0], th2, rtol=0, atol=1e-15)
        t1, t2, sig = spring_torques(model, params, q[s, :, 0], th1, th2)
        assert np.allclose(tau[:, 0], t1 + t2, rtol=1e-11, atol=1e-12)
        assert np.allclose(b.stiffness[:, 0], sig, rtol=1e-11, atol=1e-12)
    if model == "qbmove":
        assert np.any(np.abs(eq_range[1] + pre_range[1]) > 3.1497)


def test_mode3_awas2_rejects_pivot_at_or_beyond_lever():
    b = asr.Batch([asr.Joint("awas2", 3)], 1)
    b.reset()
    with pytest.raises(ValueError):
        b.step(0.0, 0.0, np.array([0.1, 0.05]), 1e-3)  # s = L is singular
    with pytest.raises(ValueError):
        b.step(0.0, 0.0, np.array([0.1, -0.01]), 1e-3)


# ---------------------------------------------------------------------------- mode 4


MODE4_CASES = [
    ("sea", {"k": 10.0, "max_def": 100.0}, 0.3, (0.5, 0.0)),
    ("qbmove_advanced", {"max_def": 100.0}, 0.1, (0.02, -0.01)),
    ("bavs", {"max_def": 100.0}, 0.0, (0.5, -0.2)),
]


@pytest.mark.parametrize("model, params, q, tau", MODE4_CASES, ids=[c[0] for c in MODE4_CASES])
def test_mode4_motor_torques_drive_the_motor_dynamics(model, params, q, tau):
    """Mode 4, fixed link, no friction: J th_i'' = tau_i - D th_i' - tau_el_i(q, th) (the motor
    feels minus its spring's torque on the link), against solve_ivp. The link torque of each
    step is the elastic torque at the motor state at the start of the step."""
    J, D = 0.0233, 0.2698
    p = dict(params, friction=0.0)
    nm = asr.models()[model].nmotor
    dt, n = 1e-3, 1000

    def rhs(t, y):
        th1, th2, v1, v2 = y
        t1, t2, _ = spring_torques(model, p, q, th1, th2 if nm == 2 else 0.0)
        a1 = (tau[0] - D * v1 - t1) / J
        a2 = (tau[1] - D * v2 - t2) / J if nm == 2 else 0.0
        return [v1, v2 if nm == 2 else 0.0, a1, a2]

    y0 = [q, q if nm == 2 else 0.0, 0.0, 0.0]  # reset: motors at zero deflection
    sol = solve_ivp(
        rhs,
        (0.0, n * dt),
        y0,
        method="DOP853",
        rtol=RTOL,
        atol=ATOL,
        t_eval=dt * np.arange(1, n + 1),
    )
    b = asr.Batch([asr.Joint(model, 4, p)], 1, max_substep=1e-5)
    b.reset(q0=q)
    out = b.rollout(n, dt, np.array(tau), q=q, record=("th1", "th2", "th1d", "tau_link"))
    th1 = out["th1"][0, :, 0]
    scale = np.max(np.abs(sol.y[0] - q)) + 1e-3
    # first order, h = 1e-5: relative error ~ 1e-4 of the excursion
    assert np.max(np.abs(th1 - sol.y[0])) < 1e-3 * scale
    assert np.max(np.abs(out["th1d"][0, :, 0] - sol.y[2])) < 1e-3 * np.max(np.abs(sol.y[2]))
    if nm == 2:
        assert np.max(np.abs(out["th2"][0, :, 0] - sol.y[1])) < 1e-3 * scale
    # link torque of step s+1 from the motor state after step s (start of step s+1)
    th2_prev = out["th2"][0, :-1, 0] if nm == 2 else 0.0
    t1, t2, _ = spring_torques(model, p, q, th1[:-1], th2_prev)
    assert np.allclose(out["tau_link"][0, 1:, 0], t1 + t2, rtol=1e-11, atol=1e-13)
    # the motors really moved
    assert np.max(np.abs(th1 - q)) > 0.01


# ---------------------------------------------------------------------------- modes 5 and 6


def _static_motor(kp, r, load, lo, hi):
    """Root of kp (r - th) + load(th) = 0 (motor at rest under its PD and spring load)."""
    return brentq(lambda th: kp * (r - th) + load(th), lo, hi, xtol=1e-15, rtol=1e-15)


STEADY_CASES = [
    # model, mode, params, q, refs
    ("sea", 5, {"k": 10.0}, 0.1, (0.4, 0.0)),
    ("sea_damped", 5, {}, -0.05, (0.1, 0.0)),
    ("awas2", 6, {}, 0.0, (0.2, 0.01)),
    ("bavs", 6, {}, 0.0, (0.05, 0.1)),
    ("qbmove_advanced", 6, {}, 0.0, (0.3, 0.4)),
    ("qbmove_advanced", 5, {"k1": 0.05, "a1": 5.0}, 0.1, (0.6, -0.3)),
]


@pytest.mark.parametrize(
    "model, mode, params, q, r", STEADY_CASES, ids=[f"{c[0]}-mode{c[1]}" for c in STEADY_CASES]
)
def test_modes5_6_motors_settle_at_the_pd_spring_equilibrium(model, mode, params, q, r):
    """Fixed link, no friction: each motor settles where kp (target - th) equals its spring
    load, target the (mapped) reference; the offset from the target is load/kp."""
    p = dict(params, friction=0.0)
    b = asr.Batch([asr.Joint(model, mode, p)], 1)
    kp = float(b.get_param(0, "kp")[0])
    nm = asr.models()[model].nmotor
    targets = ref_map(model, p, *r) if mode == 6 else r
    b.reset(q0=q)
    out = b.rollout(3000, 1e-3, np.array(r), q=q, record=("th1", "th2"))
    th1 = out["th1"][0, -1, 0]

    th2_fixed = targets[1] if model == "awas2" else 0.0  # awas2: th2 is the pivot position
    load1 = lambda th: -spring_torques(model, p, q, th, th2_fixed)[0]  # noqa: E731
    th1_ss = _static_motor(kp, targets[0], load1, -2.0, 2.0)
    # the expected state must not need more than the torque limit (test validity)
    assert kp * abs(targets[0] - th1_ss) < float(b.get_param(0, "tau_max")[0])
    assert th1 == pytest.approx(th1_ss, abs=1e-9)
    assert kp * abs(targets[0] - th1_ss) == pytest.approx(abs(load1(th1_ss)), rel=1e-9)
    if model == "awas2":
        assert out["th2"][0, -1, 0] == targets[1]
    if nm == 2:
        load2 = lambda th: -spring_torques(model, p, q, 0.0, th)[1]  # noqa: E731
        th2_ss = _static_motor(kp, targets[1], load2, -2.0, 2.0)
        assert out["th2"][0, -1, 0] == pytest.approx(th2_ss, abs=1e-9)
    # the link torque is then the spring torque at the settled motors
    t1, t2, _ = spring_torques(model, p, q, th1, out["th2"][0, -1, 0])
    assert b.tau_link[0, 0] == pytest.approx(t1 + t2, abs=1e-9)


def test_mode6_with_friction_settles_within_the_friction_band():
    """Static friction fs: the motor stops anywhere kp (r - th) + load(th) is within +/- fs,
    i.e. within fs / (kp + dload/dth) of the friction-free equilibrium."""
    fs = np.array([0.0, 0.02, 0.05, 0.2])
    model, q, r = "qbmove_advanced", 0.0, (0.3, 0.4)
    b = asr.Batch([asr.Joint(model, 6, {"friction": fs})], fs.size)
    kp = 125.0
    b.reset(q0=q)
    b.rollout(3000, 1e-3, np.array(r), q=q)
    t1, t2 = ref_map(model, {}, *r)
    for m, target in ((0, t1), (1, t2)):

        def load(th, m=m):
            args = (th, 0.0) if m == 0 else (0.0, th)
            return -spring_torques(model, {}, q, *args)[m]

        th_ss = _static_motor(kp, target, load, -2.0, 2.0)
        kload = 0.0019 * 8.9992 * np.cosh(8.9992 * (q - th_ss))
        th = (b.th1 if m == 0 else b.th2)[:, 0]
        assert np.all(np.abs(th - th_ss) <= fs / (kp + kload) * 1.01 + 1e-12)
        # residual force balance is inside the friction band
        resid = kp * (target - th) + np.array([load(x) for x in th])
        assert np.all(np.abs(resid) <= fs * (1 + 1e-6) + 1e-12)


def test_mode6_qbmove_voltage_drive_with_held_1khz_controller():
    """The 2015 qbmove ([Parnenzini2015]) in mode 6 with its defaults: map th = eq +/- s, PD on each
    motor at 1 kHz held between ticks, normalised command through the PWM dead zone and
    saturation, back-EMF, sinh springs to a fixed link (friction off). Reference: at every tick
    u_i = kp (th_i_ref - th_i) - kd th_i', V_i held; between ticks solve_ivp of
    J th_i'' = Kt/R (V_i - Kb th_i') - b th_i' + k sinh(a (q - th_i))."""
    p = {"friction": 0.0, "link_friction": 0.0}
    b = asr.Batch([asr.Joint("qbmove", 6, p)], 1, max_substep=1e-5)
    g = {
        name: float(b.get_param(0, name)[0])
        for name in (
            "motor_J",
            "motor_D",
            "kp",
            "kd",
            "ctrl_period",
            "drive",
            "motor_Kt",
            "motor_Kb",
            "motor_R",
            "V_supply",
            "dead_zone",
            "k",
            "a",
        )
    }
    assert g["drive"] == 1.0 and g["ctrl_period"] == 1e-3
    J, D, kp, kd, Tc = g["motor_J"], g["motor_D"], g["kp"], g["kd"], g["ctrl_period"]
    kr, Kb, Vs, dz, k, a = (
        g["motor_Kt"] / g["motor_R"],
        g["motor_Kb"],
        g["V_supply"],
        g["dead_zone"],
        g["k"],
        g["a"],
    )
    q, eq, s = 0.1, 0.5, 0.3
    targets = np.array(ref_map("qbmove", {}, eq, s))
    dt, T = 5e-4, 0.3

    def volt(u):
        us = np.clip(u, -1.0, 1.0)
        return np.where(np.abs(u) > dz, Vs * (us - dz * np.sign(u)) / (1 - dz), 0.0)

    y = np.array([q, q, 0.0, 0.0])  # reset: motors at zero deflection, at rest
    ref = []
    for tick in range(int(round(T / Tc))):
        V = volt(kp * (targets - y[:2]) - kd * y[2:])

        def rhs(t, z, V=V):
            th, v = z[:2], z[2:]
            return np.concatenate([v, (kr * (V - Kb * v) - D * v + k * np.sinh(a * (q - th))) / J])

        sol = solve_ivp(
            rhs,
            (tick * Tc, (tick + 1) * Tc),
            y,
            method="DOP853",
            rtol=RTOL,
            atol=ATOL,
            t_eval=[tick * Tc + dt, (tick + 1) * Tc],
        )
        ref += [sol.y[:2, 0], sol.y[:2, 1]]
        y = sol.y[:, 1]
    ref = np.array(ref)
    b.reset(q0=q)
    out = b.rollout(ref.shape[0], dt, np.array([eq, s]), q=q, record=("th1", "th2"))
    th = np.stack([out["th1"][0, :, 0], out["th2"][0, :, 0]], -1)
    # both motors travel a few tenths of a radian; first-order error at h = 1e-5 s (measured
    # 4.4e-5 rad, and 4.4e-4 at h = 1e-4: linear in h), bound 1e-4 rad
    assert np.max(np.abs(ref[-1] - q)) > 0.05
    assert np.max(np.abs(th - ref)) < 1e-4, np.max(np.abs(th - ref))


# ---------------------------------------------------------------------------- external torque


def _link_torque_expected(mode, p, q, qd, r, th1_start):
    """Link torque of joint (sea) in `mode` by hand; th1_start: motor angle at step start."""
    k, md = p["k"], p["max_def"]
    if mode == 0:
        return r[..., 0]
    if mode == 1:
        return 0.8 * (r[..., 0] - q) - 0.2 * qd  # default link gains 0.8 / 0 / 0.2
    if mode in (2, 3):
        return -k * sat(q - r[..., 0], md)
    return -k * sat(q - th1_start, md)


def test_external_torque_is_applied_in_every_mode():
    """tau_joint = tau_link + tau_ext in all modes (docs/models.md sec. 4: the toolbox subscribes to
    the external torque but never uses it), with tau_link itself the mode's torque."""
    modes = list(range(7))
    p = {"k": 50.0, "max_def": 0.8}
    joints = [asr.Joint("sea", m, p) for m in modes] + [
        asr.Joint("rigid", 0),
        asr.Joint("rigid", 1),
    ]
    nj, n, steps, dt = len(joints), 3, 40, 1e-3
    rng = np.random.default_rng(5)
    q = rng.uniform(-0.2, 0.2, (steps, n, nj))
    qd = rng.uniform(-1, 1, (steps, n, nj))
    r = rng.uniform(-0.5, 0.5, (steps, n, nj, 2))
    ext = rng.normal(size=(steps, n, nj))

    b = asr.Batch(joints, n)
    b.reset(q0=q[0], refs=r[0])
    th_start = b.th1.copy()
    for s in range(steps):
        tau = b.step(q[s], qd[s], r[s], dt, tau_ext=ext[s])
        assert np.array_equal(b.tau_ext, ext[s])
        assert np.array_equal(tau, b.tau_link + ext[s])
        for j, mode in enumerate(modes + [0, 1]):
            expected = _link_torque_expected(
                mode, p, q[s, :, j], qd[s, :, j], r[s, :, j], th_start[:, j]
            )
            assert np.allclose(b.tau_link[:, j], expected, rtol=1e-12, atol=1e-12), (j, mode)
        th_start = b.th1.copy()

    # the same through rollout with a per-step external torque
    b.reset(q0=q[0], refs=r[0])
    ri, qi, qdi, exti = (np.moveaxis(x, 0, 1) for x in (r, q, qd, ext))  # instance first
    out = b.rollout(
        steps, dt, ri, q=qi, qd=qdi, tau_ext=exti, record=("tau_joint", "tau_link", "tau_ext")
    )
    assert np.array_equal(out["tau_ext"], exti)
    assert np.array_equal(out["tau_joint"], out["tau_link"] + exti)
    assert np.all(np.abs(out["tau_joint"] - out["tau_link"]) > 0)


# ---------------------------------------------------------------------------- feed-forward


def test_feedforward_torque_kamedula2016_eq4():
    """[Kamedula2016] eq. 4: tau_m = g(q_d) + Kp (th_d - th) - Kd th', th_d = q_d + g(q_d)/K.
    With the link fixed at q_d and tau_ff = g(q_d), the motor settles at th = q_d + tau_ff/K
    (kp (th_d - th) = 0 and the spring load K (q_d - th) = -tau_ff balances tau_ff), so the
    spring delivers tau_link = K (th - q_d) = +tau_ff exactly, independently of kp: that needs
    both the reference shift and the added torque (either alone gives a kp-dependent
    fraction of it). Modes 5 (ref = q_d) and 6 (eq = q_d) of sea and sea_damped."""
    joints = [
        asr.Joint("sea", 5, {"k": 200.0, "friction": 0.0}),
        asr.Joint("sea", 6, {"k": 200.0, "friction": 0.0}),
        asr.Joint("sea_damped", 5, {}),
        asr.Joint("sea_damped", 6, {}),
    ]
    K = np.array([200.0, 200.0, 188.0, 188.0])
    kp = np.array([125.0, 125.0, 1000.0, 1000.0])
    tff = np.array([[-1.5], [0.0], [0.7], [2.0]]) * np.ones((1, 4))
    n, qd_, dt = tff.shape[0], 0.3, 1e-3
    b = asr.Batch(joints, n)
    refs = np.array([qd_, 0.0])
    b.reset(q0=qd_, refs=refs)
    b.step(qd_, 0.0, refs, dt, tau_ff=tff)
    # first step, motor at q_d at rest, one sub-step: command = kp tau_ff/K + tau_ff
    assert np.allclose(b.cmd1, kp * tff / K + tff, rtol=1e-12, atol=1e-15)
    for _ in range(2999):
        b.step(qd_, 0.0, refs, dt, tau_ff=tff)
    assert np.allclose(b.th1, qd_ + tff / K, rtol=0, atol=1e-9)
    assert np.allclose(b.tau_link, tff, rtol=0, atol=1e-6)


def test_feedforward_rejected_on_two_motor_joints():
    b = asr.Batch([asr.Joint("qbmove_advanced", 6)], 1)
    b.reset()
    with pytest.raises(ValueError):
        b.step(0.0, 0.0, np.array([0.1, 0.2]), 1e-3, tau_ff=0.5)


# ---------------------------------------------------------------------------- rigid, set_mode


@pytest.mark.parametrize("mode", [2, 3, 4, 5, 6])
def test_rigid_accepts_only_modes_0_and_1(mode):
    with pytest.raises(ValueError):
        asr.Batch([asr.Joint("rigid", mode)], 1)
    b = asr.Batch([asr.Joint("rigid", 0)], 1)
    with pytest.raises(ValueError):
        b.set_mode(0, mode)
    assert list(b.modes) == [0]
    b.set_mode(0, 1)
    assert list(b.modes) == [1]


def test_mode_changes_at_run_time():
    """sea: mode 2 (motor jumps to the reference) -> mode 0 (link torque = ref1) -> mode 5
    (PD motor dynamics from where mode 2 left it, closed form) -> mode 3."""
    k, dt = 10.0, 1e-3
    J, D, kp, kd = 0.0233, 0.2698, 125.0, 4.5
    b = asr.Batch(
        [asr.Joint("sea", 2, {"k": k, "friction": 0.0, "max_def": 100.0, "tau_max": 1e3})], 1
    )
    b.reset()
    for _ in range(2):  # the second step leaves the motor at rest (finite difference 0)
        tau = b.step(0.0, 0.0, np.array([0.5, 0.0]), dt)
    assert b.th1[0, 0] == 0.5 and b.th1d[0, 0] == 0.0
    assert tau[0, 0] == pytest.approx(k * 0.5, rel=1e-14)
    b.set_mode(0, 0)
    assert b.step(0.0, 0.0, np.array([1.25, 0.0]), dt)[0, 0] == 1.25
    assert b.th1[0, 0] == 0.5  # mode 0 does not touch the motor
    b.set_mode(0, 5)
    b.max_substep = 1e-5
    out = b.rollout(300, dt, np.array([0.2, 0.0]), record=("th1",))
    # J th'' + (D + kd) th' + (kp + k) th = kp r, th(0) = 0.5, th'(0) = 0
    c, Ks = D + kd, kp + k
    l1, l2 = np.roots([J, c, Ks])
    xss = kp * 0.2 / Ks
    A = (0.0 - l2 * (0.5 - xss)) / (l1 - l2)
    t = dt * np.arange(1, 301)
    x = xss + A * np.exp(l1 * t) + ((0.5 - xss) - A) * np.exp(l2 * t)
    assert np.max(np.abs(out["th1"][0, :, 0] - x)) < 1e-4  # first order at h = 1e-5
    b.set_mode(0, 3)
    tau = b.step(0.1, 0.0, np.array([-0.3, 0.0]), dt)
    assert b.th1[0, 0] == -0.3 and tau[0, 0] == pytest.approx(-k * 0.4, rel=1e-14)
