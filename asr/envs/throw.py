"""Throw: the 2-DOF qbmove Advanced arm throws a ball as far as it can ([Braun2012]).

Robot: robots/qbmove_arm_2dof, variant `throw`: the vertical arm (joint axes horizontal, gravity
in the plane of motion; module 1's axis 0.3 m above the ground plane z = 0) in mode 6
(equilibrium and preset references, motor PID and dynamics), whose motors have the limits of the
published device description (the toolbox's qbmove template, [Mengacci2021]): 6 N m and 6 rad/s
each (MOTOR_TAU_MAX, MOTOR_VEL_MAX). A spring lets a link outrun its speed-limited motors, which
is what a throw needs ([Braun2012]). Keyword arguments:
- actuator="qbmove" (default, variable stiffness) or "rigid": the same links each driven by its
  joint's two motors on one shaft, through a stiff transmission (variant `throw_rigid`,
  rigid_robot());
- preset=None (the presets are actions) or fixed presets held throughout (the preset actions
  are then ignored; qbmove only), each in [PRESET_LO, PRESET_HI] = [0, 0.8] rad: a number P (both
  joints), a per-joint sequence (p1, p2) of shape (2,), or one row per sub-env, shape
  (num_envs, 2) (a batched search whose candidates hold different presets,
  asr.experiments.stiffness).

Ball: a point mass held at the end-effector site `tip` (0.133 m past joint 2 on link 2). Its mass
is taken as negligible against the 0.9 kg arm: it does not load the arm, and its flight does not
depend on it. No air drag, no collision with the arm or the stand.

observation (5,): q1, q2 (rad), qd1, qd2 (rad/s), t (s, time since the episode start).
action (5,): equilibria eq1, eq2 in [-3, 3] rad, presets p1, p2 in the qbmove Advanced preset
    range [0, 0.8] rad (asr.models()["qbmove_advanced"].preset lo..hi), release r in [-1, 1].
    The references are held over one env step of 10 ms (frame_skip = 10 steps of the MJCF's
    1 ms). With the rigid actuator the equilibria are the motor shafts' position references
    and the presets are ignored.
Release: the first env step whose action has r > RELEASE_THRESHOLD = 0.5 ends with the release
    (a margin above 0, see policy_init): the ball leaves the
    tip with the tip's position and velocity at the end of that step, the episode terminates and
    its only non-zero reward is the distance thrown. At the time limit (max_episode_steps = 100
    env steps, 1 s) the hand opens: the last step releases whatever r says (terminated, never
    truncated). Without that, a policy could learn to keep the ball (reward 0, no gradient
    left): one PPO seed in three did.
policy_init: where asr.rl.train starts an untrained policy (mean action and its standard
    deviation per entry): equilibria 0 +- 1 rad, presets 0.4 +- 0.2 rad, release -1.5 +- 1, so
    that a step releases with probability 2.3 % and early episodes hold the ball for 0.3 s
    (median) and see swings. From SB3's start (mean 0, the same std) nearly every early
    episode released within its first steps: 800k env steps of PPO reached 0.68 m, against
    1.27 m from this mean (variable stiffness, std 1 on every entry then).
Release state: tip position p = (x, z) from MuJoCo's site_xpos, velocity v = (vx, vz) = J(q) qd
    with J from mujoco.mj_jacSite (x and z rows; the arm moves in the x-z plane).
Distance (the reward): ballistic flight from the release state to the ground plane z = 0,

    t_f = (vz + sqrt(vz^2 + 2 g z)) / g,    distance = x + vx t_f,

g = 9.81 m/s^2 (the MJCF's gravity), i.e. the landing point's x measured from the base axis
(x = 0); a throw backwards is negative. Every step reward is 0 except that of the release step.
infos (every step): released (bool), release_pos (2,), release_vel (2,) (zero where not
released), distance (m), stiffness (2,) (N m/rad), spring_energy (J, closed form below).
Randomisation: the keyword `randomization` (asr.envs.randomization.Randomization, default off):
start pose, link masses, spring parameters (k1, a1, k2, a2; the rigid arm's k), sensor noise on
q and qd (the observed t is exact), action latency (the release is delayed with the rest of the
action). render_mode="rgb_array" renders the arm (not the ball) seen from the front.

Spring energy of the qbmove Advanced (docs/models.md): tau_i = -k_i sinh(a_i phi_i), so the
energy stored in spring i is U_i = (k_i / a_i) (cosh(a_i phi_i) - 1), phi_i the clamped
deflection; spring_energy is the sum over both springs of both joints (for the rigid arm: the
energy k phi^2 / 2 in its stiff transmissions).
"""

