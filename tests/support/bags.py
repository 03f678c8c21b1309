"""The rollout and its record that the ROS 1 and ROS 2 bag tests share (tests/ros/test_ros_bags.py,
tests/ros/test_ros2_bags.py): STEPS, RECORD, the `run` fixture and the integer-ns stamps."""

import numpy as np
import pytest

import asr

STEPS = 200
RECORD = asr.sim.DEFAULT_RECORD + (
    "ref1",
    "ref2",
    "th1d",
    "th2d",
    "tau_m1",
    "tau_m2",
    "tau_el1",
    "tau_el2",
)


@pytest.fixture(scope="module")
def run():
    """(sim, out): 2 instances of the 2-DOF arm with different references, 200 steps."""
    sim = asr.Sim("qbmove_arm_2dof", 2)
    refs = np.array([[[0.3, 0.2], [-0.2, 0.4]], [[0.5, 0.1], [0.1, 0.3]]])
    return sim, sim.rollout(STEPS, refs, record=RECORD)


def stamps_ns(dt, t0=0.0, steps=STEPS):
    return [round(t0 * 1e9) + round((k + 1) * dt * 1e9) for k in range(steps)]
