"""The middleware-neutral core of asr's live nodes (ROS 1: asr.ros.node, ROS 2:
asr.ros.ros2_node): one asr.Sim (N = 1), the commands it holds, their range checks, one period
of stepping and the simulated time in integer nanoseconds. No ROS import here: a transport
(rospy, rclpy) subscribes, calls `set_command` / `set_references` / `hold_references`, steps
with `step_period` and publishes `state()` stamped with `stamp_ns`.

Commands arrive in the transport's callback threads and are held (last valid value) until the
next period starts: a period always sees one consistent set. A command is rejected (state
untouched, `rejected` counted, one line through `log` per topic and reason per WARN_PERIOD_S:
asr.ros.rejections) when it is not a finite number,
has the wrong length, or lies outside `command_range(joint, target)`: the model's declared
range where it has one, else the documented bounds below.
"""

import math
import threading
import time

import numpy as np

from asr.ros.rejections import WARN_PERIOD_S, RejectionLog, loggable

DEFAULT_ROBOT = "qbmove_arm_2dof"
DEFAULT_RATE_HZ = 100.0
# the namespace of `asr ros` / `asr ros2` and of the Plugin Manager configuration that
# asr.ros.urdf.export_robot writes: none (topics at the root), so the two agree by default
DEFAULT_NAMESPACE = ""
ENGINES = ("mujoco", "gazebo")
MAX_LAG_S = 0.25  # real time: a node further behind its schedule restarts the schedule

# Bounds for commands whose model declares no finite limit. A compliant joint's link or
# equilibrium reference beyond one turn is a mistake (a unit error, a wound-up integrator), not a
# target: the spring would wind the link round several times; so link and equilibrium angles
# lie in +-ANGLE_BOUND. A motor reference is a link angle plus the preset offset (under one turn
# for every model), so motor angles get twice that. Torques with no declared limit (rigid link
# torque with link_tau_max = inf, external torque) are bounded by TORQUE_BOUND, far above any
# joint asr ships (the UR10 base, 330 N m) and far below values that overflow the integrator.
# A reference the model ignores (ref2 of a single-reference mode) needs only to stay finite and
# printable: UNUSED_BOUND.
ANGLE_BOUND = 2 * math.pi  # rad
MOTOR_ANGLE_BOUND = 4 * math.pi  # rad
TORQUE_BOUND = 1e4  # N m
UNUSED_BOUND = 1e6  # (unit of the ignored reference)

# Per-joint command topics <joint>/<topic> (std_msgs Float64) -> what they set, by mode
# (docs/models.md section 4): "ref1" / "ref2" the joint's two references, "tau_ext" the external
# link torque (N m), "tau_ff" the feed-forward motor torque of [Kamedula2016] eq. 4 (N m),
# "preset" the stiffness preset (a reference or a spring parameter, per model). The toolbox
# plugin's own topic for each reference comes first (asr.ros.urdf's Plugin Manager file names it).
MODE_COMMANDS = {
    0: {"torque_command": "ref1"},
    1: {"link_command": "ref1"},
    2: {"reference_1": "ref1", "reference_2": "ref2"},
    3: {"equilibrium_position": "ref1", "stiffness_preset": "preset"},
    4: {
        "torque_m1_command": "ref1",
        "torque_m2_command": "ref2",
        "motor_1_command": "ref1",
        "motor_2_command": "ref2",
    },
    5: {"reference_1": "ref1", "reference_2": "ref2"},
    6: {"equilibrium_position": "ref1", "stiffness_preset": "preset"},
}
# [Kamedula2016] for a single-motor joint in mode 5 / 6: the link position reference (with a
# feed-forward torque asr commands the motor to q_d + tau_ff / K, eq. 4) and the feed-forward
# torque g(q_d); the spring, link and motor torques are published (KAMEDULA_STATES).
KAMEDULA_COMMANDS = {"link_command": "ref1", "feedforward_torque": "tau_ff"}
KAMEDULA_STATES = {"spring_torque": "tau_el1", "link_torque": "tau_link", "motor_torque": "tau_m1"}
# state fields recorded each period: state() holds each as (J,)
RECORD = (
    "q",
    "qd",
    "ref1",
    "ref2",
    "tau_link",
    "stiffness",
    "tau_el1",
    "tau_el2",
    "th1",
    "th2",
    "th1d",
    "th2d",
    "tau_m1",
    "tau_m2",
)
TARGETS = ("ref1", "ref2", "preset", "tau_ext", "tau_ff")


