"""The dashboard's 3-D scene (dashboard/scene.py): relaxed spring angles against the springs'
closed forms, and the size of what is sent (the meshes and poses themselves:
tests/engines/test_mujoco_scene.py)."""

import json

import numpy as np
import pytest

import asr
from asr.engines import mujoco_scene
from asr_dashboard import scene

ROBOTS = (
    "pendulum_1dof",
    "rrbot_sea",
    "qbmove_arm_2dof",
    "qbmove_arm_5dof",
    "qbmove_snake",
    "ur10",
)


def run_a_while(sim, steps=300):
    """Equilibrium references 0.3 / -0.2 rad, each joint's soft preset: the motors move."""
    refs = np.zeros((sim.n_instances, sim.n_joints, 2))
    refs[..., 0] = [0.3, -0.2][: sim.n_joints] + [0.0] * max(0, sim.n_joints - 2)
    for j, spec in enumerate(sim.batch.specs):
        refs[:, j, 1] = spec.preset.soft if spec.preset.kind == "ref" else 0.0
    sim.rollout(steps, refs=refs, record=())


def test_relaxed_angle_of_a_symmetric_pair_is_the_motors_mean():
    """qbmove Advanced with equal springs: tau = -k (sinh(a (q - th1)) + sinh(a (q - th2))) is zero
    at q = (th1 + th2) / 2 exactly (the toolbox's springs; the arm's own are asymmetric)."""
    sim = asr.Sim(asr.load_robot("qbmove_arm_2dof"), 2)
    for j in range(2):
        for name, value in dict(k1=0.0019, a1=8.9992, k2=0.0019, a2=8.9992).items():
            sim.batch.set_param(j, name, value)
    sim.reset(q0=[[0.3, -0.2], [0.0, 0.1]])
    run_a_while(sim)
    b = sim.batch
    for i in range(2):
        relaxed = scene.relaxed_angles(sim, i)
        mean = 0.5 * (b.field("th1")[i] + b.field("th2")[i])
        assert np.allclose(relaxed, mean, atol=1e-9, rtol=0)


def test_relaxed_angle_of_an_sea_is_its_motor_angle_and_asymmetric_springs_hold_no_torque():
    sea = asr.Sim(asr.load_robot("rrbot_sea"), 1)
    run_a_while(sea)
    assert np.allclose(scene.relaxed_angles(sea, 0), sea.batch.field("th1")[0], atol=1e-12)
    sim = asr.Sim(asr.load_robot("qbmove_arm_2dof"), 1)  # the arm's identified springs
    b = sim.batch
    identified = {
        0: dict(k1=0.01038, a1=6.257, k2=0.08918, a2=3.9),
        1: dict(k1=0.1015, a1=3.383, k2=0.05944, a2=7.011),
    }
    for j, params in identified.items():
        for name, value in params.items():
            b.set_param(j, name, value)
    sim.reset(q0=[[0.4, -0.3]])
    run_a_while(sim)
    relaxed = scene.relaxed_angles(sim, 0)
    for j, params in identified.items():
        c = asr.compliance(
            "qbmove_advanced", relaxed[j], b.field("th1")[0, j], b.field("th2")[0, j], **params
        )
        assert abs(float(c.tau_link)) < 1e-9
    assert not np.allclose(relaxed, 0.5 * (b.field("th1")[0] + b.field("th2")[0]), atol=1e-6)


@pytest.mark.parametrize("name", ROBOTS)
def test_every_robot_scene_is_small_and_drawable(name):
    sim = asr.Sim(name, 1)
    s = scene.scene(sim.scene_geometry())
    assert len(s["geoms"]) == len(mujoco_scene.visible_geoms(sim.models[0])) > 0
    text = json.dumps(s)
    assert len(text) < 200_000, len(text)
    for g in s["geoms"]:
        n = len(g["x"])
        assert n == len(g["y"]) == len(g["z"]) > 0
        assert max(g["i"] + g["j"] + g["k"]) < n


@pytest.mark.parametrize("name", ("qbmove_snake", "ur10", "qbmove_arm_2dof"))
def test_only_floor_planes_count_as_ground(name):
    """The view draws a grid instead of floor planes (a flat mesh on the world body): the snake's
    and the ur10's floors are ground, the ur10's plate and every robot part are not."""
    sim = asr.Sim(name, 1)
    geoms = scene.scene(sim.scene_geometry())["geoms"]
    ground = {g["name"] for g in geoms if g["ground"]}
    assert ground == ({"floor"} if name != "qbmove_arm_2dof" else set())
    for g in geoms:  # radius: the farthest vertex from the geom's origin
        v = np.array([g["x"], g["y"], g["z"]]).T
        assert abs(g["radius"] - np.max(np.linalg.norm(v, axis=1))) < 2e-5


