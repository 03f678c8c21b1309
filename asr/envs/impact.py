"""Impact2DOF: a fast reach that ends in a collision with a rigid plate, with a bounded peak force
([Haddadin2009], [Vanderborght2013]).

Robot: the Throw's arm (asr.envs.throw): robots/qbmove_arm_2dof, variant `throw` (the vertical
arm, gravity in the plane of motion, motors with the published device's limits MOTOR_TAU_MAX,
MOTOR_VEL_MAX) in mode 6, or with actuator="rigid" the variant `throw_rigid`; this task adds to
its MJCF (scene(), nothing in robots/ changes):
- the plate: a fixed box whose lower face lies PLATE_Z = 0.14 m above joint 1's axis (world
  z = 0.44 m), spanning x in [-0.05, 0.25] m from the axis; a rigid surface as MuJoCo models one
  at the 1 ms step: contact time constant 4 ms, critically damped (solref CONTACT_SOLREF),
  friction 0.5;
- the bumper: a massless sphere of BUMPER_RADIUS = 0.015 m centred at the tip site (0.133 m past
  joint 2), the only part of the arm that collides (with the plate only), and a touch sensor
  around it: the normal contact force, read after every simulation step.
Keyword arguments (asr.envs._arm2dof, the same for every arm task): actuator="qbmove" (default)
or "rigid"; preset=None (the presets are actions), a number or (P1, P2) in [PRESET_LO,
PRESET_HI] = [0, 0.8] rad held fixed (qbmove only).

Task (the "safe brachistochrone" of [Bicchi2004]: the fastest motion whose impact stays within
a bound): from rest (the arm's initial state, q = (-0.6, -0.27) rad, hanging under its weight)
bring the tip onto a target point on the plate's face as fast as possible, its peak contact force
within F_MAX = 50 N.
The target point: x_t uniform in TARGET_X = [0.08, 0.16] m from the axis, the tip
site's target (x_t, PLATE_Z - BUMPER_RADIUS) (the bumper touching the plate). The episode lasts
1 s (max_episode_steps = 100 env steps of 10 ms = frame_skip 10 steps of the MJCF's 1 ms), then
is truncated. The target is observed in joint space: the angles that put the tip there (inverse
kinematics of the two links L1 = 0.1 m, L2 = 0.133 m, elbow as at rest: q2 <= 0).
Arrived (at an env step's end): the tip within ARRIVE_TOL = 0.01 m of its target point and the
bumper touching the plate (contact force > 0): the reach must end in a collision.

observation (6,): q1, q2 (rad), qd1, qd2 (rad/s), target1, target2 (rad).
action (4,): equilibria eq1, eq2 in [-3, 3] rad, presets p1, p2 in [0, 0.8] rad (the Throw's
    ranges), held over one env step (rigid arm: eq = the motor shafts' position references).
metric (ARRIVAL_TIME, s, lower better): the arrival time, the time from which the tip stays
    arrived to the episode's end (a settling time: the end of the first env step of the last
    unbroken run of arrived steps, so a bounce does not count; the episode's length, 1 s, when
    the last step is not arrived), plus FORCE_COST = 1 s per N of the episode's peak contact
    force beyond F_MAX. F_MAX from open-loop strikes of the rigid arm (equilibria stepped to
    the target plus an offset on joint 1, test_the_force_bound_is_met_slowly_not_at_full_speed):
    at full speed (offset 0.5 rad) it strikes at 0.77 m/s with a 275 N peak; slowed down
    (offsets 0.005-0.02 rad: the position controller creeps onto the plate) 1.7-21 N, arriving
    in 0.43-0.54 s. A newton beyond the bound costs as much as the whole episode, while none
    of those strikes arrived sooner for its larger force, so breaking the bound does not pay.
reward per env step: -dt * (not_arrived + d / DIST_SCALE) - FORCE_PENALTY * dE, dt = 0.01 s,
    d the tip's distance to its target point at the step's end (m, DIST_SCALE = 0.01 m: the
    dense part, leading the tip towards the target), dE the rise over the step of the episode's
    peak force's excess over F_MAX (N; FORCE_PENALTY = 0.02 s/N, gentler than the metric's cost so
    that early strikes do not teach the policy to stay away). The return is -(the time not
    arrived) - (the distance integral) / DIST_SCALE - FORCE_PENALTY * (peak excess).
infos: target (2,) rad and target_point (2,) m (reset and step); every step: tip_pos (2,) (m,
    x and z from joint 1's axis), distance (m), contact_force (N, at the step's end), peak_force
    (N, the episode's so far), impact_speed (m/s: the tip's upward velocity vz, into the plate, at
    the simulation step before the episode's first contact; 0 before it), arrived (bool, above),
    arrival_time (s: the metric's time were the episode to end now), stiffness (2,) N m/rad.
Randomisation (keyword `randomization`, asr.envs.randomization.Randomization): start pose, link
masses, spring parameters, sensor noise on q and qd, action latency; render_mode="rgb_array".

Trend ([Haddadin2009]; [Vanderborght2013] sec. on safety): at a given impact speed a soft joint
decouples the motor's inertia from the link, so the contact sees less mass and the force peak is
lower; pressing on after the impact, the force is the spring torque over the lever arm, lower for
a soft spring; a stiff joint positions the tip more precisely (static friction and gravity sag
less). Hence [Bicchi2004]'s variable-stiffness tactic: stiff while accelerating, soft
at impact. tests/envs/test_envs_impact.py measures the force trend on an open-loop strike.
"""

