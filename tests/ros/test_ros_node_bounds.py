"""asr's ROS 1 node (asr.ros.node, `asr ros`) under stress, against a real roscore: 60 arrays
of 8 MB on reference_1 are rejected by their length without being deserialised, the node's
resident memory (/proc/<pid>/status) stays bounded and it still takes a valid command
afterwards; pause(true) in a burst of lockstep steps stops them at the time it answers. The
nodes run in subprocesses; this process publishes."""

import array
import re
import time

import pytest

from tests.conftest import require_ros1
from tests.support.ros1_node import RATE_HZ, Recorder, f32, running_node
from tests.support.ros1_node import ros as ros  # the module fixture: rospy with this process's node
from tests.support.ros2_peers.proc_memory import rss_kb

pytestmark = [pytest.mark.ros, pytest.mark.slow]

SLOW_RATE_HZ = 1.0  # lockstep: 1000 MJCF steps a period, long enough for a pause in a burst
BURST, TRIES = 16, 8
SETTLE_S = 0.5  # after pause answered: a step that still ran would publish within this window
FLOOD_COUNT, FLOOD_MB = 60, 8  # 60 arrays of 8 MB (1M float64 each)
GROWTH_BOUND_MB = 100
DEADLINE_S = 30.0


def test_a_flood_of_large_arrays_leaves_the_memory_bounded(ros):
    rospy, std, _, info = ros
    with running_node(ros, "flood", "--rate", str(RATE_HZ)) as (proc, log):
        link = Recorder(rospy, "/flood/joint1/link_state", info)
        pub = rospy.Publisher(
            "/flood/reference_1", std.Float64MultiArray, queue_size=FLOOD_COUNT + 2
        )
        try:
            deadline = time.monotonic() + DEADLINE_S
            while pub.get_num_connections() < 1:
                assert time.monotonic() < deadline, "nobody subscribes to /flood/reference_1"
                time.sleep(0.01)
            pub.publish(std.Float64MultiArray(data=[0.1, 0.1]))
            link.wait(lambda m: m.ref_1 == f32(0.1), DEADLINE_S)
            before = rss_kb(proc.pid)
            big = std.Float64MultiArray(data=array.array("d", bytes(FLOOD_MB * 2**20)))
            for _ in range(FLOOD_COUNT):
                pub.publish(big)
            # one connection, read in order: once this is held, every array before it was read
            pub.publish(std.Float64MultiArray(data=[0.25, -0.25]))
            link.wait(lambda m: m.ref_1 == f32(0.25), DEADLINE_S * 4)
            after = rss_kb(proc.pid)
            assert proc.poll() is None, "the node stopped"
            log.seek(0)
            out = log.read().decode(errors="replace")
        finally:
            link.close()
            pub.unregister()
    growth = (after - before) / 1024
    assert growth < GROWTH_BOUND_MB, (
        f"the node grew {growth:.0f} MB (from {before / 1024:.0f} MB) under {FLOOD_COUNT} x "
        f"{FLOOD_MB} MB arrays on reference_1"
    )
    print(f"\nROS 1 node: {before / 1024:.0f} MB, +{growth:.1f} MB after the flood")
    sizes = re.findall(r"rejected /flood/reference_1 = a message of (\d+) bytes", out)
    assert sizes and int(sizes[0]) > FLOOD_MB * 2**20, out[-3000:]
    # throttled: one line a second at most, a later one with the count held back
    lines = [ln for ln in out.splitlines() if "rejected /flood/reference_1" in ln]
    assert len(lines) < FLOOD_COUNT, out[-3000:]
    assert any(re.search(r"\d+ similar rejections? suppressed", ln) for ln in lines), out[-3000:]


def test_pause_stops_a_burst_of_steps_at_the_time_it_answers(ros):
    """Bursts of BURST step messages, pause(true) once the first ran: no state newer than the
    time pause answered arrives, and every step sent runs once resumed. TRIES tries."""
    rospy, std, sensor, _ = ros
    srv = require_ros1("std_srvs.srv")
    with running_node(ros, "pausing", "--lockstep", "--rate", str(SLOW_RATE_HZ)) as (proc, _):
        state = Recorder(rospy, "/pausing/robot_state", sensor.JointState)
        pub = rospy.Publisher("/pausing/step", std.Float64MultiArray, queue_size=BURST + 2)
        rospy.wait_for_service("/pausing/pause", timeout=DEADLINE_S)
        pause = rospy.ServiceProxy("/pausing/pause", srv.SetBool)
        advanced = []
        try:
            deadline = time.monotonic() + DEADLINE_S
            while pub.get_num_connections() < 1:
                assert time.monotonic() < deadline, "nobody subscribes to /pausing/step"
                time.sleep(0.01)
            for k in range(TRIES):
                first = len(state.snapshot())
                for _ in range(BURST):
                    pub.publish(std.Float64MultiArray(data=[]))
                state.wait(lambda m, n=first: len(state.snapshot()) > n + 1, DEADLINE_S)
                reply = pause(True)
                paused_at = int(re.fullmatch(r"paused at t=(\d+)", reply.message).group(1))
                time.sleep(SETTLE_S)
                latest = max(ns_of(m.header.stamp) for _, m in state.snapshot())
                if latest != paused_at:
                    advanced.append((k, reply.message, latest))
                assert pause(False).message == f"running at t={latest}"
                state.wait(lambda m, n=first: len(state.snapshot()) >= n + BURST, DEADLINE_S)
            assert proc.poll() is None, "the node stopped"
        finally:
            state.close()
            pub.unregister()
    assert not advanced, f"time advanced while paused in {len(advanced)} of {TRIES}: {advanced}"


def ns_of(stamp):
    return stamp.secs * 1_000_000_000 + stamp.nsecs
