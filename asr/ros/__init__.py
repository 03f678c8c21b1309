"""asr and ROS 1: a live node behind the topics of the compliant-actuator toolbox
[Mengacci2021], policies and robots exported as ROS packages and URDF, rollouts as bags.

ROS 1 comes from the operating system (Debian 12: ros-core, python3-rospy, python3-rosbag,
python3-rostopic, python3-std-msgs, python3-sensor-msgs, python3-genpy, liburdfdom-tools; see
asr.ros.environment); bags are written with `rosbags` (PyPI). Everything here imports ROS lazily,
so `import asr` never needs it. See docs/ros.md.
"""

import importlib

from asr.analysis.identification.data import register_reader

# public name -> defining module (imported on first use: none of them imports ROS at import time,
# and the node, bags and export modules pull in rospy, rosbags or MuJoCo only when called)
_EXPORTS = {
    "run_node": "node",
    "RosNode": "node",
    "write_bag": "bags",
    "read_bag": "bags",
    "as_rollout": "bags",
    "identification_data": "bags",
    "export_robot": "urdf",
    "import_robot": "urdf",
    "robot_from_urdf": "urdf",
    "export_policy": "export",
    "roscore": "master",
}

__all__ = sorted(_EXPORTS)


def _identification_data(path):
    """asr.identify's data from a ROS bag (asr.ros.bags.identification_data, loaded on use)."""
    return importlib.import_module("asr.ros.bags").identification_data(path)


# asr.identify reads .bag, .mcap and rosbag2 folders through this reader; identification itself
# imports nothing of asr.ros (the core API below the applications)
register_reader(_identification_data, (".bag", ".mcap"), folders=True)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"asr.ros.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'asr.ros' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
