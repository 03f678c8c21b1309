"""control_msgs/action/FollowJointTrajectory on asr's node (asr.ros.ros2_follow_trajectory),
with real rclpy over Fast DDS: the node (real time, in a namespace, the tests' robot and rate)
in one subprocess, a bare rclpy client without asr (tests/support/ros2_peers/
follow_trajectory.py, control_msgs from asr/ros/interfaces' install) in another."""

import re

import numpy as np
import pytest

from asr.ros.node_core import NodeCore
from tests.support.ros2 import run_peer_beside_node
from tests.support.ros2_node import RATE, ROBOT, control_period

pytestmark = [pytest.mark.ros2]

NS = "/fjt"
NODE = {"robot": ROBOT, "rate": RATE, "namespace": NS}
SUCCEEDED, CANCELED, ABORTED = 4, 5, 6  # action_msgs/GoalStatus
SUCCESSFUL, INVALID_GOAL, INVALID_JOINTS, PATH_VIOLATED = 0, -1, -2, -4  # Result.error_code
PREEMPTED = "Current goal cancelled due to new incoming action."


def settled(seconds=3.0):
    """(J,) rad: the links after `seconds` with joint1's equilibrium at 0.25 rad, joint2's at
    -0.1 rad held from the reset state (an offline NodeCore)."""
    core = NodeCore(ROBOT, rate=RATE)
    refs = core.held()[0]
    refs[:, 0] = [0.25, -0.1]
    assert core.hold_references(refs, "test")
    for _ in range(int(seconds * RATE)):
        s = core.step_period()
    return s["q"]


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ros2")
    return run_peer_beside_node(tmp, "follow_trajectory.py", NS, **NODE)


def test_a_goal_in_reverse_joint_order_succeeds_within_its_tolerance(answers):
    _, period_ns = control_period()
    goal = answers["succeeded"]
    assert goal["accepted"] and goal["status"] == SUCCEEDED, goal["message"]
    assert goal["code"] == SUCCESSFUL and goal["message"] == ""
    fb = goal["feedback"]
    # feedback each period at 100 Hz (the action's feedback topic keeps the newest 10: a busy
    # peer may miss some), in order, the joints in the goal's order
    assert len(fb) >= 5 and all(f["names"] == ["joint2", "joint1"] for f in fb)
    stamps = [f["stamp"] for f in fb]
    assert stamps == sorted(set(stamps)) and all(s % period_ns == 0 for s in stamps)
    for f in fb:  # error = desired - actual, positions and velocities
        for d, a, e in (("desired", "actual", "error"), ("desired_v", "actual_v", "error_v")):
            assert np.allclose(np.subtract(f[d], f[a]), f[e], rtol=0, atol=1e-12)
    # the last desired positions are the goal's point, the actual within the tolerances
    # (joint2 0.4, joint1 0.8 rad: the links sag under gravity below their equilibria)
    assert np.allclose(fb[-1]["desired"], [-0.1, 0.25], rtol=0, atol=1e-12)
    assert np.all(np.abs(fb[-1]["error"]) <= [0.4, 0.8])
    # the node's own joint_states afterwards (joint1, joint2): near the sagged equilibrium an
    # offline NodeCore reaches with these references held (-0.44, -0.38 rad after 3 s;
    # the goal ended 1 s before)
    q = answers["succeeded_state"]
    assert np.allclose(q, settled(), rtol=0, atol=0.05), q
    # each feedback's actual is joint_states of its period, exactly (the goal's joint order)
    states = dict((stamp, q) for stamp, q in answers["states_at_feedback"])
    assert len(states) >= len(fb) - 2  # a few states may be lost to a slow peer, not more
    for f in fb:
        if f["stamp"] in states:
            assert f["actual"] == states[f["stamp"]][::-1]


def test_a_path_tolerance_violated_aborts(answers):
    # path tolerances are checked before the trajectory's end only: this abort came before it
    goal = answers["path"]
    assert goal["accepted"] and goal["status"] == ABORTED
    assert goal["code"] == PATH_VIOLATED
    assert re.match(r"path tolerance violated: joint1 position error .* exceeds", goal["message"])


def test_a_second_goal_preempts_the_first(answers):
    first, second = answers["preempted"], answers["preempting"]
    assert first["accepted"] and first["status"] == CANCELED
    assert first["code"] == INVALID_GOAL and first["message"] == PREEMPTED
    assert second["accepted"] and second["status"] == SUCCEEDED and second["code"] == SUCCESSFUL


def test_a_joint_trajectory_message_preempts_a_goal(answers):
    goal = answers["topic_preempted"]
    assert goal["accepted"] and goal["status"] == CANCELED and goal["code"] == INVALID_GOAL
    assert goal["message"] == "preempted by a joint_trajectory message"


def test_a_cancelled_goal_is_canceled(answers):
    # of 10 s without tolerances: it would have succeeded at its end
    goal = answers["cancelled"]
    assert answers["cancel_response"] == 1
    assert goal["accepted"] and goal["status"] == CANCELED
    assert goal["code"] == SUCCESSFUL and goal["message"] == ""  # JTC's empty result


def test_invalid_goals_are_rejected_and_logged(answers):
    assert answers["unknown"] == {"accepted": False}
    assert answers["bad_tolerance"] == {"accepted": False}
    logs = "\n".join(answers["logs"])
    assert "goal rejected: joint_names: unknown joint 'elbow'" in logs
    assert "path_tolerance: joint 'joint2' is not in the goal's joint_names" in logs


def test_lockstep_goal_runs_over_the_requested_periods(tmp_path):
    _, period_ns = control_period()
    out = run_peer_beside_node(
        tmp_path, "follow_trajectory.py", NS, "lockstep", lockstep=True, **NODE
    )
    assert out["done_without_steps"] is False  # no step, no time: the goal waits
    assert out["steps"] == [f"t={k * period_ns}" for k in range(1, 13)]
    goal = out["goal"]
    assert goal["status"] == SUCCEEDED and goal["code"] == SUCCESSFUL
    # 0.1 s = 10 periods from t = 0: one feedback each, the last at the trajectory's end
    assert [f["stamp"] for f in goal["feedback"]] == [k * period_ns for k in range(1, 11)]
    assert np.allclose([f["desired"][0] for f in goal["feedback"]], np.arange(1, 11) * 0.02)


def test_sigint_during_a_goal_aborts_it_and_exits_cleanly(tmp_path):
    """SIGINT (from the peer) while a 60 s goal runs: the goal is aborted with the reason,
    its result goes out, and the node exits 0."""
    out = run_peer_beside_node(
        tmp_path, "follow_trajectory.py", NS, "shutdown", peer_stops=True, **NODE
    )
    goal = out["goal"]
    assert goal["accepted"] and goal["status"] == ABORTED, goal
    assert goal["code"] == INVALID_GOAL and goal["message"] == "the node is shutting down"
    assert len(goal["feedback"]) >= 3
