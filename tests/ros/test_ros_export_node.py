"""asr.ros.export: the exported rospy node run with the system's /usr/bin/python3 (as a ROS user
runs it, no asr on its path) on a real roscore; its commands are compared with the policy's
outputs computed by asr."""

import queue
import time

import numpy as np
import pytest

from asr.ros.export import export_policy
from tests.conftest import IN_CI, require_ros1
from tests.support.ros_export import (
    WAIT_S,
    fake_ilc,
    linear_W,
    ros_node,  # noqa: F401  (a fixture)
    start_node,
    stop,
    workspace,
)

pytestmark = pytest.mark.ros

# ---------------------------------------------------------------- the node on a real roscore


def wait_for(cond, what, proc, log):
    deadline = time.monotonic() + WAIT_S
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(f"the node exited ({proc.returncode}): {log.read_text()[-2000:]}")
        assert time.monotonic() < deadline, f"{what} within {WAIT_S} s; log: {log.read_text()}"
        time.sleep(0.02)


class Probe:
    """Publishes JointState on <ns>/joint_states and collects the node's robot-level references."""

    def __init__(self, rospy, ns, proc, log):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self.rospy, self.JointState, self.proc, self.log = rospy, JointState, proc, log
        self.q = queue.Queue()
        self.started = False
        self.pub = rospy.Publisher(f"/{ns}/joint_states", JointState, queue_size=100)
        self.r1 = rospy.Subscriber(
            f"/{ns}/reference_1", Float64MultiArray, lambda m: self.q.put((1, list(m.data)))
        )
        self.r2 = rospy.Subscriber(
            f"/{ns}/reference_2", Float64MultiArray, lambda m: self.q.put((2, list(m.data)))
        )
        wait_for(
            lambda: (
                self.pub.get_num_connections() > 0
                and self.r1.get_num_connections() > 0
                and self.r2.get_num_connections() > 0
            ),
            "the node connected",
            proc,
            log,
        )

    def send(self, t, names, q, dq):
        """Publish the state at time t (s); the node's (reference_1, reference_2) answer. The
        first state is sent again until the node answers (a message published right after the
        connection is made may be lost); its duplicate answers, equal, are dropped."""
        m = self.JointState(name=list(names), position=list(q), velocity=list(dq))
        m.header.stamp = self.rospy.Time.from_sec(100.0 + t)  # any origin: the node counts from
        first = not self.started  # its first state
        got = {}
        deadline = time.monotonic() + WAIT_S
        self.pub.publish(m)
        while len(got) < 2:
            try:
                k, v = self.q.get(timeout=0.3)
                got[k] = v
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"no command within {WAIT_S} s; {self.log.read_text()}"
                    ) from None
                if first:
                    self.pub.publish(m)
        if first:
            time.sleep(0.5)
            while not self.q.empty():
                self.q.get_nowait()
            self.started = True
        return np.array(got[1]), np.array(got[2])

    def close(self):
        for x in (self.pub, self.r1, self.r2):
            x.unregister()


def test_node_plays_the_ilc_table(ros_node, ros_master, tmp_path):
    res = fake_ilc(T=40, settle_s=0.05)
    dt, u, pre = res.dt, res.input[0], res.presets[0]
    path = export_policy(res, "qbmove_arm_2dof", tmp_path, namespace="ilc")
    log = tmp_path / "node.log"
    proc = start_node(path, ros_master, log, "policy_ilc")
    probe = None
    try:
        probe = Probe(ros_node, "ilc", proc, log)
        names, zero = ["joint1", "joint2"], [0.0, 0.0]
        # settling (ILCResult: held at input[0] for settle_s), then sample k from settle + k dt
        # to settle + (k + 1) dt (sampled mid-step and just after its start), then the last
        for t, k in (
            [(0.0, 0), (0.03, 0)]
            + [(0.05 + (k + f) * dt, k) for k in (0, 1, 7, 39) for f in (1e-3, 0.5)]
            + [(0.2, 39)]
        ):
            r1, r2 = probe.send(t, names, zero, zero)
            np.testing.assert_allclose(r1, u[k], rtol=0, atol=1e-12, err_msg=f"t = {t}")
            assert r2.tolist() == pre.tolist()
    finally:
        if probe is not None:
            probe.close()
        stop(proc)


