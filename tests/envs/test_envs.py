"""asr.envs: gymnasium vector environments over one asr.Sim (spaces, seeding, NEXT_STEP autoreset,
batched step == sub-envs stepped one by one, make_vec, bad actions)."""

import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import asr.envs
from asr.envs import AsrVectorEnv, EquilibriumTracking, Reach2DOF, register_envs
from asr.envs.tasks import EquilibriumTrackingEnv, Reach2DOFEnv

TASKS = [(EquilibriumTracking, EquilibriumTrackingEnv), (Reach2DOF, Reach2DOFEnv)]


def test_register_idempotent_and_make_vec():
    register_envs()
    register_envs()
    for env_id, cls in (
        ("asr/EquilibriumTracking-v0", EquilibriumTracking),
        ("asr/Reach2DOF-v0", Reach2DOF),
    ):
        assert gymnasium.spec(env_id).vector_entry_point is not None
        for mode in (None, "vector_entry_point"):
            env = gymnasium.make_vec(env_id, num_envs=3, vectorization_mode=mode)
            assert isinstance(env, cls) and isinstance(env, gymnasium.vector.VectorEnv)
            assert env.num_envs == 3 and env.sim.n_instances == 3
            assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
            assert env.render_mode is None
            env.close()
    single = gymnasium.make("asr/Reach2DOF-v0")
    assert isinstance(single.unwrapped, Reach2DOFEnv)


@pytest.mark.parametrize("cls", [t[0] for t in TASKS])
def test_spaces_and_containment(cls):
    n = 3
    env = cls(n)
    so, sa = env.single_observation_space, env.single_action_space
    assert env.observation_space.shape == (n,) + so.shape
    assert env.action_space.shape == (n,) + sa.shape
    assert so.dtype == sa.dtype == np.float64
    assert np.all(np.isfinite(sa.low)) and np.all(np.isfinite(sa.high))
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float64 and obs in env.observation_space
    assert info["_target"].all()
    env.action_space.seed(1)
    for _ in range(3):
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        assert obs in env.observation_space
        assert r.shape == (n,) and r.dtype == np.float64 and np.all(np.isfinite(r))
        assert term.dtype == trunc.dtype == np.bool_ and term.shape == trunc.shape == (n,)
        for k, v in info.items():
            if not k.startswith("_"):
                assert info[f"_{k}"].shape == (n,) and v.shape[0] == n


