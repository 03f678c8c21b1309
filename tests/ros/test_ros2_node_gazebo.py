"""asr's ROS 2 node on the Gazebo engine: `asr ros2 --engine gazebo --lockstep` (gz-physics with
DART through the shim asr/_asr_gz.so) in a subprocess of .venv-ros2's Python, stepped over /step
by the controller peer (tests/support/ros2_peers/controller.py, scenario lockstep); its states are
compared here with an offline asr.Sim(engine="gazebo") rollout of the same references."""

import json
import subprocess

import numpy as np
import pytest

from asr.sim.simulation import Sim
from tests.conftest import need_gazebo
from tests.support.ros2 import ROOT, NodeProcess, asr_env, ros2_python, run_peer

pytestmark = [pytest.mark.ros2, pytest.mark.gazebo, pytest.mark.slow]

ROBOT, RATE = "qbmove_arm_2dof", 100.0  # the arm's SDF twin; 10 steps of 1 ms per period
PERIODS = 40


class CliNode(NodeProcess):
    """`python -m asr.cli ros2 ARGS` (the command line a user types) instead of
    run_ros2_node's keyword arguments; stdout and stderr go to the log file."""

    def __init__(self, tmp_path, *args):
        python = ros2_python()  # fails in CI, skips elsewhere, before a file is opened
        self.stderr_path = tmp_path / "node.log"
        self._err = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(
            [python, "-m", "asr.cli", "ros2", *args],
            env=asr_env(),
            stdout=self._err,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )


def _references(n):
    """(n, J, 2) per-period references: equilibria (a random walk, rad) and presets (rad)."""
    rng = np.random.default_rng(11)
    refs = np.zeros((n, 2, 2))
    refs[:, :, 0] = np.cumsum(rng.uniform(-0.08, 0.08, (n, 2)), axis=0)
    refs[:, :, 1] = rng.uniform(0.1, 0.6, (n, 2))
    return refs


def _offline(refs, engine):
    """(steps per period, period ns, q, qd): q and qd (N, J), rad and rad/s, at the end of each
    period of one rollout of a fresh Sim with the references held over each period."""
    sim = Sim(ROBOT, 1, engine=engine)
    steps = int(round(1.0 / (RATE * sim.dt)))
    series = np.repeat(refs, steps, axis=0)[None]  # (1, N * steps, J, 2)
    res = sim.rollout(series.shape[1], series, record=("q", "qd"))
    end = slice(steps - 1, None, steps)
    return steps, steps * int(round(sim.dt * 1e9)), res["q"][0, end], res["qd"][0, end]


def test_gazebo_lockstep_node_is_bit_identical_to_an_offline_rollout(tmp_path):
    need_gazebo()
    refs = _references(PERIODS)
    args = ["--robot", ROBOT, "--engine", "gazebo", "--lockstep", "--rate", str(RATE)]
    with CliNode(tmp_path, *args) as node:
        try:
            out = run_peer("controller.py", "lockstep", json.dumps({"refs": refs.tolist()}))
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nnode log:\n{node.log()[-3000:]}") from None
        assert node.proc.poll() is None, f"the node stopped:\n{node.log()[-3000:]}"
        assert node.stop() == 0, f"the node did not exit cleanly on SIGINT:\n{node.log()[-2000:]}"
        assert "Traceback" not in node.log() and "ERROR" not in node.log(), node.log()[-3000:]
    steps, period_ns, q, qd = _offline(refs, "gazebo")
    # the reset state (stamp 0), then one state per /step, stamped exactly k * period_ns
    assert out["stamps"] == [k * period_ns for k in range(PERIODS + 1)]
    live_q, live_qd = np.array(out["q"][1:]), np.array(out["qd"][1:])
    print(
        f"\ngazebo lockstep: {PERIODS} periods of {steps} steps, max |q - offline| = "
        f"{np.abs(live_q - q).max():.3g} rad, q1 range [{q[:, 0].min():.3f}, "
        f"{q[:, 0].max():.3f}] rad"
    )
    # DART steps deterministically: one fresh world per Sim, the same inputs, the same bits
    assert np.array_equal(live_q, q)
    assert np.array_equal(live_qd, qd)
    assert out["latest"] == PERIODS * period_ns
    assert np.ptp(q[:, 0]) > 0.05, "the references did not move the arm"  # 0.08 rad measured
    # the node really ran Gazebo's physics: MuJoCo's rollout of the same references differs
    _, _, q_mujoco, _ = _offline(refs, "mujoco")
    assert not np.array_equal(live_q, q_mujoco)
