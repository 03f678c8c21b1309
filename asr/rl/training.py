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
  "rsl_rl") and its version, seed, num_envs, threads, env_kwargs, hyperparameters, sources
  (where each hyperparameter, num_envs and total_steps came from: "set", "task", "default"),
  total_steps, evaluation (the evaluation callback's counters), asr version (and, once
  training ends, the final held-out evaluation),
- curve.json: the learning curve, one row per PPO rollout + update: {"steps": env-steps (all
  sub-envs), "wall_s": training wall time so far, "return": mean return of the last 100
  episodes ended (null before the first), "length": their mean length, "metric": the task's
  metric on held-out episodes after the update (asr.rl._results.task_metric: for the tasks with
  targets the mean final joint error, rad, the norm of q - target at the end of an episode
  driven by the deterministic policy; for Throw the mean distance thrown, m, 0 for an episode
  without a release; null when not evaluated)},
- best/ (the evaluation callback, eval_every > 0): the best evaluation's model, a training
  folder of the same files (config.json with "best": its env-steps and metric),
- tb/ (unless tensorboard=False): TensorBoard event files, TB_SCALARS.

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
from asr.common.optional import need
from asr.core.errors import SimulationError
from asr.rl._config import (
    HYPERPARAMETERS,
    _check_int,
    backend_of,
    check_backend_hyperparameters,
    resolve_defaults,
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
    evaluate_episodes,
    evaluate_policy,
    load_checkpoint,
    task_metric,
)

# the TensorBoard scalars (out_dir/tb, one point per PPO update at its env-steps), the same
# names and meanings for both backends: name -> what it is
TB_SCALARS = {
    "rollout/ep_rew_mean": "mean return of the last 100 training episodes ended",
    "rollout/ep_len_mean": "their mean length (env-steps)",
    "train/policy_loss": "the update's clipped surrogate loss (mean over its mini-batches)",
    "train/value_loss": "the update's value-function loss (mean squared error)",
    "train/entropy": "the policy's mean entropy in the update (nats)",
    "train/learning_rate": "the learning rate of the update",
    "time/fps": "env-steps per second of wall time since the previous update (all included)",
    "eval/mean_return": "mean return of the evaluation's held-out episodes (deterministic)",
    "eval/metric": "the task's metric on them (final joint error, rad; distance thrown, m)",
    "eval/best_metric": "the best evaluation's metric so far",
}
# the subfolders of a training folder: the TensorBoard event files, the best model
TB_FOLDER, BEST_FOLDER = "tb", "best"
_TB_FEATURE = "asr.rl.train's TensorBoard logs (hyperparameter tensorboard=false: none)"


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


def _resume_checks(prev, task, backend, algo, seed, num_envs, env_kwargs, hyperparameters):
    """(hyperparameters, backend) of the folder to continue (prev: its TrainResult);
    ValueError when an argument differs from the checkpoint's."""
    out_dir = prev.out_dir
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
    return hp, used


