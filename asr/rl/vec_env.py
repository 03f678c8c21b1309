"""Stable-Baselines3's VecEnv interface over an asr vector env (asr.envs.AsrVectorEnv).

Autoreset: asr's vector envs use gymnasium's NEXT_STEP mode (a step that ends sub-env i returns its
last observation; the next step() resets it). SB3 resets a sub-env in the same step that ends it:
the returned observation is the first one of the new episode, the last one goes to
infos[i]["terminal_observation"], with infos[i]["TimeLimit.truncated"] = truncated and not
terminated. SB3VecEnv translates exactly: after each step, the sub-envs that ended (and only those)
are reset at once through AsrVectorEnv.reset(options={"reset_mask": ...}) (Sim.reset of those
instances; no physics step for anyone), so the asr env never enters its NEXT_STEP reset step.

Seeding is SB3's: seed(s) makes the next reset() seed sub-env i with s + i (as DummyVecEnv seeds
its i-th env), later episodes draw from each sub-env's own generator. So SB3VecEnv equals
DummyVecEnv over single asr envs (gymnasium.make of the same id) bit for bit: observations,
rewards (float32, as DummyVecEnv stores them), dones, infos and terminal observations.

Simulation errors: asr's vector env ends an episode whose instance failed (terminated). With
on_error="raise" (the default) SB3VecEnv raises asr.SimulationError instead, naming the instance,
joint, simulation step and the env step (steps since the SB3VecEnv was made): training must not
learn from a failed simulation. on_error="terminate" keeps asr's behaviour.
"""

from copy import deepcopy

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from asr.rl._stepping import check_simulation, reset_ended


class SB3VecEnv(VecEnv):
    """SB3 VecEnv whose num_envs sub-envs are the instances of one asr vector env."""

    def __init__(self, vector_env, on_error="raise"):
        from asr.envs.vector import AsrVectorEnv

        env = getattr(vector_env, "unwrapped", vector_env)
        if not isinstance(env, AsrVectorEnv):
            raise TypeError(
                f"vector_env: expected an asr vector env (AsrVectorEnv, e.g. "
                f"gymnasium.make_vec('asr/Reach2DOF-v0', num_envs=N)), got "
                f"{type(vector_env).__name__}"
            )
        if on_error not in ("raise", "terminate"):
            raise ValueError(f"on_error: got {on_error!r}, expected 'raise' or 'terminate'")
        self.venv = env
        self.on_error = on_error
        self.env_steps = 0  # vector steps taken since construction
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)
        self.metadata = dict(env.metadata)
        self._actions = None

    # ------------------------------------------------------------ VecEnv API

    def reset(self):
        seeds = self._seeds
        if all(s is None for s in seeds):
            seed = None
        else:
            seed = [None if s is None else int(s) for s in seeds]
        opts = [o for o in self._options if o]
        options = None
        if opts:
            if any(o != opts[0] for o in self._options):
                raise ValueError("options: per-sub-env options must be equal for an asr batch")
            options = dict(opts[0])
        obs, info = self.venv.reset(seed=seed, options=options)
        self.reset_infos = [_info_of(info, i) for i in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return np.array(obs)

    def step_async(self, actions):
        self._actions = np.asarray(actions)

    def step_wait(self):
        obs, rew, term, trunc, info = self.venv.step(self._actions)
        self.env_steps += 1
        if self.on_error == "raise":
            self._check_simulation()
        dones = term | trunc
        infos = [_info_of(info, i) for i in range(self.num_envs)]
        for i in range(self.num_envs):
            infos[i]["TimeLimit.truncated"] = bool(trunc[i] and not term[i])
        obs = np.array(obs)
        for i in np.flatnonzero(dones):
            infos[i]["terminal_observation"] = obs[i].copy()
        rinfo = reset_ended(self.venv, obs, dones)
        for i in np.flatnonzero(dones):
            self.reset_infos[i] = _info_of(rinfo, i)
        return obs, rew.astype(np.float32), dones.astype(bool), deepcopy(infos)

    def close(self):
        self.venv.close()

    def _check_simulation(self):
        check_simulation(self.venv, self.env_steps, "SB3VecEnv")

    # ------------------------------------------------------------ attributes and methods

    def get_attr(self, attr_name, indices=None):
        return [getattr(self.venv, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name, value, indices=None):
        if list(self._get_indices(indices)) != list(range(self.num_envs)):
            raise ValueError(
                "set_attr: the sub-envs of an asr batch share their attributes; "
                "indices must be None (all)"
            )
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        return [
            getattr(self.venv, method_name)(*method_args, **method_kwargs)
            for _ in self._get_indices(indices)
        ]

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False for _ in self._get_indices(indices)]

    def get_images(self):
        return [None for _ in range(self.num_envs)]


def _info_of(info, i):
    """Sub-env i's info dict from gymnasium's vector infos (arrays with "_key" masks)."""
    return {k: v[i] for k, v in info.items() if not k.startswith("_") and info[f"_{k}"][i]}


__all__ = ["SB3VecEnv"]
