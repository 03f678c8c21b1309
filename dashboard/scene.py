"""The robot as the page draws it in 3-D: each visible shape (MuJoCo: geom) as a small triangle
mesh in its own frame (sent once per robot), the shapes' world poses per frame, and the "relaxed"
pose, where every compliant joint's spring would hold no torque, drawn as a ghost so that the
spring deflection is visible as the gap between the two. The engine gives the meshes and poses
(asr.Sim.scene_geometry, geom_poses, geom_poses_at; MuJoCo's in asr.engines.mujoco_scene); this
module finds the relaxed angles and builds the messages.

Why meshes and poses instead of rendered images: MuJoCo's own offscreen renderer works here
(MUJOCO_GL=egl, Mesa's software rasteriser) but took 34 ms per 320 x 240 frame on the 2-core
development machine, a whole core at the page's 30 frames/s next to the simulation; the pose of
a geom is 12 numbers, the transform of a few hundred vertices is the browser's work, and the view
can be turned with the mouse (three.js: the meshes go to the GPU once, a frame only moves each
geom's 4x4 transform).

Units: m for positions and sizes, rad for angles. Poses are the geom's position (3,) and its
rotation matrix (9,), row-major, in the world frame: a vertex v of the geom's mesh is at
pos + R v.
"""

import numpy as np

import asr

RELAX_ITERATIONS = 12  # Newton steps of the relaxed-angle solve (it starts at the link angle)
RELAX_TOL = 1e-9  # N m: spring torque at which a joint counts as relaxed


def scene(geometry):
    """What the page needs once per robot, from an asr.engines.base.SceneGeometry: {"geoms":
    [{name, body, rgba, x, y, z, i, j, k, radius, ground}], "extent"}: vertices x, y, z (m, geom
    frame) and triangle corner indices i, j, k as lists, rgba in [0, 1]; radius: the largest
    distance of a vertex from the geom's origin (m), for the view's bounds; ground: a flat shape
    fixed to the world (a floor plane), which the view replaces by a grid sized to the robot;
    extent: a length covering the robot (m, at least 1 mm)."""
    geoms = []
    for name, body, rgba, v, f in zip(
        geometry.names, geometry.bodies, geometry.rgba, geometry.vertices, geometry.faces
    ):
        geoms.append(
            {
                "name": name,
                "body": body,
                "rgba": [round(float(c), 3) for c in rgba],
                "x": _rounded(v[:, 0]),
                "y": _rounded(v[:, 1]),
                "z": _rounded(v[:, 2]),
                "i": f[:, 0].tolist(),
                "j": f[:, 1].tolist(),
                "k": f[:, 2].tolist(),
                "radius": round(float(np.max(np.linalg.norm(v, axis=1))), 5),
                "ground": is_ground(body, v),
            }
        )
    return {"geoms": geoms, "extent": float(max(geometry.extent, 1e-3))}


GROUND_THICKNESS = 1e-6  # m: a world-fixed mesh thinner than this is a floor plane


def is_ground(body, vertices):
    """True for a flat mesh (vertices (V, 3) m) on the world body (0): a floor plane, which
    would dwarf the robot in the view (MuJoCo planes are drawn as large quads)."""
    v = np.asarray(vertices, float)
    return int(body) == 0 and float(np.min(np.ptp(v, axis=0))) < GROUND_THICKNESS


def _rounded(a, digits=5):
    """A list of floats to 10 um: what a drawing needs, a third of the characters."""
    return [round(float(x), digits) for x in a]


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


MOTION_PROBE = 1e-3  # rad: the joint step whose geom displacements find the motion plane
PLANAR = 0.05  # eigenvalue ratio below which the robot counts as moving in a plane


def least_motion_axis(sim):
    """(3,) unit vector, world frame: the direction in which instance 0's geoms move least when
    each joint turns a little from where it is (the smallest eigenvector of the sum of their
    displacements' outer products). A planar arm's is its joints' axis: the view looks along
    it, at the plane the arm moves in. All zero for a robot that does not move in a plane
    (its geoms move across the least direction more than PLANAR as much as across the next)."""
    q = np.nan_to_num(np.array(sim.q[0], float))
    base = sim.geom_poses_at(q, 0)[:, :3]
    spread = np.zeros((3, 3))
    for j in range(sim.n_joints):
        step = q.copy()
        step[j] += MOTION_PROBE
        d = sim.geom_poses_at(step, 0)[:, :3] - base
        spread += d.T @ d
    values, vectors = np.linalg.eigh(spread)
    if not values[1] > 0 or values[0] > PLANAR * values[1]:
        return np.zeros(3)
    return vectors[:, 0]