import mujoco
import numpy as np
from gymnasium import spaces

from asr.envs._arm2dof import ArmTask
from asr.envs.metrics import ARRIVAL_TIME
from asr.envs.vector import AsrEnv

L1, L2 = 0.1, 0.133  # m: joint 1 -> joint 2, joint 2 -> tip site (robots/qbmove_arm_2dof MJCF)
AXIS_Z = 0.3  # m: joint 1's axis above the world origin
PLATE_Z = 0.14  # m above joint 1's axis: the plate's lower face
PLATE_X = (-0.05, 0.25)  # m from the axis: the plate's extent in x
PLATE_THICKNESS = 0.02  # m
BUMPER_RADIUS = 0.015  # m
CONTACT_SOLREF = (0.004, 1.0)  # s, damping ratio: MuJoCo's contact time constant and damping
CONTACT_FRICTION = 0.5
TARGET_X = (0.08, 0.16)  # m from the axis, uniform
ARRIVE_TOL = 0.01  # m
F_MAX = 50.0  # N: the bound on the episode's peak contact force
FORCE_COST = 1.0  # s/N: the metric's cost per N of peak force beyond F_MAX
FORCE_PENALTY = 0.02  # s/N: the reward's, per N of the peak's rise beyond F_MAX
DIST_SCALE = 0.01  # m: the reward's distance term, per step -dt * d / DIST_SCALE = -d
SENSOR = "bumper_touch"


def tip_position(q):
    """Tip site (x, z) from joint 1's axis, m, for joint angles q (..., 2), rad."""
    q = np.asarray(q, dtype=float)
    a1, a12 = q[..., 0], q[..., 0] + q[..., 1]
    return np.stack([L1 * np.cos(a1) + L2 * np.cos(a12), L1 * np.sin(a1) + L2 * np.sin(a12)], -1)


