"""asr's stamped state messages on the ROS 2 node (asr.ros.ros2_publish): asr_msgs/ActuatorState
on `actuator_states` (every field of the state record, asr.FIELDS, per joint) and
asr_msgs/HeldReferences on `held_references_stamped` (the references held over the period),
both stamped exactly as that period's joint_states. asr_msgs is generated from
csrc/core/asr_fields.h by asr/ros/interfaces/build.py; when it does not import the node logs
once and publishes neither.

Each period fills one message per topic, a whole array.array per field (rclpy takes it without
a per-element check and serialises it as a buffer).
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from asr.core.batch import FIELDS


def _doubles(values: np.ndarray) -> array:
    """array('d') of `values` (any real (J,) array)."""
    return array("d", np.asarray(values, dtype=np.float64).tobytes())


class StampedPublishers:
    """The asr_msgs publishers of rclpy node `node` for NodeCore `core` (QoS profile
    `control`), or nothing when asr_msgs does not import (`active` False, logged once)."""

    def __init__(self, node: Any, core: Any, control: Any) -> None:
        try:
            from asr_msgs.msg import ActuatorState, HeldReferences
        except ImportError as exc:
            node.get_logger().warning(
                "asr ros2: asr_msgs is not installed, so actuator_states and "
                "held_references_stamped are off (python asr/ros/interfaces/build.py builds "
                f"it): {exc}"
            )
            self.active = False
            return
        self.active = True
        self.core = core
        names = list(core.names)
        self.states = node.create_publisher(ActuatorState, "actuator_states", control)
        self.held = node.create_publisher(HeldReferences, "held_references_stamped", control)
        self._state = ActuatorState(name=names)
        self._held = HeldReferences(name=names, mode=array("B", core.modes))

    def publish_state(self, s: dict[str, np.ndarray], sec: int, nanosec: int) -> None:
        """Publish state `s` ({field: (J,)}, units asr.FIELD_UNITS: NodeCore.state(), the
        fields of asr.ros.node_core.RECORD) stamped (sec, nanosec); every other field of
        asr.FIELDS is the engine's record now (NodeCore's batch, which holds the state `s` is
        taken from: read under its step_lock)."""
        if not self.active:
            return
        msg = self._state
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        core = self.core
        with core.step_lock:
            batch = core.sim.batch
            for field in FIELDS:
                value = s[field] if field in s else batch.field(field)[0]
                setattr(msg, field, _doubles(value))
        self.states.publish(msg)

    def publish_held(self, refs: np.ndarray, sec: int, nanosec: int) -> None:
        """Publish the references `refs` (J, 2) held over the period that ended at (sec,
        nanosec)."""
        if not self.active:
            return
        msg = self._held
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        refs = np.asarray(refs, dtype=np.float64)
        msg.ref1 = _doubles(refs[:, 0])
        msg.ref2 = _doubles(refs[:, 1])
        self.held.publish(msg)


__all__ = ["StampedPublishers"]
