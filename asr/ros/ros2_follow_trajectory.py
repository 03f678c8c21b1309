"""control_msgs/action/FollowJointTrajectory on asr's ROS 2 node (asr.ros.ros2_node.Ros2Node), as
ros2_controllers' joint_trajectory_controller (JTC, Jazzy) serves it, at
`<ns>/follow_joint_trajectory`; docs/ros.md has the rules. control_msgs is not on PyPI:
asr/ros/interfaces/build.py builds it; without it the node serves no action
(`FollowTrajectory.start` logs why once).

A goal is one more source of the node's trajectory (the `joint_trajectory` topic's machinery:
asr.ros.ros2_trajectory, interpolated onto each mode's references at every period's end).
Each period after the step (stepping lock held), `after_period` compares the goal's joints'
state (q rad, qd rad/s: joint_states) with the trajectory at the period's end and decides.
The pure rules (tolerances, the outcome) are the plain functions below, tested without ROS.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from asr.ros import ros2_trajectory as traj
from asr.ros._ros2_types import CLOSING

FloatArray = npt.NDArray[np.float64]

NAME = "follow_joint_trajectory"
FEEDBACK_HZ = 100.0  # feedback at most this often: every k-th period, k = ceil(rate / FEEDBACK_HZ)
VELOCITY_DT_NS = 1000  # the desired velocity: central difference of the trajectory over +-1 us
# JTC's result codes (control_msgs/action/FollowJointTrajectory Result)
SUCCESSFUL, INVALID_GOAL, INVALID_JOINTS = 0, -1, -2
PATH_TOLERANCE_VIOLATED, GOAL_TOLERANCE_VIOLATED = -4, -5
PREEMPTED = "Current goal cancelled due to new incoming action."  # JTC's words


class GoalError(ValueError):
    """A goal that cannot run: `code` (INVALID_GOAL or INVALID_JOINTS) and the message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def tolerances(
    joint_names: Sequence[str], entries: Sequence[tuple[str, float, float]], what: str
) -> tuple[FloatArray, FloatArray]:
    """(position (K,) rad, velocity (K,) rad/s) tolerances of the goal's joints from
    control_msgs/JointTolerance entries (name, position, velocity): > 0 a bound; 0 the
    default, -1 erased: both mean no check here (asr's default tolerances are none: inf).
    Acceleration is not checked. GoalError (INVALID_JOINTS) naming a joint not in the goal,
    (INVALID_GOAL) a negative value other than -1 or a non-finite one."""
    k = len(joint_names)
    pos, vel = np.full(k, np.inf), np.full(k, np.inf)
    index = {n: i for i, n in enumerate(joint_names)}
    for name, p, v in entries:
        if name not in index:
            raise GoalError(
                INVALID_JOINTS,
                f"{what}: joint {name[:64]!r} is not in the goal's joint_names "
                f"({', '.join(joint_names)})",
            )
        for arr, value, unit in ((pos, p, "position"), (vel, v, "velocity")):
            if not math.isfinite(value) or (value < 0 and value != -1.0):
                raise GoalError(
                    INVALID_GOAL,
                    f"{what}[{name}].{unit}: got {value!r}; valid: > 0, 0 (default: none) "
                    "or -1 (none)",
                )
            if value > 0:
                arr[index[name]] = value
    return pos, vel


def violation(
    names: Sequence[str],
    error_q: FloatArray,
    error_qd: FloatArray,
    tol_q: FloatArray,
    tol_qd: FloatArray,
) -> str | None:
    """None when every |error| (K,) is within its tolerance (K,) (rad, rad/s); else which
    joint and quantity is out, with the values."""
    for i, name in enumerate(names):
        for unit, e, tol, u in (
            ("position", error_q[i], tol_q[i], "rad"),
            ("velocity", error_qd[i], tol_qd[i], "rad/s"),
        ):
            if not abs(e) <= tol:
                return f"{name} {unit} error {e:.6g} {u} exceeds the tolerance {tol:.6g} {u}"
    return None


