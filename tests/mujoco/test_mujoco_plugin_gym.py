"""A Gymnasium MuJoCo environment whose actuators are asr's MuJoCo plugin "asr.actuator".

ArmEnv is an ordinary gymnasium.envs.mujoco MujocoEnv on the MJCF asr.export_mjcf writes for
qbmove_arm_2dof (vertical): the action is ctrl (each joint's two references: equilibrium angle,
rad, and stiffness preset, rad), the observation qpos and qvel, stepped by MujocoEnv's own
mj_step with frame_skip. Its episodes equal a plain mj_step loop with the same actions bit for
bit, and env.reset (mj_resetData) restarts the actuators.
"""

import warnings

import mujoco
import numpy as np
import pytest

import asr
from asr.mujoco import plugin as mujoco_plugin
from tests.conftest import require

STEPS = 150  # env steps per episode
EQ_RANGE = np.pi  # rad: the equilibrium references' action bound (the joints have no limits)


def arm_env_class(gymnasium):
    """ArmEnv, a subclass of gymnasium's MujocoEnv (defined once gymnasium is required)."""
    from gymnasium.envs.mujoco.mujoco_env import MujocoEnv

    class ArmEnv(MujocoEnv):
        """The exported arm. Action: ctrl, (nu,) = (4,), rad. Observation: qpos then qvel, (4,),
        rad and rad/s. Reward: minus the squared distance of the links from the keyframe's angles
        (rad^2). reset: the keyframe asr_initial, link angles perturbed by up to 0.05 rad."""

        metadata = {"render_modes": ["rgb_array"], "render_fps": 0}

        def __init__(self, model_path, frame_skip=1, **kwargs):
            mujoco_plugin.load()  # before MujocoEnv compiles the file
            obs = gymnasium.spaces.Box(-np.inf, np.inf, (4,), np.float64)
            # MujocoEnv checks render_fps against its dt: the arm MJCF's timestep is 1 ms
            self.metadata = {**self.metadata, "render_fps": round(1.0 / (1e-3 * frame_skip))}
            super().__init__(str(model_path), frame_skip, obs, **kwargs)
            self.key = self.model.key("asr_initial")

        def _set_action_space(self):
            # unlimited references (ctrllimited 0) get +-EQ_RANGE instead of MuJoCo's 0 0
            lo, hi = self.model.actuator_ctrlrange.T.copy()
            free = ~self.model.actuator_ctrllimited.astype(bool)
            lo[free], hi[free] = -EQ_RANGE, EQ_RANGE
            self.action_space = gymnasium.spaces.Box(lo, hi, dtype=np.float64)
            return self.action_space

        def _obs(self):
            return np.concatenate([self.data.qpos, self.data.qvel])

        def reset_model(self):
            noise = self.np_random.uniform(-0.05, 0.05, self.model.nq)
            self.data.ctrl[:] = self.key.ctrl
            self.set_state(self.key.qpos + noise, np.zeros(self.model.nv))
            return self._obs()

        def step(self, action):
            self.do_simulation(action, self.frame_skip)
            obs = self._obs()
            reward = -float(np.sum((self.data.qpos - self.key.qpos) ** 2))
            return obs, reward, False, False, {"asr": mujoco_plugin.states(self.model, self.data)}

    return ArmEnv


@pytest.fixture(scope="module")
def make_env(tmp_path_factory):
    """make_env(frame_skip) -> an ArmEnv on the arm exported to a temporary file."""
    env_class = arm_env_class(require("gymnasium"))
    path = asr.export_mjcf("qbmove_arm_2dof", "vertical", tmp_path_factory.mktemp("gym") / "a.xml")
    return lambda frame_skip: env_class(path, frame_skip)


def actions(env, seed):
    """(STEPS, nu) actions: the keyframe's references plus a random walk, in the action space."""
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.normal(0.0, 0.02, (STEPS, env.model.nu)), axis=0)
    return np.clip(env.key.ctrl + walk, env.action_space.low, env.action_space.high)


def episode(env, seed, acts):
    """(observations (STEPS + 1, 4), the asr states after the last step)."""
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for a in acts:
        obs, reward, terminated, truncated, info = env.step(a)
        assert np.isfinite(reward) and not terminated and not truncated
        out.append(obs)
    return np.array(out), info["asr"]


def plain_loop(m, obs0, ctrl0, acts, frame_skip):
    """The reference: a fresh MjData at obs0's state, mj_step frame_skip times per action."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = obs0[: m.nq], obs0[m.nq :], ctrl0
    out = [np.concatenate([d.qpos, d.qvel])]
    for a in acts:
        d.ctrl[:] = a
        for _ in range(frame_skip):
            mujoco.mj_step(m, d)
        out.append(np.concatenate([d.qpos, d.qvel]))
    return np.array(out)


@pytest.mark.parametrize("frame_skip", [1, 5])
def test_episode_equals_a_plain_mj_step_loop(make_env, frame_skip):
    env = make_env(frame_skip)
    try:
        acts = actions(env, seed=1)
        obs, states = episode(env, 7, acts)
        assert np.isfinite(obs).all() and all(env.observation_space.contains(o) for o in obs)
        assert np.ptp(obs[:, :2], axis=0).min() > 1e-3  # both links moved
        for state in states.values():
            assert state["status"] == 0 and state["steps"] == STEPS * frame_skip
        ref = plain_loop(env.model, obs[0], env.key.ctrl, acts, frame_skip)
        np.testing.assert_array_equal(obs, ref)
    finally:
        env.close()


def test_reset_restarts_the_actuators(make_env, tmp_path, monkeypatch):
    """A second episode with the same seed and actions repeats the first bit for bit, also after
    an episode in which a NaN action stopped an actuator."""
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings to MUJOCO_LOG.TXT in the cwd
    env = make_env(2)
    try:
        acts = actions(env, seed=2)
        first, _ = episode(env, 11, acts)
        bad = acts.copy()
        bad[20, 0] = np.nan
        _, stopped = episode(env, 12, bad)
        assert stopped["joint1"]["status"] != 0 and stopped["joint2"]["status"] == 0
        env.reset(seed=11)
        for state in mujoco_plugin.states(env.model, env.data).values():
            assert state["started"] == 0 and state["steps"] == 0 and state["status"] == 0
        again, states = episode(env, 11, acts)
        np.testing.assert_array_equal(again, first)
        assert all(s["status"] == 0 for s in states.values())
    finally:
        env.close()


# the checker's advice on Box bounds: the observation is unbounded, the references in rad
ADVICE = ("symmetric and normalized space", "minimum value is -infinity", "value is infinity")


def test_gymnasium_env_checker_accepts_it(make_env):
    """Gymnasium's own checker (spaces, seeding, reset and step determinism) passes with no
    warning beyond its advice on Box bounds."""
    from gymnasium.utils.env_checker import check_env

    env = make_env(4)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env, skip_render_check=True)
    finally:
        env.close()
    other = [str(w.message) for w in caught if not any(a in str(w.message) for a in ADVICE)]
    assert not other
