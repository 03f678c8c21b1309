"""robot_description and /tf, /tf_static of asr's ROS 2 node (asr.ros.ros2_tf).

In the test process: the transforms from parent to child link, chained from the root, give back
the engine's link poses (MuJoCo's mj_kinematics, computed here apart) to 1e-12, and so does the
forward kinematics of the published URDF (its joint origins and axes), so robot_description and
/tf describe the same robot; the URDF names no file and parses with urdfdom's check_urdf.
With real ROS 2 (rclpy over Fast DDS, peers without asr: tests/support/ros2_peers/tf_peer.py):
a peer joining late gets robot_description; a tf consumer rebuilds every link's pose from /tf
and /tf_static and matches an in-process NodeCore stepped with the same lockstep inputs."""

import json
import math
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest

import asr
from asr.ros.node_core import NodeCore
from asr.ros.ros2_tf import EnginePoses, robot_description
from asr.ros.urdf import rpy_mat
from asr.sim.simulation import Sim
from tests.conftest import IN_CI
from tests.support.paths import ROOT
from tests.support.ros2 import (
    INTERFACES,
    NodeProcess,
    asr_env,
    ros2_interfaces,
    ros2_python,
    run_peer,
)
from tests.support.urdf import ALL_VARIANTS, NOT_URDF

TOL = 1e-12  # m and (rotation matrix entries)
TF_ROBOT, TF_RATE = "ur10", 100.0  # six moving links and two fixed ones (ft_sensor, tool)


def engine_link_poses(model, qpos):
    """((B, 3) m, (B, 3, 3)): the URDF link frames' world poses (body frame at its joint's
    anchor) from MuJoCo's own kinematics at `qpos`, in a fresh MjData."""
    d = mujoco.MjData(model)
    d.qpos[:] = qpos
    mujoco.mj_kinematics(model, d)
    rot = d.xmat.reshape(-1, 3, 3).copy()
    pos = d.xpos.copy()
    for b in range(1, model.nbody):
        if model.body_jntnum[b] == 1:
            pos[b] += rot[b] @ model.jnt_pos[model.body_jntadr[b]]
    return pos, rot


def quat_matrix(q):
    """(3, 3) rotation of a unit quaternion w x y z (MuJoCo's mju_quat2Mat)."""
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(q, dtype=np.float64))
    return out.reshape(3, 3)


def random_sim(name, variant, seed):
    """A one-instance Sim of the robot with its joints at random angles within their ranges
    (the engine's qpos set directly)."""
    sim = Sim(name, 1, variant=variant)
    m, d = sim.models[0], sim.datas[0]
    rng = np.random.default_rng(seed)
    for j in range(m.njnt):
        lo, hi = m.jnt_range[j] if m.jnt_limited[j] else (-math.pi, math.pi)
        d.qpos[m.jnt_qposadr[j]] = rng.uniform(lo, hi)
    return sim


@pytest.mark.parametrize("name,variant", ALL_VARIANTS)
def test_transforms_chained_from_the_root_give_the_engines_link_poses(name, variant):
    sim = random_sim(name, variant, 3)
    d = sim.datas[0]
    before = d.xpos.copy(), d.qpos.copy()
    poses = EnginePoses(sim)
    rel_pos, rel_quat = poses.relative()
    f = poses.frames
    want_pos, want_rot = engine_link_poses(sim.models[0], d.qpos)
    pos, rot = np.zeros_like(want_pos), np.zeros_like(want_rot)
    rot[0] = np.eye(3)
    for b in range(1, len(f.links)):  # MuJoCo numbers a parent before its children
        p = f.parent[b]
        pos[b] = pos[p] + rot[p] @ rel_pos[b]
        rot[b] = rot[p] @ quat_matrix(rel_quat[b])
    assert np.max(np.abs(pos - want_pos)) < TOL
    assert np.max(np.abs(rot - want_rot)) < TOL
    assert np.allclose(np.linalg.norm(rel_quat, axis=1), 1.0, rtol=0, atol=1e-15)
    # the engine's own data is not written (its kinematics are computed in a private MjData)
    assert np.array_equal(d.xpos, before[0]) and np.array_equal(d.qpos, before[1])
    # the joints moved the links: their rotations are not those at the model's qpos0
    zero_rot = engine_link_poses(sim.models[0], sim.models[0].qpos0)[1]
    assert np.max(np.abs(rot - zero_rot)) > 1e-2


