"""Throw: the 2-DOF qbmove Advanced arm throws a ball as far as it can ([Braun2012]).

Robot: robots/qbmove_arm_2dof, variant `vertical` (joint axes horizontal, gravity in the plane of
motion; module 1's axis 0.3 m above the ground plane z = 0), mode 6 (equilibrium and preset
references, motor PID and dynamics). With `actuator="rigid"` the same links are driven directly
by their motors instead (rigid_robot(): no spring, for the comparison of asr.experiments.throw).

Ball: a point mass held at the end-effector site `tip` (0.133 m past joint 2 on link 2). Its mass
is taken as negligible against the 0.9 kg arm: it does not load the arm, and its flight does not
depend on it. No air drag, no collision with the arm or the stand.

observation (5,): q1, q2 (rad), qd1, qd2 (rad/s), t (s, time since the episode start).
action (5,): equilibria eq1, eq2 in [-3, 3] rad, presets p1, p2 in the qbmove Advanced preset
    range [0, 0.8] rad (asr.models()["qbmove_advanced"].preset lo..hi), release r in [-1, 1].
    The references are held over one env step (frame_skip = 2 steps of the MJCF's 1 ms). With
    the rigid actuator the equilibria are the link PID's position references and the presets
    are ignored.
Release: the first env step whose action has r > 0 ends with the release: the ball leaves the
    tip with the tip's position and velocity at the end of that step, the episode terminates and
    its only non-zero reward is the distance thrown. Without a release within the time limit
    (max_episode_steps = 500 env steps, 1 s) the episode is truncated with reward 0 (no throw).
Release state: tip position p = (x, z) from MuJoCo's site_xpos, velocity v = (vx, vz) = J(q) qd
    with J from mujoco.mj_jacSite (x and z rows; the arm moves in the x-z plane).
Distance (the reward): ballistic flight from the release state to the ground plane z = 0,

    t_f = (vz + sqrt(vz^2 + 2 g z)) / g,    distance = x + vx t_f,

g = 9.81 m/s^2 (the MJCF's gravity), i.e. the landing point's x measured from the base axis
(x = 0); a throw backwards is negative. Every step reward is 0 except that of the release step.
infos (every step): released (bool), release_pos (2,), release_vel (2,) (zero where not
released), distance (m), stiffness (2,) (N m/rad), spring_energy (J, closed form below).

Spring energy of the qbmove Advanced (docs/models.md): tau_i = -k_i sinh(a_i phi_i), so the
energy stored in spring i is U_i = (k_i / a_i) (cosh(a_i phi_i) - 1), phi_i the clamped
deflection; spring_energy is the sum over both springs of both joints (0 for the rigid arm).
"""

import dataclasses

import numpy as np
from gymnasium import spaces

import asr
from asr.envs.vector import AsrEnv, AsrVectorEnv
from asr.models import get_model
from asr.robot import RobotJoint

_PRESET = get_model("qbmove_advanced").spec.preset
PRESET_LO, PRESET_HI = float(_PRESET.lo), float(_PRESET.hi)
EQ_LIMIT = 3.0  # rad
ROBOT, VARIANT = "qbmove_arm_2dof", "vertical"
SITE = "tip"
ACTUATORS = ("qbmove", "rigid")


def _motor_params():
    """The qbmove Advanced motor parameters of the arm's joints (per motor), read from asr."""
    sim = asr.Sim(ROBOT, 1, variant=VARIANT)
    names = ("tau_max", "vel_max", "motor_J", "motor_D", "kp", "kd", "friction")
    return [{n: float(sim.batch.get_param(j, n)[0]) for n in names} for j in range(sim.n_joints)]


def rigid_robot():
    """The vertical arm with rigid joints (model `rigid`, mode 1: link PID), each link driven
    directly by the joint's two motors acting together: torque limit link_tau_max = 2 tau_max
    (12 N m), PID gains 2 kp, 2 kd, the motors' inertia 2 motor_J added to the joint as MuJoCo
    armature and their damping 2 motor_D to the joint damping, static friction 2 friction on the
    output shaft. vel_max is that of the qbmove motors (inf: none); the top speed under full
    torque, 2 tau_max / (2 motor_D) = 22 rad/s, is the motors'. Initial state: the qbmove arm's
    (q0, with the PID references at q0)."""
    base = asr.load_robot(ROBOT, VARIANT)
    motors = _motor_params()
    joints = []
    for j, m in zip(base.joints, motors):
        params = dict(
            link_kp=2 * m["kp"],
            link_kd=2 * m["kd"],
            link_tau_max=2 * m["tau_max"],
            link_friction=2 * m["friction"],
        )
        joints.append(RobotJoint(j.name, "rigid", 1, params))
    names = base.joint_names

    class _RigidArm(type(base)):
        def mj_model(self):
            model = super().mj_model()
            for name, m in zip(names, motors):
                adr = model.jnt_dofadr[model.joint(name).id]
                model.dof_armature[adr] += 2 * m["motor_J"]
                model.dof_damping[adr] += 2 * m["motor_D"]
            return model

    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    fields.update(
        variant="vertical_rigid",
        joints=tuple(joints),
        initial_refs=tuple((q, 0.0) for q in base.initial_q),
        description=base.description + "; rigid joints driven by the motors",
    )
    return _RigidArm(**fields)


def landing_distance(pos, vel, g=9.81):
    """Ballistic landing x on the plane z = 0 from release positions pos (..., 2) = (x, z), m,
    and velocities vel (..., 2), m/s: x + vx (vz + sqrt(vz^2 + 2 g z)) / g."""
    pos, vel = np.asarray(pos, dtype=float), np.asarray(vel, dtype=float)
    x, z, vx, vz = pos[..., 0], pos[..., 1], vel[..., 0], vel[..., 1]
    t_f = (vz + np.sqrt(vz * vz + 2.0 * g * z)) / g
    return x + vx * t_f


