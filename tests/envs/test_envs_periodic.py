"""asr/Periodic2DOF-v0 (asr.envs.periodic): the motors' work closes the energy balance (work in =
change of the stored energy + what damping dissipated, each from its closed form); the reference
and the episode's cycles are as stated; the trend of [Vanderborght2013] on an open-loop drive (at
2 Hz the 0.4 rad preset, near resonance, needs less energy per cycle than the rigid arm and far
less than the softest preset, all within the error bound); randomisation seeded and in range;
bad keywords named; every task declares its metric and asr.rl reads it."""

import math

import mujoco
import numpy as np
import pytest

from asr.envs.metrics import ENERGY_PER_CYCLE, TaskMetric
from asr.envs.periodic import (
    CENTRE,
    ERROR_BOUND,
    FREQUENCIES,
    MEASURED_CYCLES,
    MISS_COST,
    Periodic,
    reference,
    reference_rate,
)
from asr.envs.randomization import Randomization
from asr.envs.throw import spring_energy_from_deflection
from asr.learning.gym_registry import ENVS

# open-loop equilibria per joint, rad: CENTRE_j + a cos(2 pi f t) + b sin(2 pi f t), rows (c, a,
# b), found for f = 2 Hz, A = 0.2 rad by a secant (Broyden) iteration on the fundamental of the
# link motion over the measured cycles (8 episodes per arm)
EQ_P04 = [[-1.492, 0.074, -0.199], [0.104, 0.135, 0.071]]  # preset 0.4 rad
EQ_P00 = [[-1.571, 0.028, -0.478], [0.001, 0.216, -0.116]]  # preset 0 rad
EQ_RIGID = [[-1.571, 0.098, 0.191], [0.0, 0.098, 0.193]]  # the rigid arm (its PD lags)


def drive(env, coefs, f=2.0, balance=False):
    """One episode of env (seed 0) with open-loop equilibria (coefs (N, 2, 3), see above) at the
    middle of each env step, presets 0.4 (ignored by fixed presets and the rigid arm); returns
    the last step's info, and with balance=True (the qbmove arm) the energy balance's terms:
    (info, W, dE, dissipated), J."""
    env.reset(seed=0)
    c = np.asarray(coefs, dtype=float)
    w = 2 * math.pi * f
    e0 = stored_energy(env) if balance else 0.0
    dissipated = np.zeros(env.num_envs)
    for k in range(env.max_episode_steps):
        tm = (k + 0.5) * env.env_dt
        eq = c[..., 0] + c[..., 1] * np.cos(w * tm) + c[..., 2] * np.sin(w * tm)
        *_, info = env.step(np.c_[eq, np.full((env.num_envs, 2), 0.4)])
        if balance:
            dissipated += damping_losses(env)
    if not balance:
        return info
    return info, info["net_work"], stored_energy(env) - e0, dissipated


def damping_losses(env):
    """(N,) J dissipated over the last env step by the links' viscous damping (MuJoCo's
    dof_damping) and the motors' (motor_D): sum of c qd^2 dt and D thd^2 dt per simulation
    step, from the recorded velocities."""
    out, b, dt = env.sim.last, env.sim.batch, env.sim.dt
    c = env.sim.models[0].dof_damping
    loss = np.sum(c * out["qd"] ** 2, axis=(1, 2)) * dt
    for j in range(2):
        d = b.get_param(j, "motor_D")
        loss += d * np.sum(out["th1d"][:, :, j] ** 2 + out["th2d"][:, :, j] ** 2, axis=1) * dt
    return loss


def stored_energy(env):
    """(N,) J: the links' kinetic energy qd^T M(q) qd / 2 (MuJoCo's mass matrix), their potential
    energy in gravity (sum of m g z of the bodies' centres of mass), the springs' (the qbmove
    closed form from the deflections) and the motors' kinetic energy J thd^2 / 2."""
    b = env.sim.batch
    out = np.zeros(env.num_envs)
    for i, (m, d) in enumerate(zip(env.sim.models, env.sim.datas)):
        mujoco.mj_forward(m, d)
        mass = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, mass)
        out[i] = 0.5 * d.qvel @ mass @ d.qvel - np.sum(m.body_mass * (d.xipos @ m.opt.gravity))
    for j in range(2):
        k1, a1, k2, a2 = (b.get_param(j, n) for n in ("k1", "a1", "k2", "a2"))
        out += spring_energy_from_deflection(b.defl1[:, j], b.defl2[:, j], k1, a1, k2, a2)
        out += 0.5 * b.get_param(j, "motor_J") * (b.th1d[:, j] ** 2 + b.th2d[:, j] ** 2)
    return out


