"""PPO on asr's batched environments, with an atomic, resumable training folder; two backends.

train(task, algo="ppo", total_steps, num_envs, seed, threads=1, out_dir=..., resume=False,
env_kwargs=None, **hyperparameters) trains PPO on the task's vector env (all sub-envs in one C
call per step). algo: "sb3" (Stable-Baselines3's PPO, asr.rl._sb3), "rsl_rl" (rsl-rl-lib's PPO,
asr.rl._rsl_rl) or "ppo", the default backend (asr.rl.DEFAULT_BACKEND: the faster of
the two to reach Reach2DOF's goal, benchmarks/bench_rl.py). Both normalise observations (not
rewards). The folder out_dir holds:

- the backend's files: model.zip and vecnormalize.json (sb3), model.pt (rsl_rl), data only:
  loading a folder never runs code from it (asr.rl._safe_load; docs/learning.md, "What loading
  a training folder trusts"),
- config.json: task id, robot, variant, algo ("ppo"), backend (the one used: "sb3" or
  "rsl_rl") and its version, seed, num_envs, threads, env_kwargs, hyperparameters,
  total_steps, asr version (and, once training ends, the final held-out evaluation),
- curve.json: the learning curve, one row per PPO rollout + update: {"steps": env-steps (all
  sub-envs), "wall_s": training wall time so far, "return": mean return of the last 100
  episodes ended (null before the first), "length": their mean length, "metric": the task's
  metric on held-out episodes after the update (asr.rl._results.task_metric: for the tasks with
  targets the mean final joint error, rad, the norm of q - target at the end of an episode
  driven by the deterministic policy; for Throw the mean distance thrown, m, 0 for an episode
  without a release; null when not evaluated)}.

Checkpoints: after every update the files are written, synced, into a new hidden folder
out_dir/.checkpoint-<random>/, and the symlink out_dir/checkpoint is switched to it in one atomic
rename (asr.common.files.write_version); the files in out_dir are symlinks into checkpoint/. A
process
killed at any time thus leaves the files of one update, never a mix. The sb3 folders of earlier
versions hold a pickle (vecnormalize.pkl): they are refused, saying why and how to go on.
resume=True continues from the folder: the model, its optimiser and the normalisation
statistics are restored, the curve is cut at the model's steps, and the environments start new
episodes (their physics state is not saved).

Evaluation: held-out targets are the episodes of seeds EVAL_SEED_BASE + k (training seeds are
seed + i and the draws of those generators), one full episode each, deterministic policy.

Determinism: the same arguments with threads=1 give the same curve (all but wall_s) and model.

The hyperparameters and their checks live in asr.rl._config; TrainResult, load_checkpoint and
the evaluation in asr.rl._results (all importable from here).
"""

import os
import time

import numpy as np
import torch

