"""asr's ROS 2 node in real time, with real rclpy over Fast DDS (node and controller peer in
subprocesses, tests/support/ros2.py), at 100 Hz and 1 kHz: commands drive the link as an offline
asr.Sim rollout does, no joint_states message is lost over the recording, stamps are exact, /clock
and a use_sim_time node follow simulated time, and a few command -> state latencies are sane.

Behaviour only: the latency and real-time factor figures (hundreds of samples, seconds of
recording) are measured by benchmarks/bench_ros.py (`make bench`), not here."""

import json

import numpy as np
import pytest

from asr.ros._ros2_types import QOS_DEPTH_CLOCK
from asr.sim.simulation import Sim
from tests.support.ros2 import NodeProcess, run_peer

pytestmark = [pytest.mark.ros2, pytest.mark.slow]

ROBOT = "qbmove_arm_2dof"
RECORD_S = 1.5  # wall time recorded: 150 or 1500 periods, enough to see a lost message
LATENCY_SAMPLES = 20


def _period(rate):
    sim = Sim(ROBOT, 1)
    steps = int(round(1.0 / (rate * sim.dt)))
    return steps, steps * int(round(sim.dt * 1e9))


def _check_clock(clock, stamps, rate):
    """/clock carries the states' stamps, in order, ending with the last. Its QoS keeps the
    newest QOS_DEPTH_CLOCK messages for a reader that falls behind (0.1 s at 1 kHz, 1 s at
    100 Hz, where joint_states keeps 1000): a peer starved that long on a busy host loses old
    /clock messages by design, so at 1 kHz a gap is allowed; at 100 Hz none is."""
    assert clock and clock[-1] == stamps[-1], "/clock does not end at the last state's stamp"
    assert all(a < b for a, b in zip(clock, clock[1:])), "/clock went back or repeated"
    assert set(clock) <= set(stamps), "a /clock stamp that no state has"
    if QOS_DEPTH_CLOCK / rate >= 1.0:
        assert clock == stamps, "/clock lost a message a 1 s queue would have kept"


def _check_record(out, rate):
    """The recording from the reset on: every period's state, exactly stamped; /clock equal;
    the states those of an offline rollout with the held references."""
    steps, period_ns = _period(rate)
    n = len(out["stamps"])
    assert out["stamps"] == [k * period_ns for k in range(n)], "a joint_states message was lost"
    _check_clock(out["clock"], out["stamps"], rate)
    assert out["sim_now"] == out["stamps"][-1], "a use_sim_time node's clock is not asr's time"
    held = np.array(out["held"][1:]).reshape(n - 1, 2, 2)
    sim = Sim(ROBOT, 1)
    series = np.repeat(held, steps, axis=0)[None]
    res = sim.rollout(series.shape[1], series, record=("q",))
    assert np.array_equal(np.array(out["q"][1:]), res["q"][0, steps - 1 :: steps])
    wall = out["arrival"][-1] - out["arrival"][0]
    return (out["stamps"][-1] * 1e-9) / wall, n


@pytest.mark.parametrize("rate", [100.0, 1000.0])
def test_real_time_commands_clock_no_loss_sane_latency(tmp_path, rate):
    with NodeProcess(tmp_path, robot=ROBOT, rate=rate) as node:
        cmd = {"commands": [["joint1/equilibrium_position", 0.4]], "after": 20, "seconds": RECORD_S}
        out = run_peer("controller.py", "record", json.dumps(cmd))
        rtf, _ = _check_record(out, rate)
        held = np.array(out["held"])
        assert held[0, 0] == 0.0 and held[-1, 0] == 0.4, "the command was not held"
        q = np.array(out["q"])
        assert q[-1, 0] - q[0, 0] > 0.2, "the link did not follow the equilibrium command"
        samples = LATENCY_SAMPLES
        lat = run_peer(
            "controller.py",
            "latency",
            json.dumps({"topic": "joint1/equilibrium_position", "samples": samples}),
        )
        assert node.proc.poll() is None
        assert node.stop() == 0, node.log()[-2000:]
    assert lat["n"] == samples
    assert 0 < lat["median"] <= lat["p95"] < 5.0
    assert rtf > 0.05  # it ran in real time at all; the figure is benchmarks/bench_ros.py's
