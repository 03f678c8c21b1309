"""The live ROS 1 node: one asr.Sim (N = 1) behind the topics of the compliant-actuator toolbox
[Mengacci2021] (CompliantActuatorPlugin per joint, Plugin Manager per robot) and a small
[Kamedula2016] interface for single-motor SEA joints, so controllers written for Gazebo and the
plugins run unchanged against asr. `asr ros` wraps `run_node`; docs/ros.md has the topic table.

Stepping: the Sim advances in chunks of one publishing period (`period_steps` MJCF steps, one
Sim.rollout per chunk with the commands held over it), then the node publishes the state at the
end of the chunk. Real time: chunk k starts at wall time t0 + k * period (time.monotonic); a node
more than MAX_LAG_S behind that schedule restarts it from now (counted in `overruns`), so
simulated time follows wall time while the machine keeps up and falls behind steadily, without
bursts of catch-up chunks, when it does not. Lockstep: the node steps one chunk per message on
`<ns>/step` (see LOCKSTEP below) and never on its own.

Commands arrive in rospy's callback threads and are held (last valid value) until the next chunk
starts: a chunk always sees one consistent set. Bad commands (NaN / inf, arrays of the wrong
length, a reference outside its model's valid range) are rejected with a rate-limited warning
and the last valid command stays.
"""

import math
import queue
import threading
import time

import numpy as np

from asr.errors import SimulationError
from asr.ros.master import wait_for_master

DEFAULT_ROBOT = "qbmove_arm_2dof"
DEFAULT_RATE_HZ = 100.0
MAX_LAG_S = 0.25  # real time: a node further behind its schedule restarts the schedule
WARN_PERIOD_S = 1.0  # a rejection is logged at most once a second per topic
NODE_NAME = "asr"

# Per-joint command topics <ns>/<joint>/<topic> (std_msgs/Float64) -> what they set, by mode
# (docs/models.md section 4): "ref1" / "ref2" the joint's two references, "tau_ext" the external
# link torque (N m), "tau_ff" the feed-forward motor torque of [Kamedula2016] eq. 4 (N m),
# "preset" the stiffness preset (a reference or a spring parameter, per model).
MODE_COMMANDS = {
    0: {"torque_command": "ref1"},
    1: {"link_command": "ref1"},
    2: {"reference_1": "ref1", "reference_2": "ref2"},
    3: {"equilibrium_position": "ref1", "stiffness_preset": "preset"},
    4: {
        "motor_1_command": "ref1",
        "motor_2_command": "ref2",
        "torque_m1_command": "ref1",
        "torque_m2_command": "ref2",
    },
    5: {"reference_1": "ref1", "reference_2": "ref2"},
    6: {"equilibrium_position": "ref1", "stiffness_preset": "preset"},
}
# [Kamedula2016] for a single-motor joint in mode 5 / 6: the link position reference (with a
# feed-forward torque asr commands the motor to q_d + tau_ff / K, eq. 4) and the feed-forward
# torque g(q_d); the spring, link and motor torques are published (KAMEDULA_STATES).
KAMEDULA_COMMANDS = {"link_command": "ref1", "feedforward_torque": "tau_ff"}
KAMEDULA_STATES = {"spring_torque": "tau_el1", "link_torque": "tau_link", "motor_torque": "tau_m1"}
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
LOCKSTEP = (
    "<ns>/step (std_msgs/Float64MultiArray): each message advances exactly one period. "
    "Empty data: with the commands held now; 2 J values: the references (J, 2) row-major "
    "(ref1, ref2 of joint 0, then joint 1, ...), which become the held references. Any "
    "other length is rejected and does not step."
)


def joint_commands(spec, mode):
    """{topic: target} of the command topics a joint of model `spec` (an asr ModelSpec) in
    `mode` offers, without external_torque (every joint has it: target "tau_ext")."""
    cmds = dict(MODE_COMMANDS[mode])
    two_refs = spec.nmotor == 2 or spec.kinematic_th2
    if mode in (2, 4, 5) and not two_refs:
        cmds = {t: v for t, v in cmds.items() if v != "ref2"}
    if mode in (3, 6) and spec.preset.kind == "none":
        cmds.pop("stiffness_preset")
    if mode in (5, 6) and spec.nmotor == 1 and not spec.kinematic_th2:
        cmds.update(KAMEDULA_COMMANDS)
    cmds["external_torque"] = "tau_ext"
    return cmds


def joint_states(spec, mode):
    """{topic: kind} of the state topics a joint publishes: "link", "motor1", "motor2"
    (asr_msgs/state_info) and Float64 topics named by their state field."""
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


