"""A ROS 2 controller peer for asr's node (tests/ros/test_ros2_node*.py), run with .venv-ros2's
Python and no asr: `python controller.py SCENARIO 'JSON params'`; prints a JSON result as its
last stdout line. Scenarios:

- lockstep: reset, then one `step` message per row of params["refs"] ((N, J, 2) references),
  each after the previous period's state arrived; returns the states and their stamps.
- record: reset, publish params["commands"] ([topic, value] Float64) after params["after"]
  periods, record params["seconds"] of wall time; returns states, held references, /clock
  stamps and this peer's use_sim_time clock at the end.
- bad: (lockstep node) sends malformed commands, one per topic, each awaited on /rosout; then a
  valid one; returns the held references seen after each.
- services: (lockstep node) reset, step_period, pause, a joint_trajectory.
- latency: (real-time node) params["samples"] equilibrium changes on params["topic"], each after
  a random wait of up to params.get("phase_s", 0) s (so that commands fall at random points of
  the period); returns the median, p95, maximum and number of command-to-held-reference delays (s).
"""

import json
import random
import statistics
import sys
import time

from peer_base import Peer
from std_msgs.msg import Float64, Float64MultiArray
from std_srvs.srv import SetBool, Trigger


def lockstep(peer, p):
    step = peer.publisher(Float64MultiArray, "step")
    start = peer.reset()
    for k, refs in enumerate(p["refs"]):
        step.publish(Float64MultiArray(data=[float(x) for row in refs for x in row]))
        peer.wait(
            lambda k=k: len(peer.states) - peer.last_reset_index(start) > k + 1,
            f"the state of step {k + 1}",
        )
    got = peer.states[peer.last_reset_index(start) :]
    peer.wait(lambda: peer.latest[0] == got[-1][0], "joint_states_latest of the last step")
    return {
        "stamps": [s[0] for s in got],
        "q": [s[1] for s in got],
        "qd": [s[2] for s in got],
        "latest": peer.latest[0],
    }


def record(peer, p):
    pubs = {t: peer.publisher(Float64, t) for t, _ in p["commands"]}
    start = peer.reset()
    peer.wait(
        lambda: len(peer.states) - peer.last_reset_index(start) > p["after"],
        "periods before the command",
    )
    for topic, value in p["commands"]:
        pubs[topic].publish(Float64(data=float(value)))
    time.sleep(p["seconds"])  # the recording's length in wall time (not asserted on)
    # pause so that the last period's messages all arrive: states and held references then
    # end with the same period (held_references has no stamp to match them by)
    assert peer.call(SetBool, "pause", SetBool.Request(data=True)).success
    time.sleep(1.0)
    start = peer.last_reset_index(start)  # a late pre-reset stamp 0 moved it on
    with peer.cond:
        states, held, clock = peer.states[start:], list(peer.held), list(peer.clock)
        now = peer.node.get_clock().now().nanoseconds
    assert peer.call(SetBool, "pause", SetBool.Request(data=False)).success
    zero = len(clock) - 1 - clock[::-1].index(0)  # the reset's /clock
    return {
        "stamps": [s[0] for s in states],
        "q": [s[1] for s in states],
        "qd": [s[2] for s in states],
        "arrival": [s[3] for s in states],
        "held": [h[0] for h in held[len(held) - len(states) :]],
        "clock": clock[zero:],
        "sim_now": now,
    }


