"""asr's MuJoCo plugin under MuJoCo's integrators other than Euler.

- implicitfast: a robot of robots/ with integrator="implicitfast" (and a MuJoCo velocity
  actuator per joint, so that implicitfast differs from Euler), exported with plugin actuators
  and stepped by mj_step, follows asr.Sim (mj_step1 -> asr -> qfrc_applied -> mj_step2) on the
  same robot to rounding (MuJoCo adds the torque to another force sum than qfrc_applied).
- RK4: the motors advance once per step from the step-start inputs (asr.Batch replaying the link
  states at the step starts gives the plugin's state bit for bit), while each of RK4's four force
  evaluations sees the link at its stage state: with ideal position-source motors (a SEA in mode
  3) the link ODE I q'' = k (th - q) - m g l cos q is then integrated by classic RK4, fourth order
  against a tight scipy solution where Euler is first order.
- Stability of the spring, which MuJoCo integrates explicitly (the plugin gives it no
  derivative): bounded for omega dt < 2 with Euler and implicitfast, < 2 sqrt 2 with RK4 (its
  stability interval on the imaginary axis), omega = sqrt(k / I).
"""

import math
import os

import numpy as np
import pytest

import asr
from tests.conftest import require
from tests.support.mujoco_plugin import (
    batch_replay,
    compile_plugin,
    plugin_field,
    plugin_mjcf,
    record_run,
)

G = 9.81  # m/s^2
MASS, LENGTH = 0.2, 0.04  # kg, m: the pendulum_1dof rig's point mass and arm
INERTIA = MASS * LENGTH**2 + 1e-7  # kg m^2 about the hinge (the mass's own 1e-7 included)
K_SEA = 200.0  # N m/rad, the rig's soft SEA


# ---------------------------------------------------------------- implicitfast vs asr.Sim


def _toml_value(x):
    return repr(float(x)) if isinstance(x, float) else repr(x)


def robot_with_integrator(tmp_path, name, variant, integrator="implicitfast", kv=0.0):
    """The robot's variant (joints and initial state) in tmp_path, its MJCF's integrator set to
    `integrator`; kv > 0 adds a MuJoCo velocity actuator of gain kv (N m s/rad, ctrl 0: a drag
    -kv qd) on every joint, whose derivative implicitfast integrates implicitly and Euler not."""
    robot = asr.load_robot(name, variant)
    with open(robot.mjcf) as f:
        xml = f.read()
    assert 'integrator="Euler"' in xml and "<actuator>" not in xml
    xml = xml.replace('integrator="Euler"', f'integrator="{integrator}"')
    if kv:
        drag = "".join(f'<velocity joint="{j}" kv="{kv!r}"/>' for j in robot.joint_names)
        xml = xml.replace("</mujoco>", f"<actuator>{drag}</actuator></mujoco>")
    mjcf = os.path.basename(robot.mjcf)
    (tmp_path / mjcf).write_text(xml)
    lines = [f'name = "{name}_implicitfast"', 'description = "test copy"']
    lines += [f'default_variant = "{variant}"', f"[variants.{variant}]", f'mjcf = "{mjcf}"']
    for j in robot.joints:
        params = ", ".join(f"{k} = {_toml_value(v)}" for k, v in j.params.items())
        lines += [f"[[variants.{variant}.joints]]", f'name = "{j.name}"', f'model = "{j.model}"']
        lines += [f"mode = {j.mode}", f"params = {{ {params} }}"]
    q, refs = list(robot.initial_q), [list(r) for r in robot.initial_refs]
    lines += [f"[variants.{variant}.initial]", f"q = {q!r}", f"refs = {refs!r}"]
    (tmp_path / "robot.toml").write_text("\n".join(lines) + "\n")
    return asr.load_robot(str(tmp_path))


# robot, variant, two sets of references ((J, 2) per set) held in turn; the robot's initial q
IMPLICIT_CASES = [
    ("rrbot_sea", "k188", [(0.3, 0.0)], [(-0.2, 0.0)]),  # mode 5: motor angles
    ("qbmove_arm_2dof", "vertical", [(0.3, 0.3), (-0.2, 0.2)], [(-0.4, 0.5), (0.3, 0.1)]),  # 6
]
KV = 0.05  # N m s/rad: the drag that makes implicitfast differ from Euler on these robots


