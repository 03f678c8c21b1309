"""asr.ros.ros2_follow_trajectory's rules without ROS: tolerances from JointTolerance entries,
violations, the goal's outcome (JTC's rules) and the desired velocity."""

import numpy as np
import pytest

from asr.ros import ros2_follow_trajectory as F
from asr.ros import ros2_trajectory as T

INF = np.inf


def test_tolerances_by_name_with_the_special_values():
    names = ("joint2", "joint1")
    pos, vel = F.tolerances(names, [("joint1", 0.1, -1.0), ("joint2", 0.0, 0.5)], "path")
    assert pos.tolist() == [INF, 0.1]  # joint2's 0: the default, none; joint1 by name
    assert vel.tolist() == [0.5, INF]  # joint1's -1: erased
    assert [a.tolist() for a in F.tolerances(names, [], "goal")] == [[INF, INF], [INF, INF]]
    with pytest.raises(F.GoalError, match="path: joint 'elbow' is not in the goal") as err:
        F.tolerances(names, [("elbow", 0.1, 0.0)], "path")
    assert err.value.code == F.INVALID_JOINTS
    with pytest.raises(F.GoalError, match=r"goal\[joint1\].position: got -0.5") as err:
        F.tolerances(names, [("joint1", -0.5, 0.0)], "goal")
    assert err.value.code == F.INVALID_GOAL
    with pytest.raises(F.GoalError, match=r"velocity: got nan"):
        F.tolerances(names, [("joint1", 0.1, float("nan"))], "goal")


def test_violation_names_the_joint_and_quantity():
    names = ("a", "b")
    tol_q, tol_qd = np.array([0.1, INF]), np.array([INF, 0.2])
    assert F.violation(names, np.array([0.1, 5.0]), np.array([9.0, -0.2]), tol_q, tol_qd) is None
    why = F.violation(names, np.array([-0.11, 0.0]), np.zeros(2), tol_q, tol_qd)
    assert why == "a position error -0.11 rad exceeds the tolerance 0.1 rad"
    why = F.violation(names, np.zeros(2), np.array([0.0, 0.3]), tol_q, tol_qd)
    assert why == "b velocity error 0.3 rad/s exceeds the tolerance 0.2 rad/s"
    assert F.violation(names, np.array([np.nan, 0]), np.zeros(2), tol_q, tol_qd) is not None


def test_outcome_follows_jtc():
    end = 1000
    assert F.outcome(999, end, 0, None, "far") is None  # running: goal tolerance not yet
    path = F.outcome(999, end, 0, "a off", None)
    assert path == ("aborted", F.PATH_TOLERANCE_VIOLATED, "path tolerance violated: a off")
    assert F.outcome(end, end, 0, "a off", None) == ("succeeded", F.SUCCESSFUL, "")
    assert F.outcome(end + 10**12, end, 0, None, "far") is None  # goal_time 0: no limit
    assert F.outcome(end + 500, end, 500, None, "far") is None  # within goal_time_tolerance
    late = F.outcome(end + 501, end, 500, None, "far")
    assert late is not None and late[:2] == ("aborted", F.GOAL_TOLERANCE_VIOLATED)
    assert "far" in late[2] and "goal_time_tolerance 5e-07 s" in late[2]


def test_desired_velocity_is_the_trajectorys_slope():
    t = T.build((0, 1), [([1.0, -2.0], [], 10**9)], 5 * 10**9, np.zeros(2), np.zeros(2))
    assert np.allclose(F.desired_velocity(t, int(5.5e9)), [1.0, -2.0], rtol=0, atol=1e-6)
    assert F.desired_velocity(t, 4 * 10**9).tolist() == [0.0, 0.0]  # before the start
    assert F.desired_velocity(t, 6 * 10**9).tolist() == [0.0, 0.0]  # holding the end
    h = T.build((0,), [([1.0], [0.0], 10**9)], 0, np.zeros(1), np.zeros(1))  # smoothstep
    assert F.desired_velocity(h, int(0.5e9))[0] == pytest.approx(1.5, abs=1e-6)
