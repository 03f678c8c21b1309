"""The closed loop of an exported node with `asr ros --lockstep` (tests/test_ros_export_loop.py
and tests/test_ros_export_onnx.py)."""

import os
import queue
import subprocess
import threading
import time

import numpy as np
from _ros_export_helpers import ASR_CLI, WAIT_S, start_node, stop
from conftest import require

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


def reach_loop(
    policy_fn, package, ns, ros_node, tmp_path, ros_master, env, obs, starter=None, periods=40
):
    """The Reach2DOF closed loop offline (policy_fn on env for `periods` env steps of 20 ms)
    and live (the exported `package` against `asr ros --lockstep`): (actions (periods, 4),
    offline q (periods, 2), live q, the references the node sent (periods, 2, 2))."""
    q_off, acts = [], []
    for _ in range(periods):
        a = policy_fn(obs)
        obs, *_ = env.step(a)
        acts.append(np.asarray(a[0], np.float64))
        q_off.append(env.q[0].copy())
    names, env_dt = list(env.sim.robot.joint_names), env.env_dt
    env.close()
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
    return np.array(acts), np.array(q_off), q_live, refs
