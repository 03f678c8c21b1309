"""The live ROS 2 node: one asr.Sim (N = 1) behind the compliant-actuator toolbox's topics
[Mengacci2021], as asr.ros.node offers them over ROS 1, on rclpy (Jazzy). `asr ros2` wraps
`run_ros2_node`; the topic table is in docs/ros.md. rclpy is imported here only, when a node is
built (`import asr` never needs ROS 2).

Threads: the main thread steps (one period = one NodeCore.step_period) and publishes; a
SingleThreadedExecutor serves the subscriptions and services in a background thread, so commands
keep arriving while a period is computed. One executor thread, not rclpy's MultiThreadedExecutor:
at 1 kHz the stepping thread holds the GIL most of the time, and the multi-threaded executor's
per-callback overhead then delayed commands by 40-70 ms (median; p95 0.3-0.5 s), against 4 ms
(p95 9 ms) with one thread (benchmarks/bench_ros.py). A step_period call blocks that thread for
at most one period; commands wait behind it, in order. Commands are held by NodeCore
(range-checked; a rejected one is logged once a second per topic and reason, and changes
nothing) and a period always sees one consistent set.

Bounded memory: a subscription keeps few messages (COMMAND_DEPTH; `step` STEP_DEPTH), and the
array topics are taken serialised (rclpy's raw subscriptions): a message longer than its topic
can validly be (`max_bytes`) is rejected by its length, never deserialised nor kept, so a
flood of large arrays costs at most depth x message size in the middleware's queue.

Real time: period k starts at wall time t0 + k * period (asr.ros.node_core.RealTimeSchedule, as
in the ROS 1 node). Lockstep: one period per `step` message or `step_period` call, never on its
own. Paused is checked under the stepping lock, where the period would run: a step already
taken off the queue when pause(true) comes waits for pause(false) (a `step_period` call is
answered "paused"), and pause's answer names the time that then holds.

Parameters (asr.ros.ros2_params): robot, variant, engine, rate, lockstep read-only; every
joint's model parameters and stiffness preset as `joints.<joint>.<param>`, checked by the
on-set callback with the commands' and the batch's range checks and applied, all or none, under
the stepping lock: the next period runs with them.

Stamps: header.stamp and /clock are NodeCore.stamp_ns (periods * period_ns, integer ns), split
exactly into sec / nanosec.
"""

from __future__ import annotations

import queue
import re
import signal
import threading
import time
from typing import Any

import numpy as np

from asr.core.errors import SimulationError
from asr.ros import ros2_trajectory as traj
from asr.ros._ros2_types import CLOSING, QOS_DEPTH_CLOCK
from asr.ros._ros2_types import QOS_DEPTH_CONTROL as QOS_DEPTH
from asr.ros.node_core import DEFAULT_RATE_HZ, DEFAULT_ROBOT, NodeCore, RealTimeSchedule
from asr.ros.rejections import MessageSize, max_bytes
from asr.ros.ros2_follow_trajectory import FollowTrajectory
from asr.ros.ros2_params import NodeParameters
from asr.ros.ros2_publish import Publishers
from asr.ros.ros2_sim_interfaces import SimInterfaces

STEP_QUEUE = 10_000  # lockstep: step requests waiting; more are rejected (bounded memory)
# subscription depths (keep_last): a held command needs only its newest value, a few absorb a
# burst; `step` messages are each one period, so more of them may wait for the executor
COMMAND_DEPTH = 4
STEP_DEPTH = 16
STEP_SERVICE_TIMEOUT_S = 30.0  # step_period waits this long for its period at most
EXECUTOR_POLL_S = 0.05  # the executor's thread checks for close() this often, s
CLOSE_TIMEOUT_S = 10.0  # close() waits this long for the executor's and goals' threads, s
# close() waits this long before destroying the node when it answered a request while closing:
# a reliable DDS writer destroyed with a sample not yet acknowledged drops it, s
CLOSE_LINGER_S = 0.2
NODE_NAME = "asr"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
INSTALL_HINT = "pip install asr-sim[ros2] (or source /opt/ros/jazzy/setup.bash)"


