"""The robot as the page draws it in 3-D: each visible MuJoCo geom as a small triangle mesh in
its own frame (sent once per robot), the geoms' world poses per frame, and the "relaxed" pose,
where every compliant joint's spring would hold no torque, drawn as a ghost so that the spring
deflection is visible as the gap between the two.

Why meshes and poses instead of rendered images: MuJoCo's own offscreen renderer works here
(MUJOCO_GL=egl, Mesa's software rasteriser) but took 34 ms per 320 x 240 frame on the 2-core
development machine, a whole core at the page's 30 frames/s next to the simulation; the pose of
a geom is 12 numbers, the transform of a few hundred vertices is the browser's work, and the view
can be turned with the mouse (plotly.js mesh3d traces).

Units: m for positions and sizes, rad for angles. Poses are the geom's position (3,) and its
rotation matrix (9,), row-major, in the world frame: a vertex v of the geom's mesh is at
pos + R v.
"""

import math

import mujoco
import numpy as np

import asr

SPHERE_RINGS = 6  # latitude bands of a sphere, capsule cap or ellipsoid
ROUND_SEGMENTS = 12  # segments around a sphere, cylinder or capsule
PLANE_HALF_SIZE = 1.0  # m, half side of an infinite plane (size 0) as drawn
MESH_MAX_FACES = 2000  # a mesh geom with more faces is drawn as its bounding box
INVISIBLE_GROUP = 3  # MuJoCo's viewer hides geom groups 3 and up by default
RELAX_ITERATIONS = 12  # Newton steps of the relaxed-angle solve (it starts at the link angle)
RELAX_TOL = 1e-9  # N m: spring torque at which a joint counts as relaxed


def _box(half):
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


def _ring_mesh(rings):
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


def _circle(radius, z):
    angles = 2.0 * np.pi * np.arange(ROUND_SEGMENTS) / ROUND_SEGMENTS
    return np.column_stack(
        [radius * np.cos(angles), radius * np.sin(angles), np.full(ROUND_SEGMENTS, float(z))]
    )


def _round(radius, half_length, caps):
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


def geom_mesh(m, g):
    """Geom g of MjModel m as (vertices (V, 3) m in the geom's frame, faces (F, 3) int)."""
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


def visible_geoms(m):
    """Indices of the geoms the page draws: groups below INVISIBLE_GROUP, not transparent."""
    return [
        g for g in range(m.ngeom) if m.geom_group[g] < INVISIBLE_GROUP and m.geom_rgba[g][3] > 0.0
    ]


def scene(m):
    """What the page needs once per robot: {"geoms": [{name, body, rgba, x, y, z, i, j, k}],
    "extent"}: vertices x, y, z (m, geom frame) and triangle corner indices i, j, k as lists,
    rgba in [0, 1]; extent: a length covering the robot (m), for the view's range."""
    geoms = []
    for g in visible_geoms(m):
        v, f = geom_mesh(m, g)
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom {g}"
        geoms.append(
            {
                "name": name,
                "body": int(m.geom_bodyid[g]),
                "rgba": [round(float(c), 3) for c in m.geom_rgba[g]],
                "x": _rounded(v[:, 0]),
                "y": _rounded(v[:, 1]),
                "z": _rounded(v[:, 2]),
                "i": f[:, 0].tolist(),
                "j": f[:, 1].tolist(),
                "k": f[:, 2].tolist(),
            }
        )
    return {"geoms": geoms, "extent": float(max(m.stat.extent, 1e-3))}


def _rounded(a, digits=5):
    """A list of floats to 10 um: what a drawing needs, a third of the characters."""
    return [round(float(x), digits) for x in a]


def poses(d, geoms):
    """(G, 12) world poses of geoms (indices) in MjData d: position (3) then rotation (9)."""
    return np.hstack([d.geom_xpos[geoms], d.geom_xmat[geoms]])


