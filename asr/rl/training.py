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
  "metric": the task's metric on held-out targets after the update (mean final joint error,
  rad: the norm of q - target at the end of an episode driven by the deterministic policy; null
  when not evaluated)}.

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
"""

import dataclasses
import json
import math
import os
import pickle
import time

import numpy as np
import stable_baselines3  # noqa: F401  (the extra [rl]: asr.rl names it when missing)
import torch

import asr
from asr._executors import completed
from asr._files import current_version, write_version
from asr._optional import need
from asr.errors import SimulationError

EVAL_SEED_BASE = 1_000_000_000
ALGOS = ("ppo",)
FILES = ("model.zip", "vecnormalize.pkl", "config.json", "curve.json")

# name: (default, kind, low, high, low_open, high_open); kind "int", "float" or "net_arch"
HYPERPARAMETERS = {
    "learning_rate": (1e-3, "float", 0.0, 1.0, True, False),
    "n_steps": (32, "int", 1, None, False, False),
    "batch_size": (512, "int", 2, None, False, False),
    "n_epochs": (10, "int", 1, None, False, False),
    "gamma": (0.95, "float", 0.0, 1.0, False, False),
    "gae_lambda": (0.95, "float", 0.0, 1.0, False, False),
    "clip_range": (0.2, "float", 0.0, 1.0, True, False),
    "ent_coef": (0.0, "float", 0.0, None, False, False),
    "vf_coef": (0.5, "float", 0.0, None, False, False),
    "max_grad_norm": (0.5, "float", 0.0, None, True, False),
    "log_std_init": (-1.0, "float", -20.0, 2.0, False, False),
    "net_arch": ((64, 64), "net_arch", 1, 4096, False, False),
    "eval_every": (1, "int", 0, None, False, False),  # updates between evals, 0: none
    "eval_episodes": (32, "int", 1, None, False, False),  # held-out episodes during training
    "final_eval_episodes": (256, "int", 0, None, False, False),  # at the end, 0: none
}


def _range_text(lo, hi, lo_open, hi_open):
    left = "(" if lo_open else "["
    right = ")" if (hi is None or hi_open) else "]"
    return f"{left}{lo}, {'inf' if hi is None else hi}{right}"


def validate_hyperparameters(hp, num_envs=None):
    """Defaults filled in and each value checked: ValueError / TypeError naming the parameter,
    the value and the valid range. Returns a new dict (net_arch as a list)."""
    if not isinstance(hp, dict):
        raise TypeError(f"hyperparameters: expected a dict, got {type(hp).__name__}")
    unknown = sorted(set(hp) - set(HYPERPARAMETERS))
    if unknown:
        raise ValueError(
            f"hyperparameter {unknown[0]!r}: unknown; valid: {', '.join(HYPERPARAMETERS)}"
        )
    out = {}
    for name, (default, kind, lo, hi, lo_open, hi_open) in HYPERPARAMETERS.items():
        v = hp.get(name, default)
        rng = _range_text(lo, hi, lo_open, hi_open)
        if kind == "net_arch":
            if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                raise TypeError(
                    f"net_arch: got {v!r}, expected a list of layer sizes (ints in "
                    f"[{lo}, {hi}]), e.g. [64, 64]"
                )
            v = list(v)
            if not v or any(
                isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not lo <= x <= hi
                for x in v
            ):
                raise ValueError(
                    f"net_arch: got {v!r}, expected 1 or more layer sizes, each an "
                    f"int in [{lo}, {hi}]"
                )
            out[name] = [int(x) for x in v]
            continue
        if kind == "int":
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name}: got {v!r}, expected an int in {rng}")
            v = int(v)
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name}: got {v!r}, expected a number in {rng}")
            v = float(v)
            if not math.isfinite(v):
                raise ValueError(f"{name}: got {v!r}, expected a finite number in {rng}")
        bad = (v <= lo if lo_open else v < lo) or (
            hi is not None and (v >= hi if hi_open else v > hi)
        )
        if bad:
            raise ValueError(f"{name}: got {v!r}, valid range {rng}")
        out[name] = v
    if num_envs is not None and out["batch_size"] > out["n_steps"] * num_envs:
        raise ValueError(
            f"batch_size: got {out['batch_size']}, valid range [2, n_steps * "
            f"num_envs = {out['n_steps'] * num_envs}] (one rollout's samples)"
        )
    return out


def _check_int(name, value, lo):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: got {value!r}, expected an int >= {lo}")
    if value < lo:
        raise ValueError(f"{name}: got {value!r}, valid range [{lo}, inf)")
    return int(value)


def _task_class(task):
    from asr._gymnasium_envs import ENVS

    if task not in ENVS:
        raise ValueError(f"task: got {task!r}, valid: {', '.join(ENVS)}")
    module, name = ENVS[task][1].split(":")
    import importlib

    return getattr(importlib.import_module(module), name)


# ------------------------------------------------------------ results


@dataclasses.dataclass
class TrainResult:
    """A trained (or loaded) policy: model (SB3 PPO), vecnormalize (SB3 VecNormalize, its
    statistics frozen for inference), config (config.json's dict), curve (curve.json's rows),
    final_error_rad (mean final joint error on the final held-out targets, None if not
    evaluated), out_dir (None if nothing was written)."""

    model: object
    vecnormalize: object
    config: dict
    curve: list
    final_error_rad: float | None = None
    out_dir: str | None = None

    def predict(self, obs, deterministic=True):
        """Actions (clipped to the action space) for raw observations (N, obs_dim)."""
        obs = self.vecnormalize.normalize_obs(np.asarray(obs, dtype=np.float64))
        return self.model.predict(obs, deterministic=deterministic)[0]

    def evaluate(self, episodes=256, threads=1):
        """Mean final joint error (rad) of the deterministic policy on `episodes` held-out
        targets."""
        cls = _task_class(self.config["task"])
        return float(
            np.mean(evaluate_policy(self.model, self.vecnormalize, cls, episodes, threads))
        )

    def figure(self):
        """The learning curve as a Plotly figure (return and metric against env-steps)."""
        return curve_figure(self.curve, title=f"PPO on {self.config['task']}")


def curve_figure(curve, title="learning curve"):
    """Plotly figure of curve rows: mean episode return (left axis) and the task metric (right
    axis, log scale) against env-steps."""
    need("plotly", "plots", "the learning curve figure")
    import plotly.graph_objects as go

    steps = [r["steps"] for r in curve]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=steps, y=[r["return"] for r in curve], name="mean return", mode="lines+markers"
        )
    )
    if any(r.get("metric") is not None for r in curve):
        pts = [(r["steps"], r["metric"]) for r in curve if r.get("metric") is not None]
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in pts],
                y=[p[1] for p in pts],
                name="final joint error (rad, held-out)",
                yaxis="y2",
                mode="lines+markers",
            )
        )
    fig.update_layout(
        title=title,
        xaxis_title="env-steps",
        yaxis_title="mean episode return",
        yaxis2=dict(title="final joint error (rad)", overlaying="y", side="right", type="log"),
    )
    return fig


def evaluate_policy(model, vecnormalize, task_cls, episodes, threads=1):
    """Final joint error (rad) per held-out episode: sub-env k reset with seed EVAL_SEED_BASE + k,
    one episode with the deterministic policy, then the norm of q - target."""
    env = task_cls(int(episodes), threads=threads)
    obs, _ = env.reset(seed=[EVAL_SEED_BASE + k for k in range(int(episodes))])
    for _ in range(env.max_episode_steps):
        act = model.predict(vecnormalize.normalize_obs(obs), deterministic=True)[0]
        obs, _, term, trunc, _ = env.step(act)
        if env.sim.batch.status.any():
            env.sim.batch.check()
    err = np.linalg.norm((env.q - env.target).reshape(env.num_envs, -1), axis=1)
    env.close()
    return err


# ------------------------------------------------------------ files


def _json_writer(obj):
    return lambda f: f.write((json.dumps(obj, indent=1) + "\n").encode())


def _read_json(path, what, shown):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"{shown}: cannot read the {what} ({type(exc).__name__}: {exc}); the "
            "file is missing, truncated or corrupted"
        ) from None


def load_checkpoint(out_dir, env=None, device="cpu"):
    """TrainResult of a training folder (model.zip, vecnormalize.pkl, config.json, curve.json).
    env: the VecEnv to attach (None: the statistics are loaded without one, for inference).
    A missing, truncated or corrupted file raises ValueError naming it."""
    from stable_baselines3 import PPO

    out_dir = os.fspath(out_dir)
    if not os.path.isdir(out_dir):
        raise ValueError(f"out_dir: {out_dir!r} is not a folder")
    files = current_version(out_dir)  # every file from one checkpoint
    # errors name out_dir/<name>: a link into that checkpoint's hidden folder
    config = _read_json(
        os.path.join(files, "config.json"),
        "training configuration",
        os.path.join(out_dir, "config.json"),
    )
    if not isinstance(config, dict) or config.get("algo") not in ALGOS or "task" not in config:
        raise ValueError(
            f"{os.path.join(out_dir, 'config.json')}: not an asr training "
            "configuration (no task / algo)"
        )
    curve = _read_json(
        os.path.join(files, "curve.json"), "learning curve", os.path.join(out_dir, "curve.json")
    )
    if not isinstance(curve, list) or not all(isinstance(r, dict) and "steps" in r for r in curve):
        raise ValueError(f"{os.path.join(out_dir, 'curve.json')}: not a list of curve rows")
    path = os.path.join(files, "vecnormalize.pkl")
    try:
        with open(path, "rb") as f:
            vecnorm = pickle.load(f)
        vecnorm.obs_rms.mean  # noqa: B018  (an object of the right kind)
    except Exception as exc:  # noqa: BLE001  (any unpickling failure means a bad file)
        raise ValueError(
            f"{os.path.join(out_dir, 'vecnormalize.pkl')}: cannot load the "
            "observation normalisation "
            f"({type(exc).__name__}: {exc}); the file is missing, truncated or "
            "corrupted"
        ) from None
    if env is not None:
        vecnorm.set_venv(env)
    vecnorm.training = False
    path = os.path.join(files, "model.zip")
    try:
        model = PPO.load(path, env=vecnorm if env is not None else None, device=device)
    except Exception as exc:  # noqa: BLE001  (SB3 raises many kinds for a bad zip)
        raise ValueError(
            f"{os.path.join(out_dir, 'model.zip')}: cannot load the PPO model "
            f"({type(exc).__name__}: {exc}); "
            "the file is missing, truncated or corrupted"
        ) from None
    final = config.get("final_eval", {}).get("final_error_rad")
    return TrainResult(model, vecnorm, config, curve, final, out_dir)


# ------------------------------------------------------------ training


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
    **hyperparameters,
):
    """Train `algo` on `task` (an asr gymnasium id) for total_steps env-steps (all sub-envs
    together; PPO rounds up to whole rollouts of n_steps * num_envs) with num_envs sub-envs of
    one batch. threads: torch and asr threads (1 for reproducible runs). out_dir: the training
    folder (None: nothing written, no resume). resume: continue from out_dir. Hyperparameters:
    HYPERPARAMETERS (validated, ranges in the errors). Returns a TrainResult.

    A simulation error stops training with asr.SimulationError naming the instance, the step and
    the training step; the folder keeps the last checkpoint."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from asr.rl.vec_env import SB3VecEnv

    if algo not in ALGOS:
        raise ValueError(f"algo: got {algo!r}, valid: {', '.join(ALGOS)}")
    cls = _task_class(task)
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
            ):
                if cfg.get(key) != value:
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
        "hyperparameters": hp,
        "total_steps": total_steps,
        "asr_version": asr.__version__,
        "observation_normalisation": "VecNormalize(norm_obs=True, norm_reward=False)",
        "metric": "mean final joint error (rad): norm of q - target at the end of a "
        "held-out episode, deterministic policy",
        "eval_seed_base": EVAL_SEED_BASE,
    }

    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    venv = cls(num_envs, threads=threads)
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
                np.mean(evaluate_policy(model, vecnorm, cls, hp["eval_episodes"], threads))
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
                np.mean(evaluate_policy(model, vecnorm, cls, hp["final_eval_episodes"], threads))
            )
            config["final_eval"] = {
                "episodes": hp["final_eval_episodes"],
                "final_error_rad": final,
                "steps": int(model.num_timesteps),
            }
            checkpoint()
    finally:
        torch.set_num_threads(old_threads)
    vecnorm.training = False
    sb3env.close()
    return TrainResult(model, vecnorm, config, curve, final, out_dir)


def _train_summary(kwargs):
    """train(**kwargs) as plain data (no torch objects cross the executor)."""
    res = train(**kwargs)
    return {
        "config": res.config,
        "curve": res.curve,
        "final_error_rad": res.final_error_rad,
        "out_dir": res.out_dir,
    }


def train_many(runs, executor=None, out_root=None):
    """Several training runs (seeds, hyperparameters): `runs` is a list of train() keyword
    dicts; each run writes its folder out_root/run-<k> when out_root is given (else its own
    out_dir, if any). executor: None (one after another here), a dask.distributed.Client or a
    concurrent.futures.Executor, as in asr.sweep: processes or dask workers, not threads (runs
    on threads of one process share its global torch and NumPy random generators, so they are
    not reproducible). Returns, in the order of `runs`, dicts with the run's config, curve,
    final_error_rad and out_dir."""
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
    "curve_figure",
    "HYPERPARAMETERS",
    "EVAL_SEED_BASE",
]