def spring_energy_from_deflection(defl1, defl2, k1, a1, k2, a2):
    """qbmove Advanced spring energy (k1/a1)(cosh(a1 phi1) - 1) + (k2/a2)(cosh(a2 phi2) - 1), J."""
    return k1 / a1 * (np.cosh(a1 * defl1) - 1.0) + k2 / a2 * (np.cosh(a2 * defl2) - 1.0)


def spring_energy_from_torque(tau1, tau2, k1, a1, k2, a2):
    """The same energy from the elastic torques: |sinh(a phi)| = |tau| / k, so
    (k/a)(cosh(a phi) - 1) = (k/a)(sqrt(1 + (tau/k)^2) - 1), J."""
    return k1 / a1 * (np.sqrt(1.0 + (tau1 / k1) ** 2) - 1.0) + k2 / a2 * (
        np.sqrt(1.0 + (tau2 / k2) ** 2) - 1.0
    )


class Throw(AsrVectorEnv):
    __doc__ = __doc__

    robot, variant = ROBOT, VARIANT
    frame_skip, max_episode_steps = 2, 500

    OBSERVATION = (("q1", "rad"), ("q2", "rad"), ("qd1", "rad/s"), ("qd2", "rad/s"), ("t", "s"))
    ACTION = (
        ("equilibrium1", "rad"),
        ("equilibrium2", "rad"),
        ("preset1", "rad"),
        ("preset2", "rad"),
        ("release", "-"),
    )

    single_observation_space = spaces.Box(-np.inf, np.inf, (5,), np.float64)
    single_action_space = spaces.Box(
        np.array([-EQ_LIMIT, -EQ_LIMIT, PRESET_LO, PRESET_LO, -1.0]),
        np.array([EQ_LIMIT, EQ_LIMIT, PRESET_HI, PRESET_HI, 1.0]),
        (5,),
        np.float64,
    )

    def __init__(self, num_envs=1, *, actuator="qbmove", **kwargs):
        if actuator not in ACTUATORS:
            raise ValueError(f"actuator: got {actuator!r}, expected one of {ACTUATORS}")
        super().__init__(num_envs, **kwargs)
        self.actuator = actuator
        if actuator == "rigid":
            self.sim = asr.Sim(rigid_robot(), self.num_envs, threads=kwargs.get("threads", 1))
        r = self.sim.robot
        self._q0[:] = r.initial_q
        self._refs0[:] = r.initial_refs
        self.gravity = float(-self.sim.gravity[2])
        self._springs = None
        if actuator == "qbmove":
            b = self.sim.batch
            self._springs = [
                tuple(float(b.get_param(j, n)[0]) for n in ("k1", "a1", "k2", "a2"))
                for j in range(self.n_joints)
            ]
        n = self.num_envs
        self.released = np.zeros(n, dtype=bool)
        self.release_pos = np.zeros((n, 2))
        self.release_vel = np.zeros((n, 2))
        self.distance = np.zeros(n)
        self._release_cmd = np.zeros(n, dtype=bool)

    # ------------------------------------------------------------ kinematics

    def tip_state(self, i):
        """Tip position (x, z) and velocity (vx, vz) of sub-env i (the SITE's world state)."""
        p, v = self.sim.site_state(SITE, i)
        return np.array([p[0], p[2]]), np.array([v[0], v[2]])

    def spring_energy(self):
        """(N,) energy stored in the springs now, J (closed form from the clamped deflections)."""
        if self._springs is None:
            return np.zeros(self.num_envs)
        b = self.sim.batch
        d1, d2 = b.field("defl1"), b.field("defl2")
        return sum(
            spring_energy_from_deflection(d1[:, j], d2[:, j], *self._springs[j])
            for j in range(self.n_joints)
        )

    # ------------------------------------------------------------ task hooks

    def _sample(self, i, rng):
        self.released[i] = False
        self.release_pos[i] = 0.0
        self.release_vel[i] = 0.0
        self.distance[i] = 0.0
        self._release_cmd[i] = False

    def _refs(self, actions):
        self._release_cmd = np.where(self._autoreset, False, actions[:, 4] > 0)
        return np.stack([actions[:, :2], actions[:, 2:4]], axis=-1)  # (N, 2, 2)

    def _terminated(self):
        return self._release_cmd.copy()

    def _reward(self):
        for i in np.flatnonzero(self._release_cmd):
            p, v = self.tip_state(int(i))
            self.released[i] = True
            self.release_pos[i], self.release_vel[i] = p, v
            self.distance[i] = landing_distance(p, v, self.gravity)
        return np.where(self._release_cmd, self.distance, 0.0)

    def _observe(self):
        t = self._elapsed * self.env_dt
        return np.concatenate([self.q, self.qd, t[:, None]], axis=1)

    def _infos(self):
        return (
            {},
            {
                "released": self.released.copy(),
                "release_pos": self.release_pos.copy(),
                "release_vel": self.release_vel.copy(),
                "distance": self.distance.copy(),
                "stiffness": np.array(self.sim.batch.field("stiffness")),
                "spring_energy": self.spring_energy(),
            },
        )


class ThrowEnv(AsrEnv):
    """Throw as a single gymnasium.Env (gymnasium.make, SyncVectorEnv)."""

    def __init__(self, render_mode=None, **kwargs):
        super().__init__(Throw, render_mode=render_mode, **kwargs)


__all__ = [
    "Throw",
    "ThrowEnv",
    "rigid_robot",
    "landing_distance",
    "spring_energy_from_deflection",
    "spring_energy_from_torque",
]