def train(
    task,
    algo="ppo",
    total_steps=None,
    num_envs=None,
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

    Defaults: what the caller leaves out (None for total_steps and num_envs, a hyperparameter
    not passed) comes from the task's registered defaults (asr.envs.TRAIN_DEFAULTS), else from
    the generic ones (HYPERPARAMETERS, 64 sub-envs, 100000 env-steps); config.json's "sources"
    says which for each ("set", "task", "default"; asr.rl._config.resolve_defaults). resume:
    total_steps and num_envs None take the folder's.

    Evaluation callback: every eval_every env-steps (at the first update past each multiple,
    and after the last update) the deterministic policy runs eval_episodes held-out episodes;
    an evaluation whose task metric beats the best by more than min_delta makes it the best,
    written to out_dir/best/ (the folder's format: load_checkpoint(out_dir / "best")), and
    patience > 0 evaluations in a row without one stop training there. The counters are in
    config.json's "evaluation" (kept by resume). TensorBoard: out_dir/tb (TB_SCALARS) unless
    tensorboard=False.

    A simulation error stops training with asr.SimulationError naming the instance, the step and
    the training step; the folder keeps the last checkpoint."""
    backend = backend_of(algo)
    cls = task_class(task)
    metric = task_metric(cls)
    env_kwargs = validate_env_kwargs(cls, env_kwargs)
    seed = _check_int("seed", seed, 0)
    threads = _check_int("threads", threads, 1)
    if resume and out_dir is None:
        raise ValueError("resume: needs out_dir (the folder to continue)")
    prev = None
    if out_dir is not None and resume:
        out_dir = os.fspath(out_dir)
        prev = load_checkpoint(out_dir)
        if num_envs is None:
            num_envs = prev.config.get("num_envs")
        if total_steps is None:
            total_steps = prev.config.get("total_steps")
        total_steps = _check_int("total_steps", total_steps, 1)
        num_envs = _check_int("num_envs", num_envs, 1)
        hp, backend = _resume_checks(
            prev, task, backend, algo, seed, num_envs, env_kwargs, hyperparameters
        )
        sources = prev.config.get("sources")
    else:
        merged, sources, num_envs, total_steps = resolve_defaults(
            task, hyperparameters, num_envs, total_steps
        )
        total_steps = _check_int("total_steps", total_steps, 1)
        num_envs = _check_int("num_envs", num_envs, 1)
        check_backend_hyperparameters(backend, validate_hyperparameters(merged))
        hp = validate_hyperparameters(merged, num_envs)  # then one rollout's size
        if out_dir is not None:
            out_dir = os.fspath(out_dir)
            existing = [n for n in FILES if os.path.exists(os.path.join(out_dir, n))]
            if existing:
                raise ValueError(
                    f"out_dir: {out_dir!r} already holds {existing[0]}; pass "
                    "resume=True (--resume) to continue it, or another folder"
                )
            os.makedirs(out_dir, exist_ok=True)
    if out_dir is not None and hp["tensorboard"]:
        need("tensorboard", "rl", _TB_FEATURE)  # before anything is built
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
        "sources": sources,
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
        run = _Run(learner, config, hp, cls, threads, env_kwargs, out_dir, prev, metric)
        run.learn(total_steps, task if progress_bar else None)
        final = run.final_evaluation(metric)
    finally:
        torch.set_num_threads(old_threads)
    model, vecnorm = learner.policy()
    learner.close()
    final_error = final if metric.key == "final_error_rad" else None
    return TrainResult(model, vecnorm, config, run.curve, final_error, out_dir, final)


class _Run:
    """One training run's shared part, whatever the backend: the curve rows, the evaluation
    callback (held-out evaluations, the best model, early stopping), the checkpoints, the
    TensorBoard scalars and the progress bar."""

    def __init__(self, learner, config, hp, cls, threads, env_kwargs, out_dir, prev, metric):
        self.learner, self.config, self.hp, self.cls = learner, config, hp, cls
        self.threads, self.env_kwargs, self.out_dir = threads, env_kwargs, out_dir
        self.metric, self.total_steps = metric, config["total_steps"]
        steps = learner.num_timesteps
        self.curve = [r for r in prev.curve if r["steps"] <= steps] if prev is not None else []
        self.wall0 = self.curve[-1]["wall_s"] if self.curve else 0.0
        self.updates = 0
        self.t0 = time.perf_counter()
        self.last = (steps, self.wall0)  # (env-steps, wall_s) of the previous row: fps
        self.state = _evaluation_state(prev, metric)
        config["evaluation"] = self.state
        self.board = None
        if out_dir is not None and hp["tensorboard"]:
            self.board = _Board(os.path.join(out_dir, TB_FOLDER), steps)

    def evaluate(self, episodes):
        return float(np.mean(self.evaluate_episodes(episodes)[0]))

    def evaluate_episodes(self, episodes):
        model, vecnorm = self.learner.policy()
        return evaluate_episodes(model, vecnorm, self.cls, episodes, self.threads, self.env_kwargs)

    def _writers(self, config):
        return [
            ("config.json", _json_writer(config)),
            *self.learner.writers(),
            ("curve.json", _json_writer(self.curve)),
        ]

    def checkpoint(self):
        if self.out_dir is None:
            return
        write_version(self.out_dir, self._writers(self.config))

    def save_best(self):
        """The current model as out_dir/best/: the training folder's format and files (its
        config.json with "best": the evaluation that made it the best)."""
        if self.out_dir is None:
            return
        folder = os.path.join(self.out_dir, BEST_FOLDER)
        os.makedirs(folder, exist_ok=True)
        best = {
            "steps": self.state["best_steps"],
            "metric": self.state["best"],
            "metric_key": self.metric.key,
            "episodes": self.hp["eval_episodes"],
        }
        write_version(folder, self._writers(dict(self.config, best=best)))

    def _due(self, steps):
        """Whether the update that reached `steps` env-steps is evaluated."""
        every = self.hp["eval_every"]
        if not every:
            return False
        last = self.state["last_eval_steps"] or 0
        return steps // every > last // every or steps >= self.total_steps

    def _judge(self, value, steps):
        """Count an evaluation of metric `value` at `steps`: True when it is the new best."""
        st, delta = self.state, self.hp["min_delta"]
        st["evaluations"] += 1
        st["last_eval_steps"] = steps
        best = st["best"]
        if best is None or (
            value < best - delta if self.metric.better == "lower" else value > best + delta
        ):
            st.update(best=value, best_steps=steps, without_improvement=0)
            return True
        st["without_improvement"] += 1
        patience = self.hp["patience"]
        if patience and st["without_improvement"] >= patience:
            st["stopped_early"] = True
        return False

    def add_row(self):
        """After an update: the curve row (an evaluation if due), the best model, TensorBoard,
        the checkpoint. Returns True to stop training (early stopping)."""
        eps = self.learner.episodes()
        self.updates += 1
        steps = self.learner.num_timesteps
        metric = mean_return = None
        if self._due(steps):
            values, returns = self.evaluate_episodes(self.hp["eval_episodes"])
            metric, mean_return = float(np.mean(values)), float(np.mean(returns))
        self.curve.append(
            {
                "steps": steps,
                "wall_s": self.wall0 + time.perf_counter() - self.t0,
                "return": float(np.mean([e[0] for e in eps])) if eps else None,
                "length": float(np.mean([e[1] for e in eps])) if eps else None,
                "metric": metric,
            }
        )
        if metric is not None and self._judge(metric, steps):
            self.save_best()
        if self.board is not None:
            self._scalars(self.curve[-1], mean_return)
        self.checkpoint()
        return self.state["stopped_early"]

    def _scalars(self, row, mean_return):
        steps, wall = row["steps"], row["wall_s"]
        values = {
            "rollout/ep_rew_mean": row["return"],
            "rollout/ep_len_mean": row["length"],
        }
        stats = self.learner.update_stats() or {}
        for key in ("policy_loss", "value_loss", "entropy", "learning_rate"):
            values[f"train/{key}"] = stats.get(key)
        if wall > self.last[1] and steps > self.last[0]:
            values["time/fps"] = (steps - self.last[0]) / (wall - self.last[1])
        if row["metric"] is not None:
            values["eval/mean_return"] = mean_return
            values["eval/metric"] = row["metric"]
            values["eval/best_metric"] = self.state["best"]
        self.last = (steps, wall)
        self.board.add(values, steps)

    def learn(self, total_steps, bar_task):
        """Train to total_steps env-steps (or an early stop); bar_task: show a progress bar
        titled with it."""
        learner, out_dir = self.learner, self.out_dir
        self.total_steps = total_steps
        remaining = total_steps - learner.num_timesteps
        if self.state["stopped_early"]:
            remaining = 0  # a resumed run that had stopped early stays stopped
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
            if self.board is not None:
                self.board.close()

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


def _evaluation_state(prev, metric):
    """The evaluation callback's counters (config.json's "evaluation"): those of the folder
    resumed (prev: its TrainResult, checked: ValueError naming its config.json), else new."""
    state = {
        "metric": metric.key,
        "better": metric.better,
        "evaluations": 0,
        "last_eval_steps": None,
        "best": None,
        "best_steps": None,
        "without_improvement": 0,
        "stopped_early": False,
    }
    old = prev.config.get("evaluation") if prev is not None else None
    if old is None:
        return state
    shown = os.path.join(prev.out_dir or "", "config.json")
    if not isinstance(old, dict):
        raise ValueError(f"{shown}: evaluation: expected a JSON object")

    def number(key, kind, none_ok):
        v = old.get(key, state[key])
        if v is None and none_ok:
            return None
        ok = not isinstance(v, bool) and isinstance(v, (int, float) if kind is float else int)
        if not ok or not np.isfinite(v) or v < (-np.inf if kind is float else 0):
            raise ValueError(
                f"{shown}: evaluation: {key}: got {v!r}, expected "
                + ("a finite number" if kind is float else "an int >= 0")
                + (" or null" if none_ok else "")
            )
        return kind(v)

    for key, kind, none_ok in (
        ("evaluations", int, False),
        ("last_eval_steps", int, True),
        ("best", float, True),
        ("best_steps", int, True),
        ("without_improvement", int, False),
    ):
        state[key] = number(key, kind, none_ok)
    stopped = old.get("stopped_early", False)
    if not isinstance(stopped, bool):
        raise ValueError(f"{shown}: evaluation: stopped_early: got {stopped!r}, expected a bool")
    state["stopped_early"] = stopped
    return state


class _Board:
    """TensorBoard event files in `folder` (torch's SummaryWriter, extra [rl]); a resumed run
    (purge_step: its env-steps) makes TensorBoard drop the points past its checkpoint that an
    interrupted run had written."""

    def __init__(self, folder, purge_step):
        need("tensorboard", "rl", _TB_FEATURE)
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(folder, purge_step=purge_step + 1 if purge_step else None)

    def add(self, values, steps):
        for name, value in values.items():
            if value is not None and np.isfinite(value):
                self.writer.add_scalar(name, float(value), steps)
        self.writer.flush()

    def close(self):
        self.writer.close()


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
    "TB_SCALARS",
]