def test_target_poses_are_the_geoms_at_the_target_angles():
    """frame(target): the target poses are the geoms' poses at those angles (MuJoCo's forward
    kinematics on a second Sim set there), one row per instance; other shapes send none."""
    sim = asr.Sim("qbmove_arm_2dof", 2)
    stream = scene.SceneStream(sim, 8, 3)
    target = np.array([[0.4, -0.7], [-0.2, 0.5]])
    r3 = stream.frame(target)["robot3d"]
    assert r3["target_q"] == target.tolist()
    other = asr.Sim("qbmove_arm_2dof", 1)
    for i in range(2):
        other.reset(q0=target[i])
        np.testing.assert_allclose(r3["target"][i], other.geom_poses(0), atol=2e-5)
    one = stream.frame(target[0])  # (J,): every instance the same; 2nd call: no ghost
    assert "target" not in one["robot3d"]
    stream.frame()
    r3 = stream.frame(target[0])["robot3d"]
    np.testing.assert_allclose(r3["target"][1], r3["target"][0], atol=1e-12)
    for bad in (np.zeros(3), np.array([0.1, np.nan]), 0.5):  # no joint-angle target: none
        stream.frame(), stream.frame()
        assert "target" not in stream.frame(bad)["robot3d"]


def test_threejs_is_served_from_a_fixed_list_and_its_absence_names_the_package(monkeypatch):
    """GET /static/vendor/three/...: the two listed files of Debian's libjs-three, nothing else
    under that prefix; without the package a 404 that names it and no server path."""
    from asr_dashboard import app as app_module
    from tests.support.dashboard_server import app_client

    listed = ("build/three.module.js", "examples/jsm/controls/OrbitControls.js")
    with app_client() as c:
        for rel in listed:
            r = c.get(f"/static/vendor/three/{rel}")
            assert r.status_code == 200 and "javascript" in r.headers["content-type"]
        assert "REVISION = '111'" in c.get(f"/static/vendor/three/{listed[0]}").text
        for other in ("build/three.js", "../../../etc/passwd", "build/%2e%2e/%2e%2e/x.js"):
            assert c.get(f"/static/vendor/three/{other}").status_code == 404
        monkeypatch.setattr(app_module, "THREE_DIR", "/nonexistent-three")
        r = c.get(f"/static/vendor/three/{listed[1]}")
        assert r.status_code == 404 and "apt-get install libjs-three" in r.text
        assert "nonexistent" not in r.text and "/usr" not in r.text


def test_interaction_messages_carry_the_ur10_poses_bounded():
    """An interaction session's messages carry its Sim's geom poses (1, G, 12) under a scene_id
    whose scene (GET /api/scene/interaction) holds the plate; a message stays small."""
    from asr_dashboard import interaction as ic
    from asr_dashboard.settings import Settings

    messages = []
    session = ic.InteractionSession(Settings(), messages.append)
    session.start("rigid", "direct_force")
    try:
        s = session.scene()
        msg = session.message()
        r3 = msg["robot3d"]
        assert r3["scene_id"] == s["scene_id"] and "plate" in s["names"]
        poses = np.array(r3["poses"])
        assert poses.shape == (1, len(s["geoms"]), 12)
        plate = s["names"].index("plate")  # welded to the world where robots/ur10 puts it
        np.testing.assert_allclose(poses[0, plate, :3], [0.7, 0.2, 0.025], atol=1e-9)
        assert len(json.dumps(msg)) < 8000
    finally:
        session.stop()


@pytest.mark.parametrize(
    "name, axis",
    (("qbmove_arm_2dof", [0, 1, 0]), ("rrbot_sea", [0, 1, 0]), ("ur10", [0, 0, 0])),
)
def test_the_view_looks_along_a_planar_robots_joint_axis(name, axis):
    """view_axis: the planar arms' hinge axis (y in their MJCF), none for the ur10 (a 3-D arm):
    the page then frames it by its bounds."""
    stream = scene.SceneStream(asr.Sim(name, 1), 8, 1)
    np.testing.assert_allclose(np.abs(stream.scene()["view_axis"]), axis, atol=1e-3)
