"""asr's ROS 1 node on the Gazebo engine: `asr ros --engine gazebo --lockstep` (gz-physics with
DART through the shim asr/_asr_gz.so) against a real roscore, stepped over /step by this
process; its robot_state equals an offline asr.Sim(engine="gazebo") rollout of the same
references to the bit."""

import numpy as np
import pytest

import asr
from tests.conftest import need_gazebo, require_ros1
from tests.support.ros1_node import VARIANT, Recorder, publisher, running_node, steps_of

pytestmark = [pytest.mark.ros, pytest.mark.gazebo, pytest.mark.slow]

ROBOT = "qbmove_arm_2dof"  # the horizontal arm's SDF twin (test_ros_node's variant)
RATE_HZ, PERIODS = 50.0, 30  # 20 steps of 1 ms per period


@pytest.fixture(scope="module")
def ros(rospy_node):
    return rospy_node, require_ros1("std_msgs.msg"), require_ros1("sensor_msgs.msg"), None


def _references(n):
    """(n, J, 2) per-period references: equilibria on two sines (rad), presets stepping
    between soft and stiff (rad)."""
    k = np.arange(n)
    refs = np.zeros((n, 2, 2))
    refs[:, 0, 0], refs[:, 1, 0] = 0.5 * np.sin(0.25 * k), -0.3 * np.sin(0.4 * k)
    refs[:, :, 1] = np.where(k % 10 < 5, 0.2, 0.6)[:, None]
    return refs


def test_gazebo_lockstep_node_is_bit_identical_to_offline(ros):
    need_gazebo()
    rospy, std, sensor, _ = ros
    sim = asr.Sim(ROBOT, 1, variant=VARIANT, engine="gazebo")
    period, refs = int(round(1 / (RATE_HZ * sim.dt))), _references(PERIODS)
    args = ("--engine", "gazebo", "--lockstep", "--rate", str(RATE_HZ))
    with running_node(ros, "gz", *args):
        state = Recorder(rospy, "/gz/robot_state", sensor.JointState)
        try:
            state.wait(lambda m: steps_of(m.header.stamp, sim.dt) == 0)
            pub = publisher(rospy, "/gz/step", std.Float64MultiArray)
            live, live_qd = [], []
            for k in range(PERIODS):
                pub.publish(std.Float64MultiArray(data=refs[k].ravel().tolist()))
                _, m = state.wait(
                    lambda m, k=k: steps_of(m.header.stamp, sim.dt) == (k + 1) * period
                )
                live.append(m.position)
                live_qd.append(m.velocity)
        finally:
            state.close()
    series = np.repeat(refs, period, axis=0)[None]  # (1, steps, J, 2)
    res = sim.rollout(series.shape[1], series, record=("q", "qd"))
    q, qd = res["q"][0, period - 1 :: period], res["qd"][0, period - 1 :: period]
    live, live_qd = np.array(live), np.array(live_qd)
    print(
        f"\ngazebo lockstep (ROS 1): {PERIODS} periods of {period} steps, max |q - offline| = "
        f"{np.abs(live - q).max():.3g} rad, q1 range [{q[:, 0].min():.3f}, {q[:, 0].max():.3f}]"
    )
    assert np.ptp(live[:, 0]) > 0.1, "the references did not move the arm"
    assert np.array_equal(live, q)  # DART is deterministic: the same inputs, the same bits
    assert np.array_equal(live_qd, qd)
    # the node really ran Gazebo's physics: MuJoCo's rollout of the same references differs
    mujoco = asr.Sim(ROBOT, 1, variant=VARIANT).rollout(series.shape[1], series, record=("q",))
    assert not np.array_equal(live, mujoco["q"][0, period - 1 :: period])
