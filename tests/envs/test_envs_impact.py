"""asr/Impact2DOF-v0 (asr.envs.impact): the contact force the task reports is MuJoCo's own
(mj_contactForce) and, pressed at rest, the spring torques of asr's model over the lever arms;
the tip kinematics equal MuJoCo's site; the trend of [Haddadin2009] on an open-loop strike (per
m/s of impact speed the softest preset's peak force is the lowest, the rigid arm's the highest);
the force bound F_MAX against the rigid arm's strikes (exceeded at full speed, met slowly); the
declared metric (arrival time, a settling time, plus the cost of the force beyond the bound) and
the reward against the per-step infos; targets and randomisation seeded and in range; bad
keywords named."""

import mujoco
import numpy as np
import pytest

from asr.envs.impact import (
    ARRIVE_TOL,
    BUMPER_RADIUS,
    DIST_SCALE,
    F_MAX,
    FORCE_COST,
    FORCE_PENALTY,
    L1,
    PLATE_Z,
    TARGET_X,
    Impact,
    joint_target,
    tip_position,
    tip_velocity,
)
from asr.envs.metrics import ARRIVAL_TIME
from asr.envs.randomization import Randomization, moving_bodies


def hold(env, action, steps):
    """Step env `steps` times holding action (N, 4); the last step's info."""
    for _ in range(steps):
        *_, info = env.step(action)
    return info


def test_the_pressing_force_is_mujocos_and_the_springs_over_the_lever_arms():
    """The arm pressed up against the plate at rest (soft preset, equilibria 0.6 rad beyond the
    target, joint friction off so that statics decide): the reported force equals MuJoCo's own
    normal contact force (mj_contactForce) and the force f solving J^T f = g(q) - tau, with tau
    the link torques of asr's springs (tau_link), g the gravity torques and J the contact point's
    Jacobian from the link lengths; its tangential part is within the friction cone."""
    env = Impact(1, preset=0.2, max_episode_steps=300)
    m, d = env.sim.models[0], env.sim.datas[0]
    m.dof_frictionloss[:] = 0.0
    env.reset(seed=0)
    info = hold(env, np.r_[env.target[0] + 0.6, 0.2, 0.2][None], 300)
    assert np.abs(env.qd[0]).max() < 0.01  # at rest
    mujoco.mj_forward(m, d)
    assert d.ncon == 1
    f6 = np.zeros(6)
    mujoco.mj_contactForce(m, d, 0, f6)
    reported = info["contact_force"][0]
    # mj_forward solves the contact again (from the solver's warm start): equal to 1e-5
    assert reported > 5.0 and reported == pytest.approx(f6[0], rel=1e-5)
    q = env.q[0]
    point = tip_position(q) + [0.0, BUMPER_RADIUS]  # where the bumper touches the plate
    assert d.contact[0].pos[2] - 0.3 == pytest.approx(PLATE_Z, abs=1e-4)
    assert d.contact[0].pos[0] == pytest.approx(point[0], abs=1e-6)
    elbow = L1 * np.array([np.cos(q[0]), np.sin(q[0])])
    J = np.array([[-point[1], elbow[1] - point[1]], [point[0], point[0] - elbow[0]]])
    tau = env.sim.batch.field("tau_link")[0]
    f = np.linalg.solve(J.T, d.qfrc_bias - tau)  # the plate's force on the tip, (x, z), N
    print(f"\npressing: reported {reported:.4f} N, from the springs {-f[1]:.4f} N, f_x {f[0]:.3f}")
    assert -f[1] == pytest.approx(reported, rel=0.01)
    assert abs(f[0]) < 0.5 * reported  # friction 0.5: inside the cone, it sticks
    env.close()


def test_tip_kinematics_and_targets_agree_with_mujoco():
    env = Impact(3)
    env.reset(seed=11)
    rng = np.random.default_rng(0)
    for _ in range(3):
        env.step(rng.uniform(env.single_action_space.low, env.single_action_space.high, (3, 4)))
    for i in range(3):
        p, v = env.sim.site_state("tip", i)
        np.testing.assert_allclose(tip_position(env.q[i]), [p[0], p[2] - 0.3], atol=1e-12)
        np.testing.assert_allclose(tip_velocity(env.q[i], env.qd[i]), [v[0], v[2]], atol=1e-9)
        np.testing.assert_allclose(tip_position(env.target[i]), env.target_point[i], atol=1e-12)
        assert env.target[i, 1] <= 0.0  # the elbow as at rest
    with pytest.raises(ValueError, match=r"\(x, z\): got \(0.5, 0.0\) m, out of the arm's reach"):
        joint_target(0.5, 0.0)
    env.close()


