"""rsl-rl-lib's VecEnv interface over an asr vector env: batched torch tensors in and out.

RslRlVecEnv(vector_env) steps all sub-envs of one asr batch in one C call: step(actions) takes
actions (N, act_dim) torch float32 (a Gaussian policy's samples, unbounded: they are clipped to
the task's action Box here, as Stable-Baselines3 clips before stepping) and returns
(observations, rewards, dones, extras): observations a TensorDict {"policy": (N, obs_dim)
float32}, rewards (N,) float32, dones (N,) bool (terminated or truncated), extras
{"time_outs": (N,) bool, truncated and not terminated: rsl-rl-lib bootstraps those}. Sub-envs
that end are reset in the same step (asr.rl._stepping), so the observation of an ended sub-env
is the first of its next episode; a failed simulation raises asr.SimulationError.

Episode statistics for the learning curve: episodes() gives (return, length) of the last 100
episodes ended, as Stable-Baselines3's VecMonitor keeps them."""

from collections import deque

import numpy as np
import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from asr.rl._stepping import check_simulation, reset_ended


class RslRlVecEnv(VecEnv):
    """rsl-rl-lib VecEnv whose num_envs sub-envs are the instances of one asr vector env."""

    def __init__(self, vector_env):
        self.venv = vector_env
        self.num_envs = vector_env.num_envs
        self.num_actions = int(np.prod(vector_env.single_action_space.shape))
        self.max_episode_length = int(vector_env.max_episode_steps)
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long)
        self.device = "cpu"
        self.cfg = {}
        self.low = np.asarray(vector_env.single_action_space.low, np.float64)
        self.high = np.asarray(vector_env.single_action_space.high, np.float64)
        self.env_steps = 0  # vector steps taken since construction
        self._obs = None
        self._return = np.zeros(self.num_envs)
        self._episodes = deque(maxlen=100)  # (return, length) of the last episodes ended

    def reset(self, seeds):
        """Start every sub-env's episode: sub-env i seeded with seeds[i]."""
        obs, _ = self.venv.reset(seed=[int(s) for s in seeds])
        self._return[:] = 0.0
        self.episode_length_buf.zero_()
        self._obs = np.array(obs, dtype=np.float64)
        return self.get_observations()

    def get_observations(self):
        return TensorDict(
            {"policy": torch.as_tensor(self._obs, dtype=torch.float32)},
            batch_size=[self.num_envs],
        )

    def step(self, actions):
        act = np.clip(actions.detach().cpu().numpy().astype(np.float64), self.low, self.high)
        obs, rew, term, trunc, _ = self.venv.step(act)
        self.env_steps += 1
        check_simulation(self.venv, self.env_steps, "RslRlVecEnv")
        dones = term | trunc
        self._return += rew
        self.episode_length_buf += 1
        obs = np.array(obs, dtype=np.float64)
        for i in np.flatnonzero(dones):
            self._episodes.append((float(self._return[i]), int(self.episode_length_buf[i])))
            self._return[i] = 0.0
            self.episode_length_buf[i] = 0
        reset_ended(self.venv, obs, dones)
        self._obs = obs
        extras = {"time_outs": torch.as_tensor(trunc & ~term)}
        return (
            self.get_observations(),
            torch.as_tensor(rew, dtype=torch.float32),
            torch.as_tensor(dones),
            extras,
        )

    def episodes(self):
        """(return, length) of the last (at most 100) episodes ended."""
        return list(self._episodes)

    def close(self):
        self.venv.close()