def outcome(
    t_ns: int, end_ns: int, goal_time_ns: int, path_why: str | None, goal_why: str | None
) -> tuple[str, int, str] | None:
    """The goal's end at simulated time t_ns (ns), or None while it runs: before end_ns a path
    violation (`path_why`) aborts it (PATH_TOLERANCE_VIOLATED); from end_ns on, the goal
    tolerances met (`goal_why` None) succeed, else after end_ns + goal_time_ns (0: no limit,
    as JTC's default) it aborts (GOAL_TOLERANCE_VIOLATED). Returns (status "succeeded" /
    "aborted", error_code, error_string)."""
    if t_ns < end_ns:
        if path_why is not None:
            return "aborted", PATH_TOLERANCE_VIOLATED, f"path tolerance violated: {path_why}"
        return None
    if goal_why is None:
        return "succeeded", SUCCESSFUL, ""
    late = t_ns - end_ns
    if goal_time_ns and late > goal_time_ns:
        return (
            "aborted",
            GOAL_TOLERANCE_VIOLATED,
            f"goal tolerance violated {late * 1e-9:.6g} s after the trajectory's end "
            f"(goal_time_tolerance {goal_time_ns * 1e-9:.6g} s): {goal_why}",
        )
    return None


def desired_velocity(t: traj.Trajectory, t_ns: int) -> FloatArray:
    """(K,) rad/s: the trajectory's time derivative at t_ns (central difference over
    +-VELOCITY_DT_NS; 0 before its start and after its end)."""
    if t_ns <= t.start_ns or t_ns >= t.end_ns:
        return np.zeros(len(t.joints))
    h = VELOCITY_DT_NS
    return (traj.sample(t, t_ns + h) - traj.sample(t, t_ns - h)) / (2 * h * 1e-9)


def load_action() -> Any:
    """control_msgs' FollowJointTrajectory action type, or (a str) why it does not import."""
    try:
        from control_msgs.action import FollowJointTrajectory
    except ImportError as exc:
        return (
            "asr ros2: control_msgs is not installed, so FollowJointTrajectory is off "
            f"(python asr/ros/interfaces/build.py builds it): {exc}"
        )
    return FollowJointTrajectory


@dataclass
class Goal:
    """One goal being followed: its handle, trajectory, joint names (K,), tolerances (K,),
    goal_time_tolerance ns, and `done` (an rclpy Future: (status, code, message))."""

    handle: Any
    trajectory: traj.Trajectory
    names: tuple[str, ...]
    path_tol: tuple[FloatArray, FloatArray]
    goal_tol: tuple[FloatArray, FloatArray]
    goal_time_ns: int
    done: Any
    periods: int = 0  # periods followed


