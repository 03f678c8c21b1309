"""The live ROS 1 node: one asr.Sim (N = 1) behind the topics of the compliant-actuator toolbox
[Mengacci2021] (CompliantActuatorPlugin per joint, Plugin Manager per robot) and a small
[Kamedula2016] interface for single-motor SEA joints, so controllers written for Gazebo and the
plugins run unchanged against asr. `asr ros` wraps `run_node`; docs/ros.md has the topic table.
The middleware-neutral part (the Sim, held and range-checked commands, stepping, reset, integer
ns stamps) is asr.ros.node_core.NodeCore, shared with the ROS 2 node.

Types and names are the toolbox's: per joint `link_state` compliant_plugin/state_info (float32
fields, the same MD5 sum), `motor_1_state` / `motor_2_state` sensor_msgs/JointState, scalar
states and commands std_msgs/Float64; per robot the Plugin Manager's `reference_1` /
`reference_2` (std_msgs/Float64MultiArray) and `robot_state`, `motor_1_state`, `motor_2_state`
(sensor_msgs/JointState, every joint in order).

Stepping: the Sim advances in chunks of one publishing period (`period_steps` MJCF steps, one
Sim.rollout per chunk with the commands held over it), then the node publishes the state at the
end of the chunk, stamped with the simulated time in integer ns. Real time: chunk k starts at
wall time t0 + k * period (asr.ros.node_core.RealTimeSchedule: a node that falls behind restarts
its schedule instead of running a burst of catch-up chunks).
Lockstep: the node steps one chunk per message on `<ns>/step` (see LOCKSTEP below) and never on
its own. Services: `<ns>/reset` (std_srvs/Empty, as Gazebo's reset_simulation), `<ns>/pause`
(std_srvs/SetBool); topic `<ns>/reset_state` (sensor_msgs/JointState: reset at rest to its
positions).

Commands arrive in rospy's callback threads and are held (last valid value) until the next chunk
starts: a chunk always sees one consistent set. Bad commands (NaN / inf, arrays of the wrong
length, a value outside NodeCore.command_range) are rejected with a rate-limited warning and the
last valid command stays.
"""

import queue
import time

from asr.core.errors import SimulationError
from asr.ros.master import wait_for_master
from asr.ros.messages import bounded_class
from asr.ros.node_core import (
    DEFAULT_NAMESPACE,
    DEFAULT_RATE_HZ,
    DEFAULT_ROBOT,
    KAMEDULA_COMMANDS,
    KAMEDULA_STATES,
    MODE_COMMANDS,
    NodeCore,
    RealTimeSchedule,
    joint_commands,
    joint_states,
)
from asr.ros.rejections import MessageSize, max_bytes

NODE_NAME = "asr"
# Publisher queues (per subscriber connection, messages): rospy drops the oldest message when a
# connection's queue is full, and `rosbag record` at 1 kHz lost 171 of 6522 messages with 10;
# 1000 messages hold one second at 1 kHz, so a recorder that keeps up on average loses none
# (the toolbox's plugins use 500). Command subscribers keep COMMAND_QUEUE: a held command needs
# only the newest value; lockstep steps keep 1000, each is one period. Subscribers read
# BUFF_SIZE bytes at a time, and the array topics' messages are bounded in length
# (asr.ros.messages.bounded_class): a longer one is rejected unread, so a flood of large arrays
# does not grow the node.
STATE_QUEUE = 1000
COMMAND_QUEUE = 4
STEP_QUEUE = 1000
BUFF_SIZE = 65536  # bytes (rospy's default, stated)
ROBOT_STATES = ("robot_state", "motor_1_state", "motor_2_state", "joint_states")
LOCKSTEP = (
    "<ns>/step (std_msgs/Float64MultiArray): each message advances exactly one period. "
    "Empty data: with the commands held now; 2 J values: the references (J, 2) row-major "
    "(ref1, ref2 of joint 0, then joint 1, ...), which become the held references. Any "
    "other length, or a value out of range, is rejected and does not step."
)


def master_uri():
    """ROS_MASTER_URI as rospy resolves it (the environment, else http://localhost:11311)."""
    import os

    return os.environ.get("ROS_MASTER_URI") or "http://localhost:11311"


