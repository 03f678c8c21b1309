"""Blow-ups are reported even when the deflection clamp keeps every torque finite.

Past the explicit coupling's stability limit omega dt = 2 (omega = sqrt(k / I), the spring's
stiffness over the link's inertia) the link runs away while the clamp bounds the spring torque,
so no state ever becomes non-finite. The core stops an instance whose link turns faster than
`link_vel_max` (rad/s; default 1e4, five times the fastest link of the papers' experiments: the
light fig. 7 rig driven by a kinematic AwAS-II step reaches 2016 rad/s) with the status
ASR_ERR_DIVERGED, and asr.Sim names the likely cause.
"""

import numpy as np
import pytest

import asr
from asr.core.ffi import lib

INERTIA = 0.2 * 0.04**2 + 1e-7  # pendulum_1dof: 0.2 kg at 0.04 m, kg m^2
DT = 1e-4  # its MJCF timestep, s


def pendulum_at(omega_dt, **params):
    """The 1-DOF rig with an SEA (mode 3, motors as position sources) whose spring puts the
    link at omega dt = omega_dt."""
    k = (omega_dt / DT) ** 2 * INERTIA
    return asr.Sim("pendulum_1dof", 1, variant="sea", params={"joint": {"k": k, **params}})


def test_blow_up_past_the_coupling_limit_is_reported_with_its_cause():
    sim = pendulum_at(2.01)
    with pytest.raises(asr.SimulationError) as info:
        sim.rollout(20000, np.zeros((1, 2)))
    err = info.value
    assert err.code == lib.ASR_ERR_DIVERGED
    assert err.step < 200  # 22 % growth per step: caught within 20 ms
    text = str(err)
    assert "diverged" in text and "link_vel_max" in text
    assert "joint 'joint'" in text and "omega dt = 2.01" in text
    assert "lower the MJCF timestep below 9.95e-05 s" in text
    assert sim.batch.errors()[0]["code"] == lib.ASR_ERR_DIVERGED


def test_without_the_check_the_clamp_hides_the_blow_up():
    """The same run with the check off: the link runs thousands of rad/s while every recorded
    value stays finite (what the check exists for)."""
    sim = pendulum_at(2.01, link_vel_max=np.inf)
    out = sim.rollout(2000, np.zeros((1, 2)), record=("q", "qd", "tau_joint"))
    assert np.all(np.isfinite(out["tau_joint"])) and sim.batch.status[0] == 0
    assert np.abs(out["qd"]).max() > 1e4


def test_just_inside_the_limit_runs_and_settles():
    sim = pendulum_at(1.99)
    out = sim.rollout(20000, np.zeros((1, 2)), record=("q", "qd"))
    assert sim.batch.status[0] == 0
    # the link hangs at its static equilibrium: k q = -m g l cos(q), q ~ -m g l / k
    k = (1.99 / DT) ** 2 * INERTIA
    assert out["q"][0, -1, 0] == pytest.approx(-0.2 * 9.81 * 0.04 / k, rel=1e-3)


def test_flagged_instance_is_frozen_and_the_others_go_on():
    """Two instances, one past the limit: only that one stops (on_error='flag')."""
    k = (np.array([1.5, 2.01]) / DT) ** 2 * INERTIA
    sim = asr.Sim("pendulum_1dof", 2, variant="sea", params={"joint": {"k": k}})
    sim.rollout(3000, np.zeros((2, 1, 2)), on_error="flag")
    assert list(sim.batch.status) == [0, lib.ASR_ERR_DIVERGED]
    assert sim.batch.tau_joint[1, 0] == 0.0  # a frozen instance applies no torque


def test_batch_link_speed_bound():
    """The bound applies to the link speed given to a step, in every mode; inf turns it off."""
    b = asr.Batch([asr.Joint("sea", 6), asr.Joint("rigid", 1)], 3)
    b.set_param(0, "link_vel_max", [10.0, 10.0, np.inf])
    b.reset()
    qd = np.array([[9.0, 0.0], [11.0, 0.0], [1e6, 0.0]])
    b.step(0.0, qd, np.zeros(2), 1e-3, on_error="flag")
    assert list(b.status) == [0, lib.ASR_ERR_DIVERGED, 0]
    assert b.errors()[0]["joint"] == 0
    b.reset()
    b.step(0.0, [[0.0, 2e4]] * 3, np.zeros(2), 1e-3, on_error="flag")  # default 1e4 rad/s
    assert list(b.status) == [lib.ASR_ERR_DIVERGED] * 3
    assert {e["joint"] for e in b.errors()} == {1}


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan])
def test_link_vel_max_is_validated(bad):
    b = asr.Batch("sea", 1)
    with pytest.raises(ValueError, match="link_vel_max"):
        b.set_param(0, "link_vel_max", bad)
