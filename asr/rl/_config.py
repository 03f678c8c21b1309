"""What a training run of asr.rl.train is configured with: the algorithms (backends), the PPO
hyperparameters (defaults and valid ranges) and their checks, and the task class of a gymnasium
id. Errors name the parameter, the value and the valid range."""

import math

import numpy as np

# "sb3": Stable-Baselines3's PPO, "rsl_rl": rsl-rl-lib's PPO, "ppo": the default backend (the
# faster of the two to reach Reach2DOF's goal, measured by benchmarks/bench_rl.py)
BACKENDS = ("sb3", "rsl_rl")
DEFAULT_BACKEND = "rsl_rl"
# the file holding a backend's model in a training folder (a folder with one has a checkpoint)
MODEL_FILES = {"sb3": "model.zip", "rsl_rl": "model.pt"}
ALGOS = ("ppo", *BACKENDS)

# name: (default, kind, low, high, low_open, high_open); kind "int", "float", "bool" or "net_arch"
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
    # the rate falls linearly over total_steps to learning_rate * (1 - lr_decay); 0: constant
    "lr_decay": (0.0, "float", 0.0, 1.0, False, False),
    # rsl_rl only: > 0 adapts the learning rate to this KL divergence per update, 0: fixed rate
    "desired_kl": (0.0, "float", 0.0, None, False, False),
    "net_arch": ((64, 64), "net_arch", 1, 4096, False, False),
    # the evaluation callback (asr.rl.training): env-steps between held-out evaluations of the
    # deterministic policy, at the first update past each multiple and after the last update
    # (1: after every update; 0: none, so no best model and no early stopping)
    "eval_every": (1, "int", 0, None, False, False),
    "eval_episodes": (32, "int", 1, None, False, False),  # held-out episodes of each evaluation
    "final_eval_episodes": (256, "int", 0, None, False, False),  # at the end, 0: none
    # stop after this many evaluations in a row without improving the best; 0: never
    "patience": (0, "int", 0, None, False, False),
    # an improvement: the task's metric better than the best by more than this (its unit)
    "min_delta": (0.0, "float", 0.0, None, False, False),
    # TensorBoard event files in out_dir/tb (both backends); false: none
    "tensorboard": (True, "bool", None, None, False, False),
    # torch's threads while training (both backends; asr's batch keeps train's `threads`);
    # 0: train's `threads`. 1 is the faster for small networks: their operations are too
    # small to share, and a second torch thread competes with asr's for the cores
    "torch_threads": (0, "int", 0, None, False, False),
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
        if kind == "bool":
            if not isinstance(v, (bool, np.bool_)):
                raise TypeError(f"{name}: got {v!r}, expected true or false")
            out[name] = bool(v)
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
    if out["patience"] > 0 and out["eval_every"] == 0:
        raise ValueError(
            f"patience: got {out['patience']}, valid only with eval_every > 0 (early stopping "
            "counts evaluations; eval_every = 0 makes none), or patience = 0"
        )
    if num_envs is not None and out["batch_size"] > out["n_steps"] * num_envs:
        raise ValueError(
            f"batch_size: got {out['batch_size']}, valid range [2, n_steps * "
            f"num_envs = {out['n_steps'] * num_envs}] (one rollout's samples)"
        )
    return out


def task_defaults(task):
    """The training defaults registered with a task id (asr.envs.TRAIN_DEFAULTS): {"num_envs",
    "total_steps", "hyperparameters"}, each optional ({} for a task without any)."""
    from asr.envs import TRAIN_DEFAULTS

    return TRAIN_DEFAULTS.get(task, {})


def _positive_number(value):
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float, np.integer, np.floating))
        and value > 0
    )


