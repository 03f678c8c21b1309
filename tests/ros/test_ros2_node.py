"""asr's ROS 2 node in lockstep (asr.ros.ros2_node), with real rclpy over Fast DDS: the node
runs in one subprocess (.venv-ros2 with asr), a controller peer without asr in another
(tests/support/ros2_peers/controller.py); states are compared here with offline asr.Sim rollouts."""

import json
import re

import numpy as np
import pytest

from asr.sim.simulation import Sim
from tests.support.ros2 import NodeProcess, run_peer
from tests.support.ros2_node import (  # noqa: E402
    RATE,
    ROBOT,
    control_period,
)

pytestmark = [pytest.mark.ros2, pytest.mark.slow]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with NodeProcess(tmp_path_factory.mktemp("ros2"), robot=ROBOT, rate=RATE, lockstep=True) as n:
        yield n
        assert n.stop() == 0, f"the node did not exit cleanly on SIGINT:\n{n.log()[-2000:]}"


def _offline(refs_per_period, period_steps):
    """(N, J) link angles and velocities at the end of each period: one Sim.rollout with the
    references held over each period."""
    sim = Sim(ROBOT, 1)
    series = np.repeat(np.asarray(refs_per_period, dtype=float), period_steps, axis=0)[None]
    res = sim.rollout(series.shape[1], series, record=("q", "qd"))
    return res["q"][0, period_steps - 1 :: period_steps], res["qd"][
        0, period_steps - 1 :: period_steps
    ]


def test_lockstep_is_bit_identical_to_an_offline_rollout(node):
    rng = np.random.default_rng(7)
    n = 60
    refs = np.zeros((n, 2, 2))
    refs[:, :, 0] = np.cumsum(rng.uniform(-0.05, 0.05, (n, 2)), axis=0)  # equilibria, rad
    refs[:, :, 1] = rng.uniform(0.1, 0.6, (n, 2))  # presets, rad
    out = run_peer("controller.py", "lockstep", json.dumps({"refs": refs.tolist()}))
    steps, period_ns = control_period()
    # the reset state (stamp 0), then one state per step, stamped exactly k * period_ns
    assert out["stamps"] == [k * period_ns for k in range(n + 1)]
    q, qd = _offline(refs, steps)
    assert np.array_equal(np.array(out["q"][1:]), q)
    assert np.array_equal(np.array(out["qd"][1:]), qd)
    assert out["latest"] == n * period_ns  # the latched joint_states_latest is the last state


def test_bad_messages_are_rejected_and_logged_once_each(node):
    out = run_peer("controller.py", "bad", "{}")
    initial = [0.0, 0.2, 0.0, 0.2]  # the robot's initial references (J, 2) row-major
    assert out["held"] == [initial] * 7, "a rejected command changed the held references"
    assert out["valid"][0] == 0.3 and out["valid"][1:] == initial[1:]
    log = node.log()
    expected = [
        r"joint1/equilibrium_position = nan: not finite",
        r"joint2/equilibrium_position = 1e\+300: valid range \[-6.28319, 6.28319\] rad",
        r"joint1/stiffness_preset = 100.0: valid range \[0, 0.8\] rad",
        r"/reference_1 = .*expected 2 values, got 3",
        r"/step = .*expected 0 or 4 values",
        r"/reset_state = .*expected 2 values",
        r"/joint_trajectory = .*unknown joint 'elbow'; valid names: joint1, joint2",
    ]
    for pattern in expected:
        lines = [ln for ln in log.splitlines() if re.search(pattern, ln)]
        assert len(lines) == 1, f"{pattern!r}: {len(lines)} log lines in\n{log[-3000:]}"
        assert "WARN" in lines[0]
    assert node.proc.poll() is None, "the node stopped"


def test_services_and_trajectory(node):
    steps, period_ns = control_period()
    params = {"joint": "joint1", "target": 0.5, "traj_seconds": 0.5, "steps": 80}
    out = run_peer("controller.py", "services", json.dumps(params))
    assert out["reset_stamps"] == [0, period_ns, 2 * period_ns, 3 * period_ns]
    assert out["steps"] == [f"t={k * period_ns}" for k in (1, 2, 3)]
    assert out["paused"] == f"paused at t={3 * period_ns}"
    assert out["step_while_paused"][0] is False and "paused" in out["step_while_paused"][1]
    assert out["resumed"].startswith("running")
    assert out["after_resume"] == f"t={4 * period_ns}"
    assert out["reset"] == "t=0"
    # the trajectory: joint1's equilibrium moves linearly from 0 to 0.5 rad over 0.5 s (50
    # periods, the value at each period's end), then holds; joint2 and the presets keep theirs
    held = np.array(out["traj_held"])
    expected = np.minimum(np.arange(1, 81) * 0.01 / 0.5, 1.0) * 0.5
    assert np.allclose(held[:, 0], expected, rtol=0, atol=1e-12)
    assert np.array_equal(held[:, 1:], np.tile([0.2, 0.0, 0.2], (80, 1)))
    assert out["traj_stamps"] == [k * period_ns for k in range(1, 81)]
    # the states are those of an offline rollout with the same references
    q, _ = _offline(held.reshape(80, 2, 2), steps)
    assert np.array_equal(np.array(out["traj_q"]), q)
    assert q[-1, 0] - q[0, 0] > 0.3, "the link did not follow the trajectory"


def test_missing_rclpy_names_the_install(tmp_path):
    """In .venv (asr without ROS 2) the node says how to install rclpy; `import asr` and
    `import asr.ros.ros2_node` never import it."""
    import subprocess
    import sys

    code = (
        "import sys, asr, asr.ros.ros2_node as m\n"
        "assert 'rclpy' not in sys.modules\n"
        "try:\n    m.run_ros2_node()\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pip install asr-sim[ros2]" in out.stdout and "rclpy" in out.stdout


def test_asr_ros2_without_rclpy_exits_1_with_one_line():
    import subprocess
    import sys

    cmd = [sys.executable, "-c", "import sys, asr.cli; sys.exit(asr.cli.main(sys.argv[1:]))"]
    out = subprocess.run(cmd + ["ros2"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install asr-sim[ros2]" in lines[0], out.stderr
    assert "No module named 'rclpy'" in lines[0]