def urdf_link_poses(text, model, qpos):
    """{link: (position (3,) m, rotation (3, 3))}: forward kinematics of the URDF text (joint
    origin xyz / rpy, axis, type) at the joint angles of MuJoCo qpos (by joint name)."""
    root = ET.fromstring(text)
    joints = {j.find("child").get("link"): j for j in root.findall("joint")}
    out = {}

    def pose(link):
        if link not in joints:
            return np.zeros(3), np.eye(3)
        if link not in out:
            j = joints[link]
            pp, pr = pose(j.find("parent").get("link"))
            o = j.find("origin")
            xyz = np.array([float(v) for v in o.get("xyz").split()])
            r = rpy_mat(*(float(v) for v in o.get("rpy").split()))
            p, R = pp + pr @ xyz, pr @ r
            if j.get("type") != "fixed":
                axis = np.array([float(v) for v in j.find("axis").get("xyz").split()])
                q = qpos[model.jnt_qposadr[model.joint(j.get("name")).id]]
                if j.get("type") == "prismatic":
                    p = p + R @ (axis * q)
                else:
                    quat = np.zeros(4)
                    mujoco.mju_axisAngle2Quat(quat, axis / np.linalg.norm(axis), q)
                    R = R @ quat_matrix(quat)
            out[link] = (p, R)
        return out[link]

    for link in joints:
        pose(link)
    return out


@pytest.mark.parametrize("name,variant", ALL_VARIANTS)
def test_robot_description_kinematics_are_the_engines(name, variant):
    """What robot_state_publisher computes from robot_description and joint_states is what
    /tf carries: the URDF's forward kinematics give the engine's link poses."""
    sim = random_sim(name, variant, 5)
    model = sim.models[0]
    text = robot_description(sim.robot, model)
    got = urdf_link_poses(text, model, sim.datas[0].qpos)
    want_pos, want_rot = engine_link_poses(model, sim.datas[0].qpos)
    links = EnginePoses(sim).frames.links
    assert set(got) == set(links[1:])
    for b, link in enumerate(links[1:], start=1):
        assert np.max(np.abs(got[link][0] - want_pos[b])) < TOL, link
        assert np.max(np.abs(got[link][1] - want_rot[b])) < TOL, link


@pytest.mark.parametrize("name,variant", ALL_VARIANTS)
def test_robot_description_names_no_file_and_keeps_every_shape(name, variant):
    robot = asr.load_robot(name, variant)
    model = robot.mj_model()
    text = robot_description(robot, model)
    for server_path in (robot.folder, os.path.expanduser("~"), os.getcwd(), "file:", "package:"):
        assert server_path not in text, server_path
    assert "<mesh" not in text
    primitives = {
        int(mujoco.mjtGeom.mjGEOM_BOX),
        int(mujoco.mjtGeom.mjGEOM_SPHERE),
        int(mujoco.mjtGeom.mjGEOM_CYLINDER),
        int(mujoco.mjtGeom.mjGEOM_CAPSULE),
    }
    shapes = [int(t) for t in model.geom_type]
    # every shipped robot's shapes are primitives (planes aside), each a <visual>
    assert all(t in primitives or t == int(mujoco.mjtGeom.mjGEOM_PLANE) for t in shapes)
    root = ET.fromstring(text)
    assert len(root.findall("link/visual")) == sum(t in primitives for t in shapes)
    # the joints' limits are the MJCF's ranges
    for j in root.findall("joint"):
        if j.get("type") in ("revolute", "prismatic"):
            lo, hi = model.jnt_range[model.joint(j.get("name")).id]
            limit = j.find("limit")
            assert (float(limit.get("lower")), float(limit.get("upper"))) == (lo, hi)


def test_robot_description_refuses_a_floating_base():
    name = sorted(NOT_URDF)[0]
    with pytest.raises(ValueError, match="free joint"):
        robot_description(asr.load_robot(name))


def check_urdf(text, path):
    """urdfdom's check_urdf (Debian liburdfdom-tools, installed by `make ros`) run on the URDF
    `text` written to `path`: its report; AssertionError when it refuses the file. A missing
    check_urdf fails in CI and skips elsewhere."""
    exe = shutil.which("check_urdf", path="/usr/bin:/bin")
    missing = "check_urdf is missing: apt-get install liburdfdom-tools"
    if exe is None:
        (pytest.fail if IN_CI else pytest.skip)(missing + (" (in CI)" if IN_CI else ""))
    path.write_text(text)
    report = subprocess.run([exe, str(path)], capture_output=True, text=True, timeout=30)
    assert report.returncode == 0, (
        f"check_urdf refused {path.name}:\n{report.stdout}{report.stderr}"
    )
    return report.stdout