def load_rclpy() -> Any:
    """The rclpy module (with the message packages the node uses imported); ImportError naming
    how to install ROS 2 when any is missing."""
    import importlib

    modules = ["rclpy", "builtin_interfaces.msg", "rosgraph_msgs.msg", "sensor_msgs.msg"]
    modules += ["std_msgs.msg", "std_srvs.srv", "trajectory_msgs.msg", "rcl_interfaces.msg"]
    try:
        for m in modules:  # rclpy first: its absence is the one to name
            importlib.import_module(m)
    except ImportError as exc:
        raise ImportError(
            f"ROS 2 (Jazzy's rclpy and message packages) is not installed: {INSTALL_HINT} ({exc})"
        ) from exc
    import rclpy

    return rclpy


def check_node_name(name: object) -> str:
    """A ROS node name (a letter, then letters, digits, '_'); ValueError otherwise."""
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > 200:
        raise ValueError(
            f"name: got {name!r}; a node name starts with a letter and holds letters, digits "
            "and '_' only (at most 200 characters)"
        )
    return name


def qos_profiles() -> dict[str, Any]:
    """{"control", "command", "step", "latest", "clock"}: the node's QoS profiles.

    control: reliable, keep_last QOS_DEPTH (asr.ros._ros2_types), volatile: every state topic;
    a subscriber that keeps up loses no message at 1 kHz, a slow one loses the oldest.
    command, step: keep_last COMMAND_DEPTH, STEP_DEPTH: the node's subscriptions.
    latest: reliable, keep_last 1, transient_local (`joint_states_latest`): a peer that joins
    late (a lockstep controller) still gets the current state, as a ROS 1 latched topic.
    clock: reliable, keep_last QOS_DEPTH_CLOCK, volatile (/clock; rclpy's time source
    subscribes best effort, which a reliable publisher serves)."""
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

    def profile(depth: int, durability: DurabilityPolicy) -> QoSProfile:
        return QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            depth=depth,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=durability,
        )

    return {
        "control": profile(QOS_DEPTH, DurabilityPolicy.VOLATILE),
        "command": profile(COMMAND_DEPTH, DurabilityPolicy.VOLATILE),
        "step": profile(STEP_DEPTH, DurabilityPolicy.VOLATILE),
        "latest": profile(1, DurabilityPolicy.TRANSIENT_LOCAL),
        "clock": profile(QOS_DEPTH_CLOCK, DurabilityPolicy.VOLATILE),
    }