class FollowTrajectory:
    """The FollowJointTrajectory action of one Ros2Node; `start()` creates it (False, logged,
    when control_msgs does not import). One goal at a time; the node's stepping lock guards
    `_goal` (after_period, preempt, cancel, close)."""

    def __init__(self, node: Any) -> None:
        self.node = node
        self.core = node.core
        self._goal: Goal | None = None
        self._busy = 0  # execute coroutines not yet returned (their results not sent)
        self._busy_lock = threading.Lock()
        self.every = max(1, math.ceil(1.0 / (self.core.period * FEEDBACK_HZ) - 1e-9))

    def start(self) -> bool:
        ros = self.node._node
        action = load_action()
        if isinstance(action, str):
            ros.get_logger().warning(action)
            return False
        from rclpy.action import ActionServer, CancelResponse, GoalResponse

        def on_goal(request: Any) -> Any:
            try:
                with self.node._lock:
                    self._check(request)
            except GoalError as exc:  # JTC rejects a goal it cannot run, logging why
                ros.get_logger().warning(f"asr ros2: {NAME}: goal rejected: {exc}")
                return GoalResponse.REJECT
            return GoalResponse.ACCEPT

        self._action = ActionServer(
            ros,
            action,
            NAME,
            execute_callback=self._execute,
            goal_callback=on_goal,
            cancel_callback=self._on_cancel,
        )
        self._cancel_accept = CancelResponse.ACCEPT
        return True

    # ------------------------------------------------------------ goals

    def _check(self, request: Any) -> tuple[traj.Trajectory, tuple[str, ...], dict[str, Any]]:
        """The goal's trajectory from now (stepping lock held), its joint names (K,) and
        tolerances {"path_tolerance", "goal_tolerance": (position (K,), velocity (K,))};
        GoalError."""
        node, names = self.node, self.core.names
        if len(request.multi_dof_trajectory.points) or len(
            request.multi_dof_trajectory.joint_names
        ):
            raise GoalError(INVALID_JOINTS, "multi_dof_trajectory: asr has no multi-DOF joints")
        msg = request.trajectory
        try:
            joints = traj.check_names(list(msg.joint_names), names)
        except ValueError as exc:
            raise GoalError(INVALID_JOINTS, str(exc)) from exc
        try:
            t = node.build_trajectory(msg)
            gt = request.goal_time_tolerance
            traj.duration_ns(gt.sec, gt.nanosec)
        except ValueError as exc:
            raise GoalError(INVALID_GOAL, str(exc)) from exc
        goal_names = tuple(names[j] for j in joints)
        tol = {
            what: tolerances(
                goal_names, [(e.name, e.position, e.velocity) for e in getattr(request, what)], what
            )
            for what in ("path_tolerance", "goal_tolerance")
        }
        return t, goal_names, tol

    async def _execute(self, handle: Any) -> Any:
        """Start following the goal (ending the one before), then wait for its end without
        holding the executor; the result goes out from here."""
        from control_msgs.action import FollowJointTrajectory
        from rclpy.task import Future

        result = FollowJointTrajectory.Result()
        with self._busy_lock:
            self._busy += 1
        try:
            request = handle.request
            done: Future = Future(executor=self.node._executor)
            done.add_done_callback(lambda _: None)  # set_result wakes the executor
            try:
                with self.node._lock:
                    if self.node.closing:
                        raise GoalError(INVALID_GOAL, CLOSING)
                    t, names, tol = self._check(request)
                    gt = request.goal_time_tolerance
                    goal = Goal(
                        handle,
                        t,
                        names,
                        tol["path_tolerance"],
                        tol["goal_tolerance"],
                        traj.duration_ns(gt.sec, gt.nanosec),
                        done,
                    )
                    self._end(("canceled", INVALID_GOAL, PREEMPTED))
                    self._goal = goal
                    self.node._trajectory, self.node._active = t, set(t.joints)
            except GoalError as exc:  # the state changed since the goal was accepted
                handle.abort()
                result.error_code, result.error_string = exc.code, str(exc)
                return result
            status, result.error_code, result.error_string = await done
            if status == "succeeded":
                handle.succeed()
            elif status == "canceled":
                if not handle.is_cancel_requested:  # preempted: canceled as JTC does
                    from rclpy.action.server import GoalEvent

                    handle._update_state(GoalEvent.CANCEL_GOAL)
                handle.canceled()
            else:
                handle.abort()
            return result
        finally:
            with self._busy_lock:
                self._busy -= 1

    def _end(self, end: tuple[str, int, str], hold: FloatArray | None = None) -> None:
        """End the running goal (stepping lock held) with (status, code, message); `hold`
        (J,) rad: the positions its joints then hold (JTC's hold position), else keep the
        references as they are."""
        goal, self._goal = self._goal, None
        if goal is None:
            return
        if hold is not None:
            node, refs = self.node, self.core.held()[0]
            for j in goal.trajectory.joints:
                refs[j] = node._refs_for(j, float(hold[j]), refs[j])
            if node._trajectory is goal.trajectory:
                node._trajectory, node._active = None, set()
            self.core.hold_references(refs, node.topic(NAME))
        goal.done.set_result(end)

    def _on_cancel(self, handle: Any) -> Any:
        """A cancel: the goal ends now (canceled, its joints hold their positions)."""
        with self.node._lock:
            goal = self._goal
            if goal is not None and goal.handle is handle:
                self._end(("canceled", SUCCESSFUL, ""), self.core.state()["q"])
        return self._cancel_accept

    def preempt(self, why: str, joints: Sequence[int] | range | None = None) -> None:
        """Another source took the goal's joints (`joints`; None: all): a `joint_trajectory`
        message, a direct reference command, `step` references, a reset. The goal is
        canceled as JTC cancels a preempted goal (stepping lock held)."""
        goal = self._goal
        if goal is not None and (joints is None or set(joints) & set(goal.trajectory.joints)):
            self._end(("canceled", INVALID_GOAL, f"preempted by {why}"))

    def after_period(self, s: dict[str, FloatArray]) -> None:
        """After a period (stepping lock held; `s` its state {field: (J,)}): feedback, then
        the tolerances and the goal's outcome."""
        goal = self._goal
        if goal is None:
            return
        if goal.handle.is_cancel_requested:  # a cancel that came before the goal started
            self._end(("canceled", SUCCESSFUL, ""), np.asarray(s["q"]))
            return
        t, now = goal.trajectory, self.core.stamp_ns
        idx = list(t.joints)
        desired_q, desired_qd = traj.sample(t, now), desired_velocity(t, now)
        actual_q, actual_qd = np.asarray(s["q"])[idx], np.asarray(s["qd"])[idx]
        err_q, err_qd = desired_q - actual_q, desired_qd - actual_qd
        goal.periods += 1
        path = violation(goal.names, err_q, err_qd, *goal.path_tol)
        final = violation(goal.names, err_q, err_qd, *goal.goal_tol)
        end = outcome(now, t.end_ns, goal.goal_time_ns, path, final)
        if end is not None or goal.periods % self.every == 0:
            self._feedback(goal, now, (desired_q, desired_qd), (actual_q, actual_qd))
        if end is not None:
            status, code, message = end
            self._end(end, None if status == "succeeded" else np.asarray(s["q"]))

    def _feedback(self, goal: Goal, now: int, desired: Any, actual: Any) -> None:
        from control_msgs.action import FollowJointTrajectory

        fb = FollowJointTrajectory.Feedback()
        fb.header.stamp.sec, fb.header.stamp.nanosec = traj.stamp(now)
        fb.joint_names = list(goal.names)
        for point, (q, qd) in ((fb.desired, desired), (fb.actual, actual)):
            point.positions, point.velocities = q.tolist(), qd.tolist()
        fb.error.positions = (desired[0] - actual[0]).tolist()
        fb.error.velocities = (desired[1] - actual[1]).tolist()
        for point in (fb.desired, fb.actual, fb.error):
            point.time_from_start.sec, point.time_from_start.nanosec = traj.stamp(
                max(now - goal.trajectory.start_ns, 0)
            )
        goal.handle.publish_feedback(fb)

    @property
    def busy(self) -> bool:
        """A goal runs or its result is not sent yet."""
        return bool(self._busy)

    def close(self, timeout: float) -> bool:
        """End the running goal (aborted: the node is shutting down) and wait (`timeout` s at
        most) for its result to go out from the executor, still spinning; False when a goal
        still runs."""
        with self.node._lock:
            self._end(("aborted", INVALID_GOAL, CLOSING))
        deadline = time.monotonic() + timeout
        while self._busy and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._busy


__all__ = [
    "FollowTrajectory",
    "GoalError",
    "tolerances",
    "violation",
    "outcome",
    "desired_velocity",
    "NAME",
    "FEEDBACK_HZ",
    "PREEMPTED",
    "SUCCESSFUL",
    "INVALID_GOAL",
    "INVALID_JOINTS",
    "PATH_TOLERANCE_VIOLATED",
    "GOAL_TOLERANCE_VIOLATED",
]
