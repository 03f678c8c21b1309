"""A policy of the rsl_rl backend (asr.rl._rsl_rl) for inference, in plain torch: the actor of a
training folder's model.pt read back, run, exported to ONNX and evaluated without importing
rsl-rl-lib. Importing rsl-rl-lib 5 imports tensordict, which imports torch._dynamo: about 5 s
of CPU time in every process that only loads a policy (a dashboard Watch, an ONNX export,
`asr eval`), on top of torch's own 2 s.

The actor is rsl-rl-lib 5's MLPModel as the backend builds it (asr.rl._rsl_rl._model): the
observation normalisation (EmpiricalNormalization: (obs - mean) / (std + eps), its buffers
_mean, _var, _std (1, obs_dim) and count), the MLP (Linear and ELU layers, a linear output
layer) and the Gaussian's state-independent log standard deviation (log_std_param (act_dim,),
clamped to [log 1e-6, log 1e6] when sampled). `InferenceActor` holds the same parameters and
buffers under the same state-dict keys, so a trained actor's state dict loads into it key for
key and it computes what MLPModel computes, operation for operation (the deterministic action:
the MLP's output; a stochastic one: torch.normal of that mean and the clamped standard
deviation, as torch.distributions.Normal.sample draws it). tests/rl/test_rl_rsl_rl.py checks
it against rsl-rl-lib's own actor."""

import math
import os

import numpy as np
import torch

from asr.rl._safe_load import folder_file, torch_data

MODEL_FILE = "model.pt"
ACTIVATION = "elu"  # the MLPs' activation, by rsl-rl-lib's name (InferenceActor: torch.nn.ELU)
NORMALIZER_EPS = 1e-2  # rsl-rl-lib EmpiricalNormalization's default, which the backend keeps
LOG_STD_RANGE = (math.log(1e-6), math.log(1e6))  # GaussianDistribution's default std_range


class Normalizer(torch.nn.Module):
    """(obs - _mean) / (_std + eps), obs (B, obs_dim); the buffers of EmpiricalNormalization."""

    def __init__(self, obs_dim, eps=NORMALIZER_EPS):
        super().__init__()
        self.eps = eps
        self.register_buffer("_mean", torch.zeros(1, obs_dim))
        self.register_buffer("_var", torch.ones(1, obs_dim))
        self.register_buffer("_std", torch.ones(1, obs_dim))
        self.register_buffer("count", torch.tensor(0, dtype=torch.long))

    @property
    def mean(self):
        """(obs_dim,): the observations' running mean (EmpiricalNormalization.mean)."""
        return self._mean.squeeze(0).clone()

    @property
    def std(self):
        """(obs_dim,): their running standard deviation (EmpiricalNormalization.std)."""
        return self._std.squeeze(0).clone()

    def forward(self, x):
        return (x - self._mean) / (self._std + self.eps)


class LogStd(torch.nn.Module):
    """The Gaussian's log standard deviation, log_std_param (act_dim,)."""

    def __init__(self, act_dim):
        super().__init__()
        self.log_std_param = torch.nn.Parameter(torch.zeros(act_dim))

    def std(self):
        return torch.exp(self.log_std_param.clamp(*LOG_STD_RANGE))


class InferenceActor(torch.nn.Module):
    """The backend's actor for inference (see the module doc): forward(obs (B, obs_dim) float32,
    stochastic_output=False) -> actions (B, act_dim), unclipped."""

    def __init__(self, obs_dim, act_dim, hidden):
        super().__init__()
        self.obs_dim = int(obs_dim)
        self.obs_normalizer = Normalizer(self.obs_dim)
        layers, width = [], self.obs_dim
        for h in hidden:
            layers += [torch.nn.Linear(width, int(h)), torch.nn.ELU()]
            width = int(h)
        layers.append(torch.nn.Linear(width, int(act_dim)))
        self.mlp = torch.nn.Sequential(*layers)
        self.distribution = LogStd(int(act_dim))

    def forward(self, obs, stochastic_output=False):
        mean = self.mlp(self.obs_normalizer(obs))
        if not stochastic_output:
            return mean
        return torch.normal(mean, self.distribution.std().expand_as(mean))


