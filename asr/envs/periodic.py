"""Periodic2DOF: track a sinusoidal link motion for several cycles with the least motor energy
([Vanderborght2013]).

Robot: the Throw's arm (asr.envs.throw): robots/qbmove_arm_2dof, variant `throw` (the vertical
arm, gravity in the plane of motion, motors with the published device's limits MOTOR_TAU_MAX =
6 N m, MOTOR_VEL_MAX = 6 rad/s) in mode 6, or with actuator="rigid" the variant `throw_rigid`.
Keyword arguments (asr.envs._arm2dof, the same for every arm task): actuator="qbmove" (default)
or "rigid"; preset=None (the presets are actions), a number or (P1, P2) in [PRESET_LO, PRESET_HI]
= [0, 0.8] rad held fixed (qbmove only); frequency f (Hz, one of FREQUENCIES = 1.0, 1.25, 2.0,
2.5; default 2.0); amplitude A (rad, in (0, 0.5], default 0.2); energy_cost (rad/J, default 0.5).

Task: both joints follow q_ref(t) = CENTRE + A sin(2 pi f t), CENTRE = (-pi/2, 0) rad (the arm
hanging straight down, where gravity pulls it back to the centre), from the start at rest at the
centre (references: equilibria at the centre, presets 0.2 rad or the fixed ones; the rigid arm's
shafts at the centre). An episode lasts WARMUP_CYCLES + MEASURED_CYCLES = 1 + 3 cycles of 1/f
(env steps of 10 ms = frame_skip 10 steps of the MJCF's 1 ms: 400, 320, 200 and 160 env steps),
then it is truncated; the metric counts the last 3 cycles.

observation (11,), as OBSERVATION names it: q1, q2 (rad), qd1, qd2 (rad/s); q_ref1, q_ref2 (rad)
    and qd_ref1, qd_ref2 (rad/s): the reference and its rate (reference, reference_rate) at the
    end of the env step the observation starts (t + env_dt), what the action held over the step
    should reach; q1 - q_ref1, q2 - q_ref2 (rad): the tracking error against it; t (s, time since
    the episode start, k env_dt after k env steps). The reference entries give the policy the
    phase (sin and cos of 2 pi f t, scaled) and the amplitude it must track, which it could not
    build from t alone (with q, qd and t only, PPO never left the hanging pose: docs/learning.md);
    the error entries give it the deviation at its own scale (a few mrad once it tracks), which
    a normalised q and q_ref would leave as a small difference of two large inputs (sb3, seed
    0, 153600 env-steps: 1.20 J per cycle with them, 3.57 J without). The
    exported ROS node builds every entry from the joint states, the env step's count and the
    task's frequency and amplitude (reference_parameters, asr.ros.export).
action (4,): equilibria eq1, eq2 in [-3, 3] rad, presets p1, p2 in [0, 0.8] rad (the Throw's
    ranges), held over one env step (rigid arm: eq = the motor shafts' position references).
Motor energy: the mechanical power of the motor drives at every simulation step, P = sum over
    the joints' motors of tau_drive thd (N m times rad/s: four motors, or the rigid arm's two
    shafts), tau_drive the drive torque the motor's motion implies (ArmTask.motor_power); the
    motors do not recover energy, so the energy is the positive work W+ = sum of max(P, 0) dt,
    J. Electrical losses are not modelled (the arm's motors run torque-controlled, drive 0).
reward per env step: -e - energy_cost * W+, e the RMS tracking error over the step's simulation
    steps (rad, both joints), W+ the motors' positive work over the step (J).
metric (ENERGY_PER_CYCLE, J, lower better): W+ over the measured cycles divided by their number,
    plus MISS_COST = 100 J/rad (0.1 J per mrad) times how far the RMS tracking error over the
    measured cycles exceeds ERROR_BOUND = 0.05 rad (energy at a bounded tracking error).
infos (every step): reference (2,) rad at the step's end, tracking_error (rad, RMS over the
    measured cycles so far; over the step before them), energy (J, W+ of the measured cycles so
    far), energy_per_cycle (J), net_work (J, the integral of P over the episode so far, negative
    work counted: what the energy balance checks), stiffness (2,) N m/rad.
Randomisation (keyword `randomization`, asr.envs.randomization.Randomization): start pose, link
masses, spring parameters, sensor noise on q and qd (t and the reference are exact; the error
entries take the observed, noisy q), action latency;
render_mode="rgb_array".

Trend ([Vanderborght2013] on energy storage in periodic motion): a spring whose
stiffness makes the link's natural frequency match f stores and returns the motion's energy, so
the motors work less; a fixed spring suits one frequency, a variable one all of them.
tests/envs/test_envs_periodic.py measures it on an open-loop drive.
"""

import math

import numpy as np
from gymnasium import spaces

from asr.envs._arm2dof import ArmTask
from asr.envs.metrics import ENERGY_PER_CYCLE
from asr.envs.vector import AsrEnv

