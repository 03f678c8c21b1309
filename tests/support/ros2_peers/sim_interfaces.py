"""A simulation_interfaces client (.venv-ros2's Python with asr/ros/interfaces' install, without
asr): calls every service asr's node serves and its SimulateSteps action in one scripted run and
prints what each answered (JSON, stdout's last line). argv[1]: the node's namespace; argv[2]
"lockstep" for a --lockstep node's run (`lockstep`), or "shutdown" and the node's pid
(`shutdown`)."""

import os
import signal
import sys
import threading
import time
import uuid

from action_msgs.msg import GoalStatus
from peer_base import DEADLINE_S, Peer, ns_of, qos
from rclpy.action import ActionClient
from simulation_interfaces import action, srv
from simulation_interfaces.msg import SimulationState
from std_srvs.srv import SetBool
from unique_identifier_msgs.msg import UUID


def entity(state):
    p, q, v, w = (
        state.pose.position,
        state.pose.orientation,
        state.twist.linear,
        state.twist.angular,
    )
    return {
        "frame": state.header.frame_id,
        "stamp": ns_of(state.header.stamp),
        "pose": [p.x, p.y, p.z, q.x, q.y, q.z, q.w],
        "twist": [v.x, v.y, v.z, w.x, w.y, w.z],
    }


class Client(Peer):
    def result(self, response):
        return [response.result.result, response.result.error_message]

    def state(self):
        r = self.call(
            srv.GetSimulationState, "get_simulation_state", srv.GetSimulationState.Request()
        )
        return r.state.state

    def set_state(self, value):
        req = srv.SetSimulationState.Request()
        req.state.state = value
        return self.result(self.call(srv.SetSimulationState, "set_simulation_state", req))

    def step(self, steps):
        return self.result(
            self.call(
                srv.StepSimulation, "step_simulation", srv.StepSimulation.Request(steps=steps)
            )
        )

    def entity_state(self, name):
        r = self.call(
            srv.GetEntityState, "get_entity_state", srv.GetEntityState.Request(entity=name)
        )
        return self.result(r), entity(r.state)

    def entities(self, pattern="", tags=()):
        req = srv.GetEntities.Request()
        req.filters.filter = pattern
        req.filters.tags.tags = list(tags)
        r = self.call(srv.GetEntities, "get_entities", req)
        return self.result(r), list(r.entities)

    def simulate(self, steps, cancel_after=None, sigint=None):
        """Send a SimulateSteps goal; cancel it after `cancel_after` feedbacks, or then send
        SIGINT to process `sigint` (the node) instead. Returns
        {accepted, status, result, feedback: [[completed, remaining]]}."""
        # feedback from the action's feedback topic itself: rclpy's ActionClient forgets a
        # goal's feedback callback once its result arrives, and DDS does not order the feedback
        # topic against the result service, so a last feedback that came after the result was
        # lost for good (a loaded run's 5-step goal ended its feedback at [4, 1])
        uid = UUID(uuid=list(uuid.uuid4().bytes))
        feedback, cond = [], threading.Condition()

        def on_feedback(msg):
            if bytes(msg.goal_id.uuid) == bytes(uid.uuid):
                with cond:
                    feedback.append([msg.feedback.completed_steps, msg.feedback.remaining_steps])
                    cond.notify_all()

        topic = "simulate_steps/_action/feedback"
        sub = self.node.create_subscription(
            action.SimulateSteps.Impl.FeedbackMessage, topic, on_feedback, qos()
        )
        client = ActionClient(self.node, action.SimulateSteps, "simulate_steps")
        if not client.wait_for_server(timeout_sec=DEADLINE_S):
            raise RuntimeError("peer: simulate_steps does not appear")
        self.wait_matched(sub, topic)
        goal = action.SimulateSteps.Goal(steps=steps)
        handle = self.wait_future(self.request(lambda: client.send_goal_async(goal, None, uid)))
        if not handle.accepted:
            return {"accepted": False}
        if cancel_after is not None:
            with cond:
                if not cond.wait_for(lambda: len(feedback) >= cancel_after, DEADLINE_S):
                    raise RuntimeError("peer: no feedback to cancel after")
            if sigint is None:
                self.wait_future(self.request(handle.cancel_goal_async))
            else:
                os.kill(sigint, signal.SIGINT)
        out = self.wait_future(self.request(handle.get_result_async))
        # feedback (a topic) and the result (a service) are not ordered by DDS: feedback sent
        # before the result may arrive after it (the last of 5 did, in a parallel CI run). A goal
        # that succeeded sent one per step: wait for them all, up to DEADLINE_S; otherwise
        # (cancelled, aborted: no count to wait for) a short settle
        with cond:
            if out.status == GoalStatus.STATUS_SUCCEEDED:
                cond.wait_for(lambda: len(feedback) >= steps, DEADLINE_S)
        if out.status != GoalStatus.STATUS_SUCCEEDED:
            time.sleep(0.2)
        with cond:
            fb = list(feedback)
        return {
            "accepted": True,
            "status": out.status,
            "result": [out.result.result.result, out.result.result.error_message],
            "feedback": fb,
        }


