"""The throw's replay and energy account (asr.experiments._throw_energy): the replay at 1 ms ends
in the env's own release state; the energies balance (what the motors deliver to the springs
goes into the springs, the links' kinetic and potential energy and the joints' damping, up to
the deflection clamp's share); the link energies are MuJoCo's, checked here against a planar
two-link model built from the MJCF's masses and inertias."""

import mujoco
import numpy as np
import pytest

from asr.envs.throw import Throw, qbmove_robot
from asr.experiments._throw_energy import replay_actions

SWING = [[3.0, 3.0, 0.1, 0.1, -1.0]] * 25 + [[-3.0, -3.0, 0.6, 0.6, -1.0]] * 30
RELEASE = [[-3.0, -3.0, 0.6, 0.6, 1.0]]


def _env_throw(actions, **kwargs):
    env = Throw(1, **kwargs)
    env.reset(seed=0)
    total = 0.0
    for a in actions:
        _, r, term, trunc, info = env.step(np.asarray(a, dtype=float)[None])
        total += r[0]
    return env, total, info


@pytest.mark.parametrize("kwargs", [{}, {"preset": 0.4}, {"actuator": "rigid"}])
def test_replay_ends_in_the_envs_release(kwargs):
    actions = SWING + RELEASE
    env, distance, info = _env_throw(actions, **kwargs)
    res = replay_actions(actions, **{"actuator": "qbmove", **kwargs})
    assert res["released"] and info["released"][0]
    assert res["distance"] == distance != 0.0
    np.testing.assert_array_equal(res["q"][-1], env.q[0])
    np.testing.assert_array_equal(res["release_vel"], info["release_vel"][0])
    assert res["spring"][-1] == pytest.approx(info["spring_energy"][0], rel=1e-12)
    assert len(res["t"]) == len(actions) * env.frame_skip
    if kwargs.get("preset") is not None:
        np.testing.assert_array_equal(res["preset"], kwargs["preset"])


@pytest.mark.parametrize("actuator", ["qbmove", "rigid"])
def test_energy_balance(actuator):
    """delivered = spring + link energy gained + joint damping + residual: the residual is small
    (the rigid arm has no clamp: 3 % of the delivered work; the qbmove arm's clamp passes work
    past its springs: 10 %), and the motors' drive work exceeds what they deliver (they lose
    the rest to their damping, friction and speed clamp)."""
    acc = replay_actions(SWING + RELEASE, actuator=actuator)["account"]
    assert acc["delivered"] > 1.0
    bound = 0.03 if actuator == "rigid" else 0.10
    assert abs(acc["residual"]) < bound * acc["delivered"], acc
    assert acc["motor_work"] > acc["delivered"]
    assert acc["link_damping"] > 0.0 and acc["spring_peak"] >= acc["spring_at_release"]


def test_link_energies_against_a_planar_two_link_model():
    """MuJoCo's kinetic and potential energy of the arm at the replay's states equal a planar
    two-link model's: link masses, centres of mass and inertias about y read from the MJCF,
    KE = sum m v_c^2 / 2 + I_yy w^2 / 2, PE = sum m g z_c."""
    res = replay_actions(SWING + RELEASE)
    model = qbmove_robot().mj_model()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    links = [model.body(n) for n in ("link1", "link2")]
    m = [float(b.mass[0]) for b in links]
    # centre of mass in the link frame (x along the link) and the inertia about the joint axis
    com = [np.array(b.ipos) for b in links]
    inertia = []
    for b in links:
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, b.iquat)
        full = rot.reshape(3, 3) @ np.diag(b.inertia) @ rot.reshape(3, 3).T
        inertia.append(full[1, 1])
    l1 = float(model.body("link2").pos[0])
    z0 = float(model.body("link1").pos[2])
    g = 9.81
    for k in range(0, len(res["t"]), 50):
        q1, q2 = res["q"][k]
        w1, w2 = res["qd"][k]
        a1, a12 = q1, q1 + q2
        # q > 0 raises the links (the joint axis is -y): planar positions in x, z
        c1 = np.array([np.cos(a1), np.sin(a1)]) * com[0][0]
        j2 = np.array([np.cos(a1), np.sin(a1)]) * l1
        c2 = j2 + np.array([np.cos(a12), np.sin(a12)]) * com[1][0]
        v1 = np.array([-np.sin(a1), np.cos(a1)]) * com[0][0] * w1
        vj2 = np.array([-np.sin(a1), np.cos(a1)]) * l1 * w1
        v2 = vj2 + np.array([-np.sin(a12), np.cos(a12)]) * com[1][0] * (w1 + w2)
        kin = 0.5 * (m[0] * v1 @ v1 + m[1] * v2 @ v2)
        kin += 0.5 * (inertia[0] * w1**2 + inertia[1] * (w1 + w2) ** 2)
        pot = g * (m[0] * (z0 + c1[1]) + m[1] * (z0 + c2[1]))
        assert res["link_kinetic"][k] == pytest.approx(kin, rel=1e-9, abs=1e-12)
        assert res["link_potential"][k] == pytest.approx(pot, rel=1e-9, abs=1e-9)
