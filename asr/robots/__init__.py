"""Robot folders (robots/: an MJCF or SDF with robot.toml): loading and checking them (robot),
their files and assets (robot_files) and the robot.toml schema (robot_toml)."""

from asr.robots.robot import Robot, RobotFileError, RobotJoint, load_robot

__all__ = ["Robot", "RobotFileError", "RobotJoint", "load_robot"]