FREQUENCIES = (1.0, 1.25, 2.0, 2.5)  # Hz: whole env steps of 10 ms per cycle
CENTRE = (-math.pi / 2, 0.0)  # rad
AMPLITUDE_MAX = 0.5  # rad
WARMUP_CYCLES, MEASURED_CYCLES = 1, 3
ERROR_BOUND = 0.05  # rad, RMS
MISS_COST = 100.0  # J/rad: per rad of RMS error beyond ERROR_BOUND, added to the energy
START_PRESET = 0.2  # rad, the qbmove arm's start presets (the robot's initial ones)


def reference(t, frequency, amplitude):
    """(..., 2) reference angles, rad, at times t (...,) s: CENTRE + amplitude sin(2 pi f t),
    f in Hz, amplitude in rad (the exported ROS node computes the same, asr.ros.export)."""
    s = amplitude * np.sin(2.0 * np.pi * frequency * np.asarray(t, dtype=float))
    return np.asarray(CENTRE) + s[..., None]


def reference_rate(t, frequency, amplitude):
    """(..., 2) the reference's rate, rad/s, at times t (...,) s: amplitude 2 pi f cos(2 pi f t)
    (the time derivative of reference, both joints alike)."""
    w = 2.0 * np.pi * frequency
    c = amplitude * w * np.cos(w * np.asarray(t, dtype=float))
    return np.repeat(c[..., None], len(CENTRE), axis=-1)


def _number(name, value, lo, hi, unit, lo_open=False):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: got {value!r}, expected a number in [{lo}, {hi}] {unit}")
    ok = (lo < value if lo_open else lo <= value) and value <= hi
    if not (math.isfinite(float(value)) and ok):
        left = "(" if lo_open else "["
        raise ValueError(f"{name}: got {value!r}, valid range {left}{lo}, {hi}] {unit}")
    return float(value)


