"""asr.ros.export for every registered task: the node's observation and action entries come from
the task's OBSERVATION / ACTION names (task_io), names the node cannot build are refused with
the task and the name, a task without targets refuses a target, a linear policy finds its task
from the robot and its shape; and the node's policy code (the Policy class both nodes embed, run
here without ROS) drives Throw as the env does: the same references, the release one env step
after the step that asks for it, then held; held too after the time limit without a release.
Periodic2DOF: the node builds the env's observation (the reference from the env_kwargs the
export was given, at the env step's end) to 1e-12 over a whole episode, and a bad keyword is
refused at export."""

import math
import os

import gymnasium
import numpy as np
import pytest

import asr  # noqa: F401  (registers the asr/ ids)
from asr.envs.cem import linear_policy
from asr.envs.periodic import Periodic
from asr.envs.tasks import Reach2DOF
from asr.envs.throw import Throw
from asr.ros.export import REFERENCE_SOURCES, export_policy, policy_data, task_io
from tests.support.ros_export import node_policy_class  # noqa: E402

TASKS = sorted(k for k in gymnasium.registry if k.startswith("asr/"))


@pytest.mark.parametrize("task", TASKS)
def test_entries_of_every_task(task):
    from asr.rl.onnx_policy import resolve_task

    cls = resolve_task(task)
    nj = len(asr.load_robot(cls.robot, cls.variant).joint_names)
    obs, act = task_io(cls, nj)
    assert len(obs) == cls.single_observation_space.shape[0]
    assert len(act) == cls.single_action_space.shape[0]
    for sink in ("equilibrium", "preset"):  # one per joint
        assert sorted(j for s, j in act if s == sink) == list(range(nj))
    for source in ("q", "qd"):  # every task observes its joints' angles and velocities
        assert sorted(j for s, j in obs if s == source) == list(range(nj))


class _Renamed(Reach2DOF):
    OBSERVATION = (("q1", "rad"), ("q2", "rad"), ("qd1", "rad/s"), ("qd2", "rad/s"))
    OBSERVATION += (("target1", "rad"), ("target2", "rad"), ("foo", "rad"), ("q2 - target2", "rad"))


class _NoPreset(Throw):
    ACTION = Throw.ACTION[:3] + (("stiffness2", "rad"),) + Throw.ACTION[4:]


class _Joint3(Throw):
    OBSERVATION = (("q3", "rad"),) + Throw.OBSERVATION[1:]


@pytest.mark.parametrize(
    "task, words",
    [
        (_Renamed, "_Renamed has the entry 'foo', which the node cannot build"),
        (_NoPreset, "_NoPreset has the entry 'stiffness2'"),
        (_Joint3, "_Joint3's entry 'q3' names no joint of its 2"),
    ],
)
def test_unknown_entries_are_refused(task, words, tmp_path):
    W = np.zeros((task.single_action_space.shape[0], task.single_observation_space.shape[0] + 1))
    with pytest.raises(ValueError, match=words) as err:
        export_policy(W, "qbmove_arm_2dof", tmp_path, task=task)
    assert "valid: observation: q<k>, qd<k>" in str(err.value)
    assert not os.listdir(tmp_path)


def test_bad_targets_and_shapes_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"target: got \[0.1, 0.2\], but task Throw observes no"):
        export_policy(np.zeros((5, 6)), "qbmove_arm_2dof", tmp_path, target=[0.1, 0.2])
    with pytest.raises(
        ValueError, match=r"tasks \(observation, action\): Reach2DOF \(8, 4\), Throw \(5, 5\)"
    ):
        export_policy(np.zeros((3, 3)), "qbmove_arm_2dof", tmp_path)
    d = policy_data(np.zeros((5, 6)), "qbmove_arm_2dof")
    Policy = node_policy_class()
    with pytest.raises(ValueError, match="target: got 0.3, valid: none .task Throw observes no"):
        Policy(d, str(tmp_path), 0.3)


def throw_W(release_steps, env_dt):
    """A linear Throw policy: equilibria swinging with the state, presets mid-range, the
    release a = tanh(1000 (t - release_steps env_dt)) (release_steps None: never, so the time
    limit releases)."""
    W = np.random.default_rng(4).normal(0.0, 0.4, (5, 6))
    W[:, 4] = 0.0  # only the release reads t
    W[4] = 0.0
    W[4, 5] = -1000.0
    if release_steps is not None:
        W[4, 4], W[4, 5] = 1000.0, -1000.0 * release_steps * env_dt
    return W


