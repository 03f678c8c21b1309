"""asr.ros.export with ros=2 of a Throw policy (ONNX): the rclpy node, run without asr in
.venv-ros2, steps `asr ros2 --lockstep` (tests/support/ros_export_loop.py, ros2_loop); the arm's
states equal the closed loop of the same ONNX policy run in this process on the same robot
(tests/ros/test_ros_export_throw.py, offline_loop), and the node reports its one release, at the
first state after the env step whose release action asked for it."""

import numpy as np
import pytest

from asr.ros.export import export_policy
from tests.support.ros_export import onnx_deps
from tests.support.ros_export_loop import ros2_loop, ros2_module_command
from tests.support.throw_export import (
    PERIODS,
    ROBOT,
    VARIANT,
    offline_loop,
    release_step,
    throw_onnx,
)


@pytest.mark.ros2
@pytest.mark.slow
def test_throw_node_ros2_in_lockstep(tmp_path):
    onnx_deps()
    from asr.envs.throw import Throw
    from asr.rl.onnx_policy import OnnxPolicy

    policy = OnnxPolicy(throw_onnx(tmp_path / "throw.onnx"))
    k_release = release_step(policy)
    refs_off, q_off = offline_loop(policy, PERIODS, k_release)
    package = export_policy(policy, ROBOT, tmp_path / "src", ros=2)
    command, pythonpath = ros2_module_command(package)
    env_dt = Throw(1).env_dt
    states = ros2_loop(tmp_path, "throw2", ROBOT, VARIANT, 1 / env_dt, PERIODS, command, pythonpath)
    period_ns = round(env_dt * 1e9)
    assert [st[0] for st in states] == [k * period_ns for k in range(PERIODS + 1)]
    q_live = np.array([st[1] for st in states[1:]])
    err = np.max(np.abs(q_live - q_off))
    print(f"\nThrow node (ROS 2) vs in-process ONNX, {PERIODS} env steps: q {err:.1e} rad")
    assert err <= 1e-9, err
    assert np.ptp(q_off[:, 0]) > 0.05  # the arm swung
    log = (tmp_path / "throw2_node.log").read_text()
    assert log.count("released at env step") == 1, log[-2000:]
    assert f"released at env step {k_release + 1} " in log, log[-2000:]