def strike(env, offset, steps=100):
    """Open loop: equilibria held `offset` rad beyond the target (each sub-env its own target);
    returns (peak force N, impact speed m/s) per sub-env. Every sub-env the same target."""
    env.reset(seed=[0] * env.num_envs)
    action = np.clip(np.c_[env.target + offset, np.full((env.num_envs, 2), 0.4)], -3, 3)
    info = hold(env, action, steps)
    return info["peak_force"], info["impact_speed"]


def test_soft_joints_hit_with_less_force_per_speed():
    """[Haddadin2009]: at a given impact speed the force peak grows with the mass the contact
    sees; a soft joint decouples its motors' inertia. The same open-loop strike (equilibria
    0.8 rad beyond the target) with the softest and the stiffest fixed presets and the rigid
    arm: peak force per m/s of impact speed soft < stiff < rigid."""
    qb = Impact(2, preset=np.array([[0.0, 0.0], [0.8, 0.8]]))
    f_qb, v_qb = strike(qb, (0.8, 0.0))
    rigid = Impact(1, actuator="rigid")
    f_r, v_r = strike(rigid, (0.8, 0.0))
    ratio = np.r_[f_qb / v_qb, f_r / v_r]  # N / (m/s)
    print(f"\npeak N {np.r_[f_qb, f_r]}, speed m/s {np.r_[v_qb, v_r]}, N/(m/s) {ratio}")
    assert np.all(np.r_[v_qb, v_r] > 0.3)  # every arm struck the plate
    assert ratio[0] < ratio[1] < ratio[2]
    assert ratio[2] > 1.5 * ratio[1]  # the motors behind a stiff transmission add their inertia
    qb.close()
    rigid.close()


def run_plan(env, plan):
    """Step env through plan, [(offset (2,) rad beyond the target, steps)], presets 0.4; per
    step (reward, info) of sub-env 0."""
    env.reset(seed=0)
    rows = []
    for offset, steps in plan:
        action = np.c_[env.target + offset, np.full((env.num_envs, 2), 0.4)]
        for _ in range(steps):
            _, reward, _, _, info = env.step(action)
            rows.append((reward[0], {k: np.copy(v[0]) for k, v in info.items()}))
    return rows


def by_hand(rows, dt=0.01):
    """The metric from the per-step infos, computed independently: arrived at a step's end when
    the tip is within ARRIVE_TOL of its target and touching; the arrival time the end of the
    first step of the last unbroken run of arrived steps (the episode's length if the last step
    is not arrived), plus FORCE_COST per N of the peak force beyond F_MAX."""
    ok = [i["distance"] <= ARRIVE_TOL and i["contact_force"] > 0 for _, i in rows]
    t = len(rows) * dt
    if ok[-1]:
        k = len(ok)
        while k > 0 and ok[k - 1]:
            k -= 1
        t = (k + 1) * dt
    peak = max(float(i["peak_force"]) for _, i in rows)
    return t + FORCE_COST * max(peak - F_MAX, 0.0), ok


def test_the_force_bound_is_met_slowly_not_at_full_speed():
    """F_MAX's choice: the rigid arm's position controller stepped 0.5 rad beyond the target
    strikes at full speed, far beyond the bound; stepped 0.01 rad beyond it creeps onto the
    plate within the bound and arrives (a soft press, within 1 cm)."""
    env = Impact(1, actuator="rigid")
    fast = run_plan(env, [((0.5, 0.0), 100)])
    slow = run_plan(env, [((0.01, 0.0), 100)])
    f_fast, f_slow = fast[-1][1]["peak_force"], slow[-1][1]["peak_force"]
    print(
        f"\nrigid: full speed {f_fast:.1f} N at {fast[-1][1]['impact_speed']:.3f} m/s; "
        f"slowly {f_slow:.2f} N, arriving at {slow[-1][1]['arrival_time']:.2f} s"
    )
    assert f_fast > 4 * F_MAX and fast[-1][1]["impact_speed"] > 0.5
    assert 0 < f_slow < F_MAX / 2 and slow[-1][1]["arrived"]
    assert slow[-1][1]["arrival_time"] < 0.6
    env.close()


