"""asr.ros.export of a Throw policy (ONNX): the exported ROS 1 node builds Throw's observation
[q1, q2, qd1, qd2, t] from joint_states and the time since its first state, commands the
equilibria and presets, publishes True once on `<ns>/release` after the env step whose release
action asks for it and then holds its references. Run in lockstep against `asr ros --lockstep`
(the harness of tests/support/ros_export_loop.py); the node's references and the arm's states are
compared with the same ONNX policy run in this process on the same robot (the closed loop
offline, Sim.rollout over each env step)."""

import queue
import time

import numpy as np
import pytest

from asr.ros.export import export_policy
from tests.support.ros_export import (
    WAIT_S,
    onnx_deps,
    ros_node,  # noqa: F401  (a fixture)
    start_onnx_node,
)
from tests.support.ros_export_loop import Loop, live_node
from tests.support.throw_export import (  # noqa: E402  # noqa: E402
    PERIODS,
    ROBOT,
    VARIANT,
    offline_loop,
    release_step,
    throw_onnx,
)

pytestmark = pytest.mark.ros


@pytest.mark.slow
def test_throw_node_in_lockstep(ros_node, ros_master, tmp_path):
    onnx_deps()
    live_node()
    from std_msgs.msg import Bool

    from asr.envs.throw import Throw
    from asr.rl.onnx_policy import OnnxPolicy

    policy = OnnxPolicy(throw_onnx(tmp_path / "throw.onnx"))
    k_release = release_step(policy)
    assert 2 <= k_release <= PERIODS - 5, k_release
    refs_off, q_off = offline_loop(policy, PERIODS, k_release)
    package = export_policy(policy, ROBOT, tmp_path / "src", namespace="throw1")
    got = queue.Queue()
    sub = ros_node.Subscriber("/throw1/release", Bool, got.put, queue_size=10)
    loop = Loop(
        ros_node,
        tmp_path,
        ros_master,
        ROBOT,
        VARIANT,
        1 / Throw(1).env_dt,
        package,
        "throw1",
        start_onnx_node,
    )
    try:
        q_live, refs = loop.run(["joint1", "joint2"], PERIODS)
        release = got.get(timeout=WAIT_S)
        time.sleep(0.5)  # a second release would come right behind the first
        assert release.data is True and got.empty()
    finally:
        sub.unregister()
        loop.close()
    da, dq = np.max(np.abs(refs - refs_off)), np.max(np.abs(q_live - q_off))
    print(
        f"\nThrow node (ROS 1) vs in-process ONNX, {PERIODS} env steps: references {da:.1e}, "
        f"q {dq:.1e} rad, release after step {k_release}"
    )
    log = loop.node_log.read_text()
    assert f"released at env step {k_release + 1} " in log, log[-2000:]
    # the node's commands: the ONNX policy's on the same states, then held after the release
    assert da <= 1e-6, da
    assert np.all(refs[k_release + 1 :] == refs[k_release])
    assert dq <= 1e-9, dq
    assert np.ptp(q_off[:, 0]) > 0.05  # the arm swung
