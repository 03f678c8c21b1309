"""A control_msgs FollowJointTrajectory client (.venv-ros2's Python with asr/ros/interfaces'
install, without asr): sends asr's node the goals of tests/ros/test_ros2_follow_trajectory.py
and prints what each got (JSON, stdout's last line). argv[1]: the node's namespace; argv[2]
"shutdown" and the node's pid: one long goal, then SIGINT to the node; "lockstep": a goal
on a --lockstep node."""

import os
import signal
import sys
import threading
import time
import uuid

from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTolerance
from peer_base import DEADLINE_S, Peer, ns_of, qos
from rclpy.action import ActionClient
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from unique_identifier_msgs.msg import UUID


def duration(seconds):
    ns = int(round(seconds * 1e9))
    return Duration(sec=ns // 10**9, nanosec=ns % 10**9)


def goal(names, positions, seconds, path=(), final=(), goal_time=0.0):
    """A goal of one point (`positions` for `names`, reached after `seconds`); path / final:
    [(name, position, velocity)] tolerances."""
    g = FollowJointTrajectory.Goal()
    g.trajectory.joint_names = list(names)
    g.trajectory.points = [
        JointTrajectoryPoint(positions=list(positions), time_from_start=duration(seconds))
    ]
    g.path_tolerance = [JointTolerance(name=n, position=p, velocity=v) for n, p, v in path]
    g.goal_tolerance = [JointTolerance(name=n, position=p, velocity=v) for n, p, v in final]
    g.goal_time_tolerance = duration(goal_time)
    return g


class Client(Peer):
    def __init__(self, namespace):
        super().__init__(namespace=namespace)
        self._last = {}  # id(goal handle): the positions of the goal's last point
        self._goals = {}  # goal UUID bytes: (feedback list, condition)
        self._goals_lock = threading.Lock()
        # feedback from the action's feedback topic itself, by goal id: rclpy's ActionClient
        # forgets a goal's feedback callback once its result arrives, and DDS does not order
        # the feedback topic against the result service, so a last feedback that came after
        # the result would be lost for good (as a SimulateSteps goal's was, in a loaded run)
        topic = "follow_joint_trajectory/_action/feedback"
        sub = self.node.create_subscription(
            FollowJointTrajectory.Impl.FeedbackMessage, topic, self._on_feedback, qos()
        )
        self.client = ActionClient(self.node, FollowJointTrajectory, "follow_joint_trajectory")
        if not self.client.wait_for_server(timeout_sec=DEADLINE_S):
            raise RuntimeError("peer: follow_joint_trajectory does not appear")
        self.wait_matched(sub, topic)

    def _on_feedback(self, msg):
        with self._goals_lock:
            goal_feedback = self._goals.get(bytes(msg.goal_id.uuid))
        if goal_feedback is None:
            return
        feedback, cond = goal_feedback
        f = msg.feedback
        with cond:
            feedback.append(
                {
                    "stamp": ns_of(f.header.stamp),
                    "names": list(f.joint_names),
                    "desired": list(f.desired.positions),
                    "actual": list(f.actual.positions),
                    "error": list(f.error.positions),
                    "desired_v": list(f.desired.velocities),
                    "actual_v": list(f.actual.velocities),
                    "error_v": list(f.error.velocities),
                }
            )
            cond.notify_all()

    def send(self, g):
        """(handle, feedback list, condition): the goal sent, its feedback recorded."""
        feedback, cond = [], threading.Condition()
        uid = UUID(uuid=list(uuid.uuid4().bytes))
        with self._goals_lock:
            self._goals[bytes(uid.uuid)] = (feedback, cond)
        handle = self.wait_future(self.request(lambda: self.client.send_goal_async(g, None, uid)))
        self._last[id(handle)] = list(g.trajectory.points[-1].positions)
        return handle, feedback, cond

    def after(self, sent, k):
        """Wait for k feedbacks of a sent goal."""
        _, feedback, cond = sent
        with cond:
            if not cond.wait_for(lambda: len(feedback) >= k, DEADLINE_S):
                raise RuntimeError("peer: no feedback")

    def result(self, sent):
        handle, feedback, cond = sent
        if not handle.accepted:
            return {"accepted": False}
        out = self.wait_future(self.request(handle.get_result_async))
        if out.status == GoalStatus.STATUS_SUCCEEDED:
            # the period that ends a goal sends its feedback too (desired: the last point), but
            # feedback (a topic) and the result (a service) are not ordered by DDS: a busy host
            # delivered it after the result and after 0.2 s of quiet once. Wait for it first
            last = self._last[id(handle)]

            def at_last(f):
                return all(abs(a - b) <= 1e-12 for a, b in zip(f["desired"], last))

            with cond:
                cond.wait_for(lambda: any(at_last(f) for f in feedback), DEADLINE_S)
        return dict(
            accepted=True,
            status=out.status,
            code=out.result.error_code,
            message=out.result.error_string,
            feedback=self.quiet(feedback, cond),
        )

    @staticmethod
    def quiet(feedback, cond):
        """The feedback once none came for 0.2 s (DEADLINE_S at most): feedback (a topic) and
        the result (a service) are not ordered by DDS."""
        end, seen = time.monotonic() + DEADLINE_S, -1
        while time.monotonic() < end:
            with cond:
                if len(feedback) == seen:
                    return list(feedback)
                seen = len(feedback)
            time.sleep(0.2)
        with cond:
            return list(feedback)


def shutdown(peer, pid):
    sent = peer.send(goal(["joint1"], [0.3], 60.0))
    peer.after(sent, 3)
    os.kill(pid, signal.SIGINT)
    peer.finish({"goal": peer.result(sent)})


def lockstep(peer):
    """On a --lockstep node: a goal of 10 periods runs only as step_period calls come."""
    from std_srvs.srv import Trigger

    sent = peer.send(goal(["joint1"], [0.2], 0.1))
    future = peer.request(sent[0].get_result_async)
    time.sleep(0.5)
    out = {"done_without_steps": future.done()}
    out["steps"] = [peer.call(Trigger, "step_period", Trigger.Request()).message for _ in range(12)]
    out["goal"] = peer.result(sent)
    peer.finish(out)


def main():
    peer = Client(sys.argv[1])
    if sys.argv[2:3] == ["shutdown"]:
        shutdown(peer, int(sys.argv[3]))
    if sys.argv[2:] == ["lockstep"]:
        lockstep(peer)
    out = {}
    # joints in reverse order; goal tolerances met within goal_time_tolerance (the soft arm
    # sags under gravity: its links settle 0.69 and 0.28 rad below these equilibria)
    tol = [("joint1", 0.8, -1.0), ("joint2", 0.4, -1.0)]
    sent = peer.send(goal(["joint2", "joint1"], [-0.1, 0.25], 0.3, final=tol, goal_time=5.0))
    out["succeeded"] = peer.result(sent)
    time.sleep(1.0)  # settled
    stamps = {f["stamp"] for f in out["succeeded"]["feedback"]}
    with peer.cond:
        out["succeeded_state"] = peer.states[-1][1]
        # joint_states of the feedbacks' periods, [(stamp ns, positions (joint1, joint2))]
        out["states_at_feedback"] = [s[:2] for s in peer.states if s[0] in stamps]
    # a path tolerance no soft joint can keep
    sent = peer.send(goal(["joint1"], [0.0], 1.0, path=[("joint1", 1e-9, 0.0)]))
    out["path"] = peer.result(sent)
    # preempted by a second goal (the first, of 10 s, would succeed at its end: no tolerances)
    first = peer.send(goal(["joint1"], [0.3], 10.0))
    peer.after(first, 2)
    second = peer.send(goal(["joint1", "joint2"], [0.1, 0.0], 0.2))
    out["preempted"], out["preempting"] = peer.result(first), peer.result(second)
    # preempted by a joint_trajectory message
    sent = peer.send(goal(["joint1"], [0.3], 10.0))
    peer.after(sent, 2)
    msg = JointTrajectory(joint_names=["joint1"])
    msg.points = [JointTrajectoryPoint(positions=[0.0], time_from_start=duration(0.1))]
    peer.publisher(JointTrajectory, "joint_trajectory").publish(msg)
    out["topic_preempted"] = peer.result(sent)
    # cancelled
    sent = peer.send(goal(["joint2"], [0.3], 10.0))
    peer.after(sent, 2)
    cancel = peer.wait_future(peer.request(sent[0].cancel_goal_async))
    out["cancel_response"] = len(cancel.goals_canceling)
    out["cancelled"] = peer.result(sent)
    # invalid: an unknown joint, a tolerance for a joint not in the goal
    out["unknown"] = peer.result(peer.send(goal(["elbow"], [0.0], 1.0)))
    out["bad_tolerance"] = peer.result(
        peer.send(goal(["joint1"], [0.0], 1.0, path=[("joint2", 0.1, 0.0)]))
    )
    time.sleep(0.5)  # the log lines
    with peer.cond:
        out["logs"] = [m for m in peer.logs if "follow_joint_trajectory" in m]
    peer.finish(out)


if __name__ == "__main__":
    main()
