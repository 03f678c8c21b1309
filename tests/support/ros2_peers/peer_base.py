"""What every ROS 2 test peer shares (run with .venv-ros2's Python, without asr): an rclpy node
that records asr's state topics in a background executor, publishers that wait for asr's
subscription, service calls with deadlines, and the JSON result on stdout's last line."""

import json
import threading
import time

import rclpy
from rcl_interfaces.msg import Log
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

DEADLINE_S = 30.0  # every wait: a busy CI host is slow, never this slow
SETTLE_S = 0.5  # after a reset, for late messages from before it (see Peer.reset)
SPIN_POLL_S = 0.01  # the executor thread's wait per spin_once (Peer.request waits for it)


def qos(depth=1000, latched=False):
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


def ns_of(stamp):
    return stamp.sec * 10**9 + stamp.nanosec


class Peer:
    """Records joint_states [(stamp ns, positions, velocities, arrival s)], held_references
    [(data, arrival s)], /clock [stamp ns] and /rosout lines of the node under test."""

    def __init__(self, namespace="", use_sim_time=False):
        rclpy.init()
        params = [rclpy.parameter.Parameter("use_sim_time", value=True)] if use_sim_time else []
        self.node = rclpy.create_node(
            "peer", namespace=namespace or None, parameter_overrides=params
        )
        self.cond = threading.Condition()
        self.states, self.held, self.clock, self.logs = [], [], [], []
        self.latest = None
        sub = self.node.create_subscription
        sub(JointState, "joint_states", self._on_state, qos())
        sub(JointState, "joint_states_latest", self._on_latest, qos(1, latched=True))
        sub(Float64MultiArray, "held_references", self._on_held, qos())
        sub(Clock, "/clock", self._on_clock, qos())
        sub(Log, "/rosout", self._on_log, qos(1000, latched=True))
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self._pause = threading.Condition()
        self._pausers, self._idle = 0, False
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        """The executor's loop (rclpy's spin, one spin_once at a time), halting between two
        spin_once calls while a request() is being sent."""
        while self.executor.context.ok():
            with self._pause:
                self._idle = True
                self._pause.notify_all()
                self._pause.wait_for(lambda: self._pausers == 0)
                self._idle = False
            try:
                self.executor.spin_once(timeout_sec=SPIN_POLL_S)
            except Exception:
                if self.executor.context.ok():
                    raise
                return

    def request(self, send):
        """The future of an action request, send() (an ActionClient's send_goal_async, a goal
        handle's get_result_async or cancel_goal_async), made while the executor's thread is
        halted: Jazzy's ActionClient sends the request and only then registers its sequence
        number, unlocked, so a response the executor handles in between is dropped ("Ignoring
        unexpected goal response") and the future never completes (seen under load; rclpy's
        service Client registers under a lock and needs none of this)."""
        with self._pause:
            self._pausers += 1
            if not self._pause.wait_for(lambda: self._idle, DEADLINE_S):
                self._pausers -= 1
                raise RuntimeError("peer: the executor's thread did not halt for a request")
        try:
            return send()
        finally:
            with self._pause:
                self._pausers -= 1
                self._pause.notify_all()

    def _add(self, store, item):
        with self.cond:
            store.append(item)
            self.cond.notify_all()

    def _on_state(self, m):
        t = time.monotonic()
        self._add(self.states, (ns_of(m.header.stamp), list(m.position), list(m.velocity), t))

    def _on_latest(self, m):
        with self.cond:
            self.latest = (ns_of(m.header.stamp), list(m.position))
            self.cond.notify_all()

    def _on_held(self, m):
        self._add(self.held, (list(m.data), time.monotonic()))

    def _on_clock(self, m):
        self._add(self.clock, ns_of(m.clock))

    def _on_log(self, m):
        self._add(self.logs, m.msg)

    def wait(self, predicate, what, timeout=DEADLINE_S):
        """Wait until predicate() (called under the lock) holds; RuntimeError naming `what`."""
        with self.cond:
            if not self.cond.wait_for(predicate, timeout):
                raise RuntimeError(f"peer: timed out after {timeout} s waiting for {what}")

    def publisher(self, msg_type, topic):
        """A reliable publisher on `topic`, returned once asr's node subscribes to it."""
        pub = self.node.create_publisher(msg_type, topic, qos())
        end = time.monotonic() + DEADLINE_S
        while pub.get_subscription_count() == 0:
            if time.monotonic() > end:
                raise RuntimeError(f"peer: nobody subscribes to {topic}")
            time.sleep(0.01)
        return pub

    def wait_matched(self, subscription, topic):
        """Wait (DEADLINE_S at most) until a publisher of `topic` is matched with
        `subscription`, so that nothing it publishes from now on is missed."""
        end = time.monotonic() + DEADLINE_S
        while subscription.get_publisher_count() == 0:
            if time.monotonic() > end:
                raise RuntimeError(f"peer: nobody publishes {topic}")
            time.sleep(0.01)

    def call(self, srv_type, name, request):
        """The response of service `name`, waiting for it to appear and answer."""
        client = self.node.create_client(srv_type, name)
        if not client.wait_for_service(timeout_sec=DEADLINE_S):
            raise RuntimeError(f"peer: service {name} does not appear")
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(DEADLINE_S):
            raise RuntimeError(f"peer: service {name} does not answer")
        return future.result()

    def wait_future(self, future):
        """The result of an rclpy future (an action's goal, result or cancel), waiting at
        most DEADLINE_S; RuntimeError when it does not come."""
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(DEADLINE_S):
            raise RuntimeError("peer: no answer")
        return future.result()

    def reset(self):
        """Call asr's reset and wait for the reset state (stamp 0) on joint_states; returns its
        index in `states`. States published before the reset can still arrive after the call
        (a busy host delays the peer's executor; CI once saw the node's first 150 ms, from its
        own start at stamp 0, arrive then), so the reset state is the last stamp 0: one
        writer's reliable messages arrive in order, so nothing older follows it."""
        from std_srvs.srv import Trigger

        self.wait(lambda: self.latest is not None, "joint_states_latest (asr's node)")
        with self.cond:
            start = len(self.states)
        assert self.call(Trigger, "reset", Trigger.Request()).success
        self.wait(
            lambda: any(s[0] == 0 for s in self.states[start:]), "the reset state on joint_states"
        )
        # settle: if that 0 was a late one from the node's own start, the reset's 0 follows
        # it; SETTLE_S bounds the wait (callers that record on recompute the index)
        with self.cond:
            self.cond.wait_for(lambda: sum(s[0] == 0 for s in self.states[start:]) > 1, SETTLE_S)
            return self.last_reset_index(start)

    def last_reset_index(self, start=0):
        """Index in `states` of the last stamp-0 state at or after `start` (the latest reset)."""
        with self.cond:
            return max(i for i in range(start, len(self.states)) if self.states[i][0] == 0)

    def finish(self, result):
        """Print the result as JSON (stdout's last line) and exit at once: tearing rclpy down
        under the spinning executor thread aborts in C++ ("terminate called without an active
        exception"), and the peer has nothing left to release."""
        import os
        import sys

        print(json.dumps(result), flush=True)
        sys.stderr.flush()
        os._exit(0)