@pytest.mark.ros
def test_check_urdf_reads_robot_description(tmp_path):
    robot = asr.load_robot(TF_ROBOT)
    out = check_urdf(robot_description(robot), tmp_path / "description.urdf")
    assert "root Link: world has 1 child(ren)" in out
    links = EnginePoses(Sim(robot, 1)).frames.links
    assert [ln.split()[-1] for ln in out.splitlines() if "child(1):" in ln] == list(links[1:])


# ---------------------------------------------------------------- with ROS 2


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with NodeProcess(
        tmp_path_factory.mktemp("ros2_tf"), robot=TF_ROBOT, rate=TF_RATE, lockstep=True
    ) as n:
        yield n
        assert n.stop() == 0, f"the node did not exit cleanly on SIGINT:\n{n.log()[-2000:]}"


@pytest.mark.ros2
@pytest.mark.slow
def test_a_late_peer_gets_robot_description(node, tmp_path):
    out = run_peer("tf_peer.py", "description", "{}")
    assert out["count"] == 1
    assert out["text"] == robot_description(asr.load_robot(TF_ROBOT))
    check_urdf(out["text"], tmp_path / "received.urdf")


@pytest.mark.ros2
@pytest.mark.slow
def test_a_tf_consumer_rebuilds_every_link_pose(node):
    ros2_interfaces()  # tf2_msgs, built from its definitions (PyPI has none)
    core = NodeCore(TF_ROBOT, rate=TF_RATE)  # the node's core, stepped with the same inputs
    n = 12
    rng = np.random.default_rng(11)
    refs = np.repeat(core.held()[0][None], n, axis=0)  # (n, J, 2): link positions (mode 1)
    refs[:, :, 0] += np.cumsum(rng.uniform(-0.04, 0.04, (n, len(core.names))), axis=0)
    out = run_peer("tf_peer.py", "tf", json.dumps({"refs": refs.tolist()}))
    model = core.sim.models[0]
    links = EnginePoses(core.sim).frames.links
    assert out["stamps"] == [k * core.period_ns for k in range(1, n + 1)]
    assert out["tf_stamps"] == [n * core.period_ns]  # the last /tf: every transform stamped so
    assert out["static"] == ["ft_sensor", "tool"] and out["static_stamps"] == [0]
    assert out["parents"] == {links[b]: links[model.body_parentid[b]] for b in range(1, len(links))}
    for k in range(n):
        assert core.hold_references(refs[k], "step")
        core.step_period()
        qpos = core.sim.datas[0].qpos
        assert np.array_equal(out["q"][k], qpos[core.sim.qpos_adr])  # lockstep: bit for bit
        want_pos, want_rot = engine_link_poses(model, qpos)
        got = out["poses"][k]
        for b, link in enumerate(links[1:], start=1):
            assert np.max(np.abs(np.array(got[link][:3]) - want_pos[b])) < TOL, (k, link)
            assert np.max(np.abs(quat_matrix(got[link][3:]) - want_rot[b])) < TOL, (k, link)
    moved = out["poses"][-1]["tool"][:3], out["poses"][0]["tool"][:3]
    assert np.linalg.norm(np.subtract(*moved)) > 1e-3, "the tool did not move"


@pytest.mark.ros2
@pytest.mark.slow
def test_without_tf2_msgs_the_node_says_why_and_still_describes_the_robot(tmp_path):
    """The node in an environment without the built interfaces (PyPI's wheels alone): no /tf,
    one log line naming tf2_msgs, robot_description still served; SIGINT ends it with 0."""
    import signal

    env = asr_env()
    built = str(INTERFACES)
    paths = env["PYTHONPATH"].split(os.pathsep)
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if not p.startswith(built))
    code = f"from asr.ros.ros2_node import run_ros2_node; run_ros2_node({TF_ROBOT!r})"
    err = tmp_path / "node.stderr"
    with open(err, "w") as f:
        proc = subprocess.Popen([ros2_python(), "-c", code], env=env, stderr=f, cwd=ROOT)
        try:
            out = run_peer("tf_peer.py", "description", "{}")
        finally:
            proc.send_signal(signal.SIGINT)
            assert proc.wait(20) == 0, err.read_text()[-2000:]
    assert out["text"] == robot_description(asr.load_robot(TF_ROBOT))
    lines = [ln for ln in err.read_text().splitlines() if "no /tf" in ln]
    assert len(lines) == 1 and "tf2_msgs is not installed" in lines[0], err.read_text()[-2000:]
