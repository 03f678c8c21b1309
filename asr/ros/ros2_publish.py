"""The state publishers of asr's ROS 2 node (asr.ros.ros2_node): one period's state, from
NodeCore.state() / step_period() ({field: (J,)}, units asr.FIELD_UNITS), onto the robot-level
and per-joint topics, stamped exactly with the simulated time in integer ns. rclpy and the
message packages are imported by the caller first (asr.ros.ros2_node.load_rclpy).

The asr_msgs topics (actuator_states, held_references_stamped: every state field and the held
references, stamped as joint_states) come from asr.ros.ros2_stamped; the unstamped Float64
`<joint>/stiffness` and Float64MultiArray `held_references` stay for compatibility.

Messages are built once and refilled each period (rclpy serialises on publish), which halves
the Python time per period at 1 kHz.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from asr.ros.ros2_stamped import StampedPublishers
from asr.ros.ros2_tf import TfPublishers
from asr.ros.ros2_trajectory import stamp

# per-joint Float64 state topics published for every joint besides the toolbox's (NodeCore
# joint_states): the joint stiffness, N m/rad
EXTRA_SCALARS = {"stiffness": "stiffness"}


class Publishers:
    """The node's publishers (rclpy node `node`, NodeCore `core`, QoS profiles of
    asr.ros.ros2_node.qos_profiles, /clock when `clock`). lean: none of robot_description,
    /tf_static, /tf, actuator_states and held_references_stamped (the topics the first
    ROS 2 node had, and less time per period: benchmarks/bench_ros.py compares both)."""

    def __init__(
        self, node: Any, core: Any, qos: dict[str, Any], *, clock: bool, lean: bool = False
    ) -> None:
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64, Float64MultiArray, MultiArrayDimension

        control = qos["control"]
        self.core = core
        names = list(core.names)
        nj = len(names)
        self.joint_states = node.create_publisher(JointState, "joint_states", control)
        self.latest = node.create_publisher(JointState, "joint_states_latest", qos["latest"])
        self.motor_states = node.create_publisher(JointState, "motor_states", control)
        self.held = node.create_publisher(Float64MultiArray, "held_references", control)
        self.clock = node.create_publisher(Clock, "/clock", qos["clock"]) if clock else None
        # robot_description (once), /tf_static (once), /tf (each period): asr.ros.ros2_tf
        warn = node.get_logger().warning
        self.tf = None if lean else TfPublishers(node, core, control, warn)
        # actuator_states, held_references_stamped (asr_msgs; off, logged, when not built)
        self.stamped = None if lean else StampedPublishers(node, core, control)
        self._js = JointState(name=names)
        # motor (joint index, motor 1 or 2) of every entry of motor_states
        self._motors = [(j, 1) for j, s in enumerate(core.specs) if s.nmotor >= 1]
        self._motors += [(j, 2) for j, s in enumerate(core.specs) if s.nmotor == 2]
        self._motors.sort()
        self._ms = JointState(name=[f"{names[j]}_motor_{m}" for j, m in self._motors])
        self._refs = Float64MultiArray()
        self._refs.layout.dim = [
            MultiArrayDimension(label="joints", size=nj, stride=2 * nj),
            MultiArrayDimension(label="references", size=2, stride=2),
        ]
        self._clock_msg = Clock()
        # per joint: (publisher, message, fields): a JointState's (angle, velocity, torque)
        # state fields, or a Float64's one field; resolved here, not every period
        self._joint: list[list[tuple[Any, Any, tuple[str, ...]]]] = []
        for jn, states in zip(names, core.states):
            pubs: list[tuple[Any, Any, tuple[str, ...]]] = []
            for t, kind in {**states, **EXTRA_SCALARS}.items():
                if kind in ("link", "motor1", "motor2"):
                    m = kind[-1]
                    label, fields = (
                        (jn, ("q", "qd", "tau_link"))
                        if kind == "link"
                        else (f"{jn}_motor_{m}", (f"th{m}", f"th{m}d", f"tau_m{m}"))
                    )
                    pub = node.create_publisher(JointState, f"{jn}/{t}", control)
                    pubs.append((pub, JointState(name=[label]), fields))
                else:
                    pub = node.create_publisher(Float64, f"{jn}/{t}", control)
                    pubs.append((pub, Float64(), (kind,)))
            self._joint.append(pubs)

    def publish(self, s: dict[str, np.ndarray], stamp_ns: int, refs: np.ndarray) -> None:
        """Publish state `s` ({field: (J,)}) stamped `stamp_ns` (simulated time, ns) and the
        references `refs` (J, 2) held over the period that ended there: /clock first, then
        /tf (the engine's link poses now, the same stamp), then the states."""
        sec, nanosec = stamp(stamp_ns)
        if self.clock is not None:  # /clock first: a peer's time is never behind a state's
            self._clock_msg.clock.sec, self._clock_msg.clock.nanosec = sec, nanosec
            self.clock.publish(self._clock_msg)
        if self.tf is not None:
            self.tf.publish(sec, nanosec)
        js = self._js
        js.header.stamp.sec, js.header.stamp.nanosec = sec, nanosec
        js.position = s["q"].tolist()
        js.velocity = s["qd"].tolist()
        js.effort = s["tau_link"].tolist()
        self.joint_states.publish(js)
        if self.stamped is not None:  # right after joint_states: same stamp
            self.stamped.publish_state(s, sec, nanosec)
        self.latest.publish(js)
        ms = self._ms
        ms.header.stamp.sec, ms.header.stamp.nanosec = sec, nanosec
        ms.position = [float(s[f"th{m}"][j]) for j, m in self._motors]
        ms.velocity = [float(s[f"th{m}d"][j]) for j, m in self._motors]
        ms.effort = [float(s[f"tau_m{m}"][j]) for j, m in self._motors]
        self.motor_states.publish(ms)
        self._refs.data = np.asarray(refs, dtype=np.float64).ravel().tolist()
        self.held.publish(self._refs)
        if self.stamped is not None:
            self.stamped.publish_held(refs, sec, nanosec)
        for j, pubs in enumerate(self._joint):
            for pub, msg, fields in pubs:
                if len(fields) == 3:  # JointState of one joint or motor
                    q, qd, tau = fields
                    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
                    msg.position = [float(s[q][j])]
                    msg.velocity = [float(s[qd][j])]
                    msg.effort = [float(s[tau][j])]
                else:
                    msg.data = float(s[fields[0]][j])
                pub.publish(msg)


__all__ = ["Publishers", "EXTRA_SCALARS"]