class RslRlPolicy:
    """A trained rsl_rl actor as a policy: predict(obs, deterministic=True) -> (actions
    (N, act_dim) clipped to the task's action Box, None), the call shape of Stable-Baselines3's
    model.predict. obs are raw observations (N, obs_dim): the actor normalises them itself.
    actor: a module with obs_dim, obs_normalizer, mlp and forward(obs (B, obs_dim),
    stochastic_output) (InferenceActor, or the trainer's rsl-rl-lib actor behind an adapter).
    num_timesteps: the env-steps it was trained for."""

    def __init__(self, actor, low, high, num_timesteps=0):
        self.actor = actor
        self.low = np.asarray(low, np.float64)
        self.high = np.asarray(high, np.float64)
        self.num_timesteps = int(num_timesteps)
        self.obs_dim = int(actor.obs_dim)
        self.act_dim = int(self.low.shape[0])

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        x = torch.as_tensor(np.asarray(obs, dtype=np.float32)).reshape(-1, self.obs_dim)
        was_training = self.actor.training
        self.actor.eval()
        try:
            with torch.no_grad():
                a = self.actor(x, stochastic_output=not deterministic)
        finally:
            self.actor.train(was_training)
        return np.clip(a.numpy(), self.low, self.high), None


def read_model(files, out_dir):
    """model.pt of a checkpoint as data (asr.rl._safe_load.torch_data: no code runs), its
    entries checked: ValueError naming the file."""
    path, shown = folder_file(out_dir, files, MODEL_FILE)
    state = torch_data(path, "rsl-rl-lib model", shown)
    keys = ("actor", "critic", "optimizer", "steps", "learning_rate")
    if not isinstance(state, dict) or any(k not in state for k in keys):
        raise ValueError(f"{shown}: not an rsl-rl-lib model of asr (expected {', '.join(keys)})")
    for key in ("actor", "critic", "optimizer"):
        if not isinstance(state[key], dict):
            raise ValueError(f"{shown}: {key}: expected a state dict")
    steps, rate = state["steps"], state["learning_rate"]
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"{shown}: steps: got {steps!r}, expected an int >= 0")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate):
        raise ValueError(f"{shown}: learning_rate: got {rate!r}, expected a finite number")
    return state


def load_policy(files, out_dir, task_cls, hp):
    """(RslRlPolicy, None) of a training folder's model.pt (files: the checkpoint's folder;
    out_dir: the folder named in errors), its actor an InferenceActor."""
    space = task_cls.single_action_space
    obs_dim = int(np.prod(task_cls.single_observation_space.shape))
    state = read_model(files, out_dir)
    actor = InferenceActor(obs_dim, int(np.prod(space.shape)), hp["net_arch"])
    try:
        actor.load_state_dict(state["actor"])
    except (RuntimeError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{os.path.join(out_dir, MODEL_FILE)}: its actor does not fit config.json's "
            f"hyperparameters and the task ({type(exc).__name__}: {str(exc)[:300]}); the "
            "folder is damaged or mixed"
        ) from None
    actor.eval()
    return RslRlPolicy(actor, space.low, space.high, state["steps"]), None


def onnx_actor(policy, low, high):
    """A torch module obs (B, obs_dim) float32 -> the deterministic action (B, act_dim): the
    actor's normalisation and MLP (its Gaussian's mean), clipped to [low, high] (float32
    bounds inside the Box, as the SB3 export rounds them)."""
    actor = policy.actor

    class Actor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.normalizer = actor.obs_normalizer
            self.mlp = actor.mlp
            self.register_buffer("low", torch.as_tensor(low))
            self.register_buffer("high", torch.as_tensor(high))

        def forward(self, obs):
            a = self.mlp(self.normalizer(obs))
            return torch.minimum(torch.maximum(a, self.low), self.high)

    return Actor().eval()


def normalisation_metadata(policy):
    """What the exported file says of its observation normalisation."""
    return {"kind": "rsl_rl EmpiricalNormalization", "epsilon": policy.actor.obs_normalizer.eps}
