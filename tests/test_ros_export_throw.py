"""asr.ros.export of a Throw policy (ONNX): the exported ROS 1 node builds Throw's observation
[q1, q2, qd1, qd2, t] from joint_states and the time since its first state, commands the
equilibria and presets, publishes True once on `<ns>/release` after the env step whose release
action asks for it and then holds its references. Run in lockstep against `asr ros --lockstep`
(the harness of tests/_ros_export_loop.py); the node's references and the arm's states are
compared with the same ONNX policy run in this process on the same robot (the closed loop
offline, Sim.rollout over each env step)."""

import queue
import time

import numpy as np
import pytest
from _ros_export_helpers import (
    WAIT_S,
    onnx_deps,
    ros_node,  # noqa: F401  (a fixture)
)
from _ros_export_loop import Loop, live_node
from test_ros_export_onnx import start_onnx_node

import asr
from asr.ros.export import export_policy

pytestmark = pytest.mark.ros

ROBOT, VARIANT = "qbmove_arm_2dof", "vertical"  # the robot `asr ros` runs, Throw's variant
RELEASE_STEPS = 6.5  # the crafted policy lets go when t passes this many env steps
PERIODS = 15  # env steps run: the swing, the release, then the node holding


def throw_onnx(path, seed=3):
    """A Throw PPO policy as asr.rl.export_onnx writes it (no observation normalisation),
    crafted so that it swings the arm (equilibria biased to +2.5, +2 rad, presets +0.4 rad,
    the rest of the network's random initial weights on top) and releases once t passes
    RELEASE_STEPS env steps: the release output reads one hidden unit that sees only t
    (5 tanh(3 tanh(20 (t - t_r))))."""
    import gymnasium
    import torch
    from stable_baselines3 import PPO

    from asr.envs.throw import Throw
    from asr.rl.onnx_policy import export_onnx

    release_s = RELEASE_STEPS * Throw(1).env_dt
    model = PPO(
        "MlpPolicy",
        gymnasium.make("asr/Throw-v0"),
        seed=seed,
        device="cpu",
        policy_kwargs={"net_arch": [32, 32]},
    )
    net, out = model.policy.mlp_extractor.policy_net, model.policy.action_net
    with torch.no_grad():
        net[0].weight[0], net[0].bias[0] = 0.0, -20.0 * release_s
        net[0].weight[0, 4] = 20.0
        net[2].weight[0], net[2].bias[0] = 0.0, 0.0
        net[2].weight[0, 0] = 3.0
        out.weight[4], out.bias[4] = 0.0, 0.0
        out.weight[4, 0] = 5.0
        out.bias[:2] += torch.tensor([2.5, 2.0])
        out.bias[2:4] += 0.4
    return export_onnx(model, path, task="asr/Throw-v0")


def release_step(policy):
    """The env step whose action releases the ball, from the Throw env itself (the policy's
    release reads only t, so this step is the same on any arm)."""
    from asr.envs.throw import Throw

    env = Throw(1)
    obs, _ = env.reset(seed=0)
    for k in range(env.max_episode_steps):
        obs, _, term, trunc, _ = env.step(policy(obs))
        if term[0] or trunc[0]:
            assert term[0] and env.released[0], "the crafted policy must release"
            env.close()
            return k
    raise AssertionError("no release")


def offline_loop(policy, periods, k_release):
    """The closed loop offline on the robot `asr ros` runs: at the start of env step k the
    policy sees [q, qd, k env_dt] and its equilibria and presets are held over the step
    (frame_skip MJCF steps); from step k_release + 1 on the references are held. Returns the
    references (periods, J, 2) and q at the end of each step (periods, J), rad."""
    from asr.envs.throw import Throw

    skip, env_dt = Throw.frame_skip, Throw(1).env_dt
    sim = asr.Sim(ROBOT, 1, variant=VARIANT)
    q, qd = sim.q[0].copy(), sim.qd[0].copy()
    refs, qs, held = [], [], None
    for k in range(periods):
        if k <= k_release:
            a = policy(np.concatenate([q, qd, [k * env_dt]]))
            held = np.stack([a[:2], a[2:4]], axis=-1).astype(np.float64)  # (J, 2)
        out = sim.rollout(skip, held[None], record=("q", "qd"))
        q, qd = out["q"][0, -1], out["qd"][0, -1]
        refs.append(held)
        qs.append(q)
    return np.array(refs), np.array(qs)


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