def test_the_motors_work_is_the_stored_energy_plus_the_dissipated():
    """Without friction (MuJoCo's joint frictionloss and the motors' static friction set to 0)
    the only losses are viscous: over a 2 s episode the motors' net work equals the change of the
    stored energy plus the damping losses, to 1 %; the positive work is at least the net work."""
    env = Periodic(1, preset=0.4)
    env.sim.models[0].dof_frictionloss[:] = 0.0
    for j in range(2):
        env.sim.batch.set_param(j, "friction", np.zeros(1))
    info, work, stored, lost = drive(env, [EQ_P04], balance=True)
    print(f"\nW {work[0]:.4f} J, dE {stored[0]:.4f} J, dissipated {lost[0]:.4f} J")
    assert work[0] > 1.0
    assert work[0] == pytest.approx(stored[0] + lost[0], rel=0.01)
    assert info["energy_per_cycle"][0] == pytest.approx(info["energy"][0] / MEASURED_CYCLES)
    env.close()


def test_a_spring_near_resonance_saves_energy():
    """[Vanderborght2013]: at 2 Hz, 0.2 rad, the open-loop drive of the 0.4 rad preset needs less
    positive motor work per cycle than the rigid arm and than the softest preset, every arm
    within ERROR_BOUND."""
    qb = Periodic(2, preset=np.array([[0.4, 0.4], [0.0, 0.0]]))
    info = drive(qb, [EQ_P04, EQ_P00])
    rigid = Periodic(1, actuator="rigid")
    info_r = drive(rigid, [EQ_RIGID])
    energy = np.r_[info["energy_per_cycle"], info_r["energy_per_cycle"]]
    error = np.r_[info["tracking_error"], info_r["tracking_error"]]
    print(f"\nJ per cycle (p 0.4, p 0, rigid) {energy}, RMS error rad {error}")
    assert np.all(error <= ERROR_BOUND)
    assert energy[0] < 0.9 * energy[2] and energy[0] < 0.5 * energy[1]
    np.testing.assert_array_equal(
        np.r_[qb.metric_value(), rigid.metric_value()], energy
    )  # within the bound: the metric is the energy per cycle
    qb.close()
    rigid.close()


def test_reference_cycles_and_observation():
    for f in FREQUENCIES:
        env = Periodic(1, frequency=f, amplitude=0.1)
        assert env.max_episode_steps * env.env_dt == pytest.approx(4 / f)
        obs, _ = env.reset(seed=0)
        t = env.env_dt
        ref = np.asarray(CENTRE) + 0.1 * math.sin(2 * math.pi * f * t)  # at the step's end
        rate = 0.1 * 2 * math.pi * f * math.cos(2 * math.pi * f * t)
        np.testing.assert_allclose(
            obs[0], [*CENTRE, 0.0, 0.0, *ref, rate, rate, *(CENTRE - ref), 0.0], rtol=0, atol=1e-15
        )
        *_, info = env.step(np.array([[*CENTRE, 0.3, 0.3]]))
        np.testing.assert_allclose(info["reference"][0], ref, rtol=0, atol=1e-15)
        np.testing.assert_allclose(reference(t, f, 0.1), info["reference"][0])
        env.close()
    env = Periodic(1)
    env.reset(seed=0)
    # nothing tracked yet: the error of holding still, A / sqrt(2)
    assert env.metric_value()[0] == pytest.approx(MISS_COST * (0.2 / math.sqrt(2) - ERROR_BOUND))
    env.close()