import asr
from asr.common.executors import completed
from asr.common.files import current_version, write_version
from asr.core.errors import SimulationError
from asr.rl._config import (
    HYPERPARAMETERS,
    _check_int,
    backend_of,
    check_backend_hyperparameters,
    task_class,
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


def _backend_class(name):
    """The backend class of a backend name (its module imported only when used)."""
    if name == "rsl_rl":
        from asr.rl._rsl_rl import RslRlBackend

        return RslRlBackend
    from asr.rl._sb3 import SB3Backend

    return SB3Backend


def _backend_version(name):
    from importlib.metadata import version

    dist = {"sb3": "stable-baselines3", "rsl_rl": "rsl-rl-lib"}[name]
    return f"{dist} {version(dist)}"


def _resume_checks(out_dir, task, backend, algo, seed, num_envs, env_kwargs, hyperparameters):
    """(previous TrainResult, hyperparameters) of the folder to continue; ValueError when an
    argument differs from the checkpoint's."""
    prev = load_checkpoint(out_dir)
    cfg = prev.config
    used = cfg.get("backend", "sb3")
    if algo != "ppo" and backend != used:  # "ppo" continues whatever backend the folder has
        raise ValueError(
            f"algo: got {algo!r}, but the checkpoint in {out_dir} was trained with the "
            f"{used!r} backend (resume needs the same)"
        )
    for key, value in (
        ("task", task),
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
    if hyperparameters:
        given = validate_hyperparameters({**hp, **hyperparameters}, num_envs)
        diff = [k for k in hyperparameters if given[k] != hp[k]]
        if diff:
            raise ValueError(
                f"{diff[0]}: got {given[diff[0]]!r}, but the checkpoint in "
                f"{out_dir} was trained with {hp[diff[0]]!r} (resume keeps "
                "the hyperparameters)"
            )
    return prev, hp, used


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
    """Train PPO with the backend `algo` ("sb3", "rsl_rl" or "ppo": the default backend) on
    `task` (an asr gymnasium id) for total_steps env-steps (all sub-envs together; PPO rounds up
    to whole rollouts of n_steps * num_envs) with num_envs sub-envs of one batch. threads: torch
    and asr threads (1 for reproducible runs). out_dir: the training folder (None: nothing
    written, no resume). resume: continue from out_dir. Hyperparameters: HYPERPARAMETERS
    (validated, ranges in the errors). env_kwargs: keyword arguments of the task class (e.g.
    Throw's actuator="rigid"), checked first, stored in config.json and used again by the
    held-out evaluation and resume. Returns a TrainResult.

    A simulation error stops training with asr.SimulationError naming the instance, the step and
    the training step; the folder keeps the last checkpoint."""
    backend = backend_of(algo)
    cls = task_class(task)
    metric = task_metric(cls)
    env_kwargs = validate_env_kwargs(cls, env_kwargs)
    total_steps = _check_int("total_steps", total_steps, 1)
    num_envs = _check_int("num_envs", num_envs, 1)
    seed = _check_int("seed", seed, 0)
    threads = _check_int("threads", threads, 1)
    if resume and out_dir is None:
        raise ValueError("resume: needs out_dir (the folder to continue)")
    prev = None
    if out_dir is not None and resume:
        out_dir = os.fspath(out_dir)
        prev, hp, backend = _resume_checks(
            out_dir, task, backend, algo, seed, num_envs, env_kwargs, hyperparameters
        )
    else:
        hp = validate_hyperparameters(hyperparameters, num_envs)
        check_backend_hyperparameters(backend, hp)
        if out_dir is not None:
            out_dir = os.fspath(out_dir)
            existing = [n for n in FILES if os.path.exists(os.path.join(out_dir, n))]
            if existing:
                raise ValueError(
                    f"out_dir: {out_dir!r} already holds {existing[0]}; pass "
                    "resume=True (--resume) to continue it, or another folder"
                )
            os.makedirs(out_dir, exist_ok=True)
    config = {
        "task": task,
        "robot": cls.robot,
        "variant": cls.variant,
        "algo": "ppo",
        "backend": backend,
        "backend_version": _backend_version(backend),
        "seed": seed,
        "num_envs": num_envs,
        "threads": threads,
        "env_kwargs": env_kwargs,
        "hyperparameters": hp,
        "total_steps": total_steps,
        "asr_version": asr.__version__,
        "observation_normalisation": (
            "VecNormalize(norm_obs=True, norm_reward=False)"
            if backend == "sb3"
            else "EmpiricalNormalization in the actor and the critic (rsl-rl-lib)"
        ),
        "metric": metric.text,
        "metric_name": metric.name,
        "metric_unit": metric.unit,
        "eval_seed_base": EVAL_SEED_BASE,
    }
    if out_dir is not None:
        config_prev = prev.config if prev is not None else {}
        config["started"] = config_prev.get("started", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        venv = cls(num_envs, threads=threads, **env_kwargs)
        files = current_version(out_dir) if prev is not None else None
        learner = _backend_class(backend)(venv, hp, seed, files, out_dir)
        run = _Run(learner, config, hp, cls, threads, env_kwargs, out_dir, prev)
        run.learn(total_steps, task if progress_bar else None)
        final = run.final_evaluation(metric)
    finally:
        torch.set_num_threads(old_threads)
    model, vecnorm = learner.policy()
    learner.close()
    final_error = final if metric.key == "final_error_rad" else None
    return TrainResult(model, vecnorm, config, run.curve, final_error, out_dir, final)


class _Run:
    """One training run's shared part, whatever the backend: the curve rows, the held-out
    evaluations, the checkpoints and the progress bar."""

    def __init__(self, learner, config, hp, cls, threads, env_kwargs, out_dir, prev):
        self.learner, self.config, self.hp, self.cls = learner, config, hp, cls
        self.threads, self.env_kwargs, self.out_dir = threads, env_kwargs, out_dir
        steps = learner.num_timesteps
        self.curve = [r for r in prev.curve if r["steps"] <= steps] if prev is not None else []
        self.wall0 = self.curve[-1]["wall_s"] if self.curve else 0.0
        self.updates = 0
        self.t0 = time.perf_counter()

    def evaluate(self, episodes):
        model, vecnorm = self.learner.policy()
        values = evaluate_policy(model, vecnorm, self.cls, episodes, self.threads, self.env_kwargs)
        return float(np.mean(values))

    def checkpoint(self):
        if self.out_dir is None:
            return
        write_version(
            self.out_dir,
            [
                ("config.json", _json_writer(self.config)),
                *self.learner.writers(),
                ("curve.json", _json_writer(self.curve)),
            ],
        )

    def add_row(self):
        eps = self.learner.episodes()
        self.updates += 1
        every = self.hp["eval_every"]
        metric = None
        if every and self.updates % every == 0:
            metric = self.evaluate(self.hp["eval_episodes"])
        self.curve.append(
            {
                "steps": self.learner.num_timesteps,
                "wall_s": self.wall0 + time.perf_counter() - self.t0,
                "return": float(np.mean([e[0] for e in eps])) if eps else None,
                "length": float(np.mean([e[1] for e in eps])) if eps else None,
                "metric": metric,
            }
        )
        self.checkpoint()

    def learn(self, total_steps, bar_task):
        """Train to total_steps env-steps; bar_task: show a progress bar titled with it."""
        learner, out_dir = self.learner, self.out_dir
        remaining = total_steps - learner.num_timesteps
        bar = None
        if bar_task is not None:
            from tqdm.auto import tqdm

            bar = tqdm(
                total=total_steps,
                initial=min(learner.num_timesteps, total_steps),
                unit="step",
                desc=f"PPO {bar_task}",
                dynamic_ncols=True,
            )

        def on_step(n):
            if bar is not None:
                bar.update(min(n, max(0, total_steps - bar.n)))

        try:
            if remaining > 0:
                if not self.curve and learner.num_timesteps == 0:
                    self.checkpoint()  # a folder from the start: config and the untrained model
                learner.learn(remaining, self.add_row, on_step)
        except SimulationError as exc:
            raise SimulationError(
                exc.instance,
                exc.joint,
                exc.step,
                exc.code,
                hint=f"{exc.hint}; training stopped at {learner.num_timesteps} env-steps"
                + (f", the last checkpoint in {out_dir} is kept" if out_dir else ""),
            ) from exc
        finally:
            if bar is not None:
                bar.close()

    def final_evaluation(self, metric):
        episodes = self.hp["final_eval_episodes"]
        if not episodes:
            return None
        final = self.evaluate(episodes)
        self.config["final_eval"] = {
            "episodes": episodes,
            metric.key: final,
            "metric": final,
            "steps": self.learner.num_timesteps,
        }
        self.checkpoint()
        return final


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
