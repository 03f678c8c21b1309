"""A task's public face (asr.envs.vector.AsrVectorEnv): set_state, observe, refs and terminated
give what step() computes, for an agent that acts on a simulator of its own (the dashboard's
policy watch drives its live Sim with them); bad input is refused naming it."""

import importlib

import numpy as np
import pytest

from asr.learning.gym_registry import ENVS


def task_class(env_id):
    module, _, name = ENVS[env_id][1].partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("env_id", sorted(ENVS))
def test_public_methods_equal_what_step_computes(env_id):
    """A second env of the task, never stepped, given the stepped env's link state and episode
    step, observes what step() returned, maps an action to the references the stepped env's Sim
    then holds, and ends the episode when step() does."""
    cls = task_class(env_id)
    stepped, watcher = cls(3), cls(3)
    obs, _ = stepped.reset(seed=7)
    watcher.reset(seed=7)  # the same episodes: the same targets
    space = cls.single_action_space
    rng = np.random.default_rng(0)
    try:
        for k in range(6):
            watcher.set_state(stepped.q, stepped.qd, k)
            np.testing.assert_array_equal(watcher.observe(), obs)
            assert watcher.observe().shape == (3, len(cls.OBSERVATION))
            actions = rng.uniform(space.low, space.high, (3, space.shape[0]))
            refs = watcher.refs(actions)
            ended = watcher.terminated()
            obs, _, terminated, truncated, _ = stepped.step(actions)
            held = np.stack(
                [stepped.sim.batch.field("ref1"), stepped.sim.batch.field("ref2")], axis=-1
            )
            assert refs.shape == (3, stepped.n_joints, 2) and refs.dtype == np.float64
            np.testing.assert_array_equal(refs, held)
            assert ended.dtype == np.bool_ and ended.shape == (3,)
            np.testing.assert_array_equal(ended, terminated)
            if np.any(terminated | truncated):
                break  # the next step resets those sub-envs (NEXT_STEP autoreset)
    finally:
        stepped.close()
        watcher.close()


def test_public_methods_refuse_bad_input():
    cls = task_class("asr/Reach2DOF-v0")
    env = cls(2)
    env.reset(seed=0)
    q = np.zeros((2, 2))
    with pytest.raises(ValueError, match=r"q: expected shape \(2, 2\) \(num_envs, n_joints\)"):
        env.set_state(np.zeros((1, 2)), q)
    bad = q.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"qd\[1, 0\]: got nan, expected a finite value"):
        env.set_state(q, bad)
    for step in (-1, 1.5, True, [0, 1, 2]):
        with pytest.raises(ValueError, match=r"env_step: got .*, expected an int >= 0 or 2"):
            env.set_state(q, q, step)
    env.set_state(q, q, np.array([0, 4]))  # one per sub-env
    with pytest.raises(ValueError, match=r"actions\[0, 2\]: got 9\.0, valid range \[0\.2, 0\.6\]"):
        env.refs(np.array([[0.0, 0.0, 9.0, 0.3], [0.0, 0.0, 0.3, 0.3]]))
    with pytest.raises(ValueError, match=r"actions: expected shape \(2, 4\)"):
        env.refs(np.zeros((3, 4)))
    env.close()
