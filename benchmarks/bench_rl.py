"""Reinforcement-learning benchmark (`make bench`): PPO on asr/Reach2DOF-v0, both backends.

1. Reaching, per backend (sb3: Stable-Baselines3, rsl_rl: rsl-rl-lib), each with its tuned
   hyperparameters (Reach2DOF's registered training defaults, asr.envs.TRAIN_DEFAULTS; REACH:
   what the measurement adds): asr.rl.train's mean final joint error (norm of q - target at the end
   of an episode, deterministic policy) on 256 held-out targets, and the training wall time
   (the training's own wall_s, the evaluation excluded), against bare MuJoCo's time for the
   same env-steps: mujoco.rollout of the training's num_envs instances of the link model for
   env-steps * frame_skip physics steps in all, on the training's threads, measured once right
   before the training and once right after it (reach_mujoco_rollout_s_before/after_<backend>;
   the ratio reach_train_vs_mujoco_rollout_<backend> is against the one after, their quotient
   bounds the drift). Targets: <= 0.01 rad within 25 s of training (the 2-core machine), and
   (issue 45) the training at most 3x bare MuJoCo's time. reach_* without a suffix: the default
   backend (algo="ppo").
2. Training throughput: env-steps per second of SB3's PPO (collection + updates) on asr's
   batch through asr.rl.SB3VecEnv (one C call per step for all sub-envs) and on SB3's
   DummyVecEnv of N single asr envs, N = 64, one torch thread.
3. Threads: env-steps per second of the vector env alone (Reach2DOF.step, random actions held,
   autoresets included) at N = 64 and 1024 with asr's batch on 1 and 2 native threads, and bare
   MuJoCo stepping the same link model for the same number of physics steps with
   mujoco.rollout (nthread 1 and 2, no actuator: the floor), in env-step equivalents
   (instances x physics steps / frame_skip per second), side by side in this process.

Writes benchmarks/results/rl.json (one flat {figure: number} object)."""

import argparse
import os
import time

import numpy as np

# as asr.rl sets it (asr/rl/__init__.py), before torch's OpenMP runtime starts: waiting threads
# sleep, so torch's and asr's threads do not spin against each other on 2 cores
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from results_file import is_throw_figure, merged_into, report_and_write

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "rl.json")
TASK = "asr/Reach2DOF-v0"
TARGET_ERROR_RAD, TARGET_TRAIN_S = 0.01, 25.0  # rad, within s of training
TARGET_VS_MUJOCO = 3.0  # training wall time / bare mujoco.rollout's for the same env-steps
THREADS = (1, 2)
THREAD_SIZES = (64, 1024)

# each backend's PPO settings: Reach2DOF's registered training defaults (asr.envs.TRAIN_DEFAULTS,
# where the tuning is described: num_envs, total_steps and the hyperparameters; asr.rl.train
# takes them for what is not given here), asr's batch and torch on 2 threads; here only what
# the measurement needs: no evaluation during training (the wall time is the training's), the
# final error on 256 held-out targets
_MEASURE = dict(eval_every=0, final_eval_episodes=256)
REACH = {
    backend: dict(seed=0, threads=2, hyperparameters=dict(_MEASURE))
    for backend in ("sb3", "rsl_rl")
}