def tip_velocity(q, qd):
    """Tip site velocity (vx, vz), m/s, for joint angles q and velocities qd (..., 2)."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    a1, a12 = q[..., 0], q[..., 0] + q[..., 1]
    w1, w12 = qd[..., 0], qd[..., 0] + qd[..., 1]
    vx = -L1 * np.sin(a1) * w1 - L2 * np.sin(a12) * w12
    vz = L1 * np.cos(a1) * w1 + L2 * np.cos(a12) * w12
    return np.stack([vx, vz], -1)


def joint_target(x, z):
    """Joint angles (q1, q2), rad, that put the tip site at (x, z) m from joint 1's axis, the
    elbow as at rest (q2 <= 0). ValueError naming the point when it is out of reach."""
    c2 = (x * x + z * z - L1 * L1 - L2 * L2) / (2 * L1 * L2)
    if not -1.0 <= c2 <= 1.0:
        raise ValueError(f"(x, z): got ({x}, {z}) m, out of the arm's reach [{L2 - L1}, {L1 + L2}]")
    q2 = -np.arccos(c2)
    q1 = np.arctan2(z, x) - np.arctan2(L2 * np.sin(q2), L1 + L2 * np.cos(q2))
    return np.array([q1, q2])


def scene(robot):
    """The robot with the plate, the bumper and its touch sensor added to its MJCF (module
    docstring): the same class, its mj_model() compiling the edited model."""
    import dataclasses

    class _Robot(type(robot)):
        def mj_model(self):
            super().mj_model()  # the robot's own checks
            spec = mujoco.MjSpec.from_file(self.mjcf)
            x0, x1 = PLATE_X
            h = PLATE_THICKNESS / 2
            contact = dict(
                contype=1,
                conaffinity=1,
                condim=3,
                friction=[CONTACT_FRICTION, 0.005, 0.0001],
                solref=list(CONTACT_SOLREF),
            )
            spec.worldbody.add_geom(
                name="plate",
                type=mujoco.mjtGeom.mjGEOM_BOX,
                size=[(x1 - x0) / 2, 0.06, h],
                pos=[(x0 + x1) / 2, 0.0, AXIS_Z + PLATE_Z + h],
                rgba=[0.55, 0.45, 0.35, 0.6],
                **contact,
            )
            link2 = spec.body("link2")
            link2.add_geom(
                name="bumper",
                type=mujoco.mjtGeom.mjGEOM_SPHERE,
                size=[BUMPER_RADIUS, 0, 0],
                pos=[L2, 0.0, 0.0],
                mass=0.0,
                rgba=[0.8, 0.2, 0.2, 1],
                **contact,
            )
            link2.add_site(name="bumper_zone", size=[2 * BUMPER_RADIUS, 0, 0], pos=[L2, 0.0, 0.0])
            spec.add_sensor(
                name=SENSOR,
                type=mujoco.mjtSensor.mjSENS_TOUCH,
                objtype=mujoco.mjtObj.mjOBJ_SITE,
                objname="bumper_zone",
            )
            return spec.compile()

    return _Robot(**{f.name: getattr(robot, f.name) for f in dataclasses.fields(robot)})


class Impact(ArmTask):
    __doc__ = __doc__

    frame_skip, max_episode_steps = 10, 100
    target_range = TARGET_X  # m: the target point's x from the axis (a task with targets)
    metric = ARRIVAL_TIME
    render_camera = (90.0, -5.0)
    policy_init = {"mean": (0.0, 0.0, 0.4, 0.4), "std": (1.0, 1.0, 0.2, 0.2)}

    OBSERVATION = (
        ("q1", "rad"),
        ("q2", "rad"),
        ("qd1", "rad/s"),
        ("qd2", "rad/s"),
        ("target1", "rad"),
        ("target2", "rad"),
    )

    single_observation_space = spaces.Box(-np.inf, np.inf, (6,), np.float64)

    def __init__(self, num_envs=1, **kwargs):
        self._sensor_adr = None
        super().__init__(num_envs, **kwargs)
        n = self.num_envs
        self.target = np.zeros((n, 2))
        self.target_point = np.zeros((n, 2))
        self.tip_pos = np.zeros((n, 2))
        self.distance = np.zeros(n)
        self.contact_force = np.zeros(n)
        self.peak_force = np.zeros(n)
        self.impact_speed = np.zeros(n)
        self.arrived = np.zeros(n, dtype=bool)
        # (N,) the env step (1-based) that began the current unbroken run of arrived steps; 0: none
        self._arrived_since = np.zeros(n, dtype=np.int64)
        self._touched = np.zeros(n, dtype=bool)
        self._vz_prev = np.zeros(n)  # the tip's vz at the end of the last step, m/s

    # ------------------------------------------------------------ the scene

    def _scene(self, robot):
        return scene(robot)

    def _per_step(self):
        def force():
            sim = self.sim
            if self._sensor_adr is None:
                m = sim.models[0]
                self._sensor_adr = int(m.sensor_adr[m.sensor(SENSOR).id])
            adr = self._sensor_adr
            return np.fromiter((d.sensordata[adr] for d in sim.datas), float, sim.n_instances)

        return force

    def arrival_time(self):
        """(N,) s: the time from which the tip has stayed arrived (module docstring), the
        episode's length (max_episode_steps * env_dt) when it is not arrived now."""
        length = self.max_episode_steps * self.env_dt
        return np.where(self.arrived, self._arrived_since * self.env_dt, length)

    def metric_value(self):
        """(N,) the metric of the episodes now (ARRIVAL_TIME), s: arrival_time() plus FORCE_COST
        times the peak contact force beyond F_MAX."""
        return self.arrival_time() + FORCE_COST * np.maximum(self.peak_force - F_MAX, 0.0)

    # ------------------------------------------------------------ task hooks

    def _sample(self, i, rng):
        x = rng.uniform(*TARGET_X)
        self.target_point[i] = (x, PLATE_Z - BUMPER_RADIUS)
        self.target[i] = joint_target(*self.target_point[i])
        self.peak_force[i] = 0.0
        self.contact_force[i] = 0.0
        self.impact_speed[i] = 0.0
        self.arrived[i] = False
        self._arrived_since[i] = 0
        self._touched[i] = False
        self._vz_prev[i] = 0.0
        self.tip_pos[i] = tip_position(self._q0[i])
        self.distance[i] = np.linalg.norm(self.tip_pos[i] - self.target_point[i])

    def _refs(self, actions):
        return self._arm_refs(actions)

    def _observe(self):
        return np.concatenate([self._q_obs, self._qd_obs, self.target], axis=1)

    def _reward(self):
        run = ~self._autoreset  # sub-envs reset in this step keep their new episode's values
        out = self.sim.last
        force = out["per_step"]  # (N, steps) N
        vz = tip_velocity(out["q"], out["qd"])[..., 1]  # (N, steps) m/s
        before = np.concatenate([self._vz_prev[:, None], vz[:, :-1]], axis=1)
        touching = force > 0.0
        first = run & ~self._touched & touching.any(axis=1)
        k = np.argmax(touching, axis=1)
        self.impact_speed = np.where(first, before[np.arange(self.num_envs), k], self.impact_speed)
        self._touched |= first
        peak = np.where(run, np.maximum(self.peak_force, force.max(axis=1)), self.peak_force)
        rise = np.maximum(peak - F_MAX, 0.0) - np.maximum(self.peak_force - F_MAX, 0.0)
        self.peak_force = peak
        self.contact_force = np.where(run, force[:, -1], self.contact_force)
        self._vz_prev = np.where(run, vz[:, -1], self._vz_prev)
        self.tip_pos = np.where(run[:, None], tip_position(self.q), self.tip_pos)
        self.distance = np.linalg.norm(self.tip_pos - self.target_point, axis=1)
        arrived = (self.distance <= ARRIVE_TOL) & (self.contact_force > 0.0)
        began = arrived & ~self.arrived
        self._arrived_since = np.where(
            run,
            np.where(began, self._elapsed, np.where(arrived, self._arrived_since, 0)),
            self._arrived_since,
        )
        self.arrived = np.where(run, arrived, self.arrived)
        dt = self.env_dt
        return -dt * (~self.arrived + self.distance / DIST_SCALE) - FORCE_PENALTY * rise

    def _infos(self):
        return (
            {"target": self.target.copy(), "target_point": self.target_point.copy()},
            {
                "tip_pos": self.tip_pos.copy(),
                "distance": self.distance.copy(),
                "contact_force": self.contact_force.copy(),
                "peak_force": self.peak_force.copy(),
                "impact_speed": self.impact_speed.copy(),
                "arrived": self.arrived.copy(),
                "arrival_time": self.arrival_time(),
                "stiffness": np.array(self.sim.batch.field("stiffness")),
            },
        )


class Impact2DOFEnv(AsrEnv):
    """Impact as a single gymnasium.Env (gymnasium.make, SyncVectorEnv)."""

    def __init__(self, render_mode=None, **kwargs):
        super().__init__(Impact, render_mode=render_mode, **kwargs)


__all__ = [
    "Impact",
    "Impact2DOFEnv",
    "scene",
    "tip_position",
    "tip_velocity",
    "joint_target",
    "ARRIVE_TOL",
    "F_MAX",
    "FORCE_COST",
    "FORCE_PENALTY",
    "DIST_SCALE",
]
