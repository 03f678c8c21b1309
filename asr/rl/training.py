"""PPO (Stable-Baselines3) on asr's batched environments, with an atomic, resumable training folder.

train(task, algo="ppo", total_steps, num_envs, seed, threads=1, out_dir=..., resume=False,
**hyperparameters) trains on SB3VecEnv (all sub-envs in one C call per step) wrapped in SB3's
VecMonitor (episode returns) and VecNormalize (observations only, norm_reward=False). The folder
out_dir holds:

- model.zip: the PPO model (SB3 model.save),
- vecnormalize.pkl: the VecNormalize statistics (pickled as VecNormalize.save does),
- config.json: task id, robot, variant, algo, seed, num_envs, threads, hyperparameters,
  total_steps, asr version (and, once training ends, the final held-out evaluation),
- curve.json: the learning curve, one row per PPO rollout + update: {"steps": env-steps (all
  sub-envs), "wall_s": training wall time so far, "return": mean return of the last 100
  episodes ended (SB3's ep_info_buffer; null before the first), "length": their mean length,
  "metric": the task's metric on held-out episodes after the update (asr.rl._results.task_metric:
  for the tasks with targets the mean final joint error, rad, the norm of q - target at the end
  of an episode driven by the deterministic policy; for Throw the mean distance thrown, m, 0 for
  an episode without a release; null when not evaluated)}.

Checkpoints: after every update the four files are written, synced, into a new hidden folder
out_dir/.checkpoint-<random>/, and the symlink out_dir/checkpoint is switched to it in one atomic
rename (asr._files.write_version); out_dir/model.zip etc. are symlinks into checkpoint/. A
process killed at any time thus leaves the four files of one update, never a mix. Folders of
earlier versions (plain files) load and resume too. resume=True continues from the folder: the
model, its optimiser and the normalisation statistics are restored, the curve is cut at the
model's steps, and the environments start new episodes (their physics state is not saved).

Evaluation: held-out targets are the episodes of seeds EVAL_SEED_BASE + k (training seeds are
seed + i and the draws of those generators), one full episode each, deterministic policy.

Determinism: the same arguments with threads=1 give the same curve (all but wall_s) and model.

The hyperparameters and their checks live in asr.rl._config; TrainResult, load_checkpoint and
the evaluation in asr.rl._results (all importable from here).
"""

import os
import pickle
import time

import numpy as np
import stable_baselines3  # noqa: F401  (the extra [rl]: asr.rl names it when missing)
import torch

import asr
from asr._executors import completed
from asr._files import current_version, write_version
from asr.errors import SimulationError
from asr.rl._config import (
    ALGOS,
    HYPERPARAMETERS,
    _check_int,
    _task_class,
    validate_env_kwargs,
    validate_hyperparameters,
)
from asr.rl._results import (
    EVAL_SEED_BASE,
    FILES,
    TrainResult,
    _json_writer,
    curve_figure,
    evaluate_policy,
    load_checkpoint,
    task_metric,
)


