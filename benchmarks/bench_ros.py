"""ROS benchmark (`make bench`): asr's ROS 2 and ROS 1 nodes in real time on this machine
(qbmove_arm_2dof, variant horizontal; 100 Hz and 1 kHz, i.e. 10 and 1 steps of 1 ms per period).

- Command -> state latency: from a peer's publish of joint1/equilibrium_position (after a random
  wait of up to one period, so commands fall anywhere in the period) to the arrival of the first
  message that carries it (ROS 2: held_references, the period that applied it; ROS 1: the
  joint's link_state, ref_1); median, p95 and maximum over LATENCY_SAMPLES commands.
- Real-time factor: simulated time / wall time of the joint_states messages received over
  RECORD_S seconds of wall time, with the number of periods received and of those lost
  (stamps missing from the sequence k * period).

ROS 2: Jazzy's rclpy over Fast DDS (.venv-ros2, `make ros2`); the node (`asr ros2`) and a
controller peer run in subprocesses. Two ROS 2 nodes at each rate, one after the other in this
run: `ros2`, with every publication of today's node (robot_description, /tf_static, /tf each
period, asr_msgs' actuator_states and held_references_stamped when built), and `ros2_lean`
(`asr ros2 --lean`: the first ROS 2 node's topics only), the baseline those figures are compared
with. ROS 1: Debian's roscore (asr.ros.master.roscore), the node
`python -m asr.cli ros` in a subprocess and this process as the rospy peer.
A missing ROS is said and that part skipped.

The tests' machinery is reused, not copied: the repository is put on sys.path for
tests/support/ros2.py (NodeProcess, run_peer: the node and the `record` and `latency` scenarios of
tests/support/ros2_peers/controller.py) and tests/support/ros1_node.py (running_node, Recorder,
publisher: the ROS 1 node and peer). The tests check what these figures rest on (no loss, exact
stamps, the offline rollout); this file only measures.

Writes benchmarks/results/ros.json (one flat {figure: number} object)."""

import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np
from results_file import report_and_write

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository, for tests.support
DEFAULT_OUT = os.path.join(HERE, "results", "ros.json")
ROBOT = "qbmove_arm_2dof"
RATES_HZ = (100.0, 1000.0)
LATENCY_SAMPLES = 200
RECORD_S = 5.0
COMMAND = "joint1/equilibrium_position"


def missing(check):
    """None when check() passes, else why not (the tests' skip or CI-failure message)."""
    import pytest

    try:
        check()
    except (pytest.skip.Exception, pytest.fail.Exception, OSError) as exc:
        return str(exc)
    return None


def period_ns(rate):
    from asr.sim.simulation import Sim

    dt_ns = int(round(Sim(ROBOT, 1).dt * 1e9))
    return int(round(1e9 / (rate * dt_ns))) * dt_ns


def stamp_figures(stamps_ns, arrivals_s, rate):
    """Periods received, periods lost (gaps in the stamps) and the real-time factor."""
    ticks = np.round((np.asarray(stamps_ns) - stamps_ns[0]) / period_ns(rate)).astype(int)
    wall = arrivals_s[-1] - arrivals_s[0]
    return {
        "periods": len(ticks),
        "lost": int(ticks[-1] + 1 - len(np.unique(ticks))),
        "rtf": (stamps_ns[-1] - stamps_ns[0]) * 1e-9 / wall,
        "record_wall_s": wall,
    }


def ros2_rate(tmp, rate, lean=False):
    """One ROS 2 node at `rate` (`lean`: `--lean`): the controller peer's recording, then its
    latency samples."""
    from tests.support.ros1_node import VARIANT
    from tests.support.ros2 import NodeProcess, run_peer

    with NodeProcess(tmp, robot=ROBOT, variant=VARIANT, rate=rate, lean=lean) as node:
        cmd = {"commands": [[COMMAND, 0.4]], "after": 20, "seconds": RECORD_S}
        out = run_peer("controller.py", "record", json.dumps(cmd))
        lat = run_peer(
            "controller.py",
            "latency",
            json.dumps({"topic": COMMAND, "samples": LATENCY_SAMPLES, "phase_s": 1.0 / rate}),
        )
        if node.stop() != 0:
            raise RuntimeError(f"the ROS 2 node failed: {node.log()[-2000:]}")
    fig = stamp_figures(out["stamps"], out["arrival"], rate)
    fig.update(
        latency_median_ms=lat["median"] * 1e3,
        latency_p95_ms=lat["p95"] * 1e3,
        latency_max_ms=lat["max"] * 1e3,
        latency_samples=lat["n"],
    )
    return fig


