"""The rsl-rl-lib backend of asr.rl.train (algo="rsl_rl"): rsl-rl-lib's PPO (the learner of
its OnPolicyRunner, the one Isaac Lab uses) on an asr vector env through RslRlVecEnv.

The rollout / update loop is driven here (not by OnPolicyRunner.learn) so that the training
folder is written after every update, as for the Stable-Baselines3 backend. asr's
hyperparameters map onto rsl-rl-lib's PPO: n_epochs -> num_learning_epochs, batch_size ->
num_mini_batches = max(1, n_steps * num_envs // batch_size) (rsl-rl-lib splits a rollout into
equal mini-batches), clip_range -> clip_param, gae_lambda -> lam, vf_coef -> value_loss_coef,
ent_coef -> entropy_coef, lr_decay -> the rate set before each update to learning_rate *
(1 - lr_decay * steps done / total_steps), desired_kl > 0 -> the adaptive learning-rate
schedule (the rate scaled by 1.5 to keep the KL divergence of an update near desired_kl),
0 -> a fixed rate;
net_arch -> hidden_dims of the actor and of the critic (ELU), log_std_init -> the Gaussian's
initial standard deviation exp(log_std_init). Observations are normalised inside the actor and
the critic (rsl-rl-lib's EmpiricalNormalization, (obs - mean) / (std + 0.01), statistics updated
after every update from the rollout's observations), so the exported policy carries them.

Files: model.pt (torch.save of {"actor", "critic", "optimizer": state dicts, "steps": env-steps
trained, "learning_rate": the rate of the adaptive schedule}: tensors, numbers and plain
containers, read back with torch.load(weights_only=True), asr.rl._safe_load). Determinism:
torch's global generator seeded with seed (seed + steps on resume), sub-env i reset with
seed + i."""

import math
import os

import torch
from rsl_rl.algorithms import PPO
from rsl_rl.models import MLPModel
from rsl_rl.storage import RolloutStorage
from tensordict import TensorDict

from asr.rl._rsl_rl_env import RslRlVecEnv
from asr.rl._rsl_rl_policy import ACTIVATION, MODEL_FILE, RslRlPolicy, read_model

OBS_GROUPS = {"actor": ["policy"], "critic": ["policy"]}
# asr's hyperparameter name -> rsl-rl-lib PPO's argument
PPO_ARGUMENTS = {
    "n_epochs": "num_learning_epochs",
    "clip_range": "clip_param",
    "gamma": "gamma",
    "gae_lambda": "lam",
    "vf_coef": "value_loss_coef",
    "ent_coef": "entropy_coef",
    "learning_rate": "learning_rate",
    "max_grad_norm": "max_grad_norm",
}


def _model(obs_dim, out_dim, hp, which):
    obs = TensorDict({"policy": torch.zeros(1, obs_dim)}, batch_size=[1])
    dist = None
    if which == "actor":
        dist = {
            "class_name": "GaussianDistribution",
            "init_std": math.exp(hp["log_std_init"]),
            "std_type": "log",
        }
    return MLPModel(
        obs,
        OBS_GROUPS,
        which,
        out_dim,
        hidden_dims=list(hp["net_arch"]),
        activation=ACTIVATION,
        obs_normalization=True,
        distribution_cfg=dist,
    )