@pytest.mark.parametrize("release_steps", [4.5, None])
def test_linear_throw_node_acts_as_the_env(release_steps, tmp_path):
    env = Throw(1)
    W = throw_W(release_steps, env.env_dt)
    d = policy_data(W, "qbmove_arm_2dof")  # Throw found from the robot and W's shape
    assert (d["task"], d["release"], d["max_steps"]) == ("Throw", True, Throw.max_episode_steps)
    node = node_policy_class()(d, str(tmp_path))
    space = Throw.single_action_space
    obs, _ = env.reset(seed=2)
    ended, held = None, None
    for k in range(Throw.max_episode_steps + 3):
        r1, r2 = node.command(k * env.env_dt, env.q[0].tolist(), env.qd[0].tolist())
        released = node.take_release()
        if ended is not None:
            assert (r1, r2) == held and released  # the release step's, or the time limit's
            break
        a = linear_policy(W[None], obs, space.low, space.high)
        refs = env.refs(a)[0]
        # the node's plain-Python arithmetic (math.fsum, math.tanh) against NumPy's: a few ulp
        np.testing.assert_allclose(np.stack([r1, r2], axis=-1), refs, rtol=0, atol=1e-12)
        assert not released
        held = (r1, r2)
        obs, _, term, trunc, _ = env.step(a)
        if term[0] or trunc[0]:
            ended = k
    assert node.ended and not node.take_release()
    if release_steps is None:
        assert ended == Throw.max_episode_steps - 1  # the time limit: the hand opens, held after
    else:
        assert ended == math.ceil(release_steps) and env.released[0]


@pytest.mark.parametrize("env_kwargs", [{}, {"frequency": 2.5, "amplitude": 0.35}])
def test_periodic_node_observes_as_the_env(env_kwargs, tmp_path):
    """The node's observe() against the env's observation at every env step of an episode
    driven by a linear policy (q, qd from the env's state), then its commands against the
    env's split of the same action; the episode's end from the frequency's cycles."""
    env = Periodic(1, **env_kwargs)
    W = np.random.default_rng(5).normal(0.0, 0.3, (4, 12))
    d = policy_data(W, "qbmove_arm_2dof", env_kwargs=env_kwargs)  # Periodic: W's shape
    assert d["task"] == "Periodic" and d["max_steps"] == env.max_episode_steps
    assert d["reference"] == env.reference_parameters() and d.get("env_kwargs", {}) == env_kwargs
    assert [s for s, _ in d["observation"]][4:10] == ["q_ref"] * 2 + ["qd_ref"] * 2 + [
        "ref_error"
    ] * 2
    Policy = node_policy_class()
    assert Policy.__init__.__globals__["REFERENCE_SOURCES"] == REFERENCE_SOURCES
    node = Policy(d, str(tmp_path))
    space = Periodic.single_action_space
    obs, _ = env.reset(seed=3)
    angles = []
    for k in range(env.max_episode_steps):
        q, qd = env.q[0].tolist(), env.qd[0].tolist()
        # plain Python's math.sin against NumPy's: equal, or within an ulp or two
        np.testing.assert_allclose(node.observe(k, q, qd), obs[0], rtol=0, atol=1e-12)
        r1, r2 = node.command(k * env.env_dt, q, qd)
        a = linear_policy(W[None], obs, space.low, space.high)
        np.testing.assert_allclose(np.stack([r1, r2], axis=-1), env.refs(a)[0], atol=1e-12)
        obs, _, term, trunc, _ = env.step(a)
        angles.append(q)
    assert trunc[0] and not term[0] and not node.ended
    assert np.ptp(np.array(angles), axis=0).min() > 0.05  # the policy moved both joints
    node.command(env.max_episode_steps * env.env_dt, env.q[0].tolist(), env.qd[0].tolist())
    assert node.ended  # the episode's time limit: held from here


@pytest.mark.parametrize(
    "env_kwargs, words",
    [
        ({"frequency": 3.0}, r"frequency: got 3.0, valid: \(1.0, 1.25, 2.0, 2.5\) Hz"),
        ({"amplitude": 0.9}, r"amplitude: got 0.9, valid range \(0, 0.5\] rad"),
        ({"amplitude": "big"}, r"env_kwargs: .* amplitude: got 'big', expected a number"),
        ({"frequncy": 2.0}, r"env_kwargs: \{'frequncy': 2.0\} for Periodic: .*'frequncy'"),
        ("2 Hz", r"env_kwargs: expected a dict of Periodic's keyword arguments, got str"),
        ({"preset": np.array([0.1, 0.2])}, r"env_kwargs: got .*, expected JSON values"),
    ],
)
def test_periodic_export_refuses_bad_env_kwargs(env_kwargs, words, tmp_path):
    W = np.zeros((4, 12))
    with pytest.raises((ValueError, TypeError), match=words):
        export_policy(W, "qbmove_arm_2dof", tmp_path, env_kwargs=env_kwargs)
    assert not os.listdir(tmp_path)