GHOST_EVERY = 3  # frames: the relaxed (ghost) poses go out with every 3rd frame only


class SceneStream:
    """The robot3d part of the runner's frames for one asr.Sim `sim` (made anew with every
    Sim: a robot switch or a compare change): scene_id names the scene GET /api/scene
    answers, frame() the poses of the first `n_max` instances."""

    def __init__(self, sim, n_max, scene_id, same_as=None):
        """same_as: a SceneStream of a Sim of the same robot, whose scene this one answers
        (it is not built again)."""
        self.sim, self.scene_id = sim, int(scene_id)
        self.n_shown = max(1, min(int(n_max), sim.n_instances))
        self._scene = None if same_as is None else same_as.scene()
        self._frames = 0
        self._last = None  # the robot3d frame kept by release()

    def scene(self):
        """scene() of the robot (built once) with scene_id, n_instances (shown), names and
        view_axis (least_motion_axis: the view looks along it)."""
        if self._scene is None:
            s = scene(self.sim.scene_geometry())
            self._scene = dict(
                s,
                scene_id=self.scene_id,
                n_instances=self.n_shown,
                names=[g["name"] for g in s["geoms"]],
                view_axis=[round(float(a), 4) for a in least_motion_axis(self.sim)],
            )
        return self._scene

    def release(self):
        """Drop the Sim (its MuJoCo model and data, its arrays): the view keeps the scene and
        the last frame (poses and ghost), which scene() and frame() answer from then on. For a
        Sim no longer stepped (an interaction session that ended) whose robot is still shown."""
        if self.sim is None:
            return
        self.scene()
        self._frames = 0  # the next frame carries the ghost
        self._last = self.frame()["robot3d"]
        self.sim = None

    def frame(self, target=None):
        """{"scene_id", "robot3d": {"poses": (n, G, 12), "ghost": (n, G, 12) every
        GHOST_EVERY-th call, "target": (n, G, 12) and "target_q": (n, J) rad, the angles they
        are drawn at, with the ghost when `target` is given}} as nested lists, m and rotation
        entries rounded to 1e-5. target: the watched task's
        joint-angle targets, (J,) or (N, J) rad (row i for instance i, the last row for the
        rest); None, another shape or a non-finite angle: no target poses."""
        if self.sim is None:  # released: the last frame
            return {"scene_id": self.scene_id, "robot3d": dict(self._last)}
        self._frames += 1
        shown = range(self.n_shown)
        out = {"poses": [_rounded_rows(self.sim.geom_poses(i)) for i in shown]}
        if self._frames % GHOST_EVERY == 1 or GHOST_EVERY == 1:
            out["ghost"] = [_rounded_rows(self._ghost(i)) for i in shown]
            rows = target_rows(target, self.sim.n_joints)
            if rows is not None:
                q = [rows[min(i, len(rows) - 1)] for i in shown]
                out["target"] = [_rounded_rows(self.sim.geom_poses_at(q[i], i)) for i in shown]
                out["target_q"] = [[round(float(a), 6) for a in q[i]] for i in shown]
        return {"scene_id": self.scene_id, "robot3d": out}

    def _ghost(self, instance):
        q = relaxed_angles(self.sim, instance)
        if not np.all(np.isfinite(q)):  # a diverged instance: no relaxed pose to show
            return np.zeros_like(self.sim.geom_poses(instance))
        return self.sim.geom_poses_at(q, instance)


def target_rows(target, n_joints):
    """(N, J) rad of a watched task's target, (J,) or (N, J) rad; None when there is none, its
    shape is not one angle per joint (a task whose target is no joint angle) or it is not
    finite."""
    if target is None:
        return None
    rows = np.atleast_2d(np.asarray(target, float))
    if rows.ndim != 2 or rows.shape[1] != n_joints or not np.all(np.isfinite(rows)):
        return None
    return rows


def _rounded_rows(a):
    """(G, 12) array as nested lists of floats rounded to 1e-5 (non-finite: 0, never NaN in
    JSON; a pose is only drawn)."""
    a = np.round(np.nan_to_num(np.asarray(a, float), nan=0.0, posinf=0.0, neginf=0.0), 5)
    return a.tolist()
