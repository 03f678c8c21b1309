"""The robots that export to URDF and their variants (tests/ros/test_ros_urdf*.py)."""

import os

import asr
from asr.robots.robot import robot_names

NOT_URDF = {"qbmove_arm_5dof": "free joint 'box'", "qbmove_snake": "free joint 'base'"}
EXPORTABLE = [n for n in robot_names() if n not in NOT_URDF]


def variants_of(name):
    import tomllib

    with open(os.path.join(asr.robots.robot.robots_dir(), name, "robot.toml"), "rb") as f:
        return list(tomllib.load(f)["variants"])


ALL_VARIANTS = [(n, v) for n in EXPORTABLE for v in variants_of(n)]
