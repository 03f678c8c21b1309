"""Randomisation and noise of asr's tasks (asr.envs.randomization.Randomization, the keyword
`randomization`): every field's draws stay in its range and fill it, the same seed gives the same
draws and each episode its own, off is the plain simulation bit for bit (checked against asr.Sim
driven directly), sensor noise has the stated mean and standard deviation, the action latency
delays the actions by exactly k steps, scaled(k) widens every draw by k, bad values are refused
naming field, value and range."""

import json

import gymnasium
import numpy as np
import pytest
from gymnasium.utils import seeding

import asr
from asr.cli import parse_env
from asr.envs.randomization import Randomization, draw_episode, moving_bodies
from asr.envs.tasks import Reach2DOF
from asr.envs.throw import Throw

# every field on: start_q, mass_scale, spring_scale, noise_q, noise_qd, latency, latency_jitter
FULL = Randomization(0.1, 0.2, 0.3, 0.01, 0.1, 1, 2)


def _nominal_springs(env):
    """{(joint, name): nominal value} of the robot's springs, from an env without randomisation."""
    plain = type(env)(1)
    b = plain.sim.batch
    out = {
        (j, name): float(b.get_param(j, name)[0])
        for j, names in enumerate(env._spring_names)
        for name in names
    }
    plain.close()
    return out


def test_draws_respect_every_range_and_fill_it():
    """40 resets of 8 sub-envs (320 episodes): each start offset, mass factor (inertia with it),
    spring factor and latency lies in its range, and the extremes come near its ends."""
    env = Reach2DOF(8, randomization=FULL)
    model = asr.load_robot(Reach2DOF.robot, Reach2DOF.variant).mj_model()
    bodies = moving_bodies(model)
    assert [model.body(b).name for b in bodies] == ["link1", "link2"]
    springs0 = _nominal_springs(env)
    assert sorted(springs0) == [(j, k) for j in (0, 1) for k in ("a1", "a2", "k1", "k2")]
    q0 = np.asarray(env.sim.robot.initial_q)
    starts, masses, inertias, factors, latencies = [], [], [], [], []
    for seed in range(40):
        env.reset(seed=100 * seed)
        # the start pose as the Sim was reset to it (before any step)
        starts.append(env.sim.q - q0)
        for i in range(8):
            m = env.sim.models[i]
            masses.append(m.body_mass[bodies] / model.body_mass[bodies])
            inertias.append(m.body_inertia[bodies] / model.body_inertia[bodies])
            for (j, name), v0 in springs0.items():
                factors.append(env.sim.batch.get_param(j, name)[i] / v0)
        latencies.append(env._latency.copy())
    starts, masses = np.array(starts), np.array(masses)
    inertias, factors, latencies = np.array(inertias), np.array(factors), np.array(latencies)
    # each within its range, and filling it: the largest of 640 uniform draws per end
    assert np.abs(starts).max() <= FULL.start_q and np.abs(starts).max() > 0.95 * FULL.start_q
    assert starts.min() < -0.9 * FULL.start_q and starts.max() > 0.9 * FULL.start_q
    for f, s in ((masses, FULL.mass_scale), (factors, FULL.spring_scale)):
        assert f.min() >= 1 - s and f.max() <= 1 + s
        assert f.min() < 1 - 0.95 * s and f.max() > 1 + 0.95 * s
    # the inertia scales with the mass (a uniformly denser or lighter body)
    np.testing.assert_allclose(inertias, np.repeat(masses[:, :, None], 3, axis=2), rtol=1e-12)
    # the masses differ from instance to instance (each has its own model)
    assert len({tuple(m) for m in masses[:8]}) == 8
    lo, hi = FULL.latency, FULL.latency + FULL.latency_jitter
    assert set(np.unique(latencies)) == set(range(lo, hi + 1))
    env.close()