@pytest.mark.slow
@pytest.mark.parametrize("order", ["import asr, gymnasium", "import gymnasium, asr"])
def test_import_asr_then_make_vec_fresh_process(order):
    """The README's usage in a new interpreter: `import asr` alone registers the ids (Gymnasium
    1.x loads no plugin entry points), whether gymnasium is imported before or after asr; and
    `import asr` does not import gymnasium itself."""
    code = (
        f"import sys; {order}\n"
        "for env_id in ('asr/EquilibriumTracking-v0', 'asr/Reach2DOF-v0'):\n"
        "    env = gymnasium.make_vec(env_id, num_envs=2)\n"
        "    env.reset(seed=0)\n"
        "    env.step(env.action_space.sample())\n"
        "    env.close()\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    lazy = subprocess.run(
        [sys.executable, "-c", "import sys, asr; print('gymnasium' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert lazy.returncode == 0, lazy.stderr
    assert lazy.stdout.strip() == "False"


def test_seeding_reproducible():
    env = EquilibriumTracking(4)
    acts = np.random.default_rng(0).uniform(
        env.action_space.low, env.action_space.high, (5,) + env.action_space.shape
    )
    runs = []
    for _ in range(2):
        obs, _ = env.reset(seed=42)
        traj = [obs]
        for a in acts:
            traj.append(env.step(a)[0])
        runs.append(np.array(traj))
    assert np.array_equal(runs[0], runs[1])
    o1, _ = env.reset(seed=42)
    o2, _ = env.reset(seed=43)
    assert not np.array_equal(o1[:, 2], o2[:, 2])  # targets differ
    assert np.array_equal(o1[1:, 2], o2[:-1, 2])  # sub-env i gets seed + i
    o3, _ = env.reset(seed=[42, 43, 44, 45])
    assert np.array_equal(o1, o3)


def _assert_same(a, b, what):
    oa, ra, ta, tra, ia = a
    ob, rb, tb, trb, ib = b
    np.testing.assert_array_equal(oa, ob, err_msg=f"{what}: obs")
    np.testing.assert_array_equal(ra, rb, err_msg=f"{what}: rewards")
    np.testing.assert_array_equal(ta, tb, err_msg=f"{what}: terminations")
    np.testing.assert_array_equal(tra, trb, err_msg=f"{what}: truncations")
    assert set(ia) == set(ib), what
    for k in ia:
        np.testing.assert_array_equal(ia[k], ib[k], err_msg=f"{what}: info {k}")


@pytest.mark.parametrize("vec_cls, single_cls", TASKS)
def test_batched_equals_sync_vector_env(vec_cls, single_cls):
    """One C call for N sub-envs == gymnasium's SyncVectorEnv of N single-instance envs, bit for
    bit, across NEXT_STEP autoresets and a partial reset (reset_mask), with asr's per-instance
    reset."""
    n, length = 3, 4
    vec = vec_cls(n, max_episode_steps=length)
    sync = SyncVectorEnv(
        [lambda: single_cls(max_episode_steps=length) for _ in range(n)],
        autoreset_mode=AutoresetMode.NEXT_STEP,
    )
    rng = np.random.default_rng(3)
    space = vec.action_space
    ov, iv = vec.reset(seed=7)
    os_, is_ = sync.reset(seed=7)
    _assert_same((ov, 0, 0, 0, iv), (os_, 0, 0, 0, is_), "reset")
    ends = 0
    for t in range(11):
        if t == 2:  # restart sub-env 1 alone: from now on the sub-envs end at different steps
            mask = np.array([False, True, False])
            a = vec.reset(options={"reset_mask": mask.copy()})
            b = sync.reset(options={"reset_mask": mask.copy()})
            _assert_same((a[0], 0, 0, 0, a[1]), (b[0], 0, 0, 0, b[1]), "reset_mask")
        act = rng.uniform(space.low, space.high)
        a, b = vec.step(act), sync.step(act)
        _assert_same(a, b, f"step {t}")
        ends += int(a[3].sum())
    assert ends >= 4


def test_next_step_autoreset_semantics():
    env = EquilibriumTracking(2, max_episode_steps=3)
    env.reset(seed=0)
    act = np.tile([0.3, 0.4], (2, 1))
    for _ in range(2):
        _, _, term, trunc, _ = env.step(act)
        assert not (term | trunc).any()
    obs, r, term, trunc, info = env.step(act)
    assert trunc.all() and not term.any()
    last_target = obs[:, 2].copy()
    obs, r, term, trunc, info = env.step(act)  # autoreset step: action ignored
    assert np.array_equal(r, [0.0, 0.0]) and not (term | trunc).any()
    assert not info["_tracking_error"].any() and info["_target"].all()
    np.testing.assert_array_equal(obs[:, 0], env.sim.robot.initial_q[0])  # back at rest
    np.testing.assert_array_equal(obs[:, 1], 0.0)
    assert not np.array_equal(obs[:, 2], last_target)  # new targets
    assert env.sim.batch.status.tolist() == [0, 0]
    obs, r, term, trunc, info = env.step(act)
    assert info["_tracking_error"].all() and np.all(r < 0)


def test_check_env_single_instance():
    from gymnasium.utils.env_checker import check_env

    for env_id in asr.envs.ENVS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # advice on unbounded / non-normalised Box spaces
            check_env(gymnasium.make(env_id).unwrapped, skip_render_check=True)


def test_bad_actions():
    env = Reach2DOF(2)
    env.reset(seed=0)
    good = np.tile([0.0, 0.0, 0.3, 0.3], (2, 1))
    with pytest.raises(ValueError, match=r"actions: expected shape \(2, 4\)"):
        env.step(good[0])
    with pytest.raises(ValueError, match="non-finite"):
        bad = good.copy()
        bad[1, 2] = np.nan
        env.step(bad)
    with pytest.raises(ValueError, match=r"actions\[0, 2\].*valid range"):
        bad = good.copy()
        bad[0, 2] = 5.0
        env.step(bad)
    with pytest.raises(TypeError):
        env.step(object())
    env.step(good)  # still usable
    with pytest.raises(ValueError, match="render_mode"):
        Reach2DOF(1, render_mode="human")
    with pytest.raises(ValueError, match="num_envs"):
        Reach2DOF(0)
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=[1])


def test_is_vector_env_base():
    assert issubclass(EquilibriumTracking, AsrVectorEnv)
