"""The Stable-Baselines3 backend of asr.rl.train (algo="sb3"): SB3's PPO (MlpPolicy) on
SB3VecEnv (all sub-envs in one C call per step) wrapped in SB3's VecMonitor (episode returns)
and VecNormalize (observations only, norm_reward=False).

Files, data only (asr.rl._safe_load): model.zip (SB3's layout, model.save, with only its
JSON-able attributes in `data`, none cloudpickled: policy.pth and policy.optimizer.pth, torch
state dicts of the network and its optimiser, and num_timesteps, _n_updates and asr_episodes,
the episode buffer, in `data`) and vecnormalize.json (the VecNormalize statistics and settings,
with asr_num_timesteps: the model's env-steps when written). Reading never uses PPO.load (it
unpickles `data`'s cloudpickled entries): the PPO is built again from config.json's
hyperparameters and the task's spaces, and the state dicts are loaded with
torch.load(weights_only=True). Determinism: SB3's seeding (seed; seed + num_timesteps on resume,
sub-env i reset with that + i)."""

import json
import math
import os
import zipfile

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

from asr.rl._safe_load import (
    folder_file,
    json_bytes,
    json_writer,
    read_json,
    refuse_pickled,
    torch_data,
)
from asr.rl.vec_env import SB3VecEnv

MODEL_FILE, NORMALIZE_FILE = "model.zip", "vecnormalize.json"
NORMALIZE_FORMAT = "asr.vecnormalize/1"
# asr's hyperparameters that are SB3 PPO's arguments of the same name (and learning_rate)
PPO_ARGUMENTS = (
    "n_steps",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "clip_range",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
)


def start_policy_at(policy, init):
    """Start an untrained SB3 policy at its task's policy_init ({"mean": (act_dim,), "std":
    (act_dim,)} in the action's units; None: SB3's start, mean 0 and exp(log_std_init)): the
    mean through the action layer's bias (its weights start near 0, SB3's orthogonal gain 0.01)
    and the standard deviation through log_std."""
    if init is None:
        return
    with torch.no_grad():
        policy.action_net.bias.copy_(torch.as_tensor(init["mean"], dtype=torch.float32))
        policy.log_std.copy_(torch.log(torch.as_tensor(init["std"], dtype=torch.float32)))


class _Stop(Exception):
    """Raised by SB3Backend.learn's callback to end PPO.learn between two rollouts."""


class LinearDecay:
    """SB3 learning-rate schedule: rate(progress_remaining) = rate * (1 - decay * progress),
    progress the fraction of total_steps done."""

    def __init__(self, rate, decay):
        self.rate, self.decay = float(rate), float(decay)

    def __call__(self, progress_remaining):
        return self.rate * (1.0 - self.decay * (1.0 - progress_remaining))


