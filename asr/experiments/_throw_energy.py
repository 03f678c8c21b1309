"""A throw replayed at the simulation step with its energy account (asr.envs.throw's arms).

replay_actions(actions, actuator, preset) drives a fresh asr.Sim of the task's arm with the env
steps' references, each held over the env step's frame_skip simulation steps of 1 ms, exactly
as asr.envs.throw.Throw does (so the replay ends in the env's release state, bit for bit), and
records every simulation step. The energy account of the throw, from the start to the release:

- motor_work: the work of the motors' drive torques, sum over motors of int tau_m thd dt (J;
  the rectangle rule on the 1 ms steps, tau_m and thd at the end of each step). Much of it never
  leaves the motors: their damping, friction and the velocity limit (asr clamps thd at vel_max,
  and the clamp absorbs what a saturated drive would add) take it;
- delivered: the work the motors do on the springs, sum over springs of int tau_el thd dt (J;
  tau_el the spring's torque on the link: the spring's energy grows by tau_el (thd - qd) dt and
  the link gets tau_el qd dt), i.e. what reaches the springs and the links;
- spring energy U (J): qbmove springs (k/a)(cosh(a phi) - 1) per spring, or k phi^2 / 2 in the
  rigid arm's stiff transmission (asr.envs.throw.Throw.spring_energy);
- link kinetic and potential energy (J): MuJoCo's own (mjENBL_ENERGY) at the arm's state;
- motor kinetic energy sum J thd^2 / 2 (J);
- link_damping: the joints' viscous damping and friction (the MJCF's damping b and frictionloss
  f), int (b qd^2 + f |qd|) dt per joint (J; the friction term is its bound while sliding);
- residual = delivered - the gain of the spring and link energies - link_damping (J): what the
  deflection clamp passes past the spring (a clamped spring transmits its clamp torque while its
  energy stays put) and the rectangle rule's error.

The ball's range follows from the release state (asr.envs.throw.landing_distance)."""

import mujoco
import numpy as np

from asr.envs.throw import (
    RELEASE_THRESHOLD,
    Throw,
    landing_distance,
    spring_energy_from_deflection,
)

FIELDS = (
    "q",
    "qd",
    "stiffness",
    "defl1",
    "defl2",
    "th1d",
    "th2d",
    "tau_m1",
    "tau_m2",
    "tau_el1",
    "tau_el2",
)


def _spring_energy(out, actuator, springs):
    """(T,) stored spring energy from the recorded deflections (T, J), J."""
    if actuator == "rigid":
        k = np.array([s[0] for s in springs])
        return 0.5 * np.sum(k * out["defl1"] ** 2, axis=1)
    return sum(
        spring_energy_from_deflection(out["defl1"][:, j], out["defl2"][:, j], *springs[j])
        for j in range(len(springs))
    )


def _link_energies(robot, q, qd):
    """(T,) link kinetic and potential energy, J, from MuJoCo's energy at each state."""
    model = robot.mj_model()
    model.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    data = mujoco.MjData(model)
    adr = [model.jnt_qposadr[model.joint(n).id] for n in robot.joint_names]
    dof = [model.jnt_dofadr[model.joint(n).id] for n in robot.joint_names]
    kin, pot = np.zeros(len(q)), np.zeros(len(q))
    for t in range(len(q)):
        data.qpos[adr], data.qvel[dof] = q[t], qd[t]
        mujoco.mj_forward(model, data)
        pot[t], kin[t] = data.energy[0], data.energy[1]
    return kin, pot


def _damping_power(robot, qd):
    """(T,) power the joints' damping and friction take, W, from the MJCF (qd (T, J), rad/s)."""
    model = robot.mj_model()
    dof = [model.jnt_dofadr[model.joint(n).id] for n in robot.joint_names]
    b, f = model.dof_damping[dof], model.dof_frictionloss[dof]
    return np.sum(b * qd * qd + f * np.abs(qd), axis=1)


