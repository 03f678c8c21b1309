"""MuJoCo's side of the 3-D robot view (asr.engines.mujoco_scene, through asr.Sim's
scene_geometry, geom_poses and geom_poses_at): geom meshes against closed-form volumes and
outward faces, poses against MuJoCo's own ray casts, poses at given angles on scratch data."""

import math

import mujoco
import numpy as np
import pytest

import asr
from asr.engines import mujoco_scene


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
    v, f = mujoco_scene.geom_mesh(m, 0)
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
    v, _ = mujoco_scene.geom_mesh(m, 0)
    assert sorted(map(tuple, np.abs(v))) == [(0.1, 0.2, 0.3)] * 8


def test_poses_put_the_mesh_where_mujoco_ray_casts_find_the_geom():
    """A ray from outside towards a posed box hits MuJoCo's geom at the distance where it meets
    the mesh as the page places it (pos + R v): the pose convention, checked independently."""
    robot = asr.load_robot("qbmove_arm_2dof")
    sim = asr.Sim(robot, 1)
    sim.reset(q0=[[0.7, -0.4]])
    m, d = sim.models[0], sim.datas[0]
    mujoco.mj_forward(m, d)
    geoms = mujoco_scene.visible_geoms(m)
    pose = sim.geom_poses()
    checked = 0
    for row, g in enumerate(geoms):
        if m.geom_type[g] != mujoco.mjtGeom.mjGEOM_BOX:
            continue
        v, f = mujoco_scene.geom_mesh(m, g)
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


def test_poses_at_move_only_the_ghost():
    sim = asr.Sim(asr.load_robot("qbmove_arm_2dof"), 2)
    sim.reset(q0=[[0.5, 0.5], [0.2, -0.1]])
    d = sim.datas[1]
    before, qpos = sim.geom_poses(1), d.qpos.copy()
    ghost = sim.geom_poses_at([0.0, 0.0], 1)
    np.testing.assert_array_equal(sim.geom_poses(1), before)
    np.testing.assert_array_equal(d.qpos, qpos)
    assert not np.allclose(ghost, before)
    sim.reset(q0=[[0.5, 0.5], [0.0, 0.0]])
    np.testing.assert_array_equal(ghost, sim.geom_poses(1))  # the pose at those angles
    with pytest.raises(ValueError, match=r"q: expected shape \(2,\)"):
        sim.geom_poses_at([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"q: got \[0.0, nan\], valid: finite"):
        sim.geom_poses_at([0.0, np.nan])


def test_the_geometry_is_the_scene_of_every_visible_geom():
    sim = asr.Sim("qbmove_arm_5dof", 1)
    m, g = sim.models[0], sim.scene_geometry()
    geoms = mujoco_scene.visible_geoms(m)
    assert len(g.names) == len(g.vertices) == len(g.faces) == len(geoms) == g.rgba.shape[0]
    assert "pusher" in g.names and g.extent == m.stat.extent
    assert sim.geom_poses().shape == (len(geoms), 12)