def bad(peer, p):
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    peer.reset()
    msgs = [
        ("joint1/equilibrium_position", Float64, Float64(data=float("nan"))),
        ("joint2/equilibrium_position", Float64, Float64(data=1e300)),
        ("joint1/stiffness_preset", Float64, Float64(data=100.0)),
        ("reference_1", Float64MultiArray, Float64MultiArray(data=[0.1, 0.2, 0.3])),
        ("step", Float64MultiArray, Float64MultiArray(data=[0.0] * 3)),
        ("reset_state", JointState, JointState(position=[0.1])),
        (
            "joint_trajectory",
            JointTrajectory,
            JointTrajectory(joint_names=["elbow"], points=[JointTrajectoryPoint(positions=[0.1])]),
        ),
    ]
    out = {"held": [], "logs": []}
    for topic, cls, msg in msgs:
        pub = peer.publisher(cls, topic)
        n = len(peer.logs)
        pub.publish(msg)
        peer.wait(lambda n=n: any("rejected" in s for s in peer.logs[n:]), f"the log of {topic}")
        out["logs"].append([s for s in peer.logs[n:] if "rejected" in s][0])
        out["held"].append(_step_held(peer))
    peer.publisher(Float64, "joint1/equilibrium_position").publish(Float64(data=0.3))
    end = time.monotonic() + 30
    while _step_held(peer)[0] != 0.3 and time.monotonic() < end:
        pass
    out["valid"] = _step_held(peer)
    out["stamp"] = peer.states[-1][0]
    return out


def _step_held(peer):
    """One step_period; the references held over it (from held_references)."""
    n = len(peer.held)
    assert peer.call(Trigger, "step_period", Trigger.Request()).success
    peer.wait(lambda: len(peer.held) > n, "held_references after step_period")
    return peer.held[-1][0]


def services(peer, p):
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    start = peer.reset()
    out = {"steps": [peer.call(Trigger, "step_period", Trigger.Request()).message for _ in "abc"]}
    out["paused"] = peer.call(SetBool, "pause", SetBool.Request(data=True)).message
    r = peer.call(Trigger, "step_period", Trigger.Request())
    out["step_while_paused"] = [r.success, r.message]
    out["resumed"] = peer.call(SetBool, "pause", SetBool.Request(data=False)).message
    out["after_resume"] = peer.call(Trigger, "step_period", Trigger.Request()).message
    out["reset"] = peer.call(Trigger, "reset", Trigger.Request()).message
    sec, target = p["traj_seconds"], p["target"]
    point = JointTrajectoryPoint(
        positions=[target], time_from_start=Duration(sec=int(sec), nanosec=int(sec % 1 * 1e9))
    )
    pub = peer.publisher(JointTrajectory, "joint_trajectory")
    n_held = len(peer.held)
    pub.publish(JointTrajectory(joint_names=[p["joint"]], points=[point]))
    time.sleep(0.5)  # the trajectory's subscription callback runs before the steps below
    first = len(peer.states)
    for _ in range(p["steps"]):
        peer.call(Trigger, "step_period", Trigger.Request())
    peer.wait(lambda: len(peer.states) - first >= p["steps"], "the trajectory's states")
    out["traj_held"] = [h[0] for h in peer.held[n_held:]][-p["steps"] :]
    out["traj_q"] = [s[1] for s in peer.states[first:]]
    out["traj_stamps"] = [s[0] for s in peer.states[first:]]
    out["reset_stamps"] = [s[0] for s in peer.states[start : start + 4]]
    return out


def latency(peer, p):
    pub = peer.publisher(Float64, p["topic"])
    peer.wait(lambda: len(peer.held) > 0, "held_references")
    delays, phase = [], random.Random(1)
    for k in range(p["samples"]):
        value = 0.1 if k % 2 else -0.1
        time.sleep(phase.uniform(0.0, p.get("phase_s", 0.0)))
        n = len(peer.held)
        t0 = time.monotonic()
        pub.publish(Float64(data=value))
        peer.wait(lambda n=n, v=value: any(h[0][0] == v for h in peer.held[n:]), "the command")
        with peer.cond:
            t1 = next(h[1] for h in peer.held[n:] if h[0][0] == value)
        delays.append(t1 - t0)
    return {
        "median": statistics.median(delays),
        "p95": sorted(delays)[int(0.95 * len(delays)) - 1],
        "max": max(delays),
        "n": len(delays),
    }


if __name__ == "__main__":
    scenario, params = sys.argv[1], json.loads(sys.argv[2])
    peer = Peer(params.get("namespace", ""), use_sim_time=scenario == "record")
    peer.finish(globals()[scenario](peer, params))
