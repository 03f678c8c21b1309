"""Reinforcement-learning benchmark (`make bench`): PPO (Stable-Baselines3) on asr/Reach2DOF-v0.

1. Reaching: asr.rl.train with the benchmark's hyperparameters; the mean final joint error (norm
   of q - target at the end of an episode, deterministic policy) on 256 held-out targets, and
   the training wall time. Target: <= 0.02 rad within 120 s of training.
2. Training throughput: env-steps per second of the same PPO (collection + updates) on asr's
   batch through asr.rl.SB3VecEnv (one C call per step for all sub-envs) and on SB3's
   DummyVecEnv of N single asr envs, N = 64, one torch thread.

Writes benchmarks/results/rl.json (one flat {figure: number} object)."""

import argparse
import os
import time

import numpy as np
import torch
from results_file import report_and_write

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "rl.json")
TASK = "asr/Reach2DOF-v0"
TARGET_ERROR_RAD, TARGET_TRAIN_S = 0.02, 120.0

# the benchmark's PPO settings (asr.rl.training.HYPERPARAMETERS holds the defaults)
REACH = dict(
    num_envs=64,
    total_steps=300_000,
    seed=0,
    hyperparameters=dict(
        n_steps=32,
        batch_size=512,
        n_epochs=10,
        learning_rate=1e-3,
        gamma=0.95,
        log_std_init=-1.0,
        eval_every=0,
        final_eval_episodes=256,
    ),
)


def ppo_steps_per_s(vec_env, steps, seed=0):
    """Env-steps per second of PPO.learn (rollouts + updates) on vec_env (VecNormalize on
    observations, as asr.rl.train), after one warm-up rollout."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    env = VecNormalize(vec_env, norm_obs=True, norm_reward=False)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=min(512, 32 * vec_env.num_envs),
        n_epochs=10,
        seed=seed,
        device="cpu",
        policy_kwargs={"net_arch": [64, 64], "log_std_init": -1.0},
    )
    model.learn(32 * vec_env.num_envs)
    t = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    n = model.num_timesteps - 32 * vec_env.num_envs
    dt = time.perf_counter() - t
    env.close()
    return n / dt


def main(reach=REACH, n=64, throughput_steps=64 * 32 * 6, out=DEFAULT_OUT, write=True, quiet=False):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from asr.envs.tasks import Reach2DOF
    from asr.envs.vector import AsrEnv
    from asr.rl import SB3VecEnv, train

    say = (lambda *a: None) if quiet else print
    t_bench = time.perf_counter()
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    fig = {"cpu_count": os.cpu_count() or 0}
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    fig["load_average_before"] = load
    try:
        if reach:
            hp = dict(reach["hyperparameters"])
            res = train(
                TASK,
                total_steps=reach["total_steps"],
                num_envs=reach["num_envs"],
                seed=reach["seed"],
                threads=1,
                **hp,
            )
            fig["reach_final_error_rad"] = res.final_error_rad
            fig["reach_train_s"] = res.curve[-1]["wall_s"]
            fig["reach_env_steps"] = res.curve[-1]["steps"]
            fig["reach_num_envs"] = reach["num_envs"]
            fig["reach_final_return"] = res.curve[-1]["return"]
            for k, v in hp.items():
                if isinstance(v, (int, float)):
                    fig[f"reach_hp_{k}"] = v
            met = res.final_error_rad <= TARGET_ERROR_RAD and fig["reach_train_s"] <= TARGET_TRAIN_S
            fig["target_met_reach_final_error_rad"] = bool(met)
            say(
                f"PPO on {TASK}: {fig['reach_env_steps']} env-steps in "
                f"{fig['reach_train_s']:.1f} s, final joint error "
                f"{res.final_error_rad:.4f} rad on 256 held-out targets"
            )
        ours = ppo_steps_per_s(SB3VecEnv(Reach2DOF(n)), throughput_steps)
        dummy = ppo_steps_per_s(
            DummyVecEnv([lambda: AsrEnv(Reach2DOF) for _ in range(n)]), throughput_steps
        )
        fig[f"ppo_steps_per_s_sb3vecenv_n{n}"] = ours
        fig[f"ppo_steps_per_s_dummyvecenv_n{n}"] = dummy
        fig[f"ppo_ratio_vs_dummyvecenv_n{n}"] = ours / dummy
        say(
            f"PPO training env-steps/s at N = {n}: SB3VecEnv {ours:.0f}, DummyVecEnv "
            f"{dummy:.0f}, ratio {ours / dummy:.2f}"
        )
    finally:
        torch.set_num_threads(old_threads)
    fig["bench_wall_s"] = time.perf_counter() - t_bench
    targets = [
        (
            "reach_final_error_rad",
            f"final joint error <= {TARGET_ERROR_RAD} rad within {TARGET_TRAIN_S:.0f} s of "
            "training",
            lambda v: f"{v:.4f} rad in {fig['reach_train_s']:.1f} s",
        )
    ]
    report_and_write(
        fig, out, say, write, targets=targets, note=f"load average {load:.2f} before the run; "
    )
    return {k: (float(v) if isinstance(v, (np.floating,)) else v) for k, v in fig.items()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    main(out=ap.parse_args().out)