def test_observation_entries_follow_the_reference():
    """Every env step of an episode with sensor noise: each entry named in OBSERVATION is what
    its name says, the reference and its rate taken at the step's end from reference and
    reference_rate, the errors from the observed (noisy) q; reference_rate is the derivative
    of reference (central difference, h = 1e-6 s)."""
    env = Periodic(2, frequency=1.25, amplitude=0.3, randomization=Randomization(noise_q=0.01))
    names = [n for n, _ in Periodic.OBSERVATION]
    assert len(names) == env.single_observation_space.shape[0] == 11
    col = {n: i for i, n in enumerate(names)}
    obs, _ = env.reset(seed=4)
    rng = np.random.default_rng(0)
    for k in range(30):
        end = (k + 1) * env.env_dt
        ref, rate = reference(end, 1.25, 0.3), reference_rate(end, 1.25, 0.3)
        for j in (1, 2):
            q = obs[:, col[f"q{j}"]]
            np.testing.assert_array_equal(obs[:, col[f"q_ref{j}"]], ref[j - 1])
            np.testing.assert_array_equal(obs[:, col[f"qd_ref{j}"]], rate[j - 1])
            np.testing.assert_array_equal(obs[:, col[f"q{j} - q_ref{j}"]], q - ref[j - 1])
            assert np.all(np.abs(q - env.q[:, j - 1]) < 0.06)  # observed: true q + noise
        np.testing.assert_array_equal(obs[:, col["t"]], k * env.env_dt)
        h = 1e-6
        diff = (reference(end + h, 1.25, 0.3) - reference(end - h, 1.25, 0.3)) / (2 * h)
        np.testing.assert_allclose(rate, diff, rtol=0, atol=1e-6)
        eq = np.asarray(CENTRE) + rng.uniform(-0.3, 0.3, (2, 2))
        obs, *_ = env.step(np.c_[eq, np.full((2, 2), 0.4)])
    assert np.any(obs[:, col["q1"]] != env.q[:, 0])  # the noise reaches q and the errors
    env.close()


def test_randomisation_is_seeded_and_in_range():
    r = Randomization(start_q=0.1, spring_scale=0.2, noise_q=0.01)
    a, b = Periodic(3, randomization=r), Periodic(3, randomization=r)
    k1_nominal = Periodic(1).sim.batch.get_param(0, "k1")
    starts = []
    for seed in range(4):
        obs_a, _ = a.reset(seed=10 * seed)
        obs_b, _ = b.reset(seed=10 * seed)
        np.testing.assert_array_equal(obs_a, obs_b)
        np.testing.assert_array_equal(
            a.sim.batch.get_param(0, "k1"), b.sim.batch.get_param(0, "k1")
        )
        starts.append(a.sim.q - np.asarray(CENTRE))
        k1 = a.sim.batch.get_param(0, "k1") / k1_nominal
        assert np.all((k1 >= 0.8) & (k1 <= 1.2))
    starts = np.concatenate(starts)
    assert np.all(np.abs(starts) <= 0.1) and np.abs(starts).max() > 0.05
    assert len(np.unique(starts)) == starts.size
    a.close()
    b.close()


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"frequency": 3.0}, ValueError, r"frequency: got 3.0, valid: \(1.0, 1.25, 2.0, 2.5\) Hz"),
        ({"amplitude": 0.0}, ValueError, r"amplitude: got 0.0, valid range \(0, 0.5\] rad"),
        ({"amplitude": "big"}, TypeError, "amplitude: got 'big'"),
        ({"energy_cost": -0.1}, ValueError, r"energy_cost: got -0.1, valid range \[0, inf\]"),
        ({"preset": -0.1}, ValueError, r"preset: got -0.1 .*valid range \[0, 0.8\] rad"),
        ({"actuator": "rigid", "preset": (0.1, 0.1)}, ValueError, "only the qbmove arm"),
    ],
)
def test_bad_keywords_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        Periodic(1, **kwargs)


def test_every_task_declares_the_metric_asr_rl_reads():
    from asr.rl import task_class, task_metric

    for env_id in ENVS:
        cls = task_class(env_id)
        assert isinstance(cls.metric, TaskMetric) and task_metric(cls) is cls.metric
    assert task_metric(Periodic) is ENERGY_PER_CYCLE

    class _NoMetric(Periodic):
        metric = None

    with pytest.raises(ValueError, match="task: _NoMetric declares no held-out metric"):
        task_metric(_NoMetric)