import numpy as np
from gymnasium import spaces

import asr
from asr.core.models import get_model
from asr.envs.metrics import DISTANCE
from asr.envs.vector import AsrEnv, AsrVectorEnv

_PRESET = get_model("qbmove_advanced").spec.preset
PRESET_LO, PRESET_HI = float(_PRESET.lo), float(_PRESET.hi)
EQ_LIMIT = 3.0  # rad
ROBOT, VARIANT = "qbmove_arm_2dof", "throw"
SITE = "tip"
ACTUATORS = ("qbmove", "rigid")
RELEASE_THRESHOLD = 0.5


ROBOT_RIGID = "throw_rigid"  # the rigid arm's variant of ROBOT


def check_arm(actuator, preset):
    """The arm keywords of Throw and of the tasks on its arm (asr.envs._arm2dof): ValueError
    naming an unknown actuator, or a preset given to an arm without one."""
    if actuator not in ACTUATORS:
        raise ValueError(f"actuator: got {actuator!r}, expected one of {ACTUATORS}")
    if preset is not None and actuator != "qbmove":
        raise ValueError(f"preset: got {preset!r}, only the qbmove arm has a preset")


def qbmove_robot():
    """The throw's qbmove Advanced arm: robots/qbmove_arm_2dof, variant `throw` (the vertical
    arm whose four motors have the published device's limits: MOTOR_TAU_MAX, MOTOR_VEL_MAX)."""
    return asr.load_robot(ROBOT, VARIANT)


def rigid_robot():
    """The throw's rigid arm: robots/qbmove_arm_2dof, variant `throw_rigid`. Each link is driven
    by its joint's two qbmove motors on one shaft (inertia 2 motor_J, damping 2 motor_D, static
    friction 2 friction, torque limit 2 MOTOR_TAU_MAX = 12 N m, velocity limit MOTOR_VEL_MAX, PID
    gains 2 kp, 2 kd on the shaft position) through a transmission of k = 2000 N m/rad: asr's
    `sea` model in mode 6 (equilibrium = the shaft's position reference), so the motors obey
    exactly the qbmove arm's motor dynamics, velocity clamp and PID. The transmission deflects
    6 mrad and stores 0.036 J at 12 N m (spring_energy reports what it stores). Initial state:
    the qbmove arm's q0, the references at q0."""
    return asr.load_robot(ROBOT, ROBOT_RIGID)


def _motor_limit(name):
    values = {j.params[name] for j in qbmove_robot().joints}
    if len(values) != 1:
        raise ValueError(f"robots/{ROBOT} variant {VARIANT}: joints differ in {name}: {values}")
    return float(values.pop())


# the motors of every arm: the qbmove Advanced's, with the limits of the published device
# description, the NMMI toolbox's qbmove template ([Mengacci2021]: mot_tauMax 6 N m, mot_maxVel
# 6 rad/s per motor), defined in the robot file. asr's qbmove_advanced defaults carry the torque
# limit but no velocity limit; the throw is where the velocity limit matters ([Braun2012]: a
# spring lets the link outrun a speed-limited motor).
MOTOR_TAU_MAX = _motor_limit("tau_max")  # N m, per motor
MOTOR_VEL_MAX = _motor_limit("vel_max")  # rad/s, per motor


