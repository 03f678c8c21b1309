"""Engine-neutral reads of a Sim's world (asr.engines.base.LinkEngine, exposed by asr.Sim):
gravity and a named site's world position and velocity; an engine that cannot tell says so by
name. Code outside asr/engines reads these, not an engine's own data (Sim.models / Sim.datas
stay a documented MuJoCo escape hatch for users)."""

import os
import re

import mujoco
import numpy as np
import pytest

import asr
from asr import gazebo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_gravity_is_the_models():
    sim = asr.Sim("qbmove_arm_2dof", 2, variant="vertical")
    np.testing.assert_array_equal(sim.gravity, sim.models[0].opt.gravity)
    assert sim.gravity[2] == pytest.approx(-9.81)


def test_site_state_is_mujocos_site_position_and_velocity():
    """Position = site_xpos, velocity = finite difference of the position over a step."""
    sim = asr.Sim("qbmove_arm_2dof", 2, variant="vertical")
    sim.reset(q0=[[0.3, -0.2], [0.1, 0.4]])
    sim.rollout(50, np.zeros((2, 2, 2)))
    m, d = sim.models[1], sim.datas[1]
    p, v = sim.site_state("tip", 1)
    mujoco.mj_kinematics(m, d)
    np.testing.assert_array_equal(p, d.site_xpos[m.site("tip").id])
    scratch = mujoco.MjData(m)
    scratch.qpos[:] = d.qpos + 1e-7 * d.qvel
    mujoco.mj_kinematics(m, scratch)
    np.testing.assert_allclose(v, (scratch.site_xpos[m.site("tip").id] - p) / 1e-7, atol=1e-5)
    assert np.linalg.norm(v) > 0
    p0, _ = sim.site_state("tip")  # instance 0 by default
    assert not np.array_equal(p0, p)
    with pytest.raises(ValueError, match="no site named 'nose'"):
        sim.site_state("nose")
    with pytest.raises(ValueError, match="instance"):
        sim.site_state("tip", 2)


def test_gazebo_names_itself_for_what_it_cannot_tell():
    if not gazebo.available():
        pytest.skip("the Gazebo engine is not available")
    sim = asr.Sim("pendulum_1dof", 1, engine="gazebo")
    with pytest.raises(NotImplementedError, match="gravity: not available with engine='gazebo'"):
        _ = sim.gravity
    with pytest.raises(NotImplementedError, match="engine='gazebo'"):
        sim.site_state("tip")


@pytest.mark.parametrize("path", ["dashboard/watch.py", "asr/envs/throw.py"])
def test_no_engine_data_read_outside_the_engines(path):
    text = open(os.path.join(ROOT, path)).read()
    assert not re.search(r"sim\.(datas|models)\b|import mujoco", text), path