def start_policy_at(actor, init):
    """Start an untrained actor at its task's policy_init ({"mean": (act_dim,), "std":
    (act_dim,)} in the action's units; None: rsl-rl-lib's start), as the sb3 backend does: the
    output layer's weights scaled by 0.01 (SB3's gain for the action layer) so that its bias,
    set to the mean, is the mean action, and the Gaussian's log standard deviation set to
    log(std)."""
    if init is None:
        return
    last = [m for m in actor.mlp.modules() if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():
        last.weight.mul_(0.01)
        last.bias.copy_(torch.as_tensor(init["mean"], dtype=torch.float32))
        log_std = torch.log(torch.as_tensor(init["std"], dtype=torch.float32))
        actor.distribution.log_std_param.copy_(log_std)


class TrainingActor(torch.nn.Module):
    """The trainer's rsl-rl-lib actor (MLPModel, shared: training goes on updating it) seen as
    asr.rl._rsl_rl_policy.RslRlPolicy sees an actor: obs_dim, obs_normalizer, mlp and
    forward(obs (B, obs_dim), stochastic_output) with a plain tensor in, and its distribution."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.obs_dim = int(model.obs_dim)
        self.obs_normalizer, self.mlp = model.obs_normalizer, model.mlp
        self.distribution = model.distribution
        self.train(model.training)  # the model's mode, which predict restores after acting

    def forward(self, obs, stochastic_output=False):
        return self.model(
            TensorDict({"policy": obs}, batch_size=[obs.shape[0]]),
            stochastic_output=stochastic_output,
        )


class RslRlBackend:
    """PPO of rsl-rl-lib on an asr vector env (what asr.rl.train drives; see the module doc)."""

    name = "rsl_rl"
    files = (MODEL_FILE,)

    def __init__(self, venv, hp, seed, files=None, out_dir=None):
        self.hp = hp
        if hp["torch_threads"]:  # train() restores torch's threads after training
            torch.set_num_threads(hp["torch_threads"])
        self.env = RslRlVecEnv(venv)
        self.steps = 0
        self._losses = None
        state = None
        if files is not None:
            state = read_model(files, out_dir)
            self.steps = state["steps"]
        torch.manual_seed(seed + self.steps)
        n = self.env.num_envs
        obs = self.env.reset([seed + self.steps + i for i in range(n)])
        obs_dim = obs["policy"].shape[1]
        actor = _model(obs_dim, self.env.num_actions, hp, "actor")
        if state is None:
            start_policy_at(actor, getattr(type(venv), "policy_init", None))
        self.alg = PPO(
            actor,
            _model(obs_dim, 1, hp, "critic"),
            RolloutStorage("rl", n, hp["n_steps"], obs, [self.env.num_actions], "cpu"),
            num_mini_batches=max(1, hp["n_steps"] * n // hp["batch_size"]),
            **{name: hp[key] for key, name in PPO_ARGUMENTS.items()},
            schedule="adaptive" if hp["desired_kl"] > 0 else "fixed",
            desired_kl=hp["desired_kl"] if hp["desired_kl"] > 0 else None,
            device="cpu",
        )
        if state is not None:
            try:
                self.alg.load(
                    {
                        "actor_state_dict": state["actor"],
                        "critic_state_dict": state["critic"],
                        "optimizer_state_dict": state["optimizer"],
                    },
                    None,
                    True,
                )
            except (RuntimeError, ValueError, KeyError, TypeError) as exc:
                raise ValueError(
                    f"{os.path.join(out_dir, MODEL_FILE)}: its networks do not fit "
                    f"config.json's hyperparameters and the task ({type(exc).__name__}: "
                    f"{str(exc)[:300]}); the folder is damaged or mixed"
                ) from None
            self.alg.learning_rate = float(state["learning_rate"])
        self._obs = obs

    @property
    def num_timesteps(self):
        return self.steps

    def learn(self, steps, on_update, on_step):
        """Rollouts of n_steps * num_envs env-steps, each followed by one PPO update and
        on_update(), until `steps` more env-steps are done (total_steps in all, which
        lr_decay's schedule runs over) or on_update() returns True (early stopping); on_step(n)
        after every vector step of n env-steps."""
        alg, env, n = self.alg, self.env, self.env.num_envs
        target = total_steps = self.steps + steps
        alg.train_mode()
        while self.steps < target:
            obs = self._obs
            with torch.inference_mode():
                for _ in range(self.hp["n_steps"]):
                    actions = alg.act(obs)
                    obs, rew, dones, extras = env.step(actions)
                    alg.process_env_step(obs, rew, dones, extras)
                    self.steps += n
                    on_step(n)
                alg.compute_returns(obs)
            self._obs = obs
            if self.hp["lr_decay"] > 0:  # the fixed schedule, decayed by the steps done
                done = min(1.0, self.steps / total_steps)
                alg.learning_rate = self.hp["learning_rate"] * (1 - self.hp["lr_decay"] * done)
                for group in alg.optimizer.param_groups:
                    group["lr"] = alg.learning_rate
            self._losses = alg.update()
            if on_update():
                return

    def episodes(self):
        return self.env.episodes()

    def update_stats(self):
        """The last update's {"policy_loss": the clipped surrogate loss, "value_loss": the
        mean squared error of the value function, "entropy": the policy's mean entropy (nats),
        "learning_rate": the rate after it (the adaptive schedule's)}; None before any
        update."""
        losses = self._losses
        if losses is None:
            return None
        return {
            "policy_loss": float(losses["surrogate"]),
            "value_loss": float(losses["value"]),
            "entropy": float(losses["entropy"]),
            "learning_rate": float(self.alg.learning_rate),
        }

    def policy(self):
        """(RslRlPolicy, None): the policy and its (absent) separate normaliser."""
        actor = TrainingActor(self.alg.get_policy())
        return RslRlPolicy(actor, self.env.low, self.env.high, self.steps), None

    def writers(self):
        def save(f):
            torch.save(
                {
                    "actor": self.alg.actor.state_dict(),
                    "critic": self.alg.critic.state_dict(),
                    "optimizer": self.alg.optimizer.state_dict(),
                    "steps": self.steps,
                    "learning_rate": float(self.alg.learning_rate),
                },
                f,
            )

        return [(MODEL_FILE, save)]

    def close(self):
        self.alg.eval_mode()
        self.env.close()
