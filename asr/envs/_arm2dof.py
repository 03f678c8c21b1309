"""What asr/Impact2DOF-v0 (asr.envs.impact) and asr/Periodic2DOF-v0 (asr.envs.periodic) share: the
Throw's two arms (robots/qbmove_arm_2dof variants `throw` and `throw_rigid`, asr.envs.throw), the
keywords `actuator` and `preset`, and a Sim whose env steps also record the motor fields (and,
for the impact, a value read after every simulation step).

Keywords (the comparison of stiffness strategies relies on them, the same for every arm task):
- actuator="qbmove" (default, variable stiffness: the presets are actions) or "rigid" (the same
  links on stiff transmissions driven by the same motors, asr.envs.throw.rigid_robot(); the
  presets are ignored);
- preset=None (the presets are actions) or fixed presets held throughout, the preset actions
  ignored (qbmove only), each in [PRESET_LO, PRESET_HI] = [0, 0.8] rad (the qbmove Advanced
  preset range): a number P (both joints), a per-joint sequence (P1, P2) of shape (2,), or one
  row per sub-env, shape (num_envs, 2) (asr.envs.throw.fixed_presets, as Throw takes them).
"""

from collections.abc import Callable

import numpy as np
from gymnasium import spaces

from asr.envs.throw import (
    EQ_LIMIT,
    PRESET_HI,
    PRESET_LO,
    ROBOT,
    ROBOT_RIGID,
    VARIANT,
    check_arm,
    fixed_presets,
)
from asr.envs.vector import AsrVectorEnv

ACTUATORS = ("qbmove", "rigid")
# the fields an env step records per simulation step for the motors' work: motor velocities,
# the springs' torques on the link (their reactions load the motors) and the motor friction
MOTOR_FIELDS = ("th1d", "th2d", "tau_el1", "tau_el2", "tau_f1", "tau_f2")


class _RecordingSim:
    """The task's asr.Sim (every attribute read from it) whose rollout also records the motor
    fields (MOTOR_FIELDS) and the motor velocities before its first step (out["thd_start"],
    (N, 2, J): motor 1, motor 2) and, with per_step, per_step() -> (N,) read after every
    simulation step (out["per_step"], (N, steps)); `last` holds the last rollout's output."""

    def __init__(self, sim, per_step: Callable[[], np.ndarray] | None = None):
        self._sim = sim
        self._per_step = per_step
        self.last: dict = {}

    def __getattr__(self, name):
        return getattr(self._sim, name)

    def rollout(self, steps, refs=None, *, record=("q", "qd"), **kwargs):
        record = tuple(record) + tuple(f for f in MOTOR_FIELDS if f not in record)
        b = self._sim.batch
        start = np.stack([b.field("th1d"), b.field("th2d")], axis=1)  # (N, 2, J), a copy
        if self._per_step is None:
            out = self._sim.rollout(steps, refs, record=record, **kwargs)
        else:
            held = refs
            values = np.zeros((self._sim.n_instances, steps))

            def refs_at(sim, t):
                if t > 0:
                    values[:, t - 1] = self._per_step()
                return held

            out = self._sim.rollout(steps, refs_at, every=1, record=record, **kwargs)
            values[:, steps - 1] = self._per_step()
            out["per_step"] = values
        out["thd_start"] = start
        self.last = out
        return out


class ArmTask(AsrVectorEnv):
    """Base of the arm tasks: the Throw's arm (variant `throw`, or `throw_rigid` with
    actuator="rigid"), actions [eq1, eq2, p1, p2] in the Throw's ranges, fixed presets by the
    keyword `preset`, every env step's motor fields recorded (motor_power)."""

    robot, variant = ROBOT, VARIANT

    ACTION = (
        ("equilibrium1", "rad"),
        ("equilibrium2", "rad"),
        ("preset1", "rad"),
        ("preset2", "rad"),
    )
    single_action_space = spaces.Box(
        np.array([-EQ_LIMIT, -EQ_LIMIT, PRESET_LO, PRESET_LO]),
        np.array([EQ_LIMIT, EQ_LIMIT, PRESET_HI, PRESET_HI]),
        (4,),
        np.float64,
    )

    def __init__(self, num_envs=1, *, actuator="qbmove", preset=None, **kwargs):
        check_arm(actuator, preset)
        self.actuator = actuator
        if actuator == "rigid":
            self.variant = ROBOT_RIGID  # this instance's arm: asr.envs.throw.rigid_robot()
        super().__init__(num_envs, **kwargs)
        # (num_envs, 2) held presets, rad, or None: the presets are actions
        self.preset = fixed_presets(preset, self.num_envs)
        robot = self.sim.robot
        self._q0[:] = robot.initial_q
        self._refs0[:] = robot.initial_refs
        if self.preset is not None:
            self._refs0[:, :, 1] = self.preset

    def _scene(self, robot):
        """The robot whose model the Sim runs (a task adds its own bodies here)."""
        return robot

    def _per_step(self):
        """None, or a function () -> (N,) read after every simulation step."""
        return None

    def _make_sim(self, robot, threads):
        sim = super()._make_sim(self._scene(robot), threads)
        return _RecordingSim(sim, self._per_step())

    def _presets(self, actions):
        """(N, 2) presets held over the step: the actions' or the fixed ones (rad)."""
        return actions[:, 2:4] if self.preset is None else self.preset

    def _arm_refs(self, actions):
        return np.stack([actions[:, :2], self._presets(actions)], axis=-1)  # (N, 2, 2)

    def motor_power(self):
        """(N, steps) mechanical power of all the motor drives over the last env step's
        simulation steps, W: per motor tau_drive * thd, summed over the joints' motors (the
        rigid arm: one shaft per joint). tau_drive is the drive torque the motor's recorded motion
        implies by its equation (docs/models.md sec. 2: J thdd = tau_drive + tau_load - tau_f -
        D thd, the load the reaction -tau_el of the motor's spring on the link):

            tau_drive = J (thd - thd_prev) / dt + tau_el + tau_f + D thd

        with each simulation step's end velocity thd and the one before. The recorded PID output
        tau_m is the command at a step's start, which the motor integrator's linearly implicit
        update moves within the step (docs/integration.md): with it the motors' work misses the
        energy balance by a third, with tau_drive it closes to 0.2 %
        (tests/envs/test_envs_periodic.py)."""
        out = self.sim.last
        b = self.sim.batch
        motors = 2 if self.actuator == "qbmove" else 1
        dt = self.sim.dt
        power = 0.0
        for m in range(motors):
            thd = out[f"th{m + 1}d"]  # (N, steps, J) rad/s
            before = np.concatenate([out["thd_start"][:, None, m], thd[:, :-1]], axis=1)
            inertia = np.stack([b.get_param(j, "motor_J") for j in range(self.n_joints)], -1)
            damping = np.stack([b.get_param(j, "motor_D") for j in range(self.n_joints)], -1)
            tau = (
                inertia[:, None] * (thd - before) / dt
                + out[f"tau_el{m + 1}"]
                + out[f"tau_f{m + 1}"]
                + damping[:, None] * thd
            )
            power = power + np.sum(tau * thd, axis=2)
        return power
