"""ROS 2 peers for asr's lockstep node that stress it (tests/ros/test_ros2_node_bounds.py), run
with .venv-ros2's Python and no asr: `python flood.py SCENARIO 'JSON params'`; prints a JSON
result as its last stdout line. Scenarios:

- flood: after a warm-up step, params["count"] arrays of params["mbytes"] MB on each topic of
  params["topics"] in turn (Float64MultiArray), waiting until the node acknowledged them all;
  then a valid reference_1 and step_period until it is held; returns the node's resident
  memory (VmRSS of params["pid"], from /proc, kB) before and after each topic's flood, the
  last step's answer and the references held over it.
- pause: params["tries"] times: params["steps"] step messages, then pause(true) once the first
  of them ran; the pause's answer, the stamp of joint_states_latest after a settling time and
  a second pause's answer; then pause(false) and the number of states once every step ran.
- shutdown: params["steps"] step messages and params["calls"] step_period calls, then SIGINT
  to the node (params["pid"]) once the first step ran and a call was answered (CALLS_TAKEN_S at
  most); each call's answer ([success, message], or None when none came within DEADLINE_S)
  and the states seen before the signal.
"""

import array
import json
import os
import signal
import sys
import threading
import time

from peer_base import DEADLINE_S, SETTLE_S, Peer
from proc_memory import rss_kb, running
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger


def _step_held(peer):
    n = len(peer.held)
    reply = peer.call(Trigger, "step_period", Trigger.Request())
    peer.wait(lambda: len(peer.held) > n, "held_references after step_period")
    return reply, peer.held[-1][0]


def flood(peer, p):
    pid = p["pid"]
    pubs = {t: peer.publisher(Float64MultiArray, t) for t in p["topics"]}
    refs = peer.publisher(Float64MultiArray, "reference_1")
    peer.reset()
    _step_held(peer)
    big = Float64MultiArray()
    big.data = array.array("d", bytes(p["mbytes"] * 2**20))
    rss = {}
    for topic, pub in pubs.items():
        before = rss_kb(pid)
        for _ in range(p["count"]):
            pub.publish(big)
        if not pub.wait_for_all_acked(timeout=rclpy_duration(DEADLINE_S * 4)):
            raise RuntimeError(f"peer: the node did not acknowledge the flood on {topic}")
        rss[topic] = [before, rss_kb(pid)]
    refs.publish(Float64MultiArray(data=[0.25, -0.25]))
    end = time.monotonic() + DEADLINE_S
    reply, held = _step_held(peer)
    while held[0] != 0.25:
        if time.monotonic() > end:
            raise RuntimeError("peer: the valid reference_1 after the flood was never held")
        reply, held = _step_held(peer)
    return {"rss_kb": rss, "step": [reply.success, reply.message], "held": held}


def rclpy_duration(seconds):
    from rclpy.duration import Duration

    return Duration(seconds=seconds)


def pause(peer, p):
    step = peer.publisher(Float64MultiArray, "step")
    peer.reset()
    tries = []
    for _ in range(p["tries"]):
        with peer.cond:
            first = len(peer.states)
        for _ in range(p["steps"]):
            step.publish(Float64MultiArray())
        # wait until the node is stepping them, then pause in the middle of the burst
        peer.wait(lambda first=first: len(peer.states) > first, "the first step's state")
        reply = peer.call(SetBool, "pause", SetBool.Request(data=True)).message
        time.sleep(SETTLE_S)  # a step that still ran would publish within this window
        with peer.cond:
            latest = peer.latest[0]
            seen = len(peer.states) - first
        again = peer.call(SetBool, "pause", SetBool.Request(data=True)).message
        resumed = peer.call(SetBool, "pause", SetBool.Request(data=False)).message
        tries.append({"reply": reply, "latest": latest, "seen": seen, "again": again})
        tries[-1]["resumed"] = resumed
        # every step sent runs once resumed: the count is the same as without the pause
        peer.wait(lambda first=first: len(peer.states) - first >= p["steps"], "the remaining steps")
        time.sleep(SETTLE_S)
        with peer.cond:
            tries[-1]["total"] = len(peer.states) - first
    return {"tries": tries}


CALLS_TAKEN_S = 1.0  # s: shutdown's step_period calls reach a loaded node within this


def shutdown(peer, p):
    step = peer.publisher(Float64MultiArray, "step")
    peer.reset()
    client = peer.node.create_client(Trigger, "step_period")
    if not client.wait_for_service(timeout_sec=DEADLINE_S):
        raise RuntimeError("peer: step_period does not appear")
    with peer.cond:
        first = len(peer.states)
    for _ in range(p["steps"]):
        step.publish(Float64MultiArray())
    calls = [client.call_async(Trigger.Request()) for _ in range(p["calls"])]
    answered = threading.Semaphore(0)
    for c in calls:
        c.add_done_callback(lambda _f: answered.release())
    peer.wait(lambda: len(peer.states) > first, "the first step's state")
    with peer.cond:
        seen = len(peer.states) - first
    # the calls reach the node as requests of their own, which DDS may deliver after the first
    # step's state (a loaded run signalled a node that had taken none of them yet, and none was
    # answered): the signal waits for the first answer, CALLS_TAKEN_S at most
    if answered.acquire(timeout=CALLS_TAKEN_S):
        answered.release()
    os.kill(p["pid"], signal.SIGINT)
    # every answer, or the node gone (what it did not answer by then it never will) and a
    # settle for answers still in flight; DEADLINE_S at most
    end, left = time.monotonic() + DEADLINE_S, len(calls)
    while left and time.monotonic() < end and running(p["pid"]):
        left -= answered.acquire(timeout=0.05)
    time.sleep(SETTLE_S)
    answers = [[c.result().success, c.result().message] if c.done() else None for c in calls]
    return {"answers": answers, "seen": seen}


if __name__ == "__main__":
    scenario, params = sys.argv[1], json.loads(sys.argv[2])
    peer = Peer(params.get("namespace", ""))
    peer.finish(globals()[scenario](peer, params))
