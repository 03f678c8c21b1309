"""MuJoCo's side of the 3-D robot view (asr.Sim.scene_geometry, geom_poses, geom_poses_at):
each visible geom as a small triangle mesh in its own frame, the geoms' world poses, and their
poses with the actuated joints moved (computed on scratch data, the simulation's left alone).

Units: m for positions and sizes, rad for angles. Poses are the geom's position (3,) and its
rotation matrix (9,), row-major, in the world frame: a vertex v of the geom's mesh is at
pos + R v.
"""

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from asr.common.validate import FloatArray
from asr.engines.base import IndexArray, SceneGeometry

SPHERE_RINGS = 6  # latitude bands of a sphere, capsule cap or ellipsoid
ROUND_SEGMENTS = 12  # segments around a sphere, cylinder or capsule
PLANE_HALF_SIZE = 1.0  # m, half side of an infinite plane (size 0) as drawn
MESH_MAX_FACES = 2000  # a mesh geom with more faces is drawn as its bounding box
INVISIBLE_GROUP = 3  # MuJoCo's viewer hides geom groups 3 and up by default

Mesh = tuple[FloatArray, IndexArray]  # vertices (V, 3) m, triangles (F, 3) vertex indices


def _box(half: npt.ArrayLike) -> Mesh:
    """Box of half sizes half (3,): 8 vertices, 12 triangles."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    faces = [
        (0, 1, 3),
        (0, 3, 2),
        (4, 6, 7),
        (4, 7, 5),
        (0, 4, 5),
        (0, 5, 1),
        (2, 3, 7),
        (2, 7, 6),
        (0, 2, 6),
        (0, 6, 4),
        (1, 5, 7),
        (1, 7, 3),
    ]
    return corners * np.asarray(half, float), np.array(faces)


def _ring_mesh(rings: Sequence[FloatArray]) -> Mesh:
    """Triangles joining consecutive rings of ROUND_SEGMENTS vertices each (rings stacked in
    order); the first and last ring may be single points (poles)."""
    faces, start = [], 0
    for a, b in zip(rings[:-1], rings[1:]):
        na, nb = len(a), len(b)
        for k in range(ROUND_SEGMENTS):
            k1 = (k + 1) % ROUND_SEGMENTS
            ia0, ia1 = start + (k if na > 1 else 0), start + (k1 if na > 1 else 0)
            ib0, ib1 = start + na + (k if nb > 1 else 0), start + na + (k1 if nb > 1 else 0)
            if na > 1:
                faces.append((ia0, ia1, ib1 if nb > 1 else ib0))
            if nb > 1:
                faces.append((ia0, ib1, ib0))
        start += na
    return np.vstack(rings), np.array(faces)


def _circle(radius: float, z: float) -> FloatArray:
    angles = 2.0 * np.pi * np.arange(ROUND_SEGMENTS) / ROUND_SEGMENTS
    return np.column_stack(
        [radius * np.cos(angles), radius * np.sin(angles), np.full(ROUND_SEGMENTS, float(z))]
    )


def _round(radius: float, half_length: float, caps: bool) -> Mesh:
    """Cylinder (caps False: flat ends) or capsule (caps True: hemispheres) along z, or a sphere
    (half_length 0, caps True)."""
    rings = [np.array([[0.0, 0.0, -half_length - (radius if caps else 0.0)]])]
    if caps:
        for k in range(1, SPHERE_RINGS // 2 + 1):
            a = -0.5 * math.pi + math.pi * k / SPHERE_RINGS
            rings.append(_circle(radius * math.cos(a), -half_length + radius * math.sin(a)))
        if half_length > 0.0:
            rings.append(_circle(radius, half_length))
        for k in range(1, SPHERE_RINGS // 2):
            a = math.pi * k / SPHERE_RINGS
            rings.append(_circle(radius * math.cos(a), half_length + radius * math.sin(a)))
    else:
        rings += [_circle(radius, -half_length), _circle(radius, half_length)]
    rings.append(np.array([[0.0, 0.0, half_length + (radius if caps else 0.0)]]))
    return _ring_mesh(rings)


def geom_mesh(m: Any, g: int) -> Mesh:
    """Geom g of MjModel m as (vertices (V, 3) m in the geom's frame, faces (F, 3) int)."""
    import mujoco

    kind, size = int(m.geom_type[g]), m.geom_size[g]
    if kind == mujoco.mjtGeom.mjGEOM_BOX:
        return _box(size)
    if kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        return _round(size[0], 0.0, caps=True)
    if kind == mujoco.mjtGeom.mjGEOM_ELLIPSOID:
        v, f = _round(1.0, 0.0, caps=True)
        return v * size, f
    if kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
        return _round(size[0], size[1], caps=True)
    if kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        return _round(size[0], size[1], caps=False)
    if kind == mujoco.mjtGeom.mjGEOM_PLANE:
        half = [s if s > 0 else PLANE_HALF_SIZE for s in size[:2]]
        v = np.array(
            [
                [-half[0], -half[1], 0],
                [half[0], -half[1], 0],
                [half[0], half[1], 0],
                [-half[0], half[1], 0],
            ],
            float,
        )
        return v, np.array([(0, 1, 2), (0, 2, 3)])
    if kind == mujoco.mjtGeom.mjGEOM_MESH:
        mesh = int(m.geom_dataid[g])
        v0, nv = int(m.mesh_vertadr[mesh]), int(m.mesh_vertnum[mesh])
        f0, nf = int(m.mesh_faceadr[mesh]), int(m.mesh_facenum[mesh])
        if nf <= MESH_MAX_FACES:
            return np.array(m.mesh_vert[v0 : v0 + nv], float), np.array(m.mesh_face[f0 : f0 + nf])
    return _box(m.geom_rbound[g] / math.sqrt(3.0) * np.ones(3))  # height fields, huge meshes


def visible_geoms(m: Any) -> list[int]:
    """Indices of the geoms the view draws: groups below INVISIBLE_GROUP, not transparent."""
    return [
        g for g in range(m.ngeom) if m.geom_group[g] < INVISIBLE_GROUP and m.geom_rgba[g][3] > 0.0
    ]


def geometry(m: Any) -> SceneGeometry:
    """The visible geoms of MjModel m as meshes (unnamed ones named "geom <index>")."""
    import mujoco

    geoms = visible_geoms(m)
    meshes = [geom_mesh(m, g) for g in geoms]
    return SceneGeometry(
        names=tuple(
            mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom {g}" for g in geoms
        ),
        bodies=tuple(int(m.geom_bodyid[g]) for g in geoms),
        rgba=np.array(m.geom_rgba[geoms], dtype=np.float64).reshape(-1, 4),
        vertices=tuple(v for v, _ in meshes),
        faces=tuple(f for _, f in meshes),
        extent=float(m.stat.extent),
    )


def poses(d: Any, geoms: Sequence[int]) -> FloatArray:
    """(G, 12) world poses of geoms (indices) in MjData d: position (3) then rotation (9)."""
    return np.hstack([d.geom_xpos[geoms], d.geom_xmat[geoms]])


def poses_at(
    m: Any,
    d: Any,
    scratch: Any,
    geoms: Sequence[int],
    qpos_adr: npt.ArrayLike,
    q: npt.ArrayLike,
    more_adr: npt.ArrayLike = (),
    more: npt.ArrayLike = (),
) -> FloatArray:
    """poses() of geoms with the joints at qpos_adr (J,) moved to q (J,) rad and the qpos entries
    more_adr (K,) set to more (K,) (e.g. a free base's position and quaternion), the rest of
    MjData d as it is; scratch: an MjData of m to compute them in (d is left untouched)."""
    import mujoco

    scratch.qpos[:] = d.qpos
    scratch.qpos[np.asarray(qpos_adr)] = q
    scratch.qpos[np.asarray(more_adr, dtype=np.intp)] = more
    mujoco.mj_kinematics(m, scratch)
    return poses(scratch, geoms)


class Scene:
    """The 3-D view's reads of a MuJoCo engine's instances (models, datas: one per instance;
    qpos_adr: the actuated joints' addresses): the visible geoms of instance 0's model, the
    same in every instance (mujoco_params vary no geometry)."""

    def __init__(self, models: Sequence[Any], datas: Sequence[Any], qpos_adr: IndexArray) -> None:
        import mujoco

        self._models, self._datas, self._qpos_adr = models, datas, qpos_adr
        self._geoms = visible_geoms(models[0])
        self._scratch = mujoco.MjData(models[0])  # geom_poses_at's kinematics, never live data

    def geometry(self) -> SceneGeometry:
        return geometry(self._models[0])

    def poses(self, i: int) -> FloatArray:
        return poses(self._datas[i], self._geoms)

    def poses_at(
        self, i: int, q: npt.ArrayLike, more_adr: npt.ArrayLike = (), more: npt.ArrayLike = ()
    ) -> FloatArray:
        m, d = self._models[0], self._datas[i]
        return poses_at(m, d, self._scratch, self._geoms, self._qpos_adr, q, more_adr, more)


__all__ = ["Scene", "geom_mesh", "geometry", "poses", "poses_at", "visible_geoms"]