class Periodic(ArmTask):
    __doc__ = __doc__

    frame_skip = 10
    frequency, amplitude = 2.0, 0.2
    max_episode_steps = 200  # (WARMUP_CYCLES + MEASURED_CYCLES) cycles at the default frequency
    energy_cost = 0.5  # rad/J
    metric = ENERGY_PER_CYCLE
    render_camera = (90.0, -5.0)
    # PPO starts holding the centre (equilibria at CENTRE, presets 0.4 rad); std 0.5 rad on the
    # equilibria learned faster than 0.2 (rsl_rl, seed 0, 153600 env-steps at learning rate 3e-3:
    # 5.4 against 7.7 J per cycle)
    policy_init = {"mean": (*CENTRE, 0.4, 0.4), "std": (0.5, 0.5, 0.2, 0.2)}

    OBSERVATION = (
        ("q1", "rad"),
        ("q2", "rad"),
        ("qd1", "rad/s"),
        ("qd2", "rad/s"),
        ("q_ref1", "rad"),
        ("q_ref2", "rad"),
        ("qd_ref1", "rad/s"),
        ("qd_ref2", "rad/s"),
        ("q1 - q_ref1", "rad"),
        ("q2 - q_ref2", "rad"),
        ("t", "s"),
    )

    single_observation_space = spaces.Box(-np.inf, np.inf, (len(OBSERVATION),), np.float64)

    def __init__(self, num_envs=1, *, frequency=None, amplitude=None, energy_cost=None, **kwargs):
        if frequency is not None:
            if isinstance(frequency, bool) or frequency not in FREQUENCIES:
                raise ValueError(f"frequency: got {frequency!r}, valid: {FREQUENCIES} Hz")
            self.frequency = float(frequency)
        if amplitude is not None:
            self.amplitude = _number("amplitude", amplitude, 0, AMPLITUDE_MAX, "rad", True)
        if energy_cost is not None:
            self.energy_cost = _number("energy_cost", energy_cost, 0, math.inf, "rad/J")
        cycle = 1.0 / self.frequency  # s
        self._cycle_steps = round(cycle / (1e-3 * self.frame_skip))
        cycles = WARMUP_CYCLES + MEASURED_CYCLES
        kwargs.setdefault("max_episode_steps", cycles * self._cycle_steps)
        super().__init__(num_envs, **kwargs)
        if abs(self._cycle_steps * self.env_dt - cycle) > 1e-9:
            raise ValueError(
                f"frequency: {self.frequency} Hz is no whole number of env steps of "
                f"{self.env_dt} s (the MJCF's timestep changed?)"
            )
        self._q0[:] = CENTRE
        self._refs0[:, :, 0] = CENTRE
        if self.actuator == "qbmove":
            self._refs0[:, :, 1] = START_PRESET if self.preset is None else self.preset
        n = self.num_envs
        self.reference = np.zeros((n, 2))
        self.energy = np.zeros(n)  # J, W+ over the measured cycles
        self.net_work = np.zeros(n)  # J, integral of P over the episode
        self._sq_error = np.zeros(n)  # rad^2, sum over the measured simulation steps (2 joints)
        self._measured = np.zeros(n, dtype=np.int64)  # simulation steps measured
        self.tracking_error = np.full(n, np.inf)  # rad
        self._still = self.amplitude / math.sqrt(2.0)  # rad: the RMS error of holding still

    def reference_parameters(self):
        """What the reference entries of the observation are computed from (asr.ros.export
        gives them to the exported node): {"centre": CENTRE (2,) rad, "amplitude": A rad,
        "frequency": f Hz}."""
        return {"centre": list(CENTRE), "amplitude": self.amplitude, "frequency": self.frequency}

    @property
    def warmup_steps(self):
        """Env steps before the measured cycles."""
        return WARMUP_CYCLES * self._cycle_steps

    def metric_value(self):
        """(N,) the metric of the episodes now (ENERGY_PER_CYCLE): W+ per measured cycle, J,
        plus MISS_COST times the RMS tracking error beyond ERROR_BOUND (nothing measured yet: the
        error is taken as the amplitude, what holding still at the centre gives over a cycle,
        times sqrt(1/2))."""
        error = np.where(np.isfinite(self.tracking_error), self.tracking_error, self._still)
        excess = np.maximum(error - ERROR_BOUND, 0.0)
        return self.energy / MEASURED_CYCLES + MISS_COST * excess

    # ------------------------------------------------------------ task hooks

    def _sample(self, i, rng):
        self.reference[i] = CENTRE
        self.energy[i] = self.net_work[i] = self._sq_error[i] = 0.0
        self.tracking_error[i] = np.inf  # nothing tracked yet
        self._measured[i] = 0

    def _refs(self, actions):
        return self._arm_refs(actions)

    def _observe(self):
        """(N, len(OBSERVATION)) in OBSERVATION's order (see the module doc): q, qd, q_ref, qd_ref,
        q - q_ref, t (the exported node builds the same entries by name from OBSERVATION;
        tests/ros/test_ros_export_tasks.py compares the two)."""
        t = self._elapsed * self.env_dt  # (N,) s
        end = (self._elapsed + 1) * self.env_dt  # (N,) s, the env step's end (as the node)
        q_ref = reference(end, self.frequency, self.amplitude)  # (N, 2) rad
        qd_ref = reference_rate(end, self.frequency, self.amplitude)  # (N, 2) rad/s
        q = self._q_obs
        return np.concatenate([q, self._qd_obs, q_ref, qd_ref, q - q_ref, t[:, None]], axis=1)

    def _reward(self):
        run = ~self._autoreset  # sub-envs reset in this step keep their new episode's values
        out = self.sim.last
        steps = out["q"].shape[1]
        dt = self.sim.dt
        k = self._elapsed[:, None] * self.frame_skip - steps + 1 + np.arange(steps)
        ref = reference(k * dt, self.frequency, self.amplitude)  # (N, steps, 2)
        sq = np.sum((out["q"] - ref) ** 2, axis=2)  # (N, steps) rad^2
        power = self.motor_power()  # (N, steps) W
        work = np.sum(np.maximum(power, 0.0), axis=1) * dt  # J
        measured = run & (self._elapsed > self.warmup_steps)
        self.energy += np.where(measured, work, 0.0)
        self.net_work += np.where(run, power.sum(axis=1) * dt, 0.0)
        self._sq_error += np.where(measured, sq.sum(axis=1), 0.0)
        self._measured += np.where(measured, steps, 0)
        step_rms = np.sqrt(sq.mean(axis=1) / 2.0)
        rms = np.sqrt(self._sq_error / np.maximum(2 * self._measured, 1))
        self.tracking_error = np.where(
            run, np.where(self._measured > 0, rms, step_rms), self.tracking_error
        )
        self.reference = np.where(run[:, None], ref[:, -1], self.reference)
        return -step_rms - self.energy_cost * work

    def _infos(self):
        return (
            {},
            {
                "reference": self.reference.copy(),
                "tracking_error": self.tracking_error.copy(),
                "energy": self.energy.copy(),
                "energy_per_cycle": self.energy / MEASURED_CYCLES,
                "net_work": self.net_work.copy(),
                "stiffness": np.array(self.sim.batch.field("stiffness")),
            },
        )


class Periodic2DOFEnv(AsrEnv):
    """Periodic as a single gymnasium.Env (gymnasium.make, SyncVectorEnv)."""

    def __init__(self, render_mode=None, **kwargs):
        super().__init__(Periodic, render_mode=render_mode, **kwargs)


__all__ = [
    "Periodic",
    "Periodic2DOFEnv",
    "reference",
    "reference_rate",
    "FREQUENCIES",
    "ERROR_BOUND",
    "MISS_COST",
]