def joint_commands(spec, mode):
    """{topic: target} of the command topics a joint of model `spec` (an asr ModelSpec) in
    `mode` offers, with external_torque (every joint has it: target "tau_ext")."""
    cmds = dict(MODE_COMMANDS[mode])
    if mode in (2, 4, 5) and not _two_refs(spec):
        cmds = {t: v for t, v in cmds.items() if v != "ref2"}
    if mode in (3, 6) and spec.preset.kind == "none":
        cmds.pop("stiffness_preset")
    if mode in (5, 6) and spec.nmotor == 1 and not spec.kinematic_th2:
        cmds.update(KAMEDULA_COMMANDS)
    cmds["external_torque"] = "tau_ext"
    return cmds


def joint_states(spec, mode):
    """{topic: kind} of the state topics a joint publishes: "link", "motor1", "motor2" (the
    toolbox's link / motor states) and scalar topics named by their state field."""
    out = {"link_state": "link"}
    if mode >= 2:
        if spec.nmotor >= 1:
            out["motor_1_state"] = "motor1"
        if spec.nmotor == 2:
            out["motor_2_state"] = "motor2"
        out["torque_el1_state"] = "tau_el1"
        out["torque_el2_state"] = "tau_el2"
    if mode in (5, 6) and spec.nmotor == 1 and not spec.kinematic_th2:
        out.update(KAMEDULA_STATES)
    return out


def _two_refs(spec):
    """True when the model's second reference drives something in modes 2, 4, 5 (a second
    motor, or a kinematic second input such as AwAS-II's pivot)."""
    return spec.nmotor == 2 or spec.kinematic_th2