def lockstep(peer):
    """On a --lockstep node: PLAYING steps only on `step_period` calls; the standard's
    stepping works once paused."""
    from std_srvs.srv import Trigger

    S = SimulationState
    out = {"initial_state": peer.state()}
    out["initial_stamp"] = peer.entity_state("link2")[1]["stamp"]
    out["step_period"] = peer.call(Trigger, "step_period", Trigger.Request()).message
    out["step_playing"] = peer.step(1)
    out["pause"] = peer.set_state(S.STATE_PAUSED)
    out["step4"] = peer.step(4)
    out["stamp"] = peer.entity_state("link2")[1]["stamp"]
    out["stop"] = peer.set_state(S.STATE_STOPPED)
    out["stopped_state"] = peer.state()
    out["play_from_stopped"] = peer.set_state(S.STATE_PLAYING)
    out["played_stamp"] = peer.entity_state("link2")[1]["stamp"]
    peer.finish(out)


def shutdown(peer, pid):
    """SIGINT to the node (`pid`) while a long SimulateSteps goal runs: the goal's result."""
    out = {"pause": peer.set_state(SimulationState.STATE_PAUSED)}
    out["goal"] = peer.simulate(1_000_000, cancel_after=3, sigint=pid)
    peer.finish(out)


def main():
    S = SimulationState
    peer = Client(namespace=sys.argv[1])
    if sys.argv[2:] == ["lockstep"]:
        lockstep(peer)
    if sys.argv[2:3] == ["shutdown"]:
        shutdown(peer, int(sys.argv[3]))
    out = {}
    r = peer.call(
        srv.GetSimulatorFeatures, "get_simulator_features", srv.GetSimulatorFeatures.Request()
    )
    out["features"] = list(r.features.features)
    out["spawn_formats"] = list(r.features.spawn_formats)
    out["custom_info"] = r.features.custom_info
    out["initial_state"] = peer.state()
    out["pause"] = peer.set_state(S.STATE_PAUSED)
    out["paused_state"] = peer.state()
    out["pause_again"] = peer.set_state(S.STATE_PAUSED)
    out["stop"] = peer.set_state(S.STATE_STOPPED)
    out["stopped_state"] = peer.state()
    out["stopped_entity"] = peer.entity_state("link1")[1]
    out["step3"] = peer.step(3)
    out["after_step_state"] = peer.state()
    out["after_step_stamp"] = peer.entity_state("link1")[1]["stamp"]
    out["simulate5"] = peer.simulate(5)
    out["entities"] = peer.entities()
    out["entities_2"] = peer.entities("2$")
    out["entities_tags"] = peer.entities(tags=["arm"])
    out["entities_bad_regex"] = peer.entities("(")
    out["entity_states"] = {name: peer.entity_state(name) for name in out["entities"][1]}
    r = peer.call(srv.GetEntitiesStates, "get_entities_states", srv.GetEntitiesStates.Request())
    out["entities_states"] = [
        peer.result(r),
        list(r.entities),
        [entity(s) for s in r.states],
    ]
    out["unknown_entity"] = peer.entity_state("elbow")[0]
    out["step0"] = peer.step(0)
    out["cancelled"] = peer.simulate(1_000_000, cancel_after=3)
    out["reset_time_only"] = peer.result(
        peer.call(srv.ResetSimulation, "reset_simulation", srv.ResetSimulation.Request(scope=1))
    )
    out["reset"] = peer.result(
        peer.call(srv.ResetSimulation, "reset_simulation", srv.ResetSimulation.Request())
    )
    out["after_reset_stamp"] = peer.entity_state("link1")[1]["stamp"]
    out["play"] = peer.set_state(S.STATE_PLAYING)
    out["playing_state"] = peer.state()
    out["step_playing"] = peer.step(1)
    out["simulate_playing"] = peer.simulate(2)
    # asr's own `pause` is an alias: the standard's state follows it
    peer.call(SetBool, "pause", SetBool.Request(data=True))
    out["alias_paused_state"] = peer.state()
    out["no_world"] = peer.set_state(S.STATE_NO_WORLD)
    out["quit"] = peer.set_state(S.STATE_QUITTING)
    peer.finish(out)


if __name__ == "__main__":
    main()
