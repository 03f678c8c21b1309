"""A crafted Throw ONNX policy, its release step and the offline loop it is checked against
(tests/ros/test_ros_export_throw.py, test_ros2_export_throw.py)."""

import numpy as np

import asr
from tests.support.ros_export import (
    ros_node,  # noqa: F401  (a fixture)  # noqa: F401  (a fixture)
)

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


ROBOT, VARIANT = "qbmove_arm_2dof", "vertical"  # the robot `asr ros` runs, Throw's variant