def check_rate(rate, dt):
    """period_steps (MJCF steps per period) for a publishing rate, Hz, in (0, 1 / dt]."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise TypeError(f"rate: got {type(rate).__name__}, expected a number of Hz")
    if not (math.isfinite(rate) and 0 < rate <= 1.0 / dt * (1 + 1e-9)):
        raise ValueError(
            f"rate: got {rate!r} Hz, valid range (0, {1.0 / dt:g}] (at most one "
            f"period per MJCF step of {dt:g} s)"
        )
    return max(1, int(round(1.0 / (rate * dt))))


def check_namespace(ns):
    """'' or '/a/b' (no trailing slash) from a namespace argument; ValueError when illegal."""
    if not isinstance(ns, str):
        raise TypeError(f"namespace: got {type(ns).__name__}, expected a string")
    parts = [p for p in ns.strip("/").split("/") if p]
    for p in parts:
        if not (p[0].isalpha() and all(c.isalnum() or c == "_" for c in p)):
            raise ValueError(
                f"namespace: got {ns!r}; each part must start with a letter and "
                "hold letters, digits and '_' only (a ROS name)"
            )
    return "".join("/" + p for p in parts)


def check_engine(engine):
    """The engine name, checked against ENGINES."""
    if engine not in ENGINES:
        raise ValueError(f"engine: got {engine!r}, valid: {', '.join(ENGINES)}")
    return engine


def _fmt_range(lo, hi, unit, lo_open=False, hi_open=False):
    text = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    return f"{text} {unit}" if unit else text


class RealTimeSchedule:
    """When the periods of a real-time node run: period k starts at wall time t0 + k * period
    (time.monotonic). A node more than MAX_LAG_S behind restarts the schedule from now (counted
    in `overruns`) instead of running a burst of catch-up periods, so simulated time follows
    wall time while the machine keeps up and falls behind steadily when it does not."""

    def __init__(self, period):
        self.period = period  # s
        self.overruns = 0  # schedule restarts because the node fell behind
        self.restart()

    def restart(self):
        """The next period starts one period from now (at start, after a reset or a pause)."""
        self._next = time.monotonic() + self.period

    def due(self):
        """True when the next period is due (and the schedule advanced past it); else sleep
        until it is, at most 0.1 s (so the caller sees shutdown and pause), and return False."""
        now = time.monotonic()
        if now < self._next:
            time.sleep(min(self._next - now, 0.1))
            return False
        self._next += self.period
        if now - self._next > MAX_LAG_S:
            self.overruns += 1
            self._next = now + self.period
        return True


class NodeCore:
    """One asr.Sim (N = 1) behind a live node: arguments checked, commands held and
    range-checked, stepped one period at a time. Thread-safe: commands from callback threads,
    stepping and reset from the transport's loop.

    robot, variant: as asr.load_robot. rate: publishing rate, Hz, in (0, 1 / dt]; one period is
    `period_steps` = round(1 / (rate dt)) steps (the real period is period_steps * dt, s).
    namespace: '' or e.g. 'arm_a' (checked, stored as '' or '/arm_a'). engine: "mujoco" or
    "gazebo" (asr.Sim's engine).

    Attributes: sim, robot, names (J joint names), modes, specs, commands ([{topic: target}] per
    joint), states ([{topic: kind}] per joint), period_steps, period (s), period_ns (int),
    periods (stepped since the last reset), paused (for the transport: True stops stepping),
    rejected (commands rejected so far), log (callable(str) for rejection lines, or None).
    """

    def __init__(
        self,
        robot=DEFAULT_ROBOT,
        variant=None,
        *,
        rate=DEFAULT_RATE_HZ,
        namespace=DEFAULT_NAMESPACE,
        engine="mujoco",
    ):
        from asr.sim.simulation import Sim

        self.namespace = check_namespace(namespace)
        self.engine = check_engine(engine)
        self.sim = Sim(robot, 1, variant=variant, engine=engine)
        self.robot = self.sim.robot
        dt = self.sim.dt
        self.period_steps = check_rate(rate, dt)
        self.period = self.period_steps * dt
        # integer ns per period: stamps are exact multiples, never a float's rounding short
        self.period_ns = self.period_steps * int(round(dt * 1e9))
        batch = self.sim.batch
        self.names = tuple(self.robot.joint_names)
        self.modes = [int(m) for m in batch.modes]
        self.specs = batch.specs
        self.commands = [joint_commands(s, m) for s, m in zip(self.specs, self.modes)]
        self.states = [joint_states(s, m) for s, m in zip(self.specs, self.modes)]
        self.rejections = RejectionLog()  # counted; logged through `log` (throttled)
        self.paused = False
        self._lock = threading.Lock()  # held commands
        self.step_lock = threading.RLock()  # stepping, reset, periods, last: hold it to publish
        self._initial_params = {
            (j, s.preset.param): float(batch.get_param(j, s.preset.param)[0])
            for j, s in enumerate(self.specs)
            if s.preset.kind == "param"
        }
        self._initial = self._initial_refs()  # (J, 2)
        self._clear()

    # ------------------------------------------------------------ state

    def _initial_refs(self):
        """(J, 2): the robot's initial references, else references that hold the reset state."""
        if self.robot.initial_refs is not None:
            return np.array(self.robot.initial_refs, dtype=float)
        b, q = self.sim.batch, self.sim.q[0]
        refs = np.zeros((self.sim.n_joints, 2))
        for j, (mode, spec) in enumerate(zip(self.modes, self.specs)):
            if mode == 1:
                refs[j, 0] = q[j]
            elif mode in (2, 5):
                refs[j] = b.field("th1")[0, j], b.field("th2")[0, j]
            elif mode in (3, 6):
                refs[j] = q[j], spec.preset.soft if spec.preset.kind == "ref" else 0.0
        return refs

    def _clear(self):
        """Held commands back to the initial ones; no period stepped."""
        nj = self.sim.n_joints
        with self._lock:
            self.refs = self._initial.copy()  # (J, 2) held references, units per mode
            self.tau_ext = np.zeros(nj)  # (J,) held external link torques, N m
            self.tau_ff = np.zeros(nj)  # (J,) held feed-forward motor torques, N m
            self._params = {}  # {(joint, param): value} due next period
        self.periods = 0
        self.last = None  # {field: (J,)} at the end of the last period (None: reset state)

    @property
    def stamp_ns(self):
        """Simulated time, integer ns: periods * period_ns."""
        return self.periods * self.period_ns

    def state(self):
        """{field: (J,)} (fields RECORD, units asr.FIELD_UNITS) at the end of the last period,
        or the reset state before any."""
        with self.step_lock:
            if self.last is None:
                self.last = self._reset_state()
            return self.last

    def _reset_state(self):
        """{field: (J,)} after a reset. The batch computes its outputs when it steps, so the
        references are the held ones and the springs' torques and stiffness are evaluated here
        (asr.compliance at the reset's link and motor angles): a toolbox client sees the
        stiffness of the reset state, not 0. Output-shaft friction is 0 at rest."""
        from asr.core.models import compliance

        b = self.sim.batch
        s = {f: b.field(f)[0].copy() for f in RECORD}
        s["q"], s["qd"] = self.sim.q[0], self.sim.qd[0]
        s["ref1"], s["ref2"] = self.refs[:, 0].copy(), self.refs[:, 1].copy()
        for j, (spec, mode) in enumerate(zip(self.specs, self.modes)):
            if mode < 2 or spec.nmotor == 0:
                continue
            c = compliance(
                spec.name,
                s["q"][j],
                s["th1"][j],
                s["th2"][j],
                **{p.name: b.get_param(j, p.name)[0] for p in spec.params},
            )
            s["tau_el1"][j], s["tau_el2"][j] = c.tau1, c.tau2
            s["tau_link"][j], s["stiffness"][j] = c.tau_link, c.stiffness
        return s

    def reset(self, q0=None, qd0=None):
        """Back to the robot's initial state: time 0, held commands and stiffness presets back to
        the initial ones. q0: (J,) link angles, rad, each in +-ANGLE_BOUND (default: the robot's
        initial q); qd0: (J,) link velocities, rad/s: zeros or None (asr.Sim resets at rest, on
        every engine).
        ValueError naming the bad value and the valid range (nothing changed then)."""
        q = None if q0 is None else self._check_vector(q0, "q0", ANGLE_BOUND, "rad")
        qd = None if qd0 is None else self._check_vector(qd0, "qd0", math.inf, "rad/s")
        if qd is not None and np.any(qd):
            raise ValueError(
                f"qd0: got {qd.tolist()} rad/s; a reset starts at rest: give zeros or none"
            )
        with self.step_lock:
            self.sim.reset(q0=q)
            for (j, name), value in self._initial_params.items():
                self.sim.batch.set_param(j, name, value)
            self._clear()

    def _check_vector(self, values, name, bound, unit):
        """(J,) finite values within +-bound; ValueError otherwise."""
        nj = self.sim.n_joints
        try:
            v = np.asarray(values, dtype=float).ravel()
        except (TypeError, ValueError):
            raise ValueError(f"{name}: got {values!r}, expected {nj} numbers") from None
        if v.shape != (nj,):
            raise ValueError(
                f"{name}: expected {nj} values (one per joint: {', '.join(self.names)}), "
                f"got {v.size}"
            )
        for j, x in enumerate(v):
            if not (math.isfinite(x) and -bound <= x <= bound):
                raise ValueError(
                    f"{name}[{j}] ({self.names[j]}) = {float(x)!r}, valid range "
                    f"{_fmt_range(-bound, bound, unit)}"
                )
        return v

    # ------------------------------------------------------------ ranges

    def _bounds(self, joint, target):
        """(lo, hi, unit, lo_open, hi_open) of a command; see command_range."""
        spec, mode, b = self.specs[joint], self.modes[joint], self.sim.batch

        def param(name):
            return float(b.get_param(joint, name)[0])

        pre = spec.preset
        if target == "tau_ext":
            return -TORQUE_BOUND, TORQUE_BOUND, "N m", False, False
        if target == "tau_ff":
            if spec.nmotor != 1:  # eq. 4 of [Kamedula2016]: single-motor joints only
                return 0.0, 0.0, "N m (single-motor joints only)", False, False
            t = param("tau_max")
            return -t, t, "N m", False, False
        if target == "preset":
            if pre.kind == "param":
                return 0.0, pre.hi, pre.unit, True, False
            target = "ref2"  # a preset of kind "ref" is the second reference of modes 3 / 6
        if target not in ("ref1", "ref2"):
            raise ValueError(f"target: got {target!r}, valid: {', '.join(TARGETS)}")
        second = target == "ref2"
        if mode == 0:
            if second:
                return -UNUSED_BOUND, UNUSED_BOUND, "", False, False
            t = param("link_tau_max")
            t = t if math.isfinite(t) else TORQUE_BOUND
            return -t, t, "N m", False, False
        if mode == 1 or (mode in (3, 6) and not second):
            if second:
                return -UNUSED_BOUND, UNUSED_BOUND, "", False, False
            return -ANGLE_BOUND, ANGLE_BOUND, "rad", False, False
        if second and (mode in (3, 6) or spec.kinematic_th2):
            if pre.kind != "ref" and not spec.kinematic_th2:
                return -UNUSED_BOUND, UNUSED_BOUND, "", False, False
            return self._preset_bounds(joint, offered=mode in (3, 6))
        if second and not _two_refs(spec):
            return -UNUSED_BOUND, UNUSED_BOUND, "", False, False
        if mode == 4:
            if param("drive") == 1:
                return -1.0, 1.0, "(PWM duty)", False, False
            t = param("tau_max")
            return -t, t, "N m", False, False
        # modes 2, 5: motor positions, within the motor's position limits
        lo = max(param("pos_min"), -MOTOR_ANGLE_BOUND)
        hi = min(param("pos_max"), MOTOR_ANGLE_BOUND)
        return lo, hi, "rad", False, False

    def _preset_bounds(self, joint, offered):
        """Bounds of a second reference that is a preset or a kinematic input: [lo, hi]
        (`offered`: the preset range, modes 3 / 6), cut to [lo, bound) by a bounding parameter
        (AwAS-II: the pivot below the lever length L)."""
        pre = self.specs[joint].preset
        hi, hi_open = (pre.hi, False) if offered else (math.inf, False)
        if pre.below_param is not None:
            bound = float(self.sim.batch.get_param(joint, pre.below_param)[0])
            if bound <= hi:
                hi, hi_open = bound, True
        if not math.isfinite(hi):
            hi = pre.hi
        return pre.lo, hi, pre.unit, False, hi_open

    def command_range(self, joint, target):
        """(lo, hi, unit): the valid range of command `target` (TARGETS) of joint index `joint`
        in its mode. The model's declared ranges: stiffness preset [lo, hi] (kind "ref"; kind
        "param": (0, hi], lower end open), AwAS-II pivot [lo, L) (upper end open), motor
        positions within [pos_min, pos_max], motor torques within +-tau_max (voltage drive:
        duty in [-1, 1]), rigid link torque within +-link_tau_max; with no finite declared
        limit, the module's bounds (ANGLE_BOUND, MOTOR_ANGLE_BOUND, TORQUE_BOUND, UNUSED_BOUND).
        range_text says which ends are open."""
        lo, hi, unit, _, _ = self._bounds(joint, target)
        return lo, hi, unit

    def range_text(self, joint, target):
        """The valid range of a command as text, e.g. '[-6.28319, 6.28319] rad', '(0, 1000]'."""
        return _fmt_range(*self._bounds(joint, target))

    def check_command(self, joint, target, value):
        """None when `value` is a valid command, else the reason (for the log)."""
        lo, hi, unit, lo_open, hi_open = self._bounds(joint, target)
        if not math.isfinite(value):
            return "not finite"
        inside = (lo < value if lo_open else lo <= value) and (
            value < hi if hi_open else value <= hi
        )
        if inside:
            return None
        return f"valid range {_fmt_range(lo, hi, unit, lo_open, hi_open)}"

    # ------------------------------------------------------------ commands

    @property
    def log(self):
        """callable(str) | None: where rejections are logged."""
        return self.rejections.log

    @log.setter
    def log(self, log):
        self.rejections.log = log

    @property
    def rejected(self):
        """Commands rejected so far."""
        return self.rejections.rejected

    def reject(self, what, value, why):
        """Count a rejected command and log it through `log`, at most once per WARN_PERIOD_S
        for each topic and reason (asr.ros.rejections: a NaN after a 1e300 on one topic gets
        its own line; a flood of one mistake one line a period, with the count held back)."""
        self.rejections.reject(what, value, why)

    def set_command(self, joint, target, value, what=None):
        """Hold one joint command (target: TARGETS); False (and a logged rejection) when `value`
        is not a finite number within command_range(joint, target)."""
        what = what or f"{self.names[joint]}/{target}"
        try:
            value = float(value)
        except (TypeError, ValueError):
            self.reject(what, value, "not a number")
            return False
        why = self.check_command(joint, target, value)
        if why is not None:
            self.reject(what, value, why)
            return False
        spec = self.specs[joint]
        with self._lock:
            if target == "tau_ext":
                self.tau_ext[joint] = value
            elif target == "tau_ff":
                self.tau_ff[joint] = value
            elif target == "preset" and spec.preset.kind == "param":
                self._params[(joint, spec.preset.param)] = value
            else:
                self.refs[joint, 0 if target == "ref1" else 1] = value
        return True

    def check_references(self, refs):
        """None when refs (J, 2) are all valid references, else the reason naming the joint."""
        for j in range(self.sim.n_joints):
            for k, target in enumerate(("ref1", "ref2")):
                value = float(refs[j, k])
                why = self.check_command(j, target, value)
                if why is not None:
                    return f"{self.names[j]} reference_{k + 1} = {value!r}: {why}"
        return None

    def _as_refs(self, values, shape, what):
        """values as a float array of `shape`, or None (rejection logged)."""
        try:
            v = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            self.reject(what, values, "not numbers")
            return None
        if v.size != math.prod(shape):
            self.reject(
                what,
                v.ravel(),
                f"expected {math.prod(shape)} values (joints: {', '.join(self.names)}), "
                f"got {v.size}",
            )
            return None
        return v.reshape(shape)

    def set_references(self, k, values, what):
        """Hold reference k (0 or 1) of every joint from J values (the Plugin Manager's
        reference_1 / reference_2); False (and a logged rejection) for a wrong length or a
        value outside its joint's range (then none is held)."""
        v = self._as_refs(values, (self.sim.n_joints,), what)
        if v is None:
            return False
        with self._lock:
            refs = self.refs.copy()
            refs[:, k] = v
            why = self.check_references(refs)
            if why is None:
                self.refs = refs
        if why is not None:
            self.reject(what, v, why)
            return False
        return True

    def hold_references(self, refs, what):
        """Hold all references (J, 2) (units per mode; row-major lists of 2 J values accepted);
        False (and a logged rejection) when the size is wrong or any value is out of range."""
        v = self._as_refs(refs, (self.sim.n_joints, 2), what)
        if v is None:
            return False
        why = self.check_references(v)
        if why is not None:
            self.reject(what, v.ravel(), why)
            return False
        with self._lock:
            self.refs = v.copy()
        return True

    def held(self):
        """(refs (J, 2), tau_ext (J,), tau_ff (J,)): copies of the held commands."""
        with self._lock:
            return self.refs.copy(), self.tau_ext.copy(), self.tau_ff.copy()

    # ------------------------------------------------------------ stepping

    def step_period(self):
        """One period: one Sim.rollout of period_steps steps with the held commands; returns
        {field: (J,)} at its end (also what state() returns until the next). Raises
        asr.SimulationError when the simulation fails."""
        with self.step_lock:
            with self._lock:
                refs, ext, ff = self.refs.copy(), self.tau_ext.copy(), self.tau_ff.copy()
                params, self._params = self._params, {}
            for (j, name), value in params.items():
                self.sim.batch.set_param(j, name, value)
            res = self.sim.rollout(
                self.period_steps,
                refs[None],
                tau_ext=ext[None] if np.any(ext) else None,
                tau_ff=ff[None] if np.any(ff) else None,
                record=RECORD,
            )
            self.periods += 1
            self.last = {f: v[0, -1] for f, v in res.items()}
            return self.last


__all__ = [
    "NodeCore",
    "joint_commands",
    "joint_states",
    "check_rate",
    "check_namespace",
    "RealTimeSchedule",
    "check_engine",
    "MODE_COMMANDS",
    "KAMEDULA_COMMANDS",
    "KAMEDULA_STATES",
    "RECORD",
    "TARGETS",
    "ENGINES",
    "ANGLE_BOUND",
    "MOTOR_ANGLE_BOUND",
    "TORQUE_BOUND",
    "WARN_PERIOD_S",
    "loggable",
]
