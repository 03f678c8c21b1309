"""robot_description, /tf and /tf_static of asr's ROS 2 node (asr.ros.ros2_node): what RViz,
Foxglove and robot_state_publisher read to show the robot.

- `robot_description` (std_msgs/String, reliable, keep_last 1, transient local: a viewer that
  joins late still gets it): the robot's URDF as asr.ros.urdf.export_robot writes it (links
  with inertias, joint origins, axes, real limits and dynamics, the toolbox's plugin blocks).
  Its shapes are primitives (box, sphere, cylinder; a capsule as a cylinder) written inline:
  no mesh file, so no package:// or file:// path is needed and none of the server's paths is
  published (a MuJoCo mesh geom has no URDF primitive and is left out; every shipped robot is
  built of primitives).
- `/tf` (tf2_msgs/TFMessage) each period: one transform per link moved by a joint, from its
  URDF parent link to it; `/tf_static` (transient local) once: the links on fixed joints. Frame
  ids are the URDF link names (the root link: "world"). Every transform comes from the engine's
  own body poses (MuJoCo's mj_kinematics on the engine's model at its current qpos, computed in
  a private MjData so the engine's own data is never written), stamped as joint_states.

A URDF link frame is its MuJoCo body frame moved to the body's joint anchor (asr.ros.urdf), so
link b's world pose is (xpos_b + R_b jnt_pos_b, R_b) and its transform from parent p is
(R_p^T (x_b - x_p), conj(q_p) q_b), quaternions composed directly (no matrix round trip).

tf2_msgs is not on PyPI: where it is missing the node publishes robot_description but no /tf,
and says so once in its log. With engine="gazebo" (no MuJoCo data) likewise; a robot that URDF
cannot describe (a free joint, asr.ros.urdf.check_exportable) gets neither, logged once.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import numpy as np

from asr.ros.ros2_trajectory import stamp
from asr.ros.urdf import ROOT_LINK, _body_names, _urdf_tree


def robot_description(robot: Any, model: Any = None) -> str:
    """The URDF text of `robot` (an asr.Robot; `model` its MjModel, default robot.mj_model()).
    ValueError (asr.ros.urdf.check_exportable) when URDF cannot describe it; ValueError too if
    the text would name a path of this machine (it never should: shapes are primitives)."""
    model = robot.mj_model() if model is None else model
    root, _ = _urdf_tree(robot, model)
    ET.indent(root, "  ")
    text = ET.tostring(root, encoding="unicode")
    folder = str(getattr(robot, "folder", "") or "")
    if "file://" in text or "package://" in text or (len(folder) > 1 and folder in text):
        raise ValueError(f"robot {robot.name!r}: its URDF names a file path; not published")
    return text


class LinkFrames:
    """The URDF link frames of a MuJoCo model (body b = link b, body 0 = ROOT_LINK).

    links: (B,) link names; parent: (B,) parent body index (-1 for the root); moving: (B,) True
    where the link's joint moves it (a hinge or slide), False for fixed links and the root;
    offset: (B, 3) the joint anchor in the body frame, m (the link frame's origin)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.links = tuple(_body_names(model))
        self.parent = np.array([int(model.body_parentid[b]) for b in range(model.nbody)])
        self.parent[0] = -1
        self.moving = np.array(
            [b > 0 and int(model.body_jntnum[b]) > 0 for b in range(model.nbody)]
        )
        self.offset = np.zeros((model.nbody, 3))
        for b in range(1, model.nbody):
            if model.body_jntnum[b] == 1:
                self.offset[b] = model.jnt_pos[int(model.body_jntadr[b])]

    def world_poses(self, xpos: np.ndarray, xquat: np.ndarray, xmat: np.ndarray) -> Any:
        """((B, 3) m, (B, 4) w x y z): the link frames' world poses from the bodies' xpos (B, 3)
        m, xquat (B, 4) and xmat (B, 9) (MuJoCo's, after mj_kinematics)."""
        rot = np.asarray(xmat, dtype=np.float64).reshape(-1, 3, 3)
        pos = np.asarray(xpos, dtype=np.float64) + np.einsum("bij,bj->bi", rot, self.offset)
        return pos, np.asarray(xquat, dtype=np.float64).copy()

    def relative(self, pos: np.ndarray, quat: np.ndarray) -> Any:
        """((B, 3) m, (B, 4) w x y z) as lists of tuples: each link's pose in its parent link's
        frame, (R_p^T (x_b - x_p), conj(q_p) q_b), from world poses `pos` (B, 3) m and `quat`
        (B, 4) w x y z; entry 0, the root, is the identity. Plain float arithmetic, link by
        link: for robots of a few links it takes a tenth of NumPy's time per call."""
        P, Q, parent = pos.tolist(), quat.tolist(), self.parent.tolist()
        rel_pos: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)]
        rel_quat: list[tuple[float, float, float, float]] = [(1.0, 0.0, 0.0, 0.0)]
        for b in range(1, len(P)):
            p = parent[b]
            w, x, y, z = Q[p]
            x, y, z = -x, -y, -z  # conj(q_p)
            vx, vy, vz = P[b][0] - P[p][0], P[b][1] - P[p][1], P[b][2] - P[p][2]
            # v rotated by (w, u): v + w t + u x t, t = 2 u x v
            tx, ty, tz = 2 * (y * vz - z * vy), 2 * (z * vx - x * vz), 2 * (x * vy - y * vx)
            rel_pos.append(
                (
                    vx + w * tx + (y * tz - z * ty),
                    vy + w * ty + (z * tx - x * tz),
                    vz + w * tz + (x * ty - y * tx),
                )
            )
            bw, bx, by, bz = Q[b]
            rel_quat.append(
                (
                    w * bw - x * bx - y * by - z * bz,
                    w * bx + x * bw + y * bz - z * by,
                    w * by - x * bz + y * bw + z * bx,
                    w * bz + x * by - y * bx + z * bw,
                )
            )
        return rel_pos, rel_quat


