"""The robot, rate and control period of asr's ROS 2 node tests (tests/ros/test_ros2_node*.py)."""

from asr.sim.simulation import Sim


def control_period():
    sim = Sim(ROBOT, 1)
    steps = int(round(1.0 / (RATE * sim.dt)))
    return steps, steps * int(round(sim.dt * 1e9))


ROBOT, RATE = "qbmove_arm_2dof", 100.0