def test_the_metric_is_a_settling_time_plus_the_force_beyond_the_bound():
    """Against by_hand() on three open-loop plans of the rigid arm: a slow strike (arrives,
    within the bound), a full-speed strike (beyond the bound: 1 s plus the excess), and a slow
    strike pulled away and brought back (a second arrival: the time counts from it). The reward
    of every step: -dt * (not arrived + d / DIST_SCALE) - FORCE_PENALTY * the rise of the peak's
    excess over F_MAX."""
    assert Impact.metric is ARRIVAL_TIME and ARRIVAL_TIME.unit == "s"
    env = Impact(1, actuator="rigid")
    env.reset(seed=0)
    np.testing.assert_array_equal(env.metric_value(), [1.0])  # not arrived: the whole episode
    plans = {
        "slow": [((0.01, 0.0), 100)],
        "fast": [((0.5, 0.0), 100)],
        "back": [((0.01, 0.0), 60), ((-0.3, 0.0), 10), ((0.01, 0.0), 30)],
    }
    got = {}
    for name, plan in plans.items():
        rows = run_plan(env, plan)
        expected, ok = by_hand(rows)
        got[name] = (expected, ok.index(True) if True in ok else None)
        assert ARRIVAL_TIME.value(env)[0] == pytest.approx(expected, abs=1e-12)
        excess = 0.0
        for reward, info in rows:
            rise = max(info["peak_force"] - F_MAX, 0.0) - excess
            excess += rise
            arrived = info["distance"] <= ARRIVE_TOL and info["contact_force"] > 0
            assert bool(info["arrived"]) == arrived
            want = -0.01 * (float(not arrived) + info["distance"] / DIST_SCALE)
            assert reward == pytest.approx(want - FORCE_PENALTY * rise, abs=1e-12)
    print(f"\n(metric s, first arrived step): {got}")
    assert got["slow"][0] < 0.6  # arrived, within the bound
    assert got["fast"][0] > 1.0 + 3 * F_MAX  # 1 s (the arm bounces off) + the excess
    # arrived before 0.6 s, pulled away and back: the time counts from the second arrival
    assert got["back"][1] < 60 and 0.7 < got["back"][0] < 1.0
    env.close()


def test_targets_and_randomisation_are_seeded_and_in_range():
    r = Randomization(start_q=0.05, mass_scale=0.2, spring_scale=0.1)
    a, b = Impact(4, randomization=r), Impact(4, randomization=r)
    model = a.sim.models[0]
    bodies = moving_bodies(model)
    mass0 = np.array(Impact(1).sim.models[0].body_mass[bodies])
    points, masses = [], []
    for seed in range(5):
        a.reset(seed=10 * seed)
        b.reset(seed=10 * seed)
        np.testing.assert_array_equal(a.target_point, b.target_point)
        np.testing.assert_array_equal(a.sim.q, b.sim.q)
        points.append(a.target_point.copy())
        masses += [a.sim.models[i].body_mass[bodies] / mass0 for i in range(4)]
    points, masses = np.concatenate(points), np.array(masses)
    assert np.all((points[:, 0] >= TARGET_X[0]) & (points[:, 0] <= TARGET_X[1]))
    np.testing.assert_allclose(points[:, 1], PLATE_Z - BUMPER_RADIUS)
    assert len(np.unique(points[:, 0])) == len(points)  # every episode its own target
    assert np.all((masses >= 0.8) & (masses <= 1.2)) and masses.min() < 0.9 < 1.1 < masses.max()
    a.close()
    b.close()


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"actuator": "soft"}, ValueError, "actuator: got 'soft', expected one of"),
        ({"preset": 0.9}, ValueError, r"preset: got 0.9 .*valid range \[0, 0.8\] rad"),
        ({"preset": (0.1, 0.2, 0.3)}, ValueError, r"preset: got shape \(3,\)"),
        ({"preset": "stiff"}, TypeError, "preset: got 'stiff'"),
        ({"actuator": "rigid", "preset": 0.3}, ValueError, "only the qbmove arm has a preset"),
    ],
)
def test_bad_keywords_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        Impact(1, **kwargs)