class SB3Backend:
    """Stable-Baselines3 PPO on an asr vector env (what asr.rl.train drives)."""

    name = "sb3"
    files = (MODEL_FILE, NORMALIZE_FILE)

    def __init__(self, venv, hp, seed, files=None, out_dir=None):
        if hp["torch_threads"]:  # train() restores torch's threads after training
            torch.set_num_threads(hp["torch_threads"])
        self.sb3env = SB3VecEnv(venv)
        monitor = VecMonitor(self.sb3env)
        vecnorm = VecNormalize(monitor, norm_obs=True, norm_reward=False, gamma=hp["gamma"])
        model = new_ppo(hp, seed, vecnorm)
        if files is not None:
            state = read_files(files, out_dir, int(np.prod(self.sb3env.observation_space.shape)))
            _restore_normalisation(vecnorm, state["vecnormalize"])
            vecnorm.training = True
            _restore_model(model, state, out_dir)
            model.set_random_seed(seed + model.num_timesteps)
        else:
            start_policy_at(model.policy, getattr(type(venv), "policy_init", None))
        # a logger of no outputs: SB3's default makes an empty folder /tmp/SB3-<time> per run
        model.set_logger(Logger(None, []))
        self.model, self.vecnorm = model, vecnorm

    @property
    def num_timesteps(self):
        return int(self.model.num_timesteps)

    def learn(self, steps, on_update, on_step):
        """PPO.learn for `steps` more env-steps: on_update() after every update (at the start
        of the next rollout, before any of its steps, and at the end), on_step(n) after every
        vector step. on_update() returning True stops training there (early stopping): the
        next rollout is not begun, so the model's num_timesteps stays that of the update."""
        pending = [False]

        class _Callback(BaseCallback):
            def _on_rollout_start(self):
                if pending[0]:
                    pending[0] = False
                    if on_update():  # the previous rollout's update is done
                        raise _Stop
                pending[0] = True

            def _on_step(self):
                on_step(self.training_env.num_envs)
                return True

        try:
            self.model.learn(
                total_timesteps=steps,
                callback=_Callback(),
                reset_num_timesteps=False,
                progress_bar=False,
            )
        except _Stop:
            return
        if pending[0]:
            on_update()

    def update_stats(self):
        """The last update's {"policy_loss": the clipped surrogate loss, "value_loss": the
        mean squared error of the value function, "entropy": the policy's mean entropy (nats),
        "learning_rate"}, as SB3's logger recorded them (None before any update)."""
        values = self.model.logger.name_to_value
        if "train/value_loss" not in values:
            return None
        return {
            "policy_loss": float(values["train/policy_gradient_loss"]),
            "value_loss": float(values["train/value_loss"]),
            "entropy": -float(values["train/entropy_loss"]),
            "learning_rate": float(values["train/learning_rate"]),
        }

    def episodes(self):
        return [(e["r"], e["l"]) for e in self.model.ep_info_buffer]

    def policy(self):
        """(PPO model, VecNormalize): the policy and its observation normaliser."""
        return self.model, self.vecnorm

    def writers(self):
        steps = int(self.model.num_timesteps)
        self.vecnorm.asr_num_timesteps = steps
        stats = normalisation_state(self.vecnorm, steps)
        return [
            (NORMALIZE_FILE, json_writer(stats)),
            (MODEL_FILE, lambda f: save_model(self.model, f)),
        ]

    def close(self):
        self.vecnorm.training = False
        self.sb3env.close()


def new_ppo(hp, seed, env, spaces=None, device="cpu"):
    """SB3's PPO of asr's hyperparameters hp (asr.rl._config) on env (VecNormalize), or, env
    None, on spaces = (observation space, action space) for inference."""
    kwargs = dict(
        learning_rate=LinearDecay(hp["learning_rate"], hp["lr_decay"]),
        **{key: hp[key] for key in PPO_ARGUMENTS},
        seed=seed,
        device=device,
        verbose=0,
        policy_kwargs={"net_arch": list(hp["net_arch"]), "log_std_init": hp["log_std_init"]},
    )
    if env is not None:
        return PPO("MlpPolicy", env, **kwargs)
    model = PPO("MlpPolicy", None, _init_setup_model=False, **kwargs)
    model.observation_space, model.action_space = spaces
    model.n_envs = 1
    model._setup_model()
    return model


def save_model(model, f):
    """model.save into f with only the attributes that are JSON (SB3 cloudpickles the others
    into `data`: never written, so the file is data only) and the episode buffer as
    asr_episodes [[return, length, time], ...]."""
    model.asr_episodes = [
        [float(e["r"]), int(e["l"]), float(e["t"])] for e in (model.ep_info_buffer or ())
    ]
    exclude = []
    for key, value in vars(model).items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            exclude.append(key)
    model.save(f, exclude=exclude)


def normalisation_state(vecnorm, steps):
    """The VecNormalize statistics and settings as JSON data (vecnormalize.json)."""
    obs, ret = vecnorm.obs_rms, vecnorm.ret_rms
    return {
        "format": NORMALIZE_FORMAT,
        "obs_mean": np.asarray(obs.mean, np.float64).tolist(),
        "obs_var": np.asarray(obs.var, np.float64).tolist(),
        "obs_count": float(obs.count),
        "ret_mean": float(ret.mean),
        "ret_var": float(ret.var),
        "ret_count": float(ret.count),
        "norm_obs": bool(vecnorm.norm_obs),
        "norm_reward": bool(vecnorm.norm_reward),
        "clip_obs": float(vecnorm.clip_obs),
        "clip_reward": float(vecnorm.clip_reward),
        "gamma": float(vecnorm.gamma),
        "epsilon": float(vecnorm.epsilon),
        "asr_num_timesteps": int(steps),
    }