def replay_actions(actions, actuator="qbmove", preset=None):
    """Replay env-step actions (T, 5) of asr.envs.throw.Throw (the last one releases: it asks
    to, or it ends the 1 s time limit; else none does) on the arm at the simulation step.
    Returns a dict: t (S,) s at the end of each simulation step, q, qd (S, 2), stiffness
    (S, 2), eq, preset (S, 2) references, energies (S,) J (spring, link_kinetic,
    link_potential, motor_kinetic, motor_work cumulative), the release state (release_pos,
    release_vel (2,)), distance (m, 0 without a release), released, and account: a dict of
    scalars in J (see the module doc)."""
    actions = np.atleast_2d(np.asarray(actions, dtype=float))
    env = Throw(1, actuator=actuator, preset=preset)
    env.reset(seed=0)
    robot = env.sim.robot
    start = _stored_energies(env, robot)  # before the throw: the arm at rest at q0
    # (T, 2, 2): the env's own mapping (fixed preset included), one env step's action at a time
    refs = np.concatenate([env.refs(a[None]) for a in actions])
    # the last step releases when its action asks, or at the time limit (the hand opens)
    released = bool(actions[-1, 4] > RELEASE_THRESHOLD or len(actions) >= env.max_episode_steps)
    steps = np.repeat(refs, env.frame_skip, axis=0)[None]  # (1, S, J, 2)
    out = env.sim.rollout(steps.shape[1], steps, record=FIELDS)
    out = {f: out[f][0] for f in FIELDS}
    b = env.sim.batch
    motor_j = np.array([b.get_param(j, "motor_J")[0] for j in range(env.n_joints)])
    p, v = env.tip_state(0)
    res = dict(out)
    res["t"] = (np.arange(steps.shape[1]) + 1) * env.sim.dt
    res["eq"], res["preset"] = steps[0, :, :, 0], steps[0, :, :, 1]
    res["spring"] = _spring_energy(out, actuator, env._springs)
    res["link_kinetic"], res["link_potential"] = _link_energies(robot, out["q"], out["qd"])
    two_motors = actuator == "qbmove"
    thd2 = out["th1d"] ** 2 + (out["th2d"] ** 2 if two_motors else 0.0)
    res["motor_kinetic"] = 0.5 * np.sum(motor_j * thd2, axis=1)
    power = out["tau_m1"] * out["th1d"] + (out["tau_m2"] * out["th2d"] if two_motors else 0.0)
    res["motor_work"] = np.cumsum(np.sum(power, axis=1)) * env.sim.dt
    into = out["tau_el1"] * out["th1d"] + (out["tau_el2"] * out["th2d"] if two_motors else 0.0)
    res["delivered"] = np.cumsum(np.sum(into, axis=1)) * env.sim.dt
    res["link_damping"] = np.cumsum(_damping_power(robot, out["qd"])) * env.sim.dt
    res["released"] = released
    res["release_pos"], res["release_vel"] = p, v
    res["distance"] = float(landing_distance(p, v, env.gravity)) if released else 0.0
    res["account"] = energy_account(res, *start)
    return res


def _stored_energies(env, robot):
    """The link potential and spring energies (J) of sub-env 0 now (at rest: no kinetic)."""
    _, pot = _link_energies(robot, env.q[:1], np.zeros_like(env.q[:1]))
    return float(pot[0]), float(env.spring_energy()[0])


def energy_account(res, pot0, spring0):
    """The scalars of the account (J) at the release (the last simulation step), from the
    replay's records `res` and the potential and spring energies pot0, spring0 at the start."""
    last = {k: float(res[k][-1]) for k in ("spring", "link_kinetic", "link_potential")}
    delivered = float(res["delivered"][-1])
    gained = last["spring"] - spring0 + last["link_kinetic"] + last["link_potential"] - pot0
    v = np.asarray(res["release_vel"])
    return {
        "motor_work": float(res["motor_work"][-1]),
        "delivered": delivered,
        "spring_peak": float(np.max(res["spring"])),
        "spring_at_release": last["spring"],
        "spring_released": float(np.max(res["spring"]) - last["spring"]),
        "link_kinetic_at_release": last["link_kinetic"],
        "link_potential_gain": last["link_potential"] - pot0,
        "motor_kinetic_at_release": float(res["motor_kinetic"][-1]),
        "link_damping": float(res["link_damping"][-1]),
        "residual": delivered - gained - float(res["link_damping"][-1]),
        "ball_kinetic_per_kg": float(0.5 * v @ v),
        "release_speed": float(np.hypot(*v)),
        "release_time": float(res["t"][-1]),
        "peak_link_speed": [float(x) for x in np.max(np.abs(res["qd"]), axis=0)],
        "peak_motor_speed": float(np.max(np.abs(np.stack([res["th1d"], res["th2d"]])))),
    }


__all__ = ["replay_actions", "energy_account", "FIELDS"]