def relaxed_angles(sim, instance):
    """(J,) rad: for each joint of instance `instance` of asr.Sim `sim`, the link angle at which
    its spring holds no torque with the motors where they are now (Newton's method on
    asr.compliance, tau(q + dq) ~ tau(q) - sigma dq; rigid joints, and springs without stiffness,
    keep the link angle)."""
    batch, q = sim.batch, np.array(sim.q[instance], float)
    state = {f: batch.field(f)[instance] for f in ("th1", "th2")}
    out = q.copy()
    for j, spec in enumerate(batch.specs):
        if spec.name == "rigid" or batch.modes[j] in (0, 1):
            continue
        params = {p.name: float(batch.get_param(j, p.name)[instance]) for p in spec.params}
        out[j] = _relax(spec.name, q[j], state["th1"][j], state["th2"][j], params)
    return out


def _relax(model, q, th1, th2, params):
    for _ in range(RELAX_ITERATIONS):
        c = asr.compliance(model, q, th1, th2, **params)
        tau, sigma = float(c.tau_link), float(c.stiffness)
        if abs(tau) <= RELAX_TOL or sigma <= 0.0:
            break
        q += tau / sigma
    return q


def relaxed_poses(m, d, scratch, geoms, qpos_adr, angles):
    """poses() of geoms with the joints at qpos_adr (J,) moved to angles (J,) rad, the rest of
    MjData d as it is; scratch: an MjData of m to compute them in (d is left untouched)."""
    scratch.qpos[:] = d.qpos
    scratch.qpos[np.asarray(qpos_adr)] = angles
    mujoco.mj_kinematics(m, scratch)
    return poses(scratch, geoms)


GHOST_EVERY = 3  # frames: the relaxed (ghost) poses go out with every 3rd frame only


class SceneStream:
    """The robot3d part of the runner's frames for one asr.Sim `sim` (made anew with every
    Sim: a robot switch or a compare change): scene_id names the scene GET /api/scene
    answers, frame() the poses of the first `n_max` instances."""

    def __init__(self, sim, n_max, scene_id):
        self.sim, self.scene_id = sim, int(scene_id)
        self.n_shown = max(1, min(int(n_max), sim.n_instances))
        self.model = sim.models[0]
        self.geoms = visible_geoms(self.model)
        self._scratch = mujoco.MjData(self.model)  # the ghost's kinematics, never a live MjData
        self._scene = None
        self._frames = 0

    def scene(self):
        """scene() of the robot (built once) with scene_id, n_instances (shown) and names."""
        if self._scene is None:
            s = scene(self.model)
            self._scene = dict(
                s,
                scene_id=self.scene_id,
                n_instances=self.n_shown,
                names=[g["name"] for g in s["geoms"]],
            )
        return self._scene

    def frame(self):
        """{"scene_id", "robot3d": {"poses": (n, G, 12), "ghost": (n, G, 12) every
        GHOST_EVERY-th call}} as nested lists, m and rotation entries rounded to 1e-5."""
        self._frames += 1
        shown = range(self.n_shown)
        out = {"poses": [_rounded_rows(poses(self.sim.datas[i], self.geoms)) for i in shown]}
        if self._frames % GHOST_EVERY == 1 or GHOST_EVERY == 1:
            out["ghost"] = [_rounded_rows(self._ghost(i)) for i in shown]
        return {"scene_id": self.scene_id, "robot3d": out}

    def _ghost(self, instance):
        return relaxed_poses(
            self.model,
            self.sim.datas[instance],
            self._scratch,
            self.geoms,
            self.sim.qpos_adr,
            relaxed_angles(self.sim, instance),
        )


def _rounded_rows(a):
    """(G, 12) array as nested lists of floats rounded to 1e-5 (non-finite: 0, never NaN in
    JSON; a pose is only drawn)."""
    a = np.round(np.nan_to_num(np.asarray(a, float), nan=0.0, posinf=0.0, neginf=0.0), 5)
    return a.tolist()