def train(
    task,
    algo="ppo",
    total_steps=100_000,
    num_envs=64,
    seed=0,
    threads=1,
    out_dir=None,
    resume=False,
    progress_bar=False,
    env_kwargs=None,
    **hyperparameters,
):
    """Train `algo` on `task` (an asr gymnasium id) for total_steps env-steps (all sub-envs
        together; PPO rounds up to whole rollouts of n_steps * num_envs) with num_envs sub-envs of
        one batch. threads: torch and asr threads (1 for reproducible runs). out_dir: the training
        folder (None: nothing written, no resume). resume: continue from out_dir. Hyperparameters:
        HYPERPARAMETERS (validated, ranges in the errors). env_kwargs: keyword arguments of the task
    class (e.g. Throw's actuator="rigid"), checked first, stored in config.json and used again by
    the held-out evaluation and resume. Returns a TrainResult.

        A simulation error stops training with asr.SimulationError naming the instance, the step and
        the training step; the folder keeps the last checkpoint."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from asr.rl.vec_env import SB3VecEnv

    if algo not in ALGOS:
        raise ValueError(f"algo: got {algo!r}, valid: {', '.join(ALGOS)}")
    cls = _task_class(task)
    metric = task_metric(cls)
    env_kwargs = validate_env_kwargs(cls, env_kwargs)
    total_steps = _check_int("total_steps", total_steps, 1)
    num_envs = _check_int("num_envs", num_envs, 1)
    seed = _check_int("seed", seed, 0)
    threads = _check_int("threads", threads, 1)
    if resume and out_dir is None:
        raise ValueError("resume: needs out_dir (the folder to continue)")
    prev = None
    if out_dir is not None:
        out_dir = os.fspath(out_dir)
        if resume:
            prev = load_checkpoint(out_dir)
            cfg = prev.config
            for key, value in (
                ("task", task),
                ("algo", algo),
                ("seed", seed),
                ("num_envs", num_envs),
                ("env_kwargs", env_kwargs),
            ):
                if cfg.get(key, {} if key == "env_kwargs" else None) != value:
                    raise ValueError(
                        f"{key}: got {value!r}, but the checkpoint in {out_dir} was "
                        f"trained with {cfg.get(key)!r} (resume needs the same)"
                    )
            hp = validate_hyperparameters(cfg["hyperparameters"], num_envs)
            given = (
                validate_hyperparameters({**hp, **hyperparameters}, num_envs)
                if hyperparameters
                else None
            )
            if given is not None:
                diff = [k for k in hyperparameters if given[k] != hp[k]]
                if diff:
                    raise ValueError(
                        f"{diff[0]}: got {given[diff[0]]!r}, but the checkpoint in "
                        f"{out_dir} was trained with {hp[diff[0]]!r} (resume keeps "
                        "the hyperparameters)"
                    )
        else:
            hp = validate_hyperparameters(hyperparameters, num_envs)
            existing = [n for n in FILES if os.path.exists(os.path.join(out_dir, n))]
            if existing:
                raise ValueError(
                    f"out_dir: {out_dir!r} already holds {existing[0]}; pass "
                    "resume=True (--resume) to continue it, or another folder"
                )
            os.makedirs(out_dir, exist_ok=True)
    else:
        hp = validate_hyperparameters(hyperparameters, num_envs)

    config = {
        "task": task,
        "robot": cls.robot,
        "variant": cls.variant,
        "algo": algo,
        "seed": seed,
        "num_envs": num_envs,
        "threads": threads,
        "env_kwargs": env_kwargs,
        "hyperparameters": hp,
        "total_steps": total_steps,
        "asr_version": asr.__version__,
        "observation_normalisation": "VecNormalize(norm_obs=True, norm_reward=False)",
        "metric": metric.text,
        "metric_name": metric.name,
        "metric_unit": metric.unit,
        "eval_seed_base": EVAL_SEED_BASE,
    }

    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    venv = cls(num_envs, threads=threads, **env_kwargs)
    sb3env = SB3VecEnv(venv)
    monitor = VecMonitor(sb3env)
    curve = []
    wall0 = 0.0
    if prev is not None:
        vecnorm = prev.vecnormalize
        vecnorm.set_venv(monitor)
        vecnorm.training = True
        model = PPO.load(
            os.path.join(current_version(out_dir), "model.zip"), env=vecnorm, device="cpu"
        )
        model.set_random_seed(seed + model.num_timesteps)
        curve = [r for r in prev.curve if r["steps"] <= model.num_timesteps]
        wall0 = curve[-1]["wall_s"] if curve else 0.0
    else:
        vecnorm = VecNormalize(monitor, norm_obs=True, norm_reward=False, gamma=hp["gamma"])
        model = PPO(
            "MlpPolicy",
            vecnorm,
            learning_rate=hp["learning_rate"],
            n_steps=hp["n_steps"],
            batch_size=hp["batch_size"],
            n_epochs=hp["n_epochs"],
            gamma=hp["gamma"],
            gae_lambda=hp["gae_lambda"],
            clip_range=hp["clip_range"],
            ent_coef=hp["ent_coef"],
            vf_coef=hp["vf_coef"],
            max_grad_norm=hp["max_grad_norm"],
            seed=seed,
            device="cpu",
            verbose=0,
            policy_kwargs={"net_arch": list(hp["net_arch"]), "log_std_init": hp["log_std_init"]},
        )
    if out_dir is not None:
        config_prev = prev.config if prev is not None else {}
        config["started"] = config_prev.get("started", time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    state = {"updates": 0, "t0": time.perf_counter()}

    def wall():
        return wall0 + time.perf_counter() - state["t0"]

    def checkpoint():
        if out_dir is None:
            return
        vecnorm.asr_num_timesteps = model.num_timesteps  # travels in the pickle
        write_version(
            out_dir,
            [
                ("config.json", _json_writer(config)),
                ("vecnormalize.pkl", lambda f: pickle.dump(vecnorm, f)),
                ("model.zip", lambda f: model.save(f)),
                ("curve.json", _json_writer(curve)),
            ],
        )

    def add_row():
        eps = [(e["r"], e["l"]) for e in model.ep_info_buffer]
        metric = None
        state["updates"] += 1
        if hp["eval_every"] and state["updates"] % hp["eval_every"] == 0:
            metric = float(
                np.mean(
                    evaluate_policy(model, vecnorm, cls, hp["eval_episodes"], threads, env_kwargs)
                )
            )
        curve.append(
            {
                "steps": int(model.num_timesteps),
                "wall_s": wall(),
                "return": float(np.mean([e[0] for e in eps])) if eps else None,
                "length": float(np.mean([e[1] for e in eps])) if eps else None,
                "metric": metric,
            }
        )
        checkpoint()

    bar = None
    if progress_bar:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=total_steps,
            initial=min(model.num_timesteps, total_steps),
            unit="step",
            desc=f"PPO {task}",
            dynamic_ncols=True,
        )

    class _Callback(BaseCallback):
        def _on_rollout_start(self):
            if self.model.num_timesteps > (curve[-1]["steps"] if curve else 0) and state["pending"]:
                add_row()  # the previous rollout's update is done
            state["pending"] = True

        def _on_step(self):
            if bar is not None:
                bar.update(min(self.training_env.num_envs, max(0, total_steps - bar.n)))
            return True

    state["pending"] = False
    remaining = total_steps - model.num_timesteps
    try:
        if remaining > 0:
            if prev is None:
                checkpoint()  # a folder from the start: config and the untrained model
            model.learn(
                total_timesteps=remaining,
                callback=_Callback(),
                reset_num_timesteps=False,
                progress_bar=False,
            )
            if state["pending"]:
                add_row()
    except SimulationError as exc:
        raise SimulationError(
            exc.instance,
            exc.joint,
            exc.step,
            exc.code,
            hint=f"{exc.hint}; training stopped at {model.num_timesteps} "
            f"env-steps" + (f", the last checkpoint in {out_dir} is kept" if out_dir else ""),
        ) from exc
    finally:
        if bar is not None:
            bar.close()
        torch.set_num_threads(old_threads)
    final = None
    try:
        torch.set_num_threads(threads)
        if hp["final_eval_episodes"]:
            final = float(
                np.mean(
                    evaluate_policy(
                        model, vecnorm, cls, hp["final_eval_episodes"], threads, env_kwargs
                    )
                )
            )
            config["final_eval"] = {
                "episodes": hp["final_eval_episodes"],
                metric.key: final,
                "metric": final,
                "steps": int(model.num_timesteps),
            }
            checkpoint()
    finally:
        torch.set_num_threads(old_threads)
    vecnorm.training = False
    sb3env.close()
    final_error = final if metric.key == "final_error_rad" else None
    return TrainResult(model, vecnorm, config, curve, final_error, out_dir, final)


def _train_summary(kwargs):
    """train(**kwargs) as plain data (no torch objects cross the executor)."""
    res = train(**kwargs)
    return {
        "config": res.config,
        "curve": res.curve,
        "final_error_rad": res.final_error_rad,
        "final_metric": res.final_metric,
        "out_dir": res.out_dir,
    }


def train_many(runs, executor=None, out_root=None):
    """Several training runs (seeds, hyperparameters): `runs` is a list of train() keyword
    dicts; each run writes its folder out_root/run-<k> when out_root is given (else its own
    out_dir, if any). executor: None (one after another here), a dask.distributed.Client or a
    concurrent.futures.Executor, as in asr.sweep: processes or dask workers, not threads (runs
    on threads of one process share its global torch and NumPy random generators, so they are
    not reproducible). Returns, in the order of `runs`, dicts with the run's config, curve,
    final_error_rad, final_metric and out_dir."""
    if not isinstance(runs, (list, tuple)) or not all(isinstance(r, dict) for r in runs):
        raise TypeError(
            f"runs: expected a list of train() keyword dicts, got {type(runs).__name__}"
        )
    jobs = []
    for k, kwargs in enumerate(runs):
        if "task" not in kwargs:
            raise ValueError(f"runs[{k}]: needs 'task' (an asr gymnasium id)")
        kwargs = dict(kwargs)
        if out_root is not None:
            kwargs["out_dir"] = os.path.join(os.fspath(out_root), f"run-{k}")
        jobs.append((kwargs,))
    if executor is None:
        return [_train_summary(*job) for job in jobs]
    out = [None] * len(jobs)
    for k, summary in completed(executor, _train_summary, jobs):
        out[k] = summary
    return out


__all__ = [
    "train",
    "train_many",
    "TrainResult",
    "load_checkpoint",
    "validate_hyperparameters",
    "evaluate_policy",
    "task_metric",
    "curve_figure",
    "HYPERPARAMETERS",
    "EVAL_SEED_BASE",
]