def master_uri():
    """ROS_MASTER_URI as rospy resolves it (the environment, else http://localhost:11311)."""
    import os

    return os.environ.get("ROS_MASTER_URI") or "http://localhost:11311"


def _namespace(ns):
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


class RosNode:
    """An asr.Sim (one instance) as a ROS 1 node. Construction loads the robot and checks the
    arguments (no ROS needed); `start()` connects to the master; `spin()` runs.

    robot, variant: as asr.load_robot. rate: publishing rate, Hz, in (0, 1 / dt]; one period is
    `period_steps` = round(1 / (rate dt)) MJCF steps (so the real period is period_steps * dt).
    namespace: topic prefix ('' or e.g. 'arm_a'); several nodes run side by side under different
    namespaces. lockstep: step only on `<ns>/step` messages (LOCKSTEP). clock_topic: where the
    simulated time is published as rosgraph_msgs/Clock after every period ('' for none).
    master_timeout: s to wait for the ROS master at start.
    """

    def __init__(
        self,
        robot=DEFAULT_ROBOT,
        variant=None,
        *,
        rate=DEFAULT_RATE_HZ,
        namespace="",
        lockstep=False,
        clock_topic="/clock",
        master_timeout=5.0,
    ):
        from asr.sim import Sim

        self.sim = Sim(robot, 1, variant=variant)
        self.robot = self.sim.robot
        dt = self.sim.dt
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise TypeError(f"rate: got {type(rate).__name__}, expected a number of Hz")
        if not (math.isfinite(rate) and 0 < rate <= 1.0 / dt * (1 + 1e-9)):
            raise ValueError(
                f"rate: got {rate!r} Hz, valid range (0, {1.0 / dt:g}] (at most one "
                f"period per MJCF step of {dt:g} s)"
            )
        self.period_steps = max(1, int(round(1.0 / (rate * dt))))
        self.period = self.period_steps * dt
        self.namespace = _namespace(namespace)
        self.lockstep = bool(lockstep)
        if not isinstance(clock_topic, str):
            raise TypeError(f"clock_topic: got {type(clock_topic).__name__}, expected a string")
        self.clock_topic = clock_topic
        if not (isinstance(master_timeout, (int, float)) and 0 < master_timeout < 3600):
            raise ValueError(f"master_timeout: got {master_timeout!r} s, valid range (0, 3600)")
        self.master_timeout = float(master_timeout)
        batch = self.sim.batch
        self.names = self.robot.joint_names
        self.modes = [int(m) for m in batch.modes]
        self.specs = batch.specs
        self.commands = [joint_commands(s, m) for s, m in zip(self.specs, self.modes)]
        self.states = [joint_states(s, m) for s, m in zip(self.specs, self.modes)]
        nj = self.sim.n_joints
        self._lock = threading.Lock()
        self.refs = self._initial_refs()  # (J, 2) held references, units per mode
        self.tau_ext = np.zeros(nj)  # (J,) held external link torques, N m
        self.tau_ff = np.zeros(nj)  # (J,) held feed-forward torques, N m
        self._params = {}  # {(joint, param): value} due next chunk
        self._steps = queue.Queue()
        self.rejected = 0  # commands rejected so far
        self._warned = {}  # {topic: time.monotonic() last logged}
        self.overruns = 0  # real-time schedule restarts
        self.periods = 0  # periods stepped
        self.last = None  # {field: (J,)} state after the last chunk
        self._rospy = None

    # ------------------------------------------------------------ commands

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

    def topic(self, *parts):
        """Absolute topic name under the node's namespace."""
        return self.namespace + "".join("/" + p for p in parts)

    def _reject(self, what, value, why):
        """Count a rejected command and log it, at most once per WARN_PERIOD_S for each topic
        (one shared throttle would hide a NaN on one topic behind a wrong length on another).
        `what` names one of the node's own topics, so the dict stays bounded."""
        self.rejected += 1
        if self._rospy is None:
            return
        now = time.monotonic()
        if now - self._warned.get(what, -math.inf) >= WARN_PERIOD_S:
            self._warned[what] = now
            self._rospy.logwarn(
                f"asr ros: rejected {what} = {value!r}: {why}; the last valid command is kept"
            )

    def set_command(self, joint, target, value, what=None):
        """Hold a joint command (target as in MODE_COMMANDS); False (and a logged rejection)
        when `value` is not finite or out of the model's range."""
        what = what or f"{self.names[joint]}/{target}"
        try:
            value = float(value)
        except (TypeError, ValueError):
            self._reject(what, value, "not a number")
            return False
        if not math.isfinite(value):
            self._reject(what, value, "not finite")
            return False
        spec = self.specs[joint]
        with self._lock:
            if target == "tau_ext":
                self.tau_ext[joint] = value
                return True
            if target == "tau_ff":
                self.tau_ff[joint] = value
                return True
            if target == "preset" and spec.preset.kind == "param":
                pr = spec.preset
                if not pr.lo <= value <= pr.hi or value <= 0:
                    self._reject(
                        what,
                        value,
                        f"valid range (0, {pr.hi:g}] {pr.unit} (the spring parameter {pr.param})",
                    )
                    return False
                self._params[(joint, pr.param)] = value
                return True
            k = 0 if target == "ref1" else 1
            refs = self.refs.copy()
            refs[joint, k] = value
            try:
                self.sim.batch.check_refs(refs[None], "refs")
            except ValueError as exc:
                self._reject(what, value, str(exc))
                return False
            self.refs = refs
            return True

    def set_references(self, k, values, what):
        """Hold reference k (0 or 1) of every joint from a sequence of J values; False (and a
        logged rejection) for a wrong length or a non-finite / out-of-range value."""
        v = np.asarray(values, dtype=float).ravel()
        nj = self.sim.n_joints
        if v.shape != (nj,):
            self._reject(
                what,
                list(v),
                f"expected {nj} values (one per joint: {', '.join(self.names)}), got {v.size}",
            )
            return False
        if not np.all(np.isfinite(v)):
            self._reject(what, list(v), "not finite")
            return False
        with self._lock:
            refs = self.refs.copy()
            refs[:, k] = v
            try:
                self.sim.batch.check_refs(refs[None], "refs")
            except ValueError as exc:
                self._reject(what, list(v), str(exc))
                return False
            self.refs = refs
        return True

    # ------------------------------------------------------------ stepping

    def step_period(self):
        """One period: one Sim.rollout of period_steps steps with the held commands; returns
        {field: (J,)} at its end (also in `last`)."""
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

    # ------------------------------------------------------------ ROS

    def start(self):
        """Connect to the ROS master (RuntimeError naming ROS_MASTER_URI when none answers within
        master_timeout s), then advertise and subscribe."""
        from asr.ros.environment import ros1
        from asr.ros.messages import state_info_class

        uri = master_uri()
        if not wait_for_master(uri, self.master_timeout):
            raise RuntimeError(
                f"no ROS master answers at ROS_MASTER_URI={uri} (waited "
                f"{self.master_timeout:g} s): start roscore, or set "
                "ROS_MASTER_URI to a running master"
            )
        rospy = self._rospy = ros1("rospy")
        std = ros1("std_msgs.msg")
        sensor = ros1("sensor_msgs.msg")
        self._Float64, self._JointState = std.Float64, sensor.JointState
        self._StateInfo = state_info_class()
        name = NODE_NAME + self.namespace.replace("/", "_")
        rospy.init_node(name, anonymous=False, disable_signals=False)
        pub = lambda topic, cls: rospy.Publisher(topic, cls, queue_size=10, latch=True)  # noqa
        self._pubs = []
        for j, jn in enumerate(self.names):
            self._pubs.append(
                {
                    t: pub(
                        self.topic(jn, t),
                        self._StateInfo if k in ("link", "motor1", "motor2") else std.Float64,
                    )
                    for t, k in self.states[j].items()
                }
            )
        self._robot_pubs = {
            t: pub(self.topic(t), sensor.JointState)
            for t in ("robot_state", "motor_1_state", "motor_2_state", "joint_states")
        }
        self._clock = None
        if self.clock_topic:
            clock = ros1("rosgraph_msgs.msg").Clock
            self._clock = rospy.Publisher(self.clock_topic, clock, queue_size=10)
            self._Clock = clock
        self._subs = []
        for j, jn in enumerate(self.names):
            for t, target in self.commands[j].items():
                cb = lambda msg, j=j, target=target, t=t: self.set_command(
                    j, target, msg.data, f"{self.topic(self.names[j], t)}"
                )
                self._subs.append(
                    rospy.Subscriber(self.topic(jn, t), std.Float64, cb, queue_size=10)
                )
        for k in (0, 1):
            t = self.topic(self.robot.name, f"reference_{k + 1}")
            self._subs.append(
                rospy.Subscriber(
                    t,
                    std.Float64MultiArray,
                    lambda msg, k=k, t=t: self.set_references(k, msg.data, t),
                    queue_size=10,
                )
            )
        if self.lockstep:
            self._subs.append(
                rospy.Subscriber(
                    self.topic("step"), std.Float64MultiArray, self._on_step, queue_size=1000
                )
            )

    def _on_step(self, msg):
        nj = self.sim.n_joints
        data = np.asarray(msg.data, dtype=float)
        if data.size not in (0, 2 * nj):
            self._reject(
                self.topic("step"),
                list(data),
                f"expected 0 or {2 * nj} values (the references (J, 2) row-major)",
            )
            return
        if data.size and not np.all(np.isfinite(data)):
            self._reject(self.topic("step"), list(data), "not finite")
            return
        if data.size:
            refs = data.reshape(nj, 2)
            try:
                self.sim.batch.check_refs(refs[None], "refs")
            except ValueError as exc:
                self._reject(self.topic("step"), list(data), str(exc))
                return
        self._steps.put(data.reshape(nj, 2) if data.size else None)

    def publish(self):
        """Publish the state at the end of the last chunk (the reset state before any)."""
        rospy, s = self._rospy, self.last
        if s is None:
            s = {f: self.sim.batch.field(f)[0].copy() for f in RECORD}
            s["q"], s["qd"] = self.sim.q[0], self.sim.qd[0]
        stamp = rospy.Time.from_sec(self.sim.time)
        info = self._StateInfo
        for j, pubs in enumerate(self._pubs):
            common = dict(ref_1=s["ref1"][j], ref_2=s["ref2"][j], stiff=s["stiffness"][j])
            for t, kind in self.states[j].items():
                if kind == "link":
                    msg = info(q=s["q"][j], dq=s["qd"][j], tau=s["tau_link"][j], **common)
                elif kind in ("motor1", "motor2"):
                    m = kind[-1]
                    msg = info(
                        q=s[f"th{m}"][j], dq=s[f"th{m}d"][j], tau=s[f"tau_m{m}"][j], **common
                    )
                else:
                    msg = self._Float64(float(s[kind][j]))
                pubs[t].publish(msg)
        names = list(self.names)

        def js(q, qd, tau, idx=None):
            idx = range(len(names)) if idx is None else idx
            m = self._JointState(
                name=[names[j] for j in idx],
                position=[float(q[j]) for j in idx],
                velocity=[float(qd[j]) for j in idx],
                effort=[float(tau[j]) for j in idx],
            )
            m.header.stamp = stamp
            return m

        link = js(s["q"], s["qd"], s["tau_link"])
        self._robot_pubs["robot_state"].publish(link)
        self._robot_pubs["joint_states"].publish(link)
        for m in ("1", "2"):
            idx = [j for j, sp in enumerate(self.specs) if sp.nmotor >= int(m)]
            self._robot_pubs[f"motor_{m}_state"].publish(
                js(s[f"th{m}"], s[f"th{m}d"], s[f"tau_m{m}"], idx)
            )
        if self._clock is not None:
            self._clock.publish(self._Clock(clock=stamp))

    def spin(self, duration=None):
        """Run until ROS shuts down (Ctrl-C, SIGTERM) or `duration` wall seconds pass; returns
        0, or 1 when the simulation failed (logged)."""
        rospy = self._rospy
        end = None if duration is None else time.monotonic() + duration
        self.publish()
        next_t = time.monotonic() + self.period
        try:
            while not rospy.is_shutdown() and (end is None or time.monotonic() < end):
                if self.lockstep:
                    try:
                        refs = self._steps.get(timeout=0.1)
                    except queue.Empty:
                        continue
                    if refs is not None:
                        with self._lock:
                            self.refs = refs
                else:
                    now = time.monotonic()
                    if now < next_t:
                        time.sleep(min(next_t - now, 0.1))
                        continue
                    next_t += self.period
                    if now - next_t > MAX_LAG_S:
                        self.overruns += 1
                        next_t = now + self.period
                self.step_period()
                self.publish()
        except SimulationError as exc:
            rospy.logerr(f"asr ros: the simulation stopped: {exc}")
            return 1
        return 0

    def shutdown(self, reason="asr ros: done"):
        if self._rospy is not None:
            self._rospy.signal_shutdown(reason)


def run_node(
    robot=DEFAULT_ROBOT,
    variant=None,
    *,
    rate=DEFAULT_RATE_HZ,
    namespace="",
    lockstep=False,
    clock_topic="/clock",
    master_timeout=5.0,
    duration=None,
):
    """Build a RosNode, connect it and spin it (see RosNode); returns the exit code (0, or 1 when
    the simulation failed). RuntimeError when no ROS master answers, ImportError without ROS 1,
    ValueError / TypeError for bad arguments."""
    node = RosNode(
        robot,
        variant,
        rate=rate,
        namespace=namespace,
        lockstep=lockstep,
        clock_topic=clock_topic,
        master_timeout=master_timeout,
    )
    node.start()
    try:
        return node.spin(duration)
    finally:
        node.shutdown()


__all__ = [
    "RosNode",
    "run_node",
    "joint_commands",
    "joint_states",
    "MODE_COMMANDS",
    "KAMEDULA_COMMANDS",
    "KAMEDULA_STATES",
    "LOCKSTEP",
]