def test_draw_episode_ranges_every_field():
    """The draw function itself over 2000 episodes of a 2-joint, 2-body robot."""
    rng = np.random.default_rng(0)
    draws = [draw_episode(FULL, rng, 2, 2, [4, 1]) for _ in range(2000)]
    start = np.array([d.start_dq for d in draws])
    mass = np.array([d.mass for d in draws])
    spring = np.array([np.concatenate(d.spring) for d in draws])
    lat = np.array([d.latency for d in draws])
    assert start.shape == (2000, 2) and mass.shape == (2000, 2) and spring.shape == (2000, 5)
    assert np.all(np.abs(start) <= FULL.start_q)
    assert np.all(np.abs(mass - 1) <= FULL.mass_scale)
    assert np.all(np.abs(spring - 1) <= FULL.spring_scale)
    # uniform: the mean of 4000 U(-1, 1) is 0 within 4 sigma (sigma = 1 / sqrt(3 * 4000))
    assert abs(np.mean(start / FULL.start_q)) < 4 / np.sqrt(3 * 4000)
    assert abs(np.var(mass - 1) / FULL.mass_scale**2 - 1 / 3) < 0.03
    counts = np.bincount(lat, minlength=4)
    assert counts[0] == 0 and all(abs(c - 2000 / 3) < 100 for c in counts[1:])


def test_seeded_draws_reproduce_and_episodes_differ():
    """Two envs reset with one seed draw the same; the next episodes (autoreset and reset
    without a seed) draw anew; another seed draws otherwise."""

    def masses(env):
        return [m.body_mass[moving_bodies(m)] for m in env.sim.models]

    def run(env, seed):
        obs, _ = env.reset(seed=seed)
        out = [obs]
        first = masses(env)
        rng = np.random.default_rng(1)
        space = env.single_action_space
        for _ in range(12):  # the throw of max_episode_steps 5: two episodes and a bit
            a = rng.uniform(space.low, space.high, (2, space.shape[0]))
            a[:, 4] = -1.0
            out.append(env.step(a)[0])
        second = masses(env)
        env.reset()
        third = masses(env)
        return np.array(out), np.array(first), np.array(second), np.array(third)

    a, b, c = (Throw(2, randomization=FULL, max_episode_steps=5) for _ in range(3))
    ra, rb, rc = run(a, 3), run(b, 3), run(c, 4)
    for x, y in zip(ra, rb):
        np.testing.assert_array_equal(x, y)
    obs, first, second, third = ra
    assert np.all(first != second) and np.all(second != third)  # each episode its own masses
    assert np.all(first[0] != first[1])  # each sub-env its own
    assert np.all(rc[1] != first)  # another seed, other draws
    assert not np.array_equal(rc[0], obs)
    for env in (a, b, c):
        env.close()


def _bare_reach(seed, actions, episode_steps):
    """Reach2DOF's observations from asr.Sim driven directly: the seeded generator's targets,
    the robot's initial state, each action held over frame_skip steps; after episode_steps
    steps the next step starts a new episode (gymnasium's NEXT_STEP autoreset: its action
    ignored, the next target drawn, the initial state again)."""
    robot = asr.load_robot(Reach2DOF.robot, Reach2DOF.variant)
    sim = asr.Sim(robot, 1)
    rng, _ = seeding.np_random(seed)

    def new_episode():
        sim.reset(robot.initial_q, robot.initial_refs)
        return rng.uniform(-Reach2DOF.target_range, Reach2DOF.target_range, 2)

    def observe(target):
        return np.concatenate([sim.q[0], sim.qd[0], target, sim.q[0] - target])

    target = new_episode()
    obs, elapsed = [observe(target)], 0
    for a in actions:
        if elapsed == episode_steps:
            target, elapsed = new_episode(), 0
        else:
            sim.rollout(Reach2DOF.frame_skip, np.stack([a[:2], a[2:]], axis=-1)[None])
            elapsed += 1
        obs.append(observe(target))
    return np.array(obs)


@pytest.mark.parametrize("off", [None, "off", Randomization(), {}])
def test_off_is_the_plain_simulation_bit_for_bit(off):
    """With randomisation off the env's observations over three episodes are asr.Sim's states
    exactly and its targets the seed's draws in order (no draw of its own in between)."""
    rng = np.random.default_rng(5)
    space = Reach2DOF.single_action_space
    actions = rng.uniform(space.low, space.high, (20, 4))
    env = Reach2DOF(1, randomization=off, max_episode_steps=8)
    obs = [env.reset(seed=11)[0][0]]
    for a in actions:
        obs.append(env.step(a[None])[0][0])
    bare = _bare_reach(11, actions, 8)
    assert len({tuple(o[4:6]) for o in bare}) == 3  # three episodes, three targets
    np.testing.assert_array_equal(np.array(obs), bare)
    assert not env.randomization.active
    env.close()


