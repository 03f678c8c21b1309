"""The dashboard's 3-D scene (dashboard/scene.py): geom meshes against closed-form volumes and
outward faces, poses against MuJoCo's own ray casts, relaxed spring angles against the springs'
closed forms, and the size of what is sent."""

import json
import math

import mujoco
import numpy as np
import pytest

import asr
from dashboard import scene

ROBOTS = (
    "pendulum_1dof",
    "rrbot_sea",
    "qbmove_arm_2dof",
    "qbmove_arm_5dof",
    "qbmove_snake",
    "ur10",
)


def signed_volume(v, f):
    """Volume enclosed by triangles f over vertices v (divergence theorem): positive when every
    face is wound counter-clockwise seen from outside."""
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def one_geom_model(xml_geom):
    return mujoco.MjModel.from_xml_string(
        f"<mujoco><worldbody><body>{xml_geom}</body></worldbody></mujoco>"
    )


@pytest.mark.parametrize(
    "geom,volume,tol",
    [
        ('<geom type="box" size="0.1 0.2 0.3"/>', 8 * 0.1 * 0.2 * 0.3, 1e-12),
        ('<geom type="sphere" size="0.2"/>', 4 / 3 * math.pi * 0.2**3, 0.25),
        ('<geom type="cylinder" size="0.1 0.3"/>', math.pi * 0.1**2 * 0.6, 0.1),
        (
            '<geom type="capsule" size="0.1 0.3"/>',
            math.pi * 0.1**2 * 0.6 + 4 / 3 * math.pi * 0.001,
            0.15,
        ),
        ('<geom type="ellipsoid" size="0.1 0.2 0.3"/>', 4 / 3 * math.pi * 0.006, 0.25),
    ],
)
def test_geom_meshes_are_closed_outward_and_of_the_right_volume(geom, volume, tol):
    """Polygonal meshes are inscribed, so they enclose a little less than the solid (at most
    `tol` relative with the chosen resolution); the box is exact."""
    m = one_geom_model(geom)
    v, f = scene.geom_mesh(m, 0)
    got = signed_volume(v, f)
    assert got > 0.0, "faces wound inward"
    assert volume * (1.0 - tol) <= got <= volume * (1.0 + 1e-12)
    # closed: every edge is shared by exactly two faces, in opposite directions
    edges = {}
    for a, b, c in f:
        for e in ((a, b), (b, c), (c, a)):
            edges[e] = edges.get(e, 0) + 1
    assert all(edges.get((b, a)) == 1 for (a, b) in edges)


def test_box_vertices_are_its_corners():
    m = one_geom_model('<geom type="box" size="0.1 0.2 0.3"/>')
    v, _ = scene.geom_mesh(m, 0)
    assert sorted(map(tuple, np.abs(v))) == [(0.1, 0.2, 0.3)] * 8


def test_poses_put_the_mesh_where_mujoco_ray_casts_find_the_geom():
    """A ray from outside towards a posed box hits MuJoCo's geom at the distance where it meets
    the mesh as the page places it (pos + R v): the pose convention, checked independently."""
    robot = asr.load_robot("qbmove_arm_2dof")
    sim = asr.Sim(robot, 1)
    sim.reset(q0=[[0.7, -0.4]])
    m, d = sim.models[0], sim.datas[0]
    mujoco.mj_forward(m, d)
    geoms = scene.visible_geoms(m)
    pose = scene.poses(d, geoms)
    checked = 0
    for row, g in enumerate(geoms):
        if m.geom_type[g] != mujoco.mjtGeom.mjGEOM_BOX:
            continue
        v, f = scene.geom_mesh(m, g)
        world = pose[row, :3] + v @ pose[row, 3:].reshape(3, 3).T
        center = world.mean(axis=0)
        start = center + np.array([0.3, 0.2, 0.5])
        direction = (center - start) / np.linalg.norm(center - start)
        geomid = np.array([-1], dtype=np.int32)
        geomgroup = np.zeros(6, np.uint8)
        geomgroup[int(m.geom_group[g])] = 1
        dist = mujoco.mj_ray(m, d, start, direction, geomgroup, 1, -1, geomid)
        if geomid[0] != g:
            continue  # another geom in front of it
        assert abs(dist - ray_mesh_distance(start, direction, world, f)) < 1e-9
        checked += 1
    assert checked >= 2


def ray_mesh_distance(start, direction, v, f):
    """Nearest hit of a ray with triangles (Moller-Trumbore)."""
    best = math.inf
    for a, b, c in f:
        e1, e2 = v[b] - v[a], v[c] - v[a]
        p = np.cross(direction, e2)
        det = e1 @ p
        if abs(det) < 1e-15:
            continue
        t_vec = start - v[a]
        u = (t_vec @ p) / det
        qv = np.cross(t_vec, e1)
        w = (direction @ qv) / det
        t = (e2 @ qv) / det
        if u >= -1e-12 and w >= -1e-12 and u + w <= 1 + 1e-12 and t > 0:
            best = min(best, t)
    return best


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


def test_relaxed_poses_move_only_the_ghost():
    sim = asr.Sim(asr.load_robot("qbmove_arm_2dof"), 1)
    sim.reset(q0=[[0.5, 0.5]])
    m, d = sim.models[0], sim.datas[0]
    mujoco.mj_forward(m, d)
    geoms = scene.visible_geoms(m)
    before = scene.poses(d, geoms).copy()
    ghost = scene.relaxed_poses(m, d, mujoco.MjData(m), geoms, sim.qpos_adr, [0.0, 0.0])
    assert np.array_equal(scene.poses(d, geoms), before)
    assert not np.allclose(ghost, before)


@pytest.mark.parametrize("name", ROBOTS)
def test_every_robot_scene_is_small_and_drawable(name):
    m = asr.load_robot(name).mj_model()
    s = scene.scene(m)
    assert len(s["geoms"]) == len(scene.visible_geoms(m)) > 0
    text = json.dumps(s)
    assert len(text) < 200_000, len(text)
    for g in s["geoms"]:
        n = len(g["x"])
        assert n == len(g["y"]) == len(g["z"]) > 0
        assert max(g["i"] + g["j"] + g["k"]) < n