class EnginePoses:
    """Link poses of the MuJoCo engine of a one-instance asr.Sim: its model and a private MjData
    into which the engine's qpos (and mocap poses) are copied before mj_kinematics."""

    def __init__(self, sim: Any) -> None:
        import mujoco

        self._mujoco = mujoco
        self.sim = sim
        self.model = sim.models[0]
        self.frames = LinkFrames(self.model)
        self._data = mujoco.MjData(self.model)

    def world(self) -> Any:
        """((B, 3) m, (B, 4) w x y z): the link frames' world poses now."""
        src, d = self.sim.datas[0], self._data
        d.qpos[:] = src.qpos
        d.mocap_pos[:] = src.mocap_pos
        d.mocap_quat[:] = src.mocap_quat
        self._mujoco.mj_kinematics(self.model, d)
        return self.frames.world_poses(d.xpos, d.xquat, d.xmat)

    def relative(self) -> Any:
        """((B, 3) m, (B, 4) w x y z): every link's pose in its parent's frame now."""
        return self.frames.relative(*self.world())


def latched_qos() -> Any:
    """reliable, keep_last 1, transient local: robot_description and /tf_static."""
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=1,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )


class TfPublishers:
    """robot_description (published once, here), /tf_static (once, here) and /tf (`publish`,
    each period) of rclpy node `node` for NodeCore `core`, on QoS `control` for /tf. `log`:
    callable(str) for the one line saying what is not published and why."""

    def __init__(self, node: Any, core: Any, control: Any, log: Any) -> None:
        from std_msgs.msg import String

        self.tf: Any = None
        self.description: Any = None
        robot = core.robot
        try:
            text = robot_description(robot)
        except ValueError as exc:
            log(f"asr ros2: no robot_description and no /tf: {exc}")
            return
        self.description = node.create_publisher(String, "robot_description", latched_qos())
        self.description.publish(String(data=text))
        why = None
        try:
            from geometry_msgs.msg import TransformStamped
            from tf2_msgs.msg import TFMessage
        except ImportError as exc:
            why = f"tf2_msgs is not installed ({exc})"
        if why is None and not core.sim.models:
            why = f"engine {core.engine!r} gives no link poses (MuJoCo only)"
        if why is not None:
            log(f"asr ros2: no /tf, /tf_static: {why}")
            return
        self.poses = EnginePoses(core.sim)
        f = self.poses.frames
        moving = [b for b in range(1, len(f.links)) if f.moving[b]]
        fixed = [b for b in range(1, len(f.links)) if not f.moving[b]]

        def message(bodies: list[int]) -> Any:
            msg = TFMessage(transforms=[TransformStamped() for _ in bodies])
            for t, b in zip(msg.transforms, bodies):
                t.header.frame_id, t.child_frame_id = f.links[f.parent[b]], f.links[b]
            return msg

        self._moving, self._msg = moving, message(moving)
        self.tf = node.create_publisher(TFMessage, "/tf", control)
        self.tf_static = node.create_publisher(TFMessage, "/tf_static", latched_qos())
        static = message(fixed)
        with core.step_lock:
            pos, quat = self.poses.relative()
            sec, nanosec = stamp(core.stamp_ns)
        self._fill(static, fixed, pos, quat, sec, nanosec)
        self.tf_static.publish(static)

    @staticmethod
    def _fill(msg: Any, bodies: list[int], pos: Any, quat: Any, sec: int, nanosec: int) -> None:
        for t, b in zip(msg.transforms, bodies):
            t.header.stamp.sec, t.header.stamp.nanosec = sec, nanosec
            tr, ro = t.transform.translation, t.transform.rotation
            tr.x, tr.y, tr.z = pos[b]
            ro.w, ro.x, ro.y, ro.z = quat[b]

    def publish(self, sec: int, nanosec: int) -> None:
        """/tf of the engine's state now, stamped (sec, nanosec) (call with the node's stepping
        lock held, after the period, with joint_states' stamp)."""
        if self.tf is None or not self._moving:
            return
        pos, quat = self.poses.relative()
        self._fill(self._msg, self._moving, pos, quat, sec, nanosec)
        self.tf.publish(self._msg)


__all__ = [
    "robot_description",
    "LinkFrames",
    "EnginePoses",
    "TfPublishers",
    "latched_qos",
    "ROOT_LINK",
]