def resolve_defaults(task, hyperparameters, num_envs=None, total_steps=None):
    """What a run of `task` uses for what the caller left out: (hyperparameters, sources,
    num_envs, total_steps). hyperparameters: the caller's (each wins) over the task's
    registered ones (task_defaults) over HYPERPARAMETERS' generic ones; not validated here.
    sources: {name: "set" (the caller), "task" (registered) or "default" (generic)} for every
    hyperparameter, and for num_envs and total_steps. Two registered values give way to what
    the caller set: lr_decay when the caller sets desired_kl > 0 (they exclude each other),
    and batch_size, capped to one rollout (n_steps * num_envs) when the caller's num_envs or
    n_steps make that smaller ("task, capped to n_steps * num_envs")."""
    reg = task_defaults(task)
    reg_hp = dict(reg.get("hyperparameters", {}))
    given = dict(hyperparameters)
    sources = {}
    run = {}
    for key, value, generic in (("num_envs", num_envs, 64), ("total_steps", total_steps, 100_000)):
        if value is not None:
            run[key], sources[key] = value, "set"
        elif key in reg:
            run[key], sources[key] = reg[key], "task"
        else:
            run[key], sources[key] = generic, "default"
    if _positive_number(given.get("desired_kl")) and "lr_decay" not in given:
        reg_hp.pop("lr_decay", None)
    out = {}
    for name, spec in HYPERPARAMETERS.items():
        if name in given:
            out[name], sources[name] = given[name], "set"
        elif name in reg_hp:
            out[name], sources[name] = reg_hp[name], "task"
        else:
            out[name], sources[name] = spec[0], "default"
    out.update({k: v for k, v in given.items() if k not in out})  # unknown: validation names it
    if sources["batch_size"] == "task":
        n_steps, n = out["n_steps"], run["num_envs"]
        if (
            all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in (n_steps, n))
            and out["batch_size"] > n_steps * n >= 2
        ):
            out["batch_size"] = int(n_steps * n)
            sources["batch_size"] = "task, capped to n_steps * num_envs"
    return out, sources, run["num_envs"], run["total_steps"]


def backend_of(algo):
    """The backend ("sb3" or "rsl_rl") of an algo name; ValueError naming the valid ones."""
    if algo not in ALGOS:
        raise ValueError(
            f"algo: got {algo!r}, valid: {', '.join(ALGOS)} (ppo: the default backend, "
            f"{DEFAULT_BACKEND})"
        )
    return DEFAULT_BACKEND if algo == "ppo" else algo


def check_backend_hyperparameters(backend, hp):
    """ValueError for a hyperparameter the backend does not use set away from its default, or
    for two that exclude each other."""
    if hp["desired_kl"] > 0 and hp["lr_decay"] > 0:
        raise ValueError(
            f"lr_decay: got {hp['lr_decay']!r}, valid only with desired_kl = 0 (the adaptive "
            "schedule sets the rate itself)"
        )
    if backend != "rsl_rl" and hp["desired_kl"] != HYPERPARAMETERS["desired_kl"][0]:
        raise ValueError(
            f"desired_kl: got {hp['desired_kl']!r}, valid for the rsl_rl backend only "
            f"(algo={backend!r}: leave it at 0)"
        )


def _check_int(name, value, lo):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: got {value!r}, expected an int >= {lo}")
    if value < lo:
        raise ValueError(f"{name}: got {value!r}, valid range [{lo}, inf)")
    return int(value)


# train() sets these itself (num_envs, threads) or the batch rejects them (render_mode)
_RESERVED_ENV_KWARGS = ("num_envs", "threads", "render_mode")


def env_kwargs_names(task_cls):
    """The keyword arguments task_cls(num_envs, threads=..., **env_kwargs) accepts: the keyword
    parameters of each __init__ along the class's MRO while they pass **kwargs on."""
    import inspect

    names = []
    for klass in task_cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        for p in params:
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self":
                if p.name not in _RESERVED_ENV_KWARGS and p.name not in names:
                    names.append(p.name)
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break
    return names


def validate_env_kwargs(task_cls, env_kwargs):
    """env_kwargs checked before anything is built: a dict of keyword arguments task_cls
    accepts (env_kwargs_names), JSON-serialisable values (config.json stores them). Returns a
    new dict ({} for None)."""
    import json

    if env_kwargs is None:
        return {}
    if not isinstance(env_kwargs, dict):
        raise TypeError(f"env_kwargs: expected a dict, got {type(env_kwargs).__name__}")
    valid = env_kwargs_names(task_cls)
    for key, value in env_kwargs.items():
        if key not in valid:
            raise ValueError(
                f"env_kwargs: {key!r} is not a keyword argument of {task_cls.__name__}; "
                f"valid: {', '.join(valid) or '(none)'}"
            )
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"env_kwargs[{key!r}]: got {value!r}, expected a JSON value (number, "
                "string, bool, null, list or dict of those)"
            ) from None
    return dict(env_kwargs)


def task_class(task):
    """The environment class of a registered task id (asr.learning.gym_registry, e.g.
    "asr/Reach2DOF-v0" -> asr.envs.tasks.Reach2DOF), as `asr train` and asr.rl.train resolve
    it; ValueError naming the valid ids for an unknown one."""
    from asr.learning.gym_registry import ENVS

    if task not in ENVS:
        raise ValueError(f"task: got {task!r}, valid: {', '.join(ENVS)}")
    module, name = ENVS[task][1].split(":")
    import importlib

    return getattr(importlib.import_module(module), name)
