"""Reinforcement learning on asr's batched environments with PPO of Stable-Baselines3 or
rsl-rl-lib (extra `asr-sim[rl]`).

- SB3VecEnv (asr.rl.vec_env): SB3's VecEnv over an asr vector env (one C call per step for all
  sub-envs), equal bit for bit to DummyVecEnv over single asr envs.
- train, TrainResult, load_checkpoint (asr.rl.training): PPO with observation normalisation,
  held-out evaluation, an atomic, resumable training folder (config.json, curve.json and the
  backend's model files); algo "sb3" (Stable-Baselines3), "rsl_rl" (rsl-rl-lib) or "ppo" (the
  default backend); `asr train` on the command line. task_metric (asr.rl._results): a
  task's held-out metric (final joint error, rad, or Throw's distance thrown, m).
  MODEL_FILES (asr.rl._config): {backend: the file holding its model in a training folder}
  ({"sb3": "model.zip", "rsl_rl": "model.pt"}; a folder with one has a checkpoint).
  DEFAULT_BACKEND (asr.rl._config): the backend algo "ppo" trains with ("rsl_rl": the faster
  of the two to reach Reach2DOF's goal, benchmarks/bench_rl.py). task_class(task): the
  environment class of a registered task id, as `asr train` resolves it.
  Neither imports torch.
- export_onnx, OnnxPolicy (asr.rl.onnx_policy): a trained policy as ONNX.
- evaluate, export_checked (asr.rl.evaluation): a training folder's deterministic policy (torch,
  or its ONNX file) run for N seeded episodes, per-episode return and task metric with means
  and 95 % t-intervals (`asr eval`); the ONNX export checked against the torch policy before
  it is written (`asr export-onnx`).
- convert_pickled_folder (asr.rl._convert): the explicit opt-in that rewrites a folder of an
  earlier asr, holding a pickle, as data only; loading a folder otherwise never runs code from
  it (docs/learning.md, "What loading a training folder trusts").

Importing asr.rl sets OMP_WAIT_POLICY=PASSIVE unless set (see below). The names load lazily,
so `import asr.rl` works without torch; using one without torch raises
ImportError saying how to install the extra.
"""

import importlib
import os

# OpenMP threads that sleep instead of spinning while they wait: torch's OpenMP runtime reads
# this once, when torch is first imported (so only if asr.rl comes first; a value the user set
# is kept). Measured with threads=2 on a loaded 2-core machine: PPO at ~200 env-steps/s with
# spinning threads (they fight asr's batch threads and other processes for the cores), ~5000
# with sleeping ones; on one thread about the same either way.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_LAZY = {
    "SB3VecEnv": "asr.rl.vec_env",
    "train": "asr.rl.training",
    "train_many": "asr.rl.training",
    "TrainResult": "asr.rl.training",
    "load_checkpoint": "asr.rl.training",
    "convert_pickled_folder": "asr.rl._convert",
    "task_metric": "asr.rl._results",
    "MODEL_FILES": "asr.rl._config",
    "DEFAULT_BACKEND": "asr.rl._config",
    "task_class": "asr.rl._config",
    "export_onnx": "asr.rl.onnx_policy",
    "OnnxPolicy": "asr.rl.onnx_policy",
    "evaluate": "asr.rl.evaluation",
    "export_checked": "asr.rl.evaluation",
}

from asr.common.optional import install_hint, missing_extra  # noqa: E402

INSTALL_HINT = install_hint("rl")


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'asr.rl' has no attribute {name!r}")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or ""
        if missing.split(".")[0] in (
            "gymnasium",
            "torch",
            "stable_baselines3",
            "rsl_rl",
            "tensordict",
            "onnx",
            "onnxruntime",
            "onnxscript",
        ):
            raise missing_extra(f"asr.rl.{name}", "rl", missing) from exc
        raise
    value = getattr(mod, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_LAZY))


__all__ = list(_LAZY)