def _number(doc, key, shown, kind=float, low=0.0, high=math.inf, low_open=False):
    """doc[key], a finite number in the range (low, high] or [low, high]: ValueError naming the
    file, the entry, the value and the range."""
    value = doc.get(key)
    rng = f"{'(' if low_open else '['}{low}, {high}]"
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or (kind is int and value != int(value))
    ):
        kind_text = "an int" if kind is int else "a finite number"
        raise ValueError(f"{shown}: {key}: got {str(value)[:80]!r}, expected {kind_text} in {rng}")
    if (value <= low if low_open else value < low) or value > high:
        raise ValueError(f"{shown}: {key}: got {value!r}, valid range {rng}")
    return kind(value)


# vecnormalize.json's numbers: (low, high, low open)
_STATISTICS = {
    "obs_count": (0.0, math.inf, True),
    "ret_mean": (-math.inf, math.inf, False),
    "ret_var": (0.0, math.inf, False),
    "ret_count": (0.0, math.inf, True),
    "clip_obs": (0.0, math.inf, True),
    "clip_reward": (0.0, math.inf, True),
    "gamma": (0.0, 1.0, False),
    "epsilon": (0.0, math.inf, True),
}


def _statistics(doc, shown, obs_dim):
    """{name: value} of vecnormalize.json checked: ValueError naming the file and the entry."""
    if not isinstance(doc, dict) or doc.get("format") != NORMALIZE_FORMAT:
        raise ValueError(f"{shown}: not asr's observation normalisation ({NORMALIZE_FORMAT})")
    out = {}
    for key, low in (("obs_mean", -np.inf), ("obs_var", 0.0)):
        try:
            a = np.asarray(doc.get(key), dtype=np.float64)
        except (TypeError, ValueError):
            a = np.zeros(0)
        if a.shape != (obs_dim,) or not np.all(np.isfinite(a)) or np.any(a < low):
            raise ValueError(
                f"{shown}: {key}: expected {obs_dim} finite numbers (the observation size)"
                + (", each >= 0" if low == 0.0 else "")
            )
        out[key] = a
    for key, (lo, hi, lo_open) in _STATISTICS.items():
        out[key] = _number(doc, key, shown, float, lo, hi, lo_open)
    out["asr_num_timesteps"] = _number(doc, "asr_num_timesteps", shown, int)
    for key in ("norm_obs", "norm_reward"):
        if not isinstance(doc.get(key), bool):
            raise ValueError(f"{shown}: {key}: expected true or false")
        out[key] = doc[key]
    return out


def _restore_normalisation(vecnorm, stats):
    obs = RunningMeanStd(shape=stats["obs_mean"].shape)
    obs.mean, obs.var, obs.count = stats["obs_mean"], stats["obs_var"], stats["obs_count"]
    ret = RunningMeanStd(shape=())
    ret.mean, ret.var, ret.count = (
        np.array(stats["ret_mean"], np.float64),
        np.array(stats["ret_var"], np.float64),
        stats["ret_count"],
    )
    vecnorm.obs_rms, vecnorm.ret_rms = obs, ret
    for key in ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon"):
        setattr(vecnorm, key, stats[key])
    vecnorm.asr_num_timesteps = stats["asr_num_timesteps"]


def _frozen_normalisation(stats, spaces):
    """A VecNormalize of the statistics without an env (as one unpickled before set_venv):
    for inference, statistics frozen."""
    vecnorm = VecNormalize.__new__(VecNormalize)
    vecnorm.__setstate__(
        {
            "observation_space": spaces[0],
            "action_space": spaces[1],
            "num_envs": 1,
            "norm_obs_keys": None,
            "training": False,
            "old_reward": np.zeros(1),
            "render_mode": None,
            "metadata": {},
            "reset_infos": [{}],
            "_seeds": [None],
            "_options": [{}],
        }
    )
    _restore_normalisation(vecnorm, stats)
    return vecnorm