def ros1_latency(ros, ns, rate):
    """Command -> link_state delays (s) of LATENCY_SAMPLES distinct equilibria."""
    from tests.support.ros1_node import Recorder, f32, publisher

    rospy, std, _, info = ros
    link = Recorder(rospy, f"/{ns}/joint1/link_state", info)
    try:
        pub = publisher(rospy, f"/{ns}/{COMMAND}", std.Float64)
        link.wait(lambda m: True)
        phase = np.random.default_rng(1).uniform(0, 1 / rate, LATENCY_SAMPLES)
        lat = []
        for i in range(LATENCY_SAMPLES):
            v = 0.1 + 0.001 * i  # distinct: each is found from the recording's start
            target = f32(v)
            time.sleep(phase[i])
            t0 = time.monotonic()
            pub.publish(std.Float64(v))
            t1, _ = link.wait(lambda m, target=target: m.ref_1 == target)
            lat.append(t1 - t0)
    finally:
        link.close()
    return np.array(lat)


def ros1_rate(ros, rate):
    """One ROS 1 node at `rate`: RECORD_S of joint_states, then the latency samples."""
    from tests.support.ros1_node import Recorder, running_node

    rospy, _, sensor, _ = ros
    ns = f"bench{int(rate)}"
    with running_node(ros, ns, "--rate", str(rate)):
        rec = Recorder(rospy, f"/{ns}/joint_states", sensor.JointState)
        try:
            rec.wait(lambda m: True)
            time.sleep(RECORD_S)
            got = rec.snapshot()[1:]  # the first may have waited in a queue
        finally:
            rec.close()
        lat = ros1_latency(ros, ns, rate)
    stamps = [m.header.stamp.to_nsec() for _, m in got]
    fig = stamp_figures(stamps, [t for t, _ in got], rate)
    fig.update(
        latency_median_ms=float(np.median(lat)) * 1e3,
        latency_p95_ms=float(np.percentile(lat, 95)) * 1e3,
        latency_max_ms=float(lat.max()) * 1e3,
        latency_samples=len(lat),
    )
    return fig


@contextlib.contextmanager
def ros1_peer():
    """(rospy, std_msgs.msg, sensor_msgs.msg, state_info class) with this process a rospy node
    on a roscore of its own (ROS_MASTER_URI and ROS_IP set while it runs)."""
    from asr.ros.environment import ros1
    from asr.ros.master import roscore
    from asr.ros.messages import state_info_class

    rospy = ros1("rospy")
    with roscore() as uri:
        os.environ["ROS_MASTER_URI"], os.environ["ROS_IP"] = uri, "127.0.0.1"
        rospy.init_node("asr_bench", anonymous=True, disable_signals=True)
        try:
            yield rospy, ros1("std_msgs.msg"), ros1("sensor_msgs.msg"), state_info_class()
        finally:
            rospy.signal_shutdown("benchmark done")


def ros1_ready():
    import shutil

    from tests.conftest import require_ros1

    require_ros1()
    if shutil.which("roscore", path="/usr/bin:/bin") is None:
        raise OSError("roscore not installed (make ros)")


def table(rows, say):
    say(
        f"{'node':<10}{'rate Hz':>8}{'lat med ms':>11}{'p95 ms':>8}{'max ms':>8}{'n':>5}"
        f"{'RTF':>7}{'periods':>9}{'lost':>6}{'wall s':>8}"
    )
    for name, rate, f in rows:
        say(
            f"{name:<10}{rate:>8g}{f['latency_median_ms']:>11.2f}{f['latency_p95_ms']:>8.2f}"
            f"{f['latency_max_ms']:>8.2f}{f['latency_samples']:>5}{f['rtf']:>7.3f}"
            f"{f['periods']:>9}{f['lost']:>6}{f['record_wall_s']:>8.2f}"
        )


def main(out=DEFAULT_OUT, write=True, quiet=False):
    import tempfile

    from tests.support.ros2 import ros2_python

    say = (lambda *a: None) if quiet else print
    t_bench = time.perf_counter()
    fig = {"cpu_count": os.cpu_count() or 0, "load_average_before": os.getloadavg()[0]}
    fig.update(latency_samples_target=LATENCY_SAMPLES, record_target_s=RECORD_S)
    rows = []
    why = missing(ros2_python)
    if why:
        say(f"ROS 2 part skipped: {why}")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            for r in RATES_HZ:  # side by side: the lean node, then the full one, per rate
                rows.append(("ros2_lean", r, ros2_rate(tmp, r, lean=True)))
                rows.append(("ros2", r, ros2_rate(tmp, r)))
    why = missing(ros1_ready)
    if why:
        say(f"ROS 1 part skipped: {why}")
    else:
        with ros1_peer() as ros:
            rows += [("ros1", r, ros1_rate(ros, r)) for r in RATES_HZ]
    for name, rate, f in rows:
        fig.update({f"{name}_{int(rate)}hz_{k}": v for k, v in f.items()})
    table(rows, say)
    fig["load_average_after"] = os.getloadavg()[0]
    fig["bench_wall_s"] = time.perf_counter() - t_bench
    note = f"load average {fig['load_average_before']:.2f} before, "
    note += f"{fig['load_average_after']:.2f} after; "
    report_and_write(fig, out, say, write, note=note)
    return fig


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    main(out=ap.parse_args().out)