def test_noise_statistics_and_reward_on_the_true_state():
    """Observed minus true state over 8 sub-envs x 60 steps x 2 joints (960 samples each): mean
    0 within 4 standard errors, standard deviation within 5 of its standard errors
    (1 / sqrt(2 n)); q - target is formed from the noisy q; the reward reads the true q."""
    r = Randomization(noise_q=0.02, noise_qd=0.3)
    env = Reach2DOF(8, randomization=r, max_episode_steps=1000)
    obs, _ = env.reset(seed=2)
    rng = np.random.default_rng(3)
    space = env.single_action_space
    eq, eqd = [], []
    for _ in range(60):
        obs, rew, *_ = env.step(rng.uniform(space.low, space.high, (8, 4)))
        eq.append(obs[:, 0:2] - env.q)
        eqd.append(obs[:, 2:4] - env.qd)
        np.testing.assert_allclose(obs[:, 6:8], obs[:, 0:2] - obs[:, 4:6], rtol=0, atol=1e-15)
        true = -np.linalg.norm(env.q - env.target, axis=1)
        cost = env.stiffness_cost * np.mean((env._preset - 0.2) / 0.4, axis=1)
        np.testing.assert_allclose(rew, true - cost, rtol=0, atol=1e-15)
    n = 8 * 60 * 2
    for e, sigma in ((np.array(eq), r.noise_q), (np.array(eqd), r.noise_qd)):
        assert abs(e.mean()) < 4 * sigma / np.sqrt(n), e.mean()
        assert abs(e.std() / sigma - 1) < 5 / np.sqrt(2 * n), e.std()
    # q and qd noises are independent draws
    assert abs(np.corrcoef(np.ravel(eq), np.ravel(eqd))[0, 1]) < 4 / np.sqrt(n)
    env.close()


@pytest.mark.parametrize("k", [1, 3])
def test_latency_delays_the_actions_by_exactly_k_steps(k):
    """An env with latency k equals one without, given the initial references k times and then
    the same actions: the same observations, bit for bit."""
    rng = np.random.default_rng(k)
    space = Reach2DOF.single_action_space
    actions = rng.uniform(space.low, space.high, (15, 2, 4))
    late = Reach2DOF(2, randomization=Randomization(latency=k))
    plain = Reach2DOF(2)
    o1, _ = late.reset(seed=9)
    o2, _ = plain.reset(seed=9)
    np.testing.assert_array_equal(o1, o2)
    rest = np.array([0.0, 0.0, 0.2, 0.2])  # the initial references: equilibrium 0, preset 0.2
    delayed = np.concatenate([np.broadcast_to(rest, (k, 2, 4)), actions[:-k]])
    for a, d in zip(actions, delayed):
        o1 = late.step(a)[0]
        o2 = plain.step(d)[0]
        np.testing.assert_array_equal(o1, o2)
    late.close()
    plain.close()


def test_latency_delays_the_throw_release():
    """The release commanded at step 3 ends the episode at step 3 + k."""
    for k in (0, 2):
        env = Throw(1, randomization=Randomization(latency=k) if k else None)
        env.reset(seed=0)
        a = np.array([[0.5, 0.2, 0.4, 0.4, -1.0]])
        ended = None
        for t in range(1, 12):
            a[0, 4] = 1.0 if t == 3 else -1.0
            if env.step(a)[2][0]:
                ended = t
                break
        assert ended == 3 + k
        env.close()


def test_scaled_widens_every_draw_by_k():
    """scaled(k) multiplies every spread and the latency by k; with the same seed each drawn
    deviation is k times training's (common random numbers), so k = 2 leaves training's range."""
    base = Randomization(start_q=0.1, mass_scale=0.2, spring_scale=0.2, latency=2)
    wide = base.scaled(2)
    assert wide.as_dict() == {
        "start_q": 0.2,
        "mass_scale": 0.4,
        "spring_scale": 0.4,
        "noise_q": 0.0,
        "noise_qd": 0.0,
        "latency": 4,
        "latency_jitter": 0,
    }
    d1 = draw_episode(base, np.random.default_rng(7), 2, 2, [4, 4])
    d2 = draw_episode(wide, np.random.default_rng(7), 2, 2, [4, 4])
    np.testing.assert_allclose(d2.start_dq, 2 * d1.start_dq, rtol=1e-15)
    np.testing.assert_allclose(d2.mass - 1, 2 * (d1.mass - 1), rtol=1e-12)
    np.testing.assert_allclose(d2.spring[0] - 1, 2 * (d1.spring[0] - 1), rtol=1e-12)
    assert d2.latency == 2 * d1.latency == 4
    env = Throw(4, randomization=wide)
    env.reset(seed=0)
    masses = np.array([m.body_mass[moving_bodies(m)] for m in env.sim.models])
    env.close()
    assert np.all(np.abs(masses / masses.mean() - 1) < 0.6)
    with pytest.raises(ValueError, match=r"Randomization.mass_scale: got 0.8, valid range"):
        Randomization(mass_scale=0.4).scaled(2)
    with pytest.raises(ValueError, match=r"k: got -1, valid range \[0, inf\)"):
        base.scaled(-1)