def read_files(files, out_dir, obs_dim):
    """The checkpoint's files as data: {"policy", "optimizer": state dicts, "data": model.zip's
    JSON entries (cloudpickled ones never decoded), "vecnormalize": the checked statistics of
    observations of size obs_dim}.
    ValueError naming the file for a pickle, a link out of the folder, a bad file."""
    refuse_pickled(out_dir, files)
    path, shown = folder_file(out_dir, files, MODEL_FILE)
    try:
        with zipfile.ZipFile(path) as z:
            data = json_bytes(z.read("data"), "PPO model's data", f"{shown} (data)")
            policy = z.read("policy.pth")
            optimizer = z.read("policy.optimizer.pth")
    except (OSError, zipfile.BadZipFile, KeyError, EOFError, ValueError) as exc:
        if isinstance(exc, ValueError) and str(exc).startswith(shown):
            raise
        raise ValueError(
            f"{shown}: cannot load the PPO model ({type(exc).__name__}: {exc}); the file is "
            "missing, truncated or corrupted"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{shown}: not a PPO model of asr (its data is not a JSON object)")
    state = {
        "data": data,
        "policy": torch_data(policy, "PPO network (policy.pth)", shown),
        "optimizer": torch_data(optimizer, "PPO optimiser (policy.optimizer.pth)", shown),
    }
    npath, nshown = folder_file(out_dir, files, NORMALIZE_FILE)
    doc = read_json(npath, "observation normalisation", nshown)
    state["vecnormalize"] = _statistics(doc, nshown, obs_dim)
    return state


def _restore_model(model, state, out_dir):
    """The network, its optimiser and the run's counters of read_files's state into model."""
    shown = os.path.join(out_dir, MODEL_FILE)
    try:
        model.policy.load_state_dict(state["policy"])
        if state["optimizer"] is not None:
            model.policy.optimizer.load_state_dict(state["optimizer"])
    except (RuntimeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(
            f"{shown}: its network does not fit config.json's hyperparameters and the task "
            f"({type(exc).__name__}: {str(exc)[:300]}); the folder is damaged or mixed"
        ) from None
    data = state["data"]
    model.num_timesteps = _number(data, "num_timesteps", f"{shown} (data)", int)
    model._n_updates = _number(data, "_n_updates", f"{shown} (data)", int)
    episodes = data.get("asr_episodes", [])
    if not isinstance(episodes, list) or not all(
        isinstance(e, list)
        and len(e) == 3
        and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in e
        )
        for e in episodes
    ):
        raise ValueError(f"{shown} (data): asr_episodes: expected [[return, length, time], ...]")
    from collections import deque

    model.ep_info_buffer = deque(
        ({"r": np.float32(r), "l": np.int32(n), "t": float(t)} for r, n, t in episodes),
        maxlen=model._stats_window_size,
    )
    model.ep_success_buffer = deque(maxlen=model._stats_window_size)  # no task reports success


def load_policy(files, out_dir, config, env=None, device="cpu"):
    """(PPO model, VecNormalize with frozen statistics) of a training folder (files: the
    checkpoint's folder; out_dir: the folder named in errors; config: its config.json) built
    from data only. env: the VecEnv to attach."""
    from asr.rl._config import task_class, validate_hyperparameters

    cls = task_class(config["task"])
    spaces = (cls.single_observation_space, cls.single_action_space)
    state = read_files(files, out_dir, int(np.prod(spaces[0].shape)))
    hp = validate_hyperparameters(config.get("hyperparameters") or {})
    seed = config.get("seed", 0) if isinstance(config.get("seed"), int) else 0
    vecnorm = _frozen_normalisation(state["vecnormalize"], spaces)
    if env is not None:
        vecnorm.set_venv(env)
        model = new_ppo(hp, seed, vecnorm, device=device)
    else:
        model = new_ppo(hp, seed, None, spaces, device)
    _restore_model(model, state, out_dir)
    model.set_logger(Logger(None, []))
    return model, vecnorm