def test_node_computes_the_linear_policy(ros_node, ros_master, tmp_path):
    from asr.envs.cem import linear_policy
    from asr.envs.tasks import EquilibriumTracking

    W, target = linear_W(), 0.3
    env = EquilibriumTracking(1)
    low, high = env.single_action_space.low, env.single_action_space.high
    path = export_policy(
        {"mean": W, "curve": []}, "pendulum_1dof", tmp_path, namespace="cem", target=[target]
    )
    log = tmp_path / "node.log"
    proc = start_node(path, ros_master, log, "policy_cem")
    probe = None
    rng = np.random.default_rng(3)
    try:
        probe = Probe(ros_node, "cem", proc, log)
        held = None
        # env steps every frame_skip * dt = 20 ms; states between them get the held action
        for t in (0.0, 0.001, 0.0195, 0.02, 0.021, 0.04, 0.06, 0.0799):
            q, dq = rng.uniform(-1, 1), rng.uniform(-3, 3)
            r1, r2 = probe.send(t, ["joint"], [q], [dq])
            if held is None or round(t / 0.02, 9) % 1 == 0:
                env.q[:] = q
                env.qd[:] = dq
                env.target[:] = target
                held = linear_policy(W[None], env.observe(), low, high)[0]
            np.testing.assert_allclose(
                np.concatenate([r1, r2]), held, rtol=0, atol=1e-12, err_msg=f"t = {t}"
            )
    finally:
        if probe is not None:
            probe.close()
        stop(proc)
        env.close()


def test_node_publishes_the_workspace(ros_node, ros_master, tmp_path):
    from std_msgs.msg import Float64

    path = export_policy(workspace(), "qbmove_arm_2dof", tmp_path, namespace="ws")
    log = tmp_path / "node.log"
    proc = start_node(path, ros_master, log, "policy_ws")
    got, subs = {}, []
    try:
        for j in ("joint1", "joint2"):
            for topic in ("equilibrium_position", "stiffness_preset"):
                subs.append(
                    ros_node.Subscriber(
                        f"/ws/{j}/{topic}",
                        Float64,
                        lambda m, key=(j, topic): got.__setitem__(key, m.data),
                    )
                )
        wait_for(lambda: len(got) == 4, "the latched commands", proc, log)
        assert got == {
            ("joint1", "equilibrium_position"): 0.25,
            ("joint2", "equilibrium_position"): 0.1 - 0.4,
            ("joint1", "stiffness_preset"): 0.35,
            ("joint2", "stiffness_preset"): 0.5,
        }
    finally:
        for s in subs:
            s.unregister()
        stop(proc)


@pytest.mark.slow
def test_catkin_build_and_two_policies_at_once(ros_node, ros_master, tmp_path):
    """Two exported packages built by catkin_make (Debian's catkin; the package's CMake asks
    for 3.5, which CMake 4 still accepts) and started with roslaunch at once, under two node
    names and namespaces (launch arguments node_name, ns): both stay up and answer their own
    robot's joint states (one shared default name made ROS 1 stop the first)."""
    import shutil
    import subprocess

    from asr.ros.environment import tool_env

    rosgraph = require_ros1("rosgraph")
    if shutil.which("catkin_make", path="/usr/bin:/bin") is None:
        missing = "catkin_make is missing (Debian's catkin: make ros)"
        pytest.fail(f"{missing} in CI") if IN_CI else pytest.skip(missing)
    ws, names, zero = tmp_path / "ws", ["joint1", "joint2"], [0.0, 0.0]
    runs = [
        ("pol_a", "two_a", "policy_a", fake_ilc(seed=0)),
        ("pol_b", "two_b", "policy_b", fake_ilc(seed=1)),
    ]
    for pkg, _, _, res in runs:
        export_policy(res, "qbmove_arm_2dof", ws / "src", package=pkg)
    cmake = (ws / "src" / "pol_a" / "CMakeLists.txt").read_text()
    assert cmake.startswith("cmake_minimum_required(VERSION 3.5)\n")
    env = dict(tool_env(ros_master), ROS_HOME=str(tmp_path))
    build = subprocess.run(
        ["catkin_make", "-C", str(ws), "install"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    procs = []
    try:
        for pkg, ns, name, _ in runs:
            log = tmp_path / f"{pkg}.log"
            launch = f". {ws}/install/setup.sh && exec roslaunch {pkg} policy_node.launch"
            procs.append(
                subprocess.Popen(
                    ["bash", "-c", f"{launch} ns:={ns} node_name:={name}"],
                    env=env,
                    stdout=log.open("w"),
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        master = rosgraph.Master("/asr_tests")

        def nodes():
            return {n for _, ns_ in master.getSystemState()[0] for n in ns_}

        for (pkg, ns, name, _), proc in zip(runs, procs):
            log = tmp_path / f"{pkg}.log"
            full = f"/{ns}/{name}"
            wait_for(lambda full=full: full in nodes(), f"{full} registered", proc, log)
        for (pkg, ns, _, res), proc in zip(runs, procs):
            probe = Probe(ros_node, ns, proc, tmp_path / f"{pkg}.log")
            try:
                r1, r2 = probe.send(0.0, names, zero, zero)
            finally:
                probe.close()
            assert (
                r1.tolist() == res.input[0][0].tolist() and r2.tolist() == res.presets[0].tolist()
            )
        assert [p.poll() for p in procs] == [None, None]
        assert {"/two_a/policy_a", "/two_b/policy_b"} <= nodes()
    finally:
        for p in procs:
            stop(p)