def sim_rollout(robot, refs):
    sim = asr.Sim(robot)
    sim.reset(refs=refs[None, 0])
    return sim.rollout(len(refs), refs[None], record=asr.FIELDS)


@pytest.mark.parametrize("name,variant,first,later", IMPLICIT_CASES)
def test_implicitfast_plugin_follows_asr_sim(tmp_path, name, variant, first, later):
    robot = robot_with_integrator(tmp_path, name, variant, kv=KV)
    steps, nj = 2000, len(robot.joints)
    refs = np.empty((steps, nj, 2))
    refs[: steps // 2], refs[steps // 2 :] = first, later
    want = sim_rollout(robot, refs)
    (tmp_path / "euler").mkdir()
    euler = sim_rollout(robot_with_integrator(tmp_path / "euler", name, variant, "Euler", KV), refs)
    assert np.max(np.abs(euler["q"] - want["q"])) > 1e-5, "the integrators should differ"
    m, d = compile_plugin(open(asr.export_mjcf(robot, path=tmp_path / "plugin.xml")).read())
    assert m.opt.integrator == 3 and m.nq == nj  # mjINT_IMPLICITFAST, hinges only
    d.qpos[:] = robot.initial_q
    # ctrl: the drag actuators' (0), then each joint's two references
    run = record_run(m, d, np.hstack([np.zeros((steps, nj)), refs.reshape(steps, 2 * nj)]))
    q_end = np.vstack([run["q"][1:], d.qpos])  # the links after each step, as Sim records
    assert np.min(np.ptp(q_end, axis=0)) > 0.05, "the links should move"
    # measured: 3e-16 rad (MuJoCo sums the plugin's torque in another order than qfrc_applied)
    np.testing.assert_allclose(q_end, want["q"][0], rtol=0, atol=1e-12)
    for j in range(nj):
        for f in set(asr.FIELDS) - {"q", "qd"}:  # Sim records q, qd at the step's end
            got = plugin_field(run, f, j)
            np.testing.assert_allclose(got, want[f][0, :, j], rtol=1e-12, atol=1e-12, err_msg=f)
        # the plugin's q, qd are the link state the step started from
        np.testing.assert_array_equal(plugin_field(run, "q", j), run["q"][:, j])


# ---------------------------------------------------------------- RK4


def pendulum(model, mode, params, timestep, integrator, **extra):
    joint = {"name": "joint", "model": model, "mode": mode, "params": params, "mass": MASS}
    joint.update(length=LENGTH, **extra)
    return joint, compile_plugin(plugin_mjcf([joint], timestep=timestep, integrator=integrator))


@pytest.mark.parametrize(
    "model,mode,params,refs",
    [
        ("sea", 3, {"k": K_SEA}, (0.2, 0.0)),
        ("qbmove_advanced", 6, {}, (0.3, 0.4)),
        ("sea_damped", 5, {"Kt": 100.0, "Dt": 0.001}, (0.2, 0.0)),
    ],
)
def test_rk4_motors_advance_once_per_step_from_the_step_start(model, mode, params, refs):
    dt, steps = 1e-4, 1500
    joint, (m, d) = pendulum(model, mode, params, dt, "RK4", max_substep=5e-5)
    ctrl = np.tile(refs, (steps, 1))
    run = record_run(m, d, ctrl)
    assert np.all(plugin_field(run, "status") == 0)
    assert np.ptp(run["q"]) > 1e-2 and np.ptp(plugin_field(run, "tau_joint")) > 1e-2
    if mode >= 4:  # motor dynamics (in mode 3 the motors are ideal position sources)
        assert np.ptp(plugin_field(run, "th1")) > 1e-3
    want = batch_replay([joint], run["q"], run["qd"], ctrl[:, None, :], dt, asr.FIELDS)
    for f in asr.FIELDS:
        np.testing.assert_allclose(plugin_field(run, f), want[f][:, 0], rtol=0, atol=1e-12)


def sea_link_error(integrator, dt, duration=0.05, eq=0.2):
    """Largest |q - q_exact| (rad) of the rig's link on a SEA in mode 3 (motors held at eq, so
    I q'' = k (eq - q) - m g l cos q exactly), started at rest at q = 0, against scipy's DOP853
    at tolerances far below the errors measured."""
    solve_ivp = require("scipy.integrate").solve_ivp

    steps = round(duration / dt)
    _, (m, d) = pendulum("sea", 3, {"k": K_SEA}, dt, integrator, nact=1)
    run = record_run(m, d, np.full((steps, 1), eq))
    q = np.append(run["q"][1:, 0], d.qpos[0])  # after steps 1 .. steps

    def rhs(t, y):
        return [y[1], (K_SEA * (eq - y[0]) - MASS * G * LENGTH * math.cos(y[0])) / INERTIA]

    t = dt * np.arange(1, steps + 1)
    exact = solve_ivp(rhs, (0.0, t[-1]), [0.0, 0.0], "DOP853", t, rtol=1e-13, atol=1e-15)
    return float(np.max(np.abs(q - exact.y[0])))


@pytest.mark.slow
def test_rk4_link_converges_at_fourth_order_where_euler_is_first_order():
    dt = 2e-4  # s: omega dt = 0.16 on the rig (omega = sqrt(k / I) = 790 rad/s)
    err = {(i, h): sea_link_error(i, h) for i in ("Euler", "RK4") for h in (dt, dt / 2)}
    # measured: Euler 2.4e-2 -> 9.9e-3 rad, RK4 4.1e-5 -> 2.6e-6 rad
    assert err["RK4", dt] < 1e-2 * err["Euler", dt]
    assert 12 < err["RK4", dt] / err["RK4", dt / 2] < 20  # 2^4 = 16
    assert 1.6 < err["Euler", dt] / err["Euler", dt / 2] < 3  # 2^1 = 2


# ---------------------------------------------------------------- stability of the spring

STEPS_STABLE = 2000
Q0 = 0.01  # rad, the initial deflection (motors placed at 0)


def oscillation_bounded(integrator, omega_dt, steps=STEPS_STABLE):
    """Whether a SEA in mode 3 (no damping, gravity off, link released Q0 from the motors'
    equilibrium) stays within 1000 Q0 over `steps` steps, omega dt = omega_dt. link_vel_max is
    off: a fast RK4 stage would otherwise get zero torque and bound the motion artificially."""
    dt, mass, length = 1e-3, 1.0, 0.1
    k = (mass * length**2 + 1e-7) * (omega_dt / dt) ** 2
    params = {"k": k, "max_def": 1e6, "link_vel_max": math.inf}
    joint = {"name": "joint", "model": "sea", "mode": 3, "params": params, "nact": 1}
    joint.update(mass=mass, length=length)
    m, d = compile_plugin(
        plugin_mjcf([joint], timestep=dt, integrator=integrator, gravity=(0, 0, 0))
    )
    d.qpos[0] = Q0
    run = record_run(m, d, np.zeros((steps, 1)))
    warned = sum(w.number for w in d.warning)  # MuJoCo resets the data after a blow-up
    q = run["q"][:, 0]
    return warned == 0 and bool(np.all(np.isfinite(q))) and float(np.max(np.abs(q))) < 1e3 * Q0


def stability_limit(integrator, lo, hi, rel=1e-3):
    """The largest omega dt in [lo, hi] at which the oscillation stays bounded, by bisection
    to `rel`."""
    assert oscillation_bounded(integrator, lo) and not oscillation_bounded(integrator, hi)
    while hi - lo > rel * lo:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if oscillation_bounded(integrator, mid) else (lo, mid)
    return lo


@pytest.mark.parametrize(
    "integrator,stable,unstable",
    [("Euler", 1.9, 2.1), ("implicitfast", 1.9, 2.1), ("implicit", 1.9, 2.1), ("RK4", 2.7, 2.95)],
)
def test_explicit_spring_is_stable_below_the_integrators_limit(integrator, stable, unstable):
    assert oscillation_bounded(integrator, stable)
    assert not oscillation_bounded(integrator, unstable)


@pytest.mark.slow
def test_measured_stability_limits_are_2_and_2_sqrt_2():
    # measured (bisection to 0.1 %): Euler and implicitfast 2.000, RK4 2.830
    assert stability_limit("Euler", 1.5, 2.5) == pytest.approx(2.0, rel=1e-2)
    assert stability_limit("implicitfast", 1.5, 2.5) == pytest.approx(2.0, rel=1e-2)
    assert stability_limit("RK4", 2.0, 3.5) == pytest.approx(2 * math.sqrt(2), rel=1e-2)