class StepCall:
    """A step_period call waiting for its period: `done` set once it ran (`stamp`: the
    period's end, ns) or was dropped (`stamp` None; `why`: by a pause, or the node closing)."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.stamp: int | None = None
        self.why = "paused: resume with pause(false)"

    def drop(self, why: str | None = None) -> None:
        """Answer the call without its period (`why`: the answer; default: paused)."""
        if why is not None:
            self.why = why
        self.done.set()


class Ros2Node:
    """A NodeCore on rclpy. `start()` creates the node, its topics and services; `spin()` steps
    until shutdown or `duration`; `close()` releases ROS. lockstep: see the module docstring.
    clock: publish /clock. name: the ROS node name. lean: no robot_description, /tf_static,
    /tf, actuator_states nor held_references_stamped (asr.ros.ros2_publish.Publishers)."""

    def __init__(
        self,
        core: NodeCore,
        *,
        lockstep: bool = False,
        clock: bool = True,
        name: str = NODE_NAME,
        lean: bool = False,
    ) -> None:
        self.core = core
        self.lockstep = bool(lockstep)
        self.clock = bool(clock)
        self.lean = bool(lean)
        self.name = check_node_name(name)
        self.schedule = RealTimeSchedule(self.core.period)  # real time
        self._steps: queue.Queue[tuple[np.ndarray | None, StepCall | None]] = queue.Queue(
            maxsize=STEP_QUEUE
        )
        self._lock = threading.Lock()  # one period's step + publish; reset; the trajectory
        self._pending: list[tuple[np.ndarray | None, StepCall | None]] = []  # 0 or 1
        self._trajectory: traj.Trajectory | None = None
        self._active: set[int] = set()  # joints (indices) the trajectory still drives
        self._restart = threading.Event()  # real time: restart the schedule (reset, resume)
        self._traj_params = [
            {p.name: float(core.sim.batch.get_param(j, p.name)[0]) for p in spec.params}
            for j, spec in enumerate(core.specs)
        ]
        self._rclpy: Any = None
        self._node: Any = None
        self._executor: Any = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()  # set by SIGINT / SIGTERM: the loop ends
        self._closing = threading.Event()  # close(): no period runs any more
        self._exec_end = threading.Event()  # close(): the executor's thread ends
        self._old_handlers: dict[int, Any] = {}

    def topic(self, *parts: str) -> str:
        """The absolute name of one of the node's topics (for log lines)."""
        return self.core.namespace + "".join("/" + p for p in parts)

    # ------------------------------------------------------------ setup

    def start(self) -> None:
        """Initialise rclpy (its own context), create the node, publishers, subscriptions and
        services, and start the executor's threads."""
        rclpy = self._rclpy = load_rclpy()
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self._context = rclpy.context.Context()
        # our own SIGINT / SIGTERM handlers (rclpy's stop only its default context): the
        # stepping loop ends, then close() releases ROS
        rclpy.init(context=self._context, signal_handler_options=SignalHandlerOptions.NO)
        self._catch_signals()
        node = self._node = rclpy.create_node(
            self.name, namespace=self.core.namespace or None, context=self._context
        )
        logger = node.get_logger()
        self.core.log = logger.warning
        qos = qos_profiles()
        self.pub = Publishers(node, self.core, qos, clock=self.clock, lean=self.lean)
        self._subscribe(qos)
        self._services()
        # the ROS 2 standard simulation interfaces (asr.ros.ros2_sim_interfaces), when built
        self.sim_interfaces = SimInterfaces(self)
        self.sim_interfaces.start()
        # control_msgs' FollowJointTrajectory (asr.ros.ros2_follow_trajectory), when built
        self.follow = FollowTrajectory(self)
        self.follow.start()
        # ROS parameters (asr.ros.ros2_params): checked and applied under the stepping lock
        self.params = NodeParameters(
            self.core, self._lock, lockstep=self.lockstep, on_change=self._params_changed
        )
        self.params.declare(node)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(node)
        self._thread = threading.Thread(target=self._spin_executor, daemon=True)
        self._thread.start()
        core = self.core
        how = f"lockstep on {self.topic('step')}" if self.lockstep else "real time"
        logger.info(
            f"asr ros2: {core.robot.name} ({core.robot.variant}, {core.engine}) as "
            f"{node.get_fully_qualified_name()}, {1 / core.period:g} Hz, {how}"
        )

    def _params_changed(self, j: int) -> None:
        """Joint j's model parameters changed (stepping lock held): the trajectory's reference
        map uses the new ones."""
        spec = self.core.specs[j]
        self._traj_params[j] = {
            p.name: float(self.core.sim.batch.get_param(j, p.name)[0]) for p in spec.params
        }

    def _catch_signals(self) -> None:
        """SIGINT and SIGTERM stop the stepping loop (main thread only; the previous handlers
        come back in close())."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old_handlers[sig] = signal.signal(sig, lambda *_: self._stop.set())

    @property
    def closing(self) -> bool:
        """close() has begun: no period runs any more (step calls and goals are answered)."""
        return self._closing.is_set()

    def _spin_executor(self) -> None:
        # spin_once in a loop of our own, not executor.spin(): close() ends it by _exec_end and
        # joins this thread before destroying the node (destroying a node while another thread
        # waits on its entities crashes rclpy: ros2/rclpy#663; Jazzy's executor.shutdown does
        # not wait for that thread)
        try:
            while not self._exec_end.is_set() and self._rclpy.ok(context=self._context):
                self._executor.spin_once(timeout_sec=EXECUTOR_POLL_S)
        except Exception:  # the context shut down under the executor: the node is closing
            if self._rclpy.ok(context=self._context):
                raise

    def _subscribe(self, qos: dict[str, Any]) -> None:
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64, Float64MultiArray
        from trajectory_msgs.msg import JointTrajectory

        node, nj = self._node, len(self.core.names)
        for j, jn in enumerate(self.core.names):
            for t, target in self.core.commands[j].items():

                def on_command(msg: Any, j: int = j, target: str = target, t: str = t) -> None:
                    self._on_command(j, target, msg.data, self.topic(self.core.names[j], t))

                node.create_subscription(Float64, f"{jn}/{t}", on_command, qos["command"])
        for k in (0, 1):

            def on_refs(msg: Any, k: int = k) -> None:
                self._on_references(k, msg.data)

            self._bounded(Float64MultiArray, f"reference_{k + 1}", on_refs, nj, qos["command"])
        # a point: positions, velocities, accelerations, efforts, lengths, time (3 values)
        points = (traj.MAX_POINTS + 1) * (4 * nj + 3)
        self._bounded(
            JointTrajectory, "joint_trajectory", self._on_trajectory, points, qos["command"]
        )
        self._bounded(JointState, "reset_state", self._on_reset_state, 3 * nj, qos["command"])
        if self.lockstep:
            self._bounded(Float64MultiArray, "step", self._on_step, 2 * nj, qos["step"])

    def _bounded(self, cls: Any, name: str, callback: Any, values: int, qos: Any) -> None:
        """Subscribe `callback` to topic `name` (type `cls`) taking serialised messages: one of
        more than max_bytes (`values` float64s and the joints' names) is rejected by its length,
        unread; the others are deserialised and handed on (and checked there)."""
        from rclpy.serialization import deserialize_message

        what, limit = self.topic(name), max_bytes(values, len(self.core.names))

        def on_raw(raw: bytes) -> None:
            if len(raw) > limit:
                self.core.reject(what, MessageSize(len(raw)), f"a valid one takes <= {limit}")
                return
            callback(deserialize_message(raw, cls))

        self._node.create_subscription(cls, name, on_raw, qos, raw=True)

    def _services(self) -> None:
        from std_srvs.srv import SetBool, Trigger

        node = self._node
        node.create_service(Trigger, "reset", self._srv_reset)
        node.create_service(SetBool, "pause", self._srv_pause)
        if self.lockstep:
            node.create_service(Trigger, "step_period", self._srv_step)

    # ------------------------------------------------------------ commands

    def _cancel(self, joints: range | list[int]) -> None:
        """A direct command on a joint ends the trajectory's hold on it."""
        with self._lock:
            self._active.difference_update(joints)
            self.follow.preempt("a direct reference command", joints)

    def _on_command(self, j: int, target: str, value: float, what: str) -> None:
        if self.core.set_command(j, target, value, what) and target in ("ref1", "ref2"):
            self._cancel([j])

    def _on_references(self, k: int, data: Any) -> None:
        what = self.topic(f"reference_{k + 1}")
        nj = len(self.core.names)
        if len(data) != nj:  # checked here so a huge array is not printed whole
            self.core.reject(what, data, f"expected {nj} values, got {len(data)}")
            return
        if self.core.set_references(k, data, what):
            self._cancel(range(nj))

    def _on_step(self, msg: Any) -> None:
        what, nj = self.topic("step"), len(self.core.names)
        data = np.asarray(msg.data, dtype=np.float64)
        if data.size not in (0, 2 * nj):
            self.core.reject(
                what,
                msg.data,
                f"expected 0 or {2 * nj} values (the references (J, 2) row-major)",
            )
            return
        refs = data.reshape(nj, 2) if data.size else None
        if refs is not None:
            why = None if np.all(np.isfinite(refs)) else "not finite"
            why = why or self.core.check_references(refs)
            if why is not None:
                self.core.reject(what, msg.data, why)
                return
        try:
            self._steps.put_nowait((refs, None))
        except queue.Full:
            self.core.reject(what, msg.data, f"{STEP_QUEUE} steps already wait")

    def _on_reset_state(self, msg: Any) -> None:
        what, names = self.topic("reset_state"), self.core.names
        try:
            q0 = np.asarray(msg.position, dtype=np.float64)
            qd0 = np.asarray(msg.velocity, dtype=np.float64) if len(msg.velocity) else None
            if len(msg.name):
                order = traj.check_names(list(msg.name), names)
                if len(order) != len(names):
                    raise ValueError(f"name: give all joints ({', '.join(names)}) or none")
                q0 = self._reorder(q0, order, "position")
                qd0 = None if qd0 is None else self._reorder(qd0, order, "velocity")
            with self._lock:
                self.core.reset(q0, qd0)
                self.params.after_reset()
                self._trajectory, self._active = None, set()
                self.follow.preempt("a reset")
                self._publish(self.core.state())
        except ValueError as exc:
            self.core.reject(what, msg.position, str(exc))
            return
        self._restart.set()

    @staticmethod
    def _reorder(values: np.ndarray, order: tuple[int, ...], what: str) -> np.ndarray:
        if values.shape != (len(order),):
            raise ValueError(f"{what}: expected {len(order)} values, got {values.size}")
        out = np.empty_like(values)
        out[list(order)] = values
        return out

    # ------------------------------------------------------------ trajectories

    def _on_trajectory(self, msg: Any) -> None:
        what = self.topic("joint_trajectory")
        try:
            with self._lock:
                new = self.build_trajectory(msg)
                self._trajectory, self._active = new, set(new.joints)
                self.follow.preempt("a joint_trajectory message", new.joints)
        except ValueError as exc:
            self.core.reject(
                what, f"{len(msg.points)} points for {list(msg.joint_names)[:8]}", str(exc)
            )

    def build_trajectory(self, msg: Any) -> traj.Trajectory:
        """The checked Trajectory of a trajectory_msgs JointTrajectory from the held commands
        now (stepping lock held): ValueError naming what is wrong (names, modes 0 / 4, points,
        references out of range)."""
        joints = traj.check_names(list(msg.joint_names), self.core.names)
        self._check_modes(joints)
        start = traj.duration_ns(msg.header.stamp.sec, msg.header.stamp.nanosec)
        points = [
            (
                p.positions,
                p.velocities,
                traj.duration_ns(p.time_from_start.sec, p.time_from_start.nanosec),
            )
            for p in msg.points[: traj.MAX_POINTS + 1]
        ]
        refs, s = self.core.held()[0], self.core.state()
        q0 = np.array([self._position(j, refs[j], s["q"][j]) for j in joints])
        new = traj.build(joints, points, start or self.core.stamp_ns, q0, s["qd"][list(joints)])
        self._check_points(new)
        return new

    def _check_modes(self, joints: tuple[int, ...]) -> None:
        for j in joints:
            if self.core.modes[j] in (0, 4):
                raise ValueError(
                    f"joint {self.core.names[j]} is in mode {self.core.modes[j]} (torque or "
                    "motor commands): it takes no position trajectory"
                )

    def _position(self, j: int, refs: np.ndarray, q: float) -> float:
        """The position command a trajectory starts from: the held link / equilibrium
        reference (modes 1, 3, 6), the link angle (modes 2, 5)."""
        return float(refs[0]) if self.core.modes[j] in (1, 3, 6) else float(q)

    def _refs_for(self, j: int, x: float, held: np.ndarray) -> tuple[float, float]:
        """(ref1, ref2) of joint j for position command x (rad): the link command (mode 1),
        the equilibrium with the held preset (3, 6), the model's reference map at the soft
        preset (2, 5)."""
        mode, spec = self.core.modes[j], self.core.specs[j]
        if mode in (1, 3, 6):
            return x, float(held[1])
        from asr.core.models import reference_map

        preset = spec.preset.soft if spec.preset.kind == "ref" else 0.0
        th1, th2 = reference_map(spec.name, x, preset, **self._traj_params[j])
        return float(th1), float(th2)

    def _check_points(self, t: traj.Trajectory) -> None:
        held = self.core.held()[0]
        for p, row in enumerate(t.positions):
            for j, x in zip(t.joints, row):
                for k, r in enumerate(self._refs_for(j, float(x), held[j])):
                    why = self.core.check_command(j, ("ref1", "ref2")[k], r)
                    if why is not None:
                        raise ValueError(
                            f"points[{p}] {self.core.names[j]} = {x!r} rad gives reference_"
                            f"{k + 1} = {r!r}: {why}"
                        )

    def _apply_trajectory(self) -> None:
        """Hold the trajectory's references for the period about to run (its value at the
        period's end), for the joints it still drives; drop it once past its last point."""
        t = self._trajectory
        if t is None:
            return
        if not self._active:
            self._trajectory = None
            return
        t_end = self.core.stamp_ns + self.core.period_ns
        x = traj.sample(t, t_end)
        refs = self.core.held()[0]
        for j, xj in zip(t.joints, x):
            if j in self._active:
                refs[j] = self._refs_for(j, float(xj), refs[j])
        self.core.hold_references(refs, self.topic("joint_trajectory"))
        if t_end >= t.end_ns:
            self._trajectory, self._active = None, set()

    # ------------------------------------------------------------ services

    def _srv_reset(self, request: Any, response: Any) -> Any:
        with self._lock:
            self.core.reset()
            self.params.after_reset()
            self._trajectory, self._active = None, set()
            self.follow.preempt("a reset")
            self._publish(self.core.state())
        self._restart.set()
        response.success, response.message = True, "t=0"
        return response

    def _srv_pause(self, request: Any, response: Any) -> Any:
        # under the stepping lock: a period already running ends first, and none starts after
        # this (the stepping loop checks paused under the same lock), so the time answered is
        # the time that holds while paused
        with self._lock:
            self.core.paused = bool(request.data)
            stamp = self.core.stamp_ns
        if not self.core.paused:
            self._restart.set()
        response.success = True
        response.message = f"{'paused' if self.core.paused else 'running'} at t={stamp}"
        return response

    def _srv_step(self, request: Any, response: Any) -> Any:
        call = StepCall()
        if self.closing:
            response.success, response.message = False, CLOSING
            return response
        if self.core.paused:
            response.success, response.message = False, "paused: resume with pause(false)"
            return response
        try:
            self._steps.put_nowait((None, call))
        except queue.Full:
            response.success, response.message = False, f"{STEP_QUEUE} steps already wait"
            return response
        deadline = time.monotonic() + STEP_SERVICE_TIMEOUT_S
        while not call.done.wait(EXECUTOR_POLL_S) and time.monotonic() < deadline:
            if self.closing:  # the stepping loop has ended: no period will come
                call.drop(CLOSING)
        ok = call.done.is_set()
        response.success = ok and call.stamp is not None
        if not ok:
            response.message = "timed out"
        elif call.stamp is None:  # dropped: paused before its period ran, or closing
            response.message = call.why
        else:
            response.message = f"t={call.stamp}"
        return response

    # ------------------------------------------------------------ stepping

    def _publish(self, s: dict[str, np.ndarray]) -> None:
        self.pub.publish(s, self.core.stamp_ns, self.core.held()[0])

    def step_and_publish(self) -> bool:
        """One period with the held commands (and trajectory), then its state published; False
        (nothing done) when paused, checked under the lock pause is set under."""
        with self._lock:
            if self.core.paused:
                return False
            self._step_and_publish()
            return True

    def _step_and_publish(self) -> None:  # self._lock held
        self._apply_trajectory()
        held = self.core.held()[0]
        s = self.core.step_period()
        self.pub.publish(s, self.core.stamp_ns, held)
        self.follow.after_period(s)  # a FollowJointTrajectory goal's feedback and outcome

    def _lockstep_period(self) -> None:
        """Wait (0.1 s at most) for a step request and run its period, unless paused: the
        check is made under the stepping lock, where pause is set, so a request taken while
        pause(true) was coming waits for pause(false) (a step_period call is answered
        "paused" then and its step dropped)."""
        if not self._pending:
            try:
                self._pending.append(self._steps.get(timeout=0.1))
            except queue.Empty:
                return
        with self._lock:
            paused = self.core.paused
            refs, call = self._pending[0]
            if not paused or call is not None:  # a call waits: it hears "paused" (_srv_step)
                self._pending.clear()
            if not paused:
                if refs is not None and self.core.hold_references(refs, self.topic("step")):
                    self._active.clear()  # the step's references end a trajectory's hold
                    self.follow.preempt("step references")
                self._step_and_publish()
                if call is not None:
                    call.stamp = self.core.stamp_ns
        if call is not None:
            call.done.set()
        if paused:
            time.sleep(0.01)

    def spin(self, duration: float | None = None) -> int:
        """Step until rclpy shuts down (Ctrl-C, SIGTERM) or `duration` wall seconds pass;
        returns 0, or 1 when the simulation failed (logged)."""
        rclpy, ctx = self._rclpy, self._context
        end = None if duration is None else time.monotonic() + duration
        self._publish(self.core.state())
        self.schedule.restart()
        try:
            while (
                not self._stop.is_set()
                and rclpy.ok(context=ctx)
                and (end is None or time.monotonic() < end)
            ):
                if self.lockstep:
                    self._lockstep_period()
                    continue
                if self.core.paused:  # no stepping, no time; resumes one period after unpausing
                    self.schedule.restart()
                    time.sleep(0.01)
                    continue
                if self._restart.is_set():
                    self._restart.clear()
                    self.schedule.restart()
                    continue
                if self.schedule.due():
                    self.step_and_publish()
        except SimulationError as exc:
            self._node.get_logger().error(f"asr ros2: the simulation stopped: {exc}")
            return 1
        return 0

    def close(self) -> None:
        """End every thread that uses the node, then destroy it and shut its rclpy context
        down. In this order: no period runs any more (`closing`; step_period calls waiting
        are answered CLOSING, SimulateSteps goals abort at their next period and their
        results go out), the goals' and then the executor's threads are joined
        (CLOSE_TIMEOUT_S at most in all), and only then (CLOSE_LINGER_S after answers given
        while closing) the node is destroyed: destroying it under a thread still waiting on it
        crashes rclpy (ros2/rclpy#663). A thread that outlives the timeout leaves the node
        undestroyed (logged): the process releases it when it exits."""
        rclpy = self._rclpy
        if rclpy is None:
            return
        self._stop.set()
        self._closing.set()
        calls = [c for _, c in self._pending if c is not None]
        while True:  # step requests still queued: answered, never run
            try:
                call = self._steps.get_nowait()[1]
            except queue.Empty:
                break
            if call is not None:
                calls.append(call)
        for call in calls:
            call.drop(CLOSING)
        self._pending.clear()
        deadline = time.monotonic() + CLOSE_TIMEOUT_S
        # start() may have failed before these: None then
        found = [getattr(self, a, None) for a in ("sim_interfaces", "follow")]
        servers: list[Any] = [s for s in found if s is not None]
        answered = bool(calls) or any(s.busy for s in servers)
        joined = True
        for server in servers:  # their goals aborted, the results sent
            joined = server.close(max(deadline - time.monotonic(), 0.0)) and joined
        self._exec_end.set()
        if self._thread is not None:
            self._thread.join(max(deadline - time.monotonic(), 0.0))
            joined = joined and not self._thread.is_alive()
        if joined:
            if answered:  # answers just written: time for the peers' DDS to take them
                time.sleep(CLOSE_LINGER_S)
            if self._executor is not None:
                self._executor.shutdown(timeout_sec=0)
            if self._node is not None:
                self._node.destroy_node()
        elif self._node is not None:
            self._node.get_logger().error(
                f"asr ros2: a callback still runs after {CLOSE_TIMEOUT_S:g} s: the node is left "
                "to the process's exit"
            )
        rclpy.try_shutdown(context=self._context)
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler)
        self._rclpy = None


