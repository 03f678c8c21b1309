"""asr's ROS 2 node (asr.ros.ros2_node, lockstep) under stress, with real rclpy over Fast DDS:
a flood of large arrays leaves its memory bounded, and pause(true) stops a step already waited
for. The node runs in one subprocess, the peer (tests/support/ros2_peers/flood.py) in another; the
peer reads the node's resident memory from /proc/<pid>/status."""

import json
import re

import pytest

from asr.ros.ros2_node import COMMAND_DEPTH, STEP_DEPTH
from tests.support.ros2 import NodeProcess, run_peer
from tests.support.ros2_node import ROBOT, control_period

pytestmark = [pytest.mark.ros2, pytest.mark.slow]

RATE = 100.0
FLOOD_COUNT, FLOOD_MB = 60, 8  # the flood: 60 arrays of 8 MB (1M float64 each)
GROWTH_BOUND_MB = 100  # reference_1's flood may grow the node this much at most (it was +482)
# what the middleware may hold of one topic: its subscription's depth of messages, and a few
# more in flight (fragments being reassembled, the one being taken)
IN_FLIGHT = 6
SLOW_RATE = 1.0  # Hz: one period is 1000 MJCF steps, long enough for a pause to land in a burst


def node_process(tmp_path, rate, namespace=""):
    return NodeProcess(tmp_path, robot=ROBOT, rate=rate, lockstep=True, namespace=namespace)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with node_process(tmp_path_factory.mktemp("ros2"), RATE) as n:
        yield n
        assert n.stop() == 0, f"the node did not exit cleanly on SIGINT:\n{n.log()[-2000:]}"


def test_a_flood_of_large_arrays_leaves_the_memory_bounded(node):
    """60 arrays of 8 MB on reference_1, then on step: each is refused without being
    deserialised (longer than a valid one), the subscriptions keep few messages, so the node's
    resident memory grows less than 100 MB on reference_1 (COMMAND_DEPTH messages) and less
    than (STEP_DEPTH + IN_FLIGHT) x 8 MB on step; a valid reference and a step work after."""
    topics = ["reference_1", "step"]
    params = {"pid": node.proc.pid, "topics": topics, "count": FLOOD_COUNT, "mbytes": FLOOD_MB}
    out = run_peer("flood.py", "flood", json.dumps(params), timeout=600)
    assert (COMMAND_DEPTH + IN_FLIGHT) * FLOOD_MB < GROWTH_BOUND_MB
    bounds = {"reference_1": GROWTH_BOUND_MB, "step": (STEP_DEPTH + IN_FLIGHT) * FLOOD_MB}
    for topic, (before, after) in out["rss_kb"].items():
        growth = (after - before) / 1024
        print(f"\nROS 2 node, {topic}: {before / 1024:.0f} MB, +{growth:.1f} MB after the flood")
        assert growth < bounds[topic], (
            f"the node grew {growth:.0f} MB (from {before / 1024:.0f} MB) under {FLOOD_COUNT} "
            f"x {FLOOD_MB} MB arrays on {topic}; bound {bounds[topic]} MB"
        )
    assert out["step"][0] and out["step"][1].startswith("t="), out["step"]
    assert out["held"] == [0.25, 0.2, -0.25, 0.2]
    log = node.log()
    for topic in topics:
        pattern = rf"rejected /{topic} = a message of (\d+) bytes"
        sizes = [int(m.group(1)) for m in re.finditer(pattern, log)]
        lines = [n for n in sizes if n >= FLOOD_MB * 2**20]
        assert lines, f"no rejection of the flood on {topic}:\n{log[-3000:]}"
    assert node.proc.poll() is None, "the node stopped"


def test_pause_stops_a_step_already_waited_for(tmp_path):
    """Step messages sent in a burst, then pause(true) while the node works through them: no
    step runs after the pause answered (its answer's time is the time that stays: the
    latched state and a second pause's answer agree), and every step sent still runs once
    resumed. Eight tries; before the fix 6 of 8 advanced while paused."""
    steps = STEP_DEPTH  # a burst the step subscription holds whole
    period_ns = control_period()[1] * int(round(RATE / SLOW_RATE))
    # its own namespace: the module's node may still run in this DDS domain
    with node_process(tmp_path, SLOW_RATE, "slow") as n:
        params = {"tries": 8, "steps": steps, "namespace": "slow"}
        out = run_peer("flood.py", "pause", json.dumps(params), timeout=600)
        assert n.stop() == 0, n.log()[-2000:]
    advanced = []
    for k, t in enumerate(out["tries"]):
        paused_at = int(re.fullmatch(r"paused at t=(\d+)", t["reply"]).group(1))
        if t["latest"] != paused_at or t["again"] != t["reply"]:
            advanced.append(k)
        assert t["resumed"] == t["again"].replace("paused", "running"), f"try {k}: {t}"
        assert paused_at % period_ns == 0
        assert t["total"] == steps, f"try {k}: steps lost or added by the pause: {t}"
    assert not advanced, (
        f"time advanced while paused in {len(advanced)} of {len(out['tries'])} tries: "
        f"{[out['tries'][k] for k in advanced]}"
    )


def test_sigint_while_step_calls_wait_answers_them_and_exits_cleanly(tmp_path):
    """A burst of step messages and step_period calls, then SIGINT while the node works
    through them: it exits with status 0 (it once died of SIGSEGV here: the node was destroyed
    while the executor's thread still waited on it), and each call it answered got either its
    period ("t=...") or CLOSING, never a wrong "paused"."""
    from asr.ros.ros2_node import CLOSING

    with node_process(tmp_path, SLOW_RATE, "closing") as n:
        params = {"steps": STEP_DEPTH, "calls": 3, "pid": n.proc.pid, "namespace": "closing"}
        out = run_peer("flood.py", "shutdown", json.dumps(params), timeout=600)
        code = n.proc.wait(timeout=60)
        assert code == 0, f"exit status {code} after SIGINT:\n{n.log()[-3000:]}"
    print(f"\nanswers to the step_period calls: {out['answers']}, states seen {out['seen']}")
    assert out["seen"] >= 1
    # the call being served when the signal came is answered before the node is destroyed
    assert any(a is not None for a in out["answers"]), out
    for k, a in enumerate(out["answers"]):
        assert a is None or a == [False, CLOSING] or (a[0] and a[1].startswith("t=")), (k, a)
    assert "a callback still runs" not in n.log()
