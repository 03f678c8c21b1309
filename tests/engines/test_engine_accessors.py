"""Engine-neutral reads of a Sim's world (asr.engines.base.LinkEngine, exposed by asr.Sim):
gravity, a named site's or body's world position and velocity, the joints' static friction (the
3-D view's: tests/engines/test_mujoco_scene.py); an engine that cannot tell says so by name. Code
outside asr/engines reads these, not an engine's own data (Sim.models / Sim.datas stay a
documented MuJoCo escape hatch for users): the scan below lists the MuJoCo-only spots left."""

import os
import re

import mujoco
import numpy as np
import pytest

import asr
from tests.conftest import need_gazebo
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

ROOT = str(ROOT_PATH)


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
    with pytest.raises(ValueError, match="no site named 'nose'") as err:
        sim.site_state("nose")
    assert f"robot {sim.robot.name!r}" in str(err.value) and os.sep not in str(err.value)
    with pytest.raises(ValueError, match="instance"):
        sim.site_state("tip", 2)


def test_gazebo_names_itself_for_what_it_cannot_tell():
    need_gazebo()
    sim = asr.Sim("pendulum_1dof", 1, engine="gazebo")
    with pytest.raises(NotImplementedError, match="gravity: not available with engine='gazebo'"):
        _ = sim.gravity
    for read in (
        lambda: sim.site_state("tip"),
        lambda: sim.body_state("link1"),
        sim.joint_friction,
        sim.scene_geometry,
        sim.geom_poses,
        lambda: sim.geom_poses_at([0.0]),
    ):
        with pytest.raises(NotImplementedError, match="not available with engine='gazebo'"):
            read()


def test_body_state_is_mujocos_body_frame_position_and_velocity():
    """Position = xpos of the current state, velocity = finite difference over a step; the
    simulation goes on as without the read."""
    sims = [asr.Sim("qbmove_arm_2dof", 2, variant="vertical") for _ in range(2)]
    for sim in sims:
        sim.reset(q0=[[0.3, -0.2], [0.1, 0.4]])
        sim.rollout(50, np.zeros((2, 2, 2)))
    sim = sims[0]
    m, d = sim.models[1], sim.datas[1]
    body = m.jnt_bodyid[m.joint(sim.robot.joint_names[1]).id]
    name = m.body(body).name
    p, v = sim.body_state(name, 1)
    scratch = mujoco.MjData(m)
    scratch.qpos[:] = d.qpos
    mujoco.mj_kinematics(m, scratch)
    np.testing.assert_array_equal(p, scratch.xpos[body])
    scratch.qpos[:] = d.qpos + 1e-7 * d.qvel
    mujoco.mj_kinematics(m, scratch)
    np.testing.assert_allclose(v, (scratch.xpos[body] - p) / 1e-7, atol=1e-5)
    assert np.linalg.norm(v) > 0
    for s in sims:
        s.rollout(50, np.zeros((2, 2, 2)))
    np.testing.assert_array_equal(sims[0].q, sims[1].q)
    with pytest.raises(ValueError, match="no body named 'nose'"):
        sim.body_state("nose")
    with pytest.raises(ValueError, match="instance"):
        sim.body_state(name, 2)


def test_joint_friction_is_the_models_per_instance():
    sim = asr.Sim(
        "qbmove_arm_2dof", 2, mujoco_params={"dof_frictionloss": {"joint1": [0.01, 0.02]}}
    )
    m = sim.models[1]
    np.testing.assert_array_equal(sim.joint_friction(1), m.dof_frictionloss[sim.dof_adr])
    assert sim.joint_friction(0)[0] == 0.01 and sim.joint_friction(1)[0] == 0.02


# What reads an engine's own objects outside asr/engines: MuJoCo imports and Sim.models /
# Sim.datas. Each file that may, and why (MuJoCo only: these read or build MuJoCo's own models).
ENGINE_DATA = re.compile(
    r"\.models\[|\.datas\[|\bsim\.(models|datas)\b|^\s*(import|from) mujoco\b", re.MULTILINE
)
MUJOCO_ONLY = {
    "asr/robots/robot.py": "the robot's MJCF: loading and checking it, joint addresses",
    "asr/ros/urdf.py": "URDF export, built from the MJCF's geoms and bodies",
    "asr/analysis/frequency/response.py": "a link's inertia at the initial pose, from the MJCF",
    "asr/analysis/sweep/space.py": "sweep keys mujoco.<field>.<object> name MJCF objects",
    "asr/learning/iterative_learning.py": "the MuJoCo version recorded in an ILC run's metadata",
    "asr/experiments/_kamedula2016_setup.py": "link parameters read from the MJCF",
    "asr/experiments/_mengacci2021_closed_forms.py": "pendulum parameters read from the MJCF",
    "asr/experiments/_parnenzini2015_gait.py": "subtree centre of mass and MuJoCo's warnings",
    "asr/experiments/_throw_energy.py": "the arm's link energies (mjENBL_ENERGY), joint damping",
    "asr/_build.py": "the MuJoCo plugin library is compiled against the installed mujoco",
    "asr/mujoco/plugin.py": "MuJoCo's own plugin: loads it into MuJoCo, reads its plugin state",
    "asr/mujoco/export.py": "writes a robot's MJCF for MuJoCo's plugin: qpos0, joint ranges",
    "asr/controllers/mujoco_site.py": "interaction control's C part: the tool site, F/T sensor "
    "and tool body in each MjData, the sensors at rest, gravity torques (MuJoCo only)",
    "asr/warp/mujoco.py": "MuJoCo Warp's model and data are put from the robot's compiled MjModel "
    "(mujoco_warp.put_model / put_data); the device has no asr.Sim to ask",
    "asr/ros/ros2_tf.py": "/tf of every link, every period: the MuJoCo engine's qpos copied into a "
    "private MjData and mj_kinematics run there (the engine's own MjData is never written)",
    "asr/ros/ros2_sim_interfaces.py": "simulation_interfaces' entities are the robot's MuJoCo "
    "bodies: their names, poses and body-frame twists (mj_objectVelocity)",
    "asr/envs/vector.py": "the tasks' mass randomisation scales each instance's MuJoCo body masses "
    "and inertias (mj_setConst), and render_mode='rgb_array' draws MuJoCo's model (to become "
    "asr.Sim accessors)",
    "asr/envs/impact.py": "Impact2DOF adds its plate, the bumper and a touch sensor to the arm's "
    "MJCF (MjSpec) and reads each instance's contact force from sensordata (to become an "
    "asr.Sim sensor accessor)",
    "dashboard/session.py": "session.models: the joints' actuator model names, not MuJoCo's",
    "dashboard/datasheet.py": "session.models: the joints' actuator model names, not MuJoCo's",
}


def python_files(*folders):
    for folder in folders:
        for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in names:
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/")


def test_no_engine_data_read_outside_the_engines():
    found = set()
    for path in python_files("asr", "dashboard"):
        if path.startswith("asr/engines/"):
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            if ENGINE_DATA.search(f.read()):
                found.add(path)
    unlisted, gone = found - set(MUJOCO_ONLY), set(MUJOCO_ONLY) - found
    assert not unlisted, f"{sorted(unlisted)} read an engine's own data: use asr.Sim's accessors"
    assert not gone, f"{sorted(gone)} no longer read MuJoCo's objects: drop them from the list"
    assert "dashboard/scene.py" not in found and "asr/envs/throw.py" not in found