def run_ros2_node(
    robot: str = DEFAULT_ROBOT,
    variant: str | None = None,
    *,
    rate: float = DEFAULT_RATE_HZ,
    namespace: str = "",
    name: str = NODE_NAME,
    engine: str = "mujoco",
    lockstep: bool = False,
    clock: bool = True,
    duration: float | None = None,
    lean: bool = False,
) -> int:
    """Build asr's ROS 2 node, run it until shutdown or `duration` wall seconds, and return the
    exit code (0, or 1 when the simulation failed). ValueError / TypeError / OSError for bad
    arguments (naming the argument and its valid range), checked before rclpy is imported;
    then ImportError naming the install when rclpy is missing."""
    check_node_name(name)
    if duration is not None and not (isinstance(duration, (int, float)) and 0 < duration < 1e9):
        raise ValueError(f"duration: got {duration!r} s, valid range (0, 1e9)")
    core = NodeCore(robot, variant, rate=rate, namespace=namespace, engine=engine)
    load_rclpy()  # after every argument is checked: a bad one is named even without ROS 2
    node = Ros2Node(core, lockstep=lockstep, clock=clock, name=name, lean=lean)
    node.start()
    try:
        return node.spin(duration)
    finally:
        node.close()


__all__ = [
    "Ros2Node",
    "run_ros2_node",
    "qos_profiles",
    "load_rclpy",
    "check_node_name",
    "INSTALL_HINT",
    "QOS_DEPTH",
]