def fixed_presets(preset, num_envs):
    """The held presets of Throw's `preset` keyword: None (the presets are actions) or a
    (num_envs, 2) array, rad, from a number (both joints), a per-joint sequence (2,) or one row
    per sub-env (num_envs, 2); each in [PRESET_LO, PRESET_HI]. TypeError / ValueError naming
    `preset`, the value and the valid range or shapes."""
    if preset is None:
        return None
    what = (
        f"a number, (p1, p2) or (num_envs, 2) = ({num_envs}, 2) presets in "
        f"[{PRESET_LO:g}, {PRESET_HI:g}] rad"
    )
    if isinstance(preset, (bool, str, bytes)):
        raise TypeError(f"preset: got {preset!r}, expected {what}")
    try:
        a = np.asarray(preset, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"preset: got {preset!r}, expected {what}") from None
    if np.asarray(preset).dtype == np.bool_:
        raise TypeError(f"preset: got {preset!r}, expected {what}")
    if a.shape not in ((), (2,), (num_envs, 2)):
        raise ValueError(f"preset: got shape {a.shape} ({preset!r}), expected {what}")
    bad = ~((a >= PRESET_LO) & (a <= PRESET_HI))  # NaN is out of range too
    if bad.any():
        value = a[np.unravel_index(int(np.argmax(bad)), a.shape)] if a.ndim else a
        raise ValueError(
            f"preset: got {preset!r} ({float(value)!r} rad), valid range "
            f"[{PRESET_LO:g}, {PRESET_HI:g}] rad per joint"
        )
    return np.array(np.broadcast_to(a, (num_envs, 2)))


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
    frame_skip, max_episode_steps = 10, 100

    RELEASE_THRESHOLD = RELEASE_THRESHOLD
    metric = DISTANCE
    policy_init = {"mean": (0.0, 0.0, 0.4, 0.4, -1.5), "std": (1.0, 1.0, 0.2, 0.2, 1.0)}

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

    def __init__(self, num_envs=1, *, actuator="qbmove", preset=None, **kwargs):
        check_arm(actuator, preset)
        super().__init__(num_envs, **kwargs)
        held = fixed_presets(preset, self.num_envs)
        self.actuator = actuator
        # the presets as given: None, a float, or an array (2,) or (num_envs, 2), rad
        self.preset = preset if held is None else np.array(preset, dtype=np.float64)
        if held is not None and np.ndim(preset) == 0:
            self.preset = float(held[0, 0])
        self._preset_held = held  # (num_envs, 2) rad, or None: the presets are actions
        if actuator == "rigid":  # the base class built the qbmove arm (robot, variant)
            self._use_sim(self._make_sim(rigid_robot(), kwargs.get("threads", 1)))
        robot = self.sim.robot
        self._q0[:] = robot.initial_q
        self._refs0[:] = robot.initial_refs
        if held is not None:
            self._refs0[:, :, 1] = held
        self.gravity = float(-self.sim.gravity[2])
        b = self.sim.batch
        names = ("k1", "a1", "k2", "a2") if actuator == "qbmove" else ("k",)
        self._spring_param_names = names
        self._springs = [
            tuple(float(b.get_param(j, n)[0]) for n in names) for j in range(self.n_joints)
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
        """(N,) energy stored in the springs now, J: the qbmove closed form from the clamped
        deflections, or k defl^2 / 2 in the rigid arm's stiff transmission (each instance's
        own spring parameters when they are randomised)."""
        b = self.sim.batch
        springs = self._springs
        if self.randomization.spring_scale > 0:  # (N,) parameters per instance
            springs = [
                tuple(b.get_param(j, n) for n in self._spring_param_names)
                for j in range(self.n_joints)
            ]
        d1 = b.field("defl1")
        if self.actuator == "rigid":
            k = np.array([s[0] for s in springs])  # (J,), or (J, N) when randomised
            k = k.T if k.ndim == 2 else k
            return 0.5 * np.sum(k * d1 * d1, axis=1)
        d2 = b.field("defl2")
        return sum(
            spring_energy_from_deflection(d1[:, j], d2[:, j], *springs[j])
            for j in range(self.n_joints)
        )

    # ------------------------------------------------------------ task hooks

    def _sample(self, i, rng):
        self.released[i] = False
        self.release_pos[i] = 0.0
        self.release_vel[i] = 0.0
        self.distance[i] = 0.0
        self._release_cmd[i] = False

    def _rest_action(self, i):
        """The initial references held, the hand closed (release -1): what a delayed action is
        before the episode's first ones arrive."""
        space = self.single_action_space
        a = np.concatenate([self._refs0[i, :, 0], self._refs0[i, :, 1], [-1.0]])
        return np.clip(a, space.low, space.high)

    def _refs(self, actions):
        self._release_cmd = np.where(self._autoreset, False, actions[:, 4] > RELEASE_THRESHOLD)
        presets = actions[:, 2:4] if self._preset_held is None else self._preset_held
        return np.stack([actions[:, :2], presets], axis=-1)  # (N, 2, 2)

    def _terminated(self):
        return self._release_cmd.copy()

    def _reward(self):
        # the hand opens at the time limit: the last env step releases whatever r says
        self._release_cmd |= self._elapsed >= self.max_episode_steps
        for i in np.flatnonzero(self._release_cmd):
            p, v = self.tip_state(int(i))
            self.released[i] = True
            self.release_pos[i], self.release_vel[i] = p, v
            self.distance[i] = landing_distance(p, v, self.gravity)
        return np.where(self._release_cmd, self.distance, 0.0)

    def _observe(self):
        t = self._elapsed * self.env_dt
        return np.concatenate([self._q_obs, self._qd_obs, t[:, None]], axis=1)

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
    "fixed_presets",
    "landing_distance",
    "spring_energy_from_deflection",
    "spring_energy_from_torque",
]
