"""The closed loop of an exported node with `asr ros --lockstep` (tests/ros/test_ros_export_loop.py
and tests/ros/test_ros_export_onnx.py)."""

import json
import os
import queue
import subprocess
import threading
import time

import numpy as np

from tests.conftest import require
from tests.support.paths import SUPPORT
from tests.support.ros_export import ASR_CLI, WAIT_S, start_node, stop

# ---------------------------------------------------------------- closed loop with `asr ros`
#
# The exported node drives the live node (asr/ros/node.py) in lockstep: the live node advances
# one period per <ns>/step message. The harness forwards the exported node's references inside
# each step message (the node's references are remapped to the harness), so every period runs
# with the references computed from the state at its start, as in the offline rollout, and no
# message race can reorder them. The loop is then deterministic and is compared with the
# offline asr rollout of the same policy at 1e-9 rad: what may differ is the node's plain-Python
# arithmetic (math.fsum, math.tanh) against NumPy's, a few ulp per action (the ILC table is
# played exactly: measured 0 rad for the table, 7e-15 rad for the linear policy). In real time (no
# --lockstep) the same loop is not reproducible: the policy sees states at the wall-clock times
# they arrive and the commands reach the simulation a period or more late, so only a loose
# comparison would hold there.


class Loop:
    """Live node (`asr ros --lockstep`) + exported node + this process forwarding steps."""

    def __init__(self, rospy, tmp_path, master, robot, variant, rate, package, ns, starter=None):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self.rospy, self.JointState, self.Array = rospy, JointState, Float64MultiArray
        self.procs, self.subs, self.pubs = [], [], []
        self.live_log, self.node_log = tmp_path / "live.log", tmp_path / "node.log"
        self.refs, self.states = queue.Queue(), queue.Queue()
        try:
            env = dict(os.environ, ROS_MASTER_URI=master, ROS_HOME=str(tmp_path))
            self.procs.append(
                subprocess.Popen(
                    [
                        ASR_CLI,
                        "ros",
                        "--robot",
                        robot,
                        "--variant",
                        variant,
                        "--namespace",
                        ns,
                        "--lockstep",
                        "--rate",
                        repr(rate),
                        "--clock-topic",
                        "",
                    ],
                    env=env,
                    stdout=self.live_log.open("w"),
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            remap = [f"/{ns}/reference_{i}:=/{ns}/harness/reference_{i}" for i in (1, 2)]
            self.procs.append(
                (starter or start_node)(package, master, self.node_log, "policy_loop", remap)
            )
            got, lock = {}, threading.Lock()

            def on_ref(m, i):
                with lock:
                    got[i] = list(m.data)
                    if len(got) == 2:
                        self.refs.put((got.pop(1), got.pop(2)))

            self.subs = [
                rospy.Subscriber(
                    f"/{ns}/harness/reference_{i}",
                    Float64MultiArray,
                    lambda m, i=i: on_ref(m, i),
                    queue_size=1000,
                )
                for i in (1, 2)
            ]
            self.subs.append(
                rospy.Subscriber(
                    f"/{ns}/joint_states", JointState, self.states.put, queue_size=1000
                )
            )
            self.step = rospy.Publisher(f"/{ns}/step", Float64MultiArray, queue_size=1000)
            self.pubs = [self.step]
        except BaseException:
            self.close()
            raise

    def wait_connected(self):
        deadline = time.monotonic() + 30
        while not (
            self.step.get_num_connections() > 0
            and all(s.get_num_connections() > 0 for s in self.subs)
        ):
            for p, log in zip(self.procs, (self.live_log, self.node_log)):
                if p.poll() is not None:
                    raise AssertionError(f"exited ({p.returncode}): {log.read_text()[-2000:]}")
            assert time.monotonic() < deadline, (
                self.live_log.read_text(),
                self.node_log.read_text(),
            )
            time.sleep(0.05)

    def get(self, q, what):
        try:
            return q.get(timeout=WAIT_S)
        except queue.Empty:
            raise AssertionError(
                f"no {what} within {WAIT_S} s; live: "
                f"{self.live_log.read_text()[-1000:]} node: "
                f"{self.node_log.read_text()[-1000:]}"
            ) from None

    def run(self, names, periods):
        """`periods` lockstep periods from the live node's start state (latched: the exported
        node answers it on connecting, and its latched answer reaches this harness); the link
        angles at the end of each period (periods, J) and the references sent (periods, J, 2)."""
        self.wait_connected()
        r = self.get(self.refs, "the answer to the start state")
        time.sleep(0.3)
        assert self.refs.empty(), "more than one answer to the start state"
        s = self.get(self.states, "the live node's start state")
        assert s.header.stamp.to_sec() == 0.0 and self.states.empty()
        qs, sent = [], []
        for _ in range(periods):
            refs = np.stack([r[0], r[1]], axis=-1)
            self.step.publish(self.Array(data=refs.ravel().tolist()))
            s = self.get(self.states, "state")
            qs.append([s.position[s.name.index(n)] for n in names])
            sent.append(refs)
            r = self.get(self.refs, "references")
        return np.array(qs), np.array(sent)

    def close(self):
        for x in self.subs + self.pubs:
            x.unregister()
        for p in self.procs:
            stop(p)


def live_node():
    """asr.ros.node (the live node) or a skip / CI failure when it is not there."""
    return require("asr.ros.node")


def reach_offline(policy_fn, env, obs, periods=40):
    """The Reach2DOF closed loop offline: policy_fn on env (reset, observation obs) for
    `periods` env steps of 20 ms; (actions (periods, 4), q (periods, 2) rad). Closes env."""
    q_off, acts = [], []
    for _ in range(periods):
        a = policy_fn(obs)
        obs, *_ = env.step(a)
        acts.append(np.asarray(a[0], np.float64))
        q_off.append(env.q[0].copy())
    env.close()
    return np.array(acts), np.array(q_off)


def reach_loop(
    policy_fn, package, ns, ros_node, tmp_path, ros_master, env, obs, starter=None, periods=40
):
    """The Reach2DOF closed loop offline (reach_offline) and live (the exported `package`
    against `asr ros --lockstep`): (actions (periods, 4), offline q (periods, 2), live q, the
    references the node sent (periods, 2, 2))."""
    names, env_dt = list(env.sim.robot.joint_names), env.env_dt
    acts, q_off = reach_offline(policy_fn, env, obs, periods)
    loop = Loop(
        ros_node,
        tmp_path,
        ros_master,
        "qbmove_arm_2dof",
        "horizontal",
        1 / env_dt,
        package,
        ns,
        starter,
    )
    try:
        q_live, refs = loop.run(names, periods)
    finally:
        loop.close()
    return acts, q_off, q_live, refs


# ---------------------------------------------------------------- ROS 2: with `asr ros2`
#
# The exported ROS 2 node steps the live node itself (parameter lockstep): each new joint state
# is answered by one `step` message carrying the references, so every period runs with the
# references computed from the state at its start, as in the offline rollout. A third peer
# (tests/support/ros2_peers/peer_base.Peer, run in .venv-ros2) records the live node's states: it
# resets the live node and sees the reset state on joint_states before the exported node is
# started, so it hears every period; the exported node gets that start state from the latched
# joint_states_latest.

RECORDER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from peer_base import Peer

peer = Peer(sys.argv[2])
start = peer.reset()
print("ready", flush=True)
n = int(sys.argv[3])
peer.wait(lambda: len(peer.states) > start + n, "%d lockstep states" % n)
with peer.cond:
    print(json.dumps([s[:2] for s in peer.states[start : start + n + 1]]), flush=True)
"""
PEERS = str(SUPPORT / "ros2_peers")
LOOP_WAIT_S = 120.0  # start-up of three ROS 2 processes and the loop, on a busy host


def lines_of(proc):
    """A queue of proc's stdout lines (a reader thread: waits with deadlines)."""
    q = queue.Queue()

    def read():
        for line in proc.stdout:
            q.put(line)
        q.put(None)

    threading.Thread(target=read, daemon=True).start()
    return q


def ros2_module_command(package, node="policy_node"):
    """The exported ROS 2 node run from its source folder: (argv, PYTHONPATH)."""
    from tests.support.ros2 import ros2_python

    pkg = os.path.basename(package)
    return [ros2_python(), "-m", f"{pkg}.{node}"], str(package)


def ros2_loop(tmp_path, ns, robot, variant, rate, periods, command, pythonpath, params=()):
    """`periods` periods of the exported ROS 2 node (argv `command`, its PYTHONPATH, without
    asr) in lockstep against `python -m asr.cli ros2 --lockstep`: the states the live node
    published, [(stamp ns, q (J,) rad)] from the start state on (periods + 1)."""
    from tests.support.ros2 import asr_env, bare_env, ros2_python

    python = ros2_python()
    node_env = dict(bare_env(), PYTHONPATH=pythonpath)
    # run away from the source tree (a Python run there imports its asr/ from the cwd)
    run = {"env": node_env, "cwd": tmp_path}
    check = subprocess.run([python, "-c", "import asr"], capture_output=True, **run)
    assert check.returncode and b"No module named 'asr'" in check.stderr  # runs without asr
    logs = {k: tmp_path / f"{ns}_{k}.log" for k in ("live", "recorder", "node")}
    procs = []

    def start(argv, env, log, out=None):
        procs.append(
            subprocess.Popen(
                argv,
                env=env,
                cwd=tmp_path,
                stdout=out or log.open("w"),
                stderr=log.open("w") if out else subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        )
        return procs[-1]

    def get(q, what):
        try:
            line = q.get(timeout=LOOP_WAIT_S)
        except queue.Empty:
            line = None
        if line is None:
            tails = {k: v.read_text()[-1500:] for k, v in logs.items() if v.exists()}
            raise AssertionError(f"no {what} within {LOOP_WAIT_S} s: {tails}")
        return line

    try:
        live = [python, "-m", "asr.cli", "ros2", "--robot", robot, "--variant", variant]
        live += ["--namespace", ns, "--lockstep", "--rate", repr(rate), "--no-clock"]
        start(live, asr_env(), logs["live"])
        rec = start(
            [python, "-c", RECORDER, PEERS, ns, str(periods)],
            bare_env(),
            logs["recorder"],
            subprocess.PIPE,
        )
        out = lines_of(rec)
        assert get(out, "recorder ready line").strip() == "ready"
        ros_args = ["--ros-args", "-r", "__node:=policy_loop", "-r", f"__ns:=/{ns}"]
        ros_args += [x for p in ("lockstep:=true", *params) for x in ("-p", p)]
        start(command + ros_args, node_env, logs["node"])
        states = json.loads(get(out, "recorded states"))
    finally:
        for p in procs:
            stop(p)
    return states