def test_standard_and_json_reach_the_task():
    """The keyword takes "standard", a dict (what `asr train --env randomization=...` gives)
    and a Randomization, through gymnasium.make, make_vec and the rigid throw arm."""
    assert Randomization.parse("standard") == Randomization.standard()
    assert Randomization.standard().active and not Randomization().active
    (kwargs,) = [parse_env(['randomization={"mass_scale": 0.1, "latency": 2}'])]
    assert kwargs == {"randomization": {"mass_scale": 0.1, "latency": 2}}
    json.dumps(Randomization.standard().as_dict())
    env = gymnasium.make("asr/Throw-v0", **kwargs)
    assert env.unwrapped._vec.randomization == Randomization(mass_scale=0.1, latency=2)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    env.close()
    venv = gymnasium.make_vec(
        "asr/Reach2DOF-v0",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        randomization="standard",
    )
    assert venv.randomization == Randomization.standard()
    venv.close()
    rigid = Throw(2, actuator="rigid", randomization=Randomization(spring_scale=0.2))
    rigid.reset(seed=0)
    k = rigid.sim.batch.get_param(0, "k")
    assert np.all(np.abs(k / 2000.0 - 1) <= 0.2) and k[0] != k[1]
    energy = rigid.spring_energy()  # each instance's own k
    d1 = rigid.sim.batch.field("defl1")
    ks = np.stack([rigid.sim.batch.get_param(j, "k") for j in range(2)], axis=1)
    np.testing.assert_allclose(energy, 0.5 * np.sum(ks * d1 * d1, axis=1), rtol=1e-14)
    rigid.close()


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"start_q": 0.6},
            ValueError,
            r"Randomization.start_q: got 0.6, valid range \[0.0, 0.5\] rad",
        ),
        ({"mass_scale": -0.1}, ValueError, r"Randomization.mass_scale: got -0.1, valid range"),
        ({"spring_scale": 0.51}, ValueError, r"Randomization.spring_scale: got 0.51, valid range"),
        ({"noise_q": float("nan")}, ValueError, r"Randomization.noise_q: got nan, valid range"),
        ({"noise_qd": 3.0}, ValueError, r"noise_qd: got 3.0, valid range \[0.0, 2.0\] rad/s"),
        ({"latency": 11}, ValueError, r"Randomization.latency: got 11, valid range \[0, 10\] env"),
        ({"latency": 1.5}, TypeError, r"Randomization.latency: got 1.5, expected an integer"),
        ({"latency_jitter": -1}, ValueError, r"latency_jitter: got -1, valid range \[0, 10\]"),
        ({"noise_q": "0.1"}, TypeError, r"Randomization.noise_q: got '0.1', expected a number"),
        ({"start_q": True}, TypeError, r"Randomization.start_q: got True, expected a number"),
    ],
)
def test_bad_values_are_refused_naming_field_value_and_range(kwargs, error, message):
    with pytest.raises(error, match=message):
        Randomization(**kwargs)
    with pytest.raises(error, match=message):  # the same through the task's keyword
        Reach2DOF(1, randomization=kwargs)


def test_bad_keyword_values_are_refused():
    with pytest.raises(ValueError, match=r"randomization: unknown field 'mass'; valid: start_q"):
        Reach2DOF(1, randomization={"mass": 0.1})
    with pytest.raises(ValueError, match=r"randomization: got 'wide', expected one of"):
        Reach2DOF(1, randomization="wide")
    with pytest.raises(TypeError, match=r"randomization: got float, expected None"):
        Reach2DOF(1, randomization=0.1)