def ppo_steps_per_s(vec_env, steps, seed=0):
    """Env-steps per second of PPO.learn (rollouts + updates) on vec_env (VecNormalize on
    observations, as asr.rl.train), after one warm-up rollout."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger
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
    model.set_logger(Logger(None, []))  # SB3's default leaves a folder /tmp/SB3-<time>
    model.learn(32 * vec_env.num_envs)
    t = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    n = model.num_timesteps - 32 * vec_env.num_envs
    dt = time.perf_counter() - t
    env.close()
    return n / dt


def vec_env_steps_per_s(n, threads, steps):
    """Env-steps per second of Reach2DOF(n, threads=threads).step (actions held), after a
    warm-up."""
    from asr.envs.tasks import Reach2DOF

    env = Reach2DOF(n, threads=threads)
    env.reset(seed=0)
    space = env.single_action_space
    act = np.random.default_rng(0).uniform(space.low, space.high, size=(n, space.shape[0]))
    for _ in range(5):
        env.step(act)
    t = time.perf_counter()
    for _ in range(steps):
        env.step(act)
    dt = time.perf_counter() - t
    env.close()
    return n * steps / dt


def mujoco_rollout_s(n, threads, steps, chunk_bytes=64e6):
    """Bare MuJoCo's wall time for `steps` vector steps of Reach2DOF's link model:
    mujoco.rollout of n instances from the task's initial state for steps * frame_skip physics
    steps each (nthread threads, 0: the calling thread for threads = 1), in rollouts of whole
    env steps whose state output stays under chunk_bytes, each from the initial state again (as
    episodes restart), after a one-env-step warm-up. Seconds."""
    import mujoco
    import mujoco.rollout

    from asr.envs.tasks import Reach2DOF

    env = Reach2DOF(n)
    env.reset(seed=0)
    model = env.sim.models[0]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    x0 = np.empty((n, mujoco.mj_stateSize(model, spec)))
    for i, d in enumerate(env.sim.datas):
        mujoco.mj_getState(model, d, x0[i], spec)
    env.close()
    skip = Reach2DOF.frame_skip
    chunk = max(1, min(steps, int(chunk_bytes // (n * skip * x0.shape[1] * 8))))
    nthread = threads if threads > 1 else 0  # 0: on the calling thread
    datas = [mujoco.MjData(model) for _ in range(max(1, nthread))]
    state = np.empty((n, chunk * skip, x0.shape[1]))
    with mujoco.rollout.Rollout(nthread=nthread) as pool:
        pool.rollout(model, datas, x0, nstep=skip, state=state[:, :skip])
        t = time.perf_counter()
        done = 0
        while done < steps:
            k = min(chunk, steps - done)
            pool.rollout(model, datas, x0, nstep=k * skip, state=state[:, : k * skip])
            done += k
        return time.perf_counter() - t


def mujoco_rollout_steps_per_s(n, threads, steps):
    """Bare MuJoCo's rate on Reach2DOF's link model (mujoco_rollout_s of n instances for
    `steps` vector steps), in env-step equivalents per second."""
    return n * steps / mujoco_rollout_s(n, threads, steps)


def thread_figures(fig, say, sizes=THREAD_SIZES, seconds=1.0):
    """The vector env at threads 1 and 2 for each N, and bare MuJoCo at N = sizes[0]."""
    for n in sizes:
        steps = max(10, int(seconds * 20_000 / n))  # about `seconds` at ~20k env-steps/s
        rates = {t: vec_env_steps_per_s(n, t, steps) for t in THREADS}
        for t, r in rates.items():
            fig[f"vec_env_steps_per_s_n{n}_t{t}"] = r
        fig[f"vec_env_ratio_t2_vs_t1_n{n}"] = rates[2] / rates[1]
        say(
            f"vector env at N = {n}: {rates[1]:.0f} env-steps/s on 1 thread, {rates[2]:.0f} "
            f"on 2 (ratio {rates[2] / rates[1]:.2f})"
        )
    n = sizes[0]
    steps = max(10, int(seconds * 20_000 / n))
    for t in THREADS:
        bare = mujoco_rollout_steps_per_s(n, t, steps)
        fig[f"mujoco_rollout_steps_per_s_n{n}_t{t}"] = bare
        fig[f"vec_env_vs_mujoco_rollout_t{t}_n{n}"] = fig[f"vec_env_steps_per_s_n{n}_t{t}"] / bare
        say(
            f"bare MuJoCo (mujoco.rollout, nthread {t}) at N = {n}: {bare:.0f} env-step "
            f"equivalents/s; the vector env runs at "
            f"{fig[f'vec_env_vs_mujoco_rollout_t{t}_n{n}']:.2f} of it"
        )


def trained_steps(reach):
    """(num_envs, vector steps) that asr.rl.train runs with these settings (the task's
    registered defaults for what they leave out, the generic ones for what the task leaves
    out): total_steps rounded up to whole rollouts."""
    from asr.envs import TRAIN_DEFAULTS
    from asr.rl.training import HYPERPARAMETERS

    reg = TRAIN_DEFAULTS.get(TASK, {})
    n = reach.get("num_envs") or reg.get("num_envs", 64)
    total = reach.get("total_steps") or reg.get("total_steps", 100_000)
    generic = HYPERPARAMETERS["n_steps"][0]
    per = reach["hyperparameters"].get(
        "n_steps", reg.get("hyperparameters", {}).get("n_steps", generic)
    )
    return n, -(-total // (per * n)) * per


def reach_figures(fig, say, backend, reach):
    """Train the backend on Reach2DOF with its settings, bare MuJoCo for the same env-steps on
    the same threads right before and right after; its figures, suffixed _<backend>."""
    from asr.rl import train

    hp = dict(reach["hyperparameters"])
    threads = reach["threads"]
    n, vsteps = trained_steps(reach)
    fig[f"reach_load_average_{backend}"] = os.getloadavg()[0]
    before = mujoco_rollout_s(n, threads, vsteps)
    res = train(
        TASK,
        algo=backend,
        total_steps=reach.get("total_steps"),  # None: the task's registered default
        num_envs=reach.get("num_envs"),
        seed=reach["seed"],
        threads=reach["threads"],
        **hp,
    )
    last = res.curve[-1]
    if last["steps"] != n * vsteps:
        raise RuntimeError(f"trained {last['steps']} env-steps, expected {n * vsteps}")
    after = mujoco_rollout_s(n, threads, vsteps)
    ratio = last["wall_s"] / after
    fig[f"reach_mujoco_rollout_s_before_{backend}"] = before
    fig[f"reach_mujoco_rollout_s_after_{backend}"] = after
    fig[f"reach_mujoco_rollout_drift_{backend}"] = before / after
    fig[f"reach_train_vs_mujoco_rollout_{backend}"] = ratio
    fig[f"target_met_reach_train_vs_mujoco_rollout_{backend}"] = bool(ratio <= TARGET_VS_MUJOCO)
    fig[f"reach_final_error_rad_{backend}"] = res.final_error_rad
    fig[f"reach_train_s_{backend}"] = last["wall_s"]
    fig[f"reach_env_steps_{backend}"] = last["steps"]
    fig[f"reach_steps_per_s_{backend}"] = last["steps"] / last["wall_s"]
    fig[f"reach_final_return_{backend}"] = last["return"]
    fig[f"reach_num_envs_{backend}"] = res.config["num_envs"]
    fig[f"reach_threads_{backend}"] = reach["threads"]
    for k, v in res.config["hyperparameters"].items():  # every one, the defaults too
        fig[f"reach_hp_{backend}_{k}"] = v if k != "net_arch" else ",".join(map(str, v))
    met = res.final_error_rad <= TARGET_ERROR_RAD and last["wall_s"] <= TARGET_TRAIN_S
    fig[f"target_met_reach_final_error_rad_{backend}"] = bool(met)
    say(
        f"PPO ({backend}) on {TASK}: {last['steps']} env-steps in {last['wall_s']:.1f} s "
        f"({threads} threads), final joint error {res.final_error_rad:.4f} rad on "
        f"256 held-out targets; bare mujoco.rollout of the same env-steps ({n} instances, "
        f"nthread {threads}): {before:.1f} s before, {after:.1f} s after: {ratio:.2f}x"
    )


def main(
    reach=REACH,
    n=64,
    throughput_steps=64 * 32 * 6,
    out=DEFAULT_OUT,
    write=True,
    quiet=False,
    thread_sizes=THREAD_SIZES,
    thread_seconds=1.0,
):
    from stable_baselines3.common.vec_env import DummyVecEnv

    from asr.envs.tasks import Reach2DOF
    from asr.envs.vector import AsrEnv
    from asr.rl import DEFAULT_BACKEND, SB3VecEnv

    say = (lambda *a: None) if quiet else print
    t_bench = time.perf_counter()
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    fig = {"cpu_count": os.cpu_count() or 0, "default_backend": DEFAULT_BACKEND}
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    fig["load_average_before"] = load
    try:
        for backend, settings in (reach or {}).items():
            reach_figures(fig, say, backend, settings)
        if f"reach_final_error_rad_{DEFAULT_BACKEND}" in fig:
            for key in (
                "reach_final_error_rad",
                "reach_train_s",
                "reach_env_steps",
                "reach_train_vs_mujoco_rollout",
                "target_met_reach_final_error_rad",
                "target_met_reach_train_vs_mujoco_rollout",
            ):
                fig[key] = fig[f"{key}_{DEFAULT_BACKEND}"]
        torch.set_num_threads(1)
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
        thread_figures(fig, say, thread_sizes, thread_seconds)
    finally:
        torch.set_num_threads(old_threads)
    fig["load_average_after"] = os.getloadavg()[0]
    fig["bench_wall_s"] = time.perf_counter() - t_bench
    targets = []
    for suffix, label in [("", " (default backend)")] + [(f"_{b}", f" ({b})") for b in reach or {}]:
        targets.append(
            (
                f"reach_final_error_rad{suffix}",
                f"final joint error{label} <= {TARGET_ERROR_RAD} rad within {TARGET_TRAIN_S:.0f} s",
                lambda v, s=suffix: f"{v:.4f} rad in {fig['reach_train_s' + s]:.1f} s",
            )
        )
        targets.append(
            (
                f"reach_train_vs_mujoco_rollout{suffix}",
                f"training{label} <= {TARGET_VS_MUJOCO:.0f}x bare mujoco.rollout's time",
                lambda v: f"{v:.2f}x",
            )
        )
    if write:  # the throw_* figures are bench_throw.py's: kept
        fig = merged_into(out, fig, lambda key: not is_throw_figure(key))
    report_and_write(
        fig, out, say, write, targets=targets, note=f"load average {load:.2f} before the run; "
    )
    return {k: (float(v) if isinstance(v, (np.floating,)) else v) for k, v in fig.items()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    main(out=ap.parse_args().out)
