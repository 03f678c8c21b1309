"""The Stable-Baselines3 backend of asr.rl.train (algo="sb3"): SB3's PPO (MlpPolicy) on
SB3VecEnv (all sub-envs in one C call per step) wrapped in SB3's VecMonitor (episode returns)
and VecNormalize (observations only, norm_reward=False).

Files: model.zip (SB3 model.save: the network and its optimiser) and vecnormalize.pkl (the
VecNormalize statistics, pickled as VecNormalize.save does, with asr_num_timesteps: the model's
env-steps when written). Determinism: SB3's seeding (seed; seed + num_timesteps on resume, sub-env
i reset with that + i)."""

import os
import pickle

from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

from asr.rl.vec_env import SB3VecEnv

MODEL_FILE, NORMALIZE_FILE = "model.zip", "vecnormalize.pkl"
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
    import torch

    with torch.no_grad():
        policy.action_net.bias.copy_(torch.as_tensor(init["mean"], dtype=torch.float32))
        policy.log_std.copy_(torch.log(torch.as_tensor(init["std"], dtype=torch.float32)))


class LinearDecay:
    """SB3 learning-rate schedule: rate(progress_remaining) = rate * (1 - decay * progress),
    progress the fraction of total_steps done (a class, not a closure: it pickles in
    model.zip)."""

    def __init__(self, rate, decay):
        self.rate, self.decay = float(rate), float(decay)

    def __call__(self, progress_remaining):
        return self.rate * (1.0 - self.decay * (1.0 - progress_remaining))


class SB3Backend:
    """Stable-Baselines3 PPO on an asr vector env (what asr.rl.train drives)."""

    name = "sb3"
    files = (MODEL_FILE, NORMALIZE_FILE)

    def __init__(self, venv, hp, seed, files=None):
        self.sb3env = SB3VecEnv(venv)
        monitor = VecMonitor(self.sb3env)
        if files is not None:
            vecnorm = _load_vecnormalize(files, os.path.join(files, NORMALIZE_FILE))
            vecnorm.set_venv(monitor)
            vecnorm.training = True
            model = PPO.load(os.path.join(files, MODEL_FILE), env=vecnorm, device="cpu")
            model.set_random_seed(seed + model.num_timesteps)
        else:
            vecnorm = VecNormalize(monitor, norm_obs=True, norm_reward=False, gamma=hp["gamma"])
            model = PPO(
                "MlpPolicy",
                vecnorm,
                learning_rate=LinearDecay(hp["learning_rate"], hp["lr_decay"]),
                **{key: hp[key] for key in PPO_ARGUMENTS},
                seed=seed,
                device="cpu",
                verbose=0,
                policy_kwargs={
                    "net_arch": list(hp["net_arch"]),
                    "log_std_init": hp["log_std_init"],
                },
            )
            start_policy_at(model.policy, getattr(type(venv), "policy_init", None))
        # a logger of no outputs: SB3's default makes an empty folder /tmp/SB3-<time> per run
        model.set_logger(Logger(None, []))
        self.model, self.vecnorm = model, vecnorm

    @property
    def num_timesteps(self):
        return int(self.model.num_timesteps)

    def learn(self, steps, on_update, on_step):
        """PPO.learn for `steps` more env-steps: on_update() after every update (at the start
        of the next rollout, and at the end), on_step(n) after every vector step."""
        pending = [False]

        class _Callback(BaseCallback):
            def _on_rollout_start(self):
                if pending[0]:
                    on_update()  # the previous rollout's update is done
                pending[0] = True

            def _on_step(self):
                on_step(self.training_env.num_envs)
                return True

        self.model.learn(
            total_timesteps=steps,
            callback=_Callback(),
            reset_num_timesteps=False,
            progress_bar=False,
        )
        if pending[0]:
            on_update()

    def episodes(self):
        return [(e["r"], e["l"]) for e in self.model.ep_info_buffer]

    def policy(self):
        """(PPO model, VecNormalize): the policy and its observation normaliser."""
        return self.model, self.vecnorm

    def writers(self):
        self.vecnorm.asr_num_timesteps = self.model.num_timesteps  # travels in the pickle
        return [
            (NORMALIZE_FILE, lambda f: pickle.dump(self.vecnorm, f)),
            (MODEL_FILE, lambda f: self.model.save(f)),
        ]

    def close(self):
        self.vecnorm.training = False
        self.sb3env.close()


def _load_vecnormalize(files, shown):
    try:
        with open(os.path.join(files, NORMALIZE_FILE), "rb") as f:
            vecnorm = pickle.load(f)
        vecnorm.obs_rms.mean  # noqa: B018  (an object of the right kind)
    except Exception as exc:  # noqa: BLE001  (any unpickling failure means a bad file)
        raise ValueError(
            f"{shown}: cannot load the observation normalisation "
            f"({type(exc).__name__}: {exc}); the file is missing, truncated or corrupted"
        ) from None
    return vecnorm


def load_policy(files, out_dir, env=None, device="cpu"):
    """(PPO model, VecNormalize with frozen statistics) of a training folder (files: the
    checkpoint's folder; out_dir: the folder named in errors). env: the VecEnv to attach."""
    vecnorm = _load_vecnormalize(files, os.path.join(out_dir, NORMALIZE_FILE))
    if env is not None:
        vecnorm.set_venv(env)
    vecnorm.training = False
    try:
        model = PPO.load(
            os.path.join(files, MODEL_FILE),
            env=vecnorm if env is not None else None,
            device=device,
        )
    except Exception as exc:  # noqa: BLE001  (SB3 raises many kinds for a bad zip)
        raise ValueError(
            f"{os.path.join(out_dir, MODEL_FILE)}: cannot load the PPO model "
            f"({type(exc).__name__}: {exc}); the file is missing, truncated or corrupted"
        ) from None
    return model, vecnorm