class RosNode(NodeCore):
    """An asr.Sim (one instance) as a ROS 1 node. Construction loads the robot and checks the
    arguments (no ROS needed); `start()` connects to the master; `spin()` runs.

    robot, variant, rate, namespace, engine: as NodeCore. lockstep: step only on `<ns>/step`
    messages (LOCKSTEP). clock_topic: where the simulated time is published as
    rosgraph_msgs/Clock after every period ('' for none). master_timeout: s to wait for the ROS
    master at start, in (0, 3600).
    """

    def __init__(
        self,
        robot=DEFAULT_ROBOT,
        variant=None,
        *,
        rate=DEFAULT_RATE_HZ,
        namespace=DEFAULT_NAMESPACE,
        engine="mujoco",
        lockstep=False,
        clock_topic="/clock",
        master_timeout=5.0,
    ):
        if not isinstance(clock_topic, str):
            raise TypeError(f"clock_topic: got {type(clock_topic).__name__}, expected a string")
        if not (isinstance(master_timeout, (int, float)) and 0 < master_timeout < 3600):
            raise ValueError(f"master_timeout: got {master_timeout!r} s, valid range (0, 3600)")
        super().__init__(robot, variant, rate=rate, namespace=namespace, engine=engine)
        self.lockstep = bool(lockstep)
        self.clock_topic = clock_topic
        self.master_timeout = float(master_timeout)
        self._steps = queue.Queue(maxsize=STEP_QUEUE)  # lockstep: (J, 2) refs or None each
        self._pending = []  # lockstep: the step taken off the queue, not yet run (0 or 1)
        self.schedule = RealTimeSchedule(self.period)  # real time
        self._rospy = None

    def topic(self, *parts):
        """Absolute topic name under the node's namespace."""
        return self.namespace + "".join("/" + p for p in parts)

    # ------------------------------------------------------------ ROS

    def start(self):
        """Connect to the ROS master (RuntimeError naming ROS_MASTER_URI when none answers within
        master_timeout s), then advertise, subscribe and offer the services."""
        from asr.ros.environment import ros1

        uri = master_uri()
        if not wait_for_master(uri, self.master_timeout):
            raise RuntimeError(
                f"no ROS master answers at ROS_MASTER_URI={uri} (waited "
                f"{self.master_timeout:g} s): start roscore, or set "
                "ROS_MASTER_URI to a running master"
            )
        rospy = self._rospy = ros1("rospy")
        self._msgs()
        rospy.init_node(NODE_NAME + self.namespace.replace("/", "_"), disable_signals=False)
        self.log = rospy.logwarn
        self._advertise()
        self._subscribe()
        srv = self._srv = ros1("std_srvs.srv")
        self._services = [
            rospy.Service(self.topic("reset"), srv.Empty, self._on_reset),
            rospy.Service(self.topic("pause"), srv.SetBool, self._on_pause),
        ]

    def _msgs(self):
        """The message classes (imported once ROS 1 is known to be there)."""
        from asr.ros.environment import ros1
        from asr.ros.messages import state_info_class

        std, sensor = ros1("std_msgs.msg"), ros1("sensor_msgs.msg")
        self._Float64, self._Array = std.Float64, std.Float64MultiArray
        self._JointState, self._StateInfo = sensor.JointState, state_info_class()
        self._Clock = ros1("rosgraph_msgs.msg").Clock if self.clock_topic else None

    def _advertise(self):
        rospy = self._rospy

        def pub(topic, cls):
            return rospy.Publisher(topic, cls, queue_size=STATE_QUEUE, latch=True)

        kinds = {"link": self._StateInfo, "motor1": self._JointState, "motor2": self._JointState}
        self._pubs = [
            {t: pub(self.topic(jn, t), kinds.get(k, self._Float64)) for t, k in states.items()}
            for jn, states in zip(self.names, self.states)
        ]
        self._robot_pubs = {t: pub(self.topic(t), self._JointState) for t in ROBOT_STATES}
        self._clock = None
        if self._Clock is not None:
            self._clock = rospy.Publisher(self.clock_topic, self._Clock, queue_size=STATE_QUEUE)

    def _subscribe(self):
        rospy, nj = self._rospy, len(self.names)

        def sub(topic, cls, cb, size=COMMAND_QUEUE):
            s = rospy.Subscriber(topic, cls, cb, queue_size=size, buff_size=BUFF_SIZE)
            self._subs.append(s)

        def bounded(topic, cls, values, cb, size=COMMAND_QUEUE):
            """`cb` on messages of at most max_bytes(values, J); longer ones rejected unread."""
            limit = max_bytes(values, nj)

            def checked(msg):
                if msg.oversize:
                    self.reject(topic, MessageSize(msg.oversize), f"a valid one takes <= {limit}")
                else:
                    cb(msg)

            sub(topic, bounded_class(cls, limit), checked, size)

        self._subs = []
        for j, jn in enumerate(self.names):
            for t, target in self.commands[j].items():
                name = self.topic(jn, t)
                sub(name, self._Float64, lambda m, j=j, g=target, n=name: self._cmd(j, g, m, n))
        for k in (0, 1):
            name = self.topic(f"reference_{k + 1}")
            bounded(name, self._Array, nj, lambda m, k=k, n=name: self.set_references(k, m.data, n))
        bounded(self.topic("reset_state"), self._JointState, 3 * nj, self._on_reset_state)
        if self.lockstep:
            bounded(self.topic("step"), self._Array, 2 * nj, self._on_step, STEP_QUEUE)

    def _cmd(self, joint, target, msg, name):
        self.set_command(joint, target, msg.data, name)

    def _on_step(self, msg):
        """Queue one period (validated here, so a bad message never steps)."""
        what, refs = self.topic("step"), None
        if msg.data:
            refs = self._as_refs(msg.data, (len(self.names), 2), what)
            if refs is None:
                return
            why = self.check_references(refs)
            if why is not None:
                self.reject(what, msg.data, why)
                return
        try:
            self._steps.put_nowait(refs)
        except queue.Full:
            self.reject(what, msg.data, f"more than {STEP_QUEUE} steps queued")

    def _on_reset(self, _req):
        """std_srvs/Empty: back to the initial state; the reset state is published."""
        self._reset_and_publish()
        return self._srv.EmptyResponse()

    def _on_pause(self, req):
        # under the stepping lock: a period already running ends first and none starts after
        # (spin checks paused under it), so the time answered is the time that holds
        with self.step_lock:
            self.paused = bool(req.data)
            stamp = self.stamp_ns
        word = "paused" if self.paused else "running"
        return self._srv.SetBoolResponse(success=True, message=f"{word} at t={stamp}")

    def _on_reset_state(self, msg):
        """sensor_msgs/JointState: reset at rest to its positions (J, rad; velocities zeros or
        none), range-checked (a bad one is rejected and logged, nothing changes)."""
        what = self.topic("reset_state")
        try:
            self._reset_and_publish(list(msg.position), list(msg.velocity) or None)
        except ValueError as exc:
            self.reject(what, msg.position, str(exc))

    def _reset_and_publish(self, q0=None, qd0=None):
        with self.step_lock:
            self.reset(q0, qd0)
            with self._steps.mutex:  # steps sent before the reset belong to the old run
                self._steps.queue.clear()
            self._pending.clear()
            self.schedule.restart()
            self.publish()

    def _stamp(self):
        ns = self.stamp_ns
        return self._rospy.Time(ns // 1_000_000_000, ns % 1_000_000_000)

    def _joint_state(self, stamp, q, qd, tau, idx):
        """sensor_msgs/JointState of joints `idx` from (J,) arrays."""
        m = self._JointState(
            name=[self.names[j] for j in idx],
            position=[float(q[j]) for j in idx],
            velocity=[float(qd[j]) for j in idx],
            effort=[float(tau[j]) for j in idx],
        )
        m.header.stamp = stamp
        return m

    def publish(self):
        """Publish the state at the end of the last period (the reset state before any)."""
        with self.step_lock:
            s, stamp = self.state(), self._stamp()
            for j, pubs in enumerate(self._pubs):
                for t, kind in self.states[j].items():
                    pubs[t].publish(self._joint_message(s, j, kind, stamp))
            every = range(len(self.names))
            link = self._joint_state(stamp, s["q"], s["qd"], s["tau_link"], every)
            self._robot_pubs["robot_state"].publish(link)
            self._robot_pubs["joint_states"].publish(link)
            for m in ("1", "2"):  # the Plugin Manager's: every joint, in order
                motors = self._joint_state(stamp, s[f"th{m}"], s[f"th{m}d"], s[f"tau_m{m}"], every)
                self._robot_pubs[f"motor_{m}_state"].publish(motors)
            if self._clock is not None:
                self._clock.publish(self._Clock(clock=stamp))

    def _joint_message(self, s, j, kind, stamp):
        """One joint's state topic message of `kind` (joint_states' kinds)."""
        if kind == "link":
            return self._StateInfo(
                q=s["q"][j],
                dq=s["qd"][j],
                ref_1=s["ref1"][j],
                ref_2=s["ref2"][j],
                tau=s["tau_link"][j],
                stiff=s["stiffness"][j],
            )
        if kind in ("motor1", "motor2"):
            m = kind[-1]
            return self._joint_state(stamp, s[f"th{m}"], s[f"th{m}d"], s[f"tau_m{m}"], [j])
        return self._Float64(float(s[kind][j]))

    def _next_period(self):
        """Block until the next period is due (real time) or a step message arrives (lockstep);
        True when one is due, False to check for shutdown first."""
        if self.lockstep:
            if not self._pending:  # a step taken off the queue waits here while paused
                try:
                    self._pending.append(self._steps.get(timeout=0.1))
                except queue.Empty:
                    return False
            if self.paused:
                time.sleep(0.01)
                return False
            return True
        if self.paused:  # no stepping, no time; real time resumes one period after unpausing
            self.schedule.restart()
            time.sleep(0.01)
            return False
        return self.schedule.due()

    def _take_step(self):
        """(step_lock held, not paused) Lockstep: the pending step's references held; False
        when it is gone (a reset) or its references are refused. Real time: True."""
        if not self.lockstep:
            return True
        if not self._pending:
            return False
        refs = self._pending.pop()
        return refs is None or self.hold_references(refs, self.topic("step"))

    def spin(self, duration=None):
        """Run until ROS shuts down (Ctrl-C, SIGTERM) or `duration` wall seconds pass; returns
        0, or 1 when the simulation failed (logged)."""
        rospy = self._rospy
        end = None if duration is None else time.monotonic() + duration
        self.publish()
        self.schedule.restart()
        try:
            while not rospy.is_shutdown() and (end is None or time.monotonic() < end):
                if not self._next_period():
                    continue
                with self.step_lock:
                    if self.paused or not self._take_step():  # paused meanwhile: wait
                        continue
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
    namespace=DEFAULT_NAMESPACE,
    engine="mujoco",
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
        engine=engine,
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
    "STATE_QUEUE",
]
