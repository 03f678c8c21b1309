"""The voltage drive (docs/models.md section 2, [Mengacci2021]): the static map with dead zone
and saturation, back-EMF damping and the position loop, against hand computations of the drive
map and SciPy solve_ivp.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from tests.support.motor import ATOL, RTOL, refs, sea, voltage

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
