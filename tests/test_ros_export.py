"""asr.ros.export: policies (ILC time tables, CEM linear policies, dashboard workspaces) exported as
catkin ROS 1 packages whose rospy node speaks the toolbox interface [Mengacci2021]. The package
is checked with catkin_pkg (Debian's python3-catkin-pkg, the parser catkin itself uses); the
node is run with the system's /usr/bin/python3 (as a ROS user runs it, no asr on its path) on a
real roscore, and its commands are compared with the policy's outputs computed by asr."""

import ast
import io
import os
import queue
import subprocess
import sys
import threading
import time
import zipfile

import numpy as np
import pytest
from conftest import require, require_ros1

from asr.iterative_learning import ILCResult
from asr.ros.export import FORMAT, export_policy, export_zip, policy_data

pytestmark = pytest.mark.ros

NODE_IMPORTS = {"json", "math", "os", "rospy", "sensor_msgs.msg", "std_msgs.msg"}
WAIT_S = 10.0
ASR_CLI = os.path.join(os.path.dirname(sys.executable), "asr")


def fake_ilc(T=40, joints=("joint1", "joint2"), dt=1e-3, settle_s=0.05, seed=0):
    """An ILCResult of one instance with a random learned input (the node only reads input,
    presets, dt and metadata)."""
    rng = np.random.default_rng(seed)
    J = len(joints)
    u = rng.uniform(-1, 1, (1, T, J))
    return ILCResult(
        input=u,
        errors=np.zeros((1, 1)),
        iterations=np.ones(1, int),
        converged=np.zeros(1, bool),
        reference=u.copy(),
        dt=dt,
        wall_s=0.0,
        tol=0.1,
        presets=rng.uniform(0.2, 0.6, (1, J)),
        metadata={
            "robot": "qbmove_arm_2dof",
            "variant": "vertical",
            "joints": list(joints),
            "modes": [3] * J,
            "settle_s": settle_s,
        },
    )


def workspace():
    return {
        "version": "asr.dashboard/1",
        "robot": "qbmove_arm_2dof",
        "variant": "vertical",
        "preset": {"joint1": 0.35, "joint2": 0.5},
        "mode": {"joint1": 3, "joint2": 6},
        "params": {"joint1": {"kp": 150.0}},
        "reference": {
            "joint1": {"kind": "hold", "offset": 0.25, "amplitude": 0.0},
            "joint2": {"kind": "step", "offset": 0.1, "amplitude": -0.4},
        },
        "speed": 1.0,
        "paused": False,
        "compare": [],
    }


def linear_W(seed=1):
    return np.random.default_rng(seed).normal(0, 0.7, (2, 5))


CASES = {
    "table": lambda: (fake_ilc(), "qbmove_arm_2dof", {}),
    "linear": lambda: ({"mean": linear_W(), "curve": [0.0]}, "pendulum_1dof", {"target": [0.3]}),
    "constant": lambda: (workspace(), "qbmove_arm_2dof", {}),
}


# ---------------------------------------------------------------- the package


@pytest.mark.parametrize("kind", sorted(CASES))
def test_package_validates(tmp_path, kind):
    parse_package = require_ros1("catkin_pkg.package").parse_package
    obj, robot, kw = CASES[kind]()
    path = export_policy(obj, robot, tmp_path, namespace="arm", **kw)
    assert os.path.basename(path) == f"asr_{robot}_policy"
    pkg = parse_package(os.path.join(path, "package.xml"))  # raises on format violations
    pkg.validate()
    assert pkg.package_format == 2 and pkg.name == f"asr_{robot}_policy"
    assert [d.name for d in pkg.buildtool_depends] == ["catkin"]
    for dep in ("rospy", "std_msgs", "sensor_msgs"):
        assert dep in [d.name for d in pkg.build_depends]
        assert dep in [d.name for d in pkg.exec_depends]
    cmake = open(os.path.join(path, "CMakeLists.txt")).read()
    assert "catkin_install_python(PROGRAMS scripts/policy_node.py" in cmake
    import xml.etree.ElementTree as ET

    node = ET.parse(os.path.join(path, "launch", "policy_node.launch")).getroot().find("node")
    assert (node.get("pkg"), node.get("type")) == (pkg.name, "policy_node.py")
    script = os.path.join(path, "scripts", "policy_node.py")
    assert os.access(script, os.X_OK)
    src = open(script).read()
    assert src.startswith("#!/usr/bin/env python3\n")
    imported = set()
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, ast.Import):
            imported |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            imported.add(n.module)
    assert imported <= NODE_IMPORTS, imported - NODE_IMPORTS
    import json

    data = json.load(open(os.path.join(path, "scripts", "policy_node.json")))
    assert data["format"] == FORMAT and data["kind"] == kind and data["namespace"] == "arm"


def test_exported_values(tmp_path):
    res = fake_ilc()
    d = policy_data(res, "qbmove_arm_2dof")
    assert np.array_equal(np.array(d["values_1"]), res.input[0])  # JSON floats exact
    assert d["ref_2"] == res.presets[0].tolist() and d["start_s"] == 0.05
    w = policy_data(workspace(), "qbmove_arm_2dof")
    assert w["ref_1"] == [0.25, 0.1 - 0.4] and w["ref_2"] == [0.35, 0.5]
    assert w["gains"] == {"joint1": {"kp": 150.0}}
    # a second export replaces the package whole
    export_policy(res, "qbmove_arm_2dof", tmp_path)
    path = export_policy(workspace(), "qbmove_arm_2dof", tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["asr_qbmove_arm_2dof_policy"]
    assert "constant" in open(os.path.join(path, "scripts", "policy_node.json")).read()


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (
            lambda p: export_policy(fake_ilc(), "qbmove_arm_2dof", p, package="Bad-Name"),
            ValueError,
            "package: got 'Bad-Name'",
        ),
        (
            lambda p: export_policy(fake_ilc(), "qbmove_arm_2dof", p, instance=1),
            ValueError,
            "instance: got 1, valid range [0, 0]",
        ),
        (lambda p: export_policy(fake_ilc(), "pendulum_1dof", p), ValueError, "learned on"),
        (
            lambda p: export_policy(np.zeros((2, 4)), "pendulum_1dof", p),
            ValueError,
            "expected (act_dim, obs_dim + 1) = (2, 5)",
        ),
        (
            lambda p: export_policy(
                {"mean": linear_W(), "curve": []}, "pendulum_1dof", p, target=[0.1, 0.2]
            ),
            ValueError,
            "target: expected 1 values",
        ),
        (lambda p: export_policy("policy.npz", "pendulum_1dof", p), TypeError, "obj: expected"),
        (
            lambda p: export_policy(
                dict(
                    workspace(),
                    reference={"joint1": {"kind": "sine", "offset": 0.0, "amplitude": 0.2}},
                ),
                "qbmove_arm_2dof",
                p,
            ),
            ValueError,
            "kind 'sine' varies in time",
        ),
        (
            lambda p: export_policy(dict(workspace(), mode={"joint1": 5}), "qbmove_arm_2dof", p),
            ValueError,
            "'joint1' in mode 5",
        ),
        (
            lambda p: export_policy(fake_ilc(), "qbmove_arm_2dof", p, namespace="a b"),
            ValueError,
            "namespace: got 'a b'",
        ),
        (lambda p: export_policy(fake_ilc(), "../etc", p), ValueError, "robot: got '../etc'"),
    ],
)
def test_bad_input(tmp_path, call, exc, words):
    with pytest.raises(exc) as err:
        call(tmp_path)
    assert words in str(err.value)
    assert not os.listdir(tmp_path)  # nothing half-written


# ---------------------------------------------------------------- the node on a real roscore


@pytest.fixture(scope="module")
def ros_node(rospy_node):
    """This test process as a rospy node (conftest's, shared by every module)."""
    return rospy_node


def start_node(path, master, log, name, remap=()):
    """The exported node as a ROS user runs it: Debian's python3, ROS tools' environment."""
    from asr.ros.environment import tool_env

    env = tool_env(master)
    env["ROS_HOME"] = str(log.parent)
    return subprocess.Popen(
        [
            "/usr/bin/python3",
            os.path.join(path, "scripts", "policy_node.py"),
            f"__name:={name}",
            *remap,
        ],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc):
    import signal

    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    except ProcessLookupError:
        pass


def wait_for(cond, what, proc, log):
    deadline = time.monotonic() + WAIT_S
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(f"the node exited ({proc.returncode}): {log.read_text()[-2000:]}")
        assert time.monotonic() < deadline, f"{what} within {WAIT_S} s; log: {log.read_text()}"
        time.sleep(0.02)


class Probe:
    """Publishes JointState on <ns>/joint_states and collects the node's robot-level references."""

    def __init__(self, rospy, ns, robot, proc, log):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self.rospy, self.JointState, self.proc, self.log = rospy, JointState, proc, log
        self.q = queue.Queue()
        self.started = False
        self.pub = rospy.Publisher(f"/{ns}/joint_states", JointState, queue_size=100)
        self.r1 = rospy.Subscriber(
            f"/{ns}/{robot}/reference_1", Float64MultiArray, lambda m: self.q.put((1, list(m.data)))
        )
        self.r2 = rospy.Subscriber(
            f"/{ns}/{robot}/reference_2", Float64MultiArray, lambda m: self.q.put((2, list(m.data)))
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
        probe = Probe(ros_node, "ilc", "qbmove_arm_2dof", proc, log)
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
        probe = Probe(ros_node, "cem", "pendulum_1dof", proc, log)
        held = None
        # env steps every frame_skip * dt = 20 ms; states between them get the held action
        for t in (0.0, 0.001, 0.0195, 0.02, 0.021, 0.04, 0.06, 0.0799):
            q, dq = rng.uniform(-1, 1), rng.uniform(-3, 3)
            r1, r2 = probe.send(t, ["joint"], [q], [dq])
            if held is None or round(t / 0.02, 9) % 1 == 0:
                env.q[:] = q
                env.qd[:] = dq
                env.target[:] = target
                held = linear_policy(W[None], env._observe(), low, high)[0]
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


# ---------------------------------------------------------------- the dashboard's export


def test_dashboard_export_route():
    require("fastapi")
    require("httpx")
    from fastapi.testclient import TestClient

    from dashboard.app import create_app
    from dashboard.settings import Settings

    with TestClient(create_app(Settings()), base_url="http://127.0.0.1") as c:
        # the first view swings every joint (a sine: a trajectory, refused by this export, which
        # says to export an ILC result instead); held references export as a constant policy
        r = c.post("/api/export.ros.zip")
        assert r.status_code == 422 and "varies in time" in r.json()["detail"]
        hold = {"kind": "hold", "amplitude": 0.0, "offset": 0.0}
        r = c.post("/api/control", json={"reference": {"joint1": hold, "joint2": hold}})
        assert r.status_code == 200, r.text
        ws = c.get("/api/workspace").json()
        r = c.post("/api/export.ros.zip")
        assert r.status_code == 200, r.text
        pkg = f"asr_{ws['robot']}_policy"
        assert f'filename="{pkg}.zip"' in r.headers["content-disposition"]
        z = zipfile.ZipFile(io.BytesIO(r.content))
        names = set(z.namelist())
        assert {
            f"{pkg}/package.xml",
            f"{pkg}/scripts/policy_node.py",
            f"{pkg}/scripts/policy_node.json",
        } <= names
        assert z.getinfo(f"{pkg}/scripts/policy_node.py").external_attr >> 16 & 0o111
        import json

        data = json.loads(z.read(f"{pkg}/scripts/policy_node.json"))
        assert data["kind"] == "constant" and data["ref_2"] == [
            ws["preset"][j] for j in data["joints"]
        ]
        # refused (or answered) exactly as the other exports: a page under a foreign name
        # (DNS rebinding) or from a foreign Origin gets 403 (an export is a POST: work only the
        # dashboard's own page may start, dashboard/security.py)
        for headers in (
            {"host": "rebind.example:8000"},
            {"origin": "http://evil.example"},
            {"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:8000"},
        ):
            want = c.post("/api/export.npz", headers=headers).status_code
            got = c.post("/api/export.ros.zip", headers=headers)
            assert got.status_code == want, (headers, got.text)
        assert (
            c.post("/api/export.ros.zip", headers={"host": "rebind.example:8000"}).status_code
            == 403
        )
        # a workspace the interface cannot express answers 422 naming the reason
        c.post(
            "/api/control",
            json={"reference": {"joint1": {"kind": "sine", "amplitude": 0.1, "frequency": 1.0}}},
        )
        r = c.post("/api/export.ros.zip")
        assert r.status_code == 422 and "varies in time" in r.text


def test_export_zip_roundtrip():
    data = export_zip(fake_ilc(), "qbmove_arm_2dof", package="my_policy")
    z = zipfile.ZipFile(io.BytesIO(data))
    assert "my_policy/launch/policy_node.launch" in z.namelist()


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
            remap = [f"/{ns}/{robot}/reference_{i}:=/{ns}/harness/reference_{i}" for i in (1, 2)]
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


def test_closed_loop_ilc_table(ros_node, ros_master, tmp_path):
    import asr

    live_node()
    robot, variant = "qbmove_arm_2dof", "vertical"
    sim = asr.Sim(robot, 1)  # a fresh Sim: the live node's start state (the table
    # starts there)
    q0, dt = sim.q[0].copy(), sim.dt
    names = list(sim.robot.joint_names)
    T, settle_s = 150, 0.05
    s = np.linspace(0, 1, T)[:, None]
    u = q0[None, :] + np.array([0.6, -0.4]) * (10 * s**3 - 15 * s**4 + 6 * s**5)
    res = fake_ilc(T=T, joints=names, dt=dt, settle_s=settle_s)
    res.input[0] = u
    package = export_policy(res, robot, tmp_path / "src", namespace="loop_ilc")
    settle = int(round(settle_s / dt))
    periods = settle + T + 20  # past the end: the last sample held
    loop = Loop(ros_node, tmp_path, ros_master, robot, variant, 1 / dt, package, "loop_ilc")
    try:
        q_live, refs = loop.run(names, periods)
    finally:
        loop.close()
    # offline: the table as ilc applies it (settle at sample 0, one sample per step, then held)
    k = np.clip(np.arange(periods) - settle, 0, T - 1)
    table = np.stack([u[k], np.broadcast_to(res.presets[0], (periods, 2))], axis=-1)
    assert np.array_equal(refs, table)  # the node played the table exactly
    q_off = asr.Sim(robot, 1).rollout(periods, table[None], record=("q",))["q"][0]
    assert np.max(np.abs(q_live - q_off)) <= 1e-9, np.max(np.abs(q_live - q_off))
    assert np.ptp(q_off[:, 0]) > 0.1  # the arm moved: the comparison means something


def test_closed_loop_linear_policy(ros_node, ros_master, tmp_path):
    from asr.envs.cem import linear_policy
    from asr.envs.tasks import Reach2DOF

    live_node()
    env = Reach2DOF(1)
    obs, _ = env.reset(seed=4)
    target = env.target[0].copy()
    W = np.random.default_rng(5).normal(0, 0.5, (4, 9))
    low, high = env.single_action_space.low, env.single_action_space.high
    package = export_policy(
        {"mean": W, "curve": []},
        "qbmove_arm_2dof",
        tmp_path / "src",
        namespace="loop_cem",
        target=target,
    )
    acts, q_off, q_live, refs = reach_loop(
        lambda o: linear_policy(W[None], o, low, high),
        package,
        "loop_cem",
        ros_node,
        tmp_path,
        ros_master,
        env,
        obs,
    )
    np.testing.assert_allclose(
        refs, np.stack([acts[:, :2], acts[:, 2:]], axis=-1), rtol=0, atol=1e-9
    )
    err = np.max(np.abs(q_live - q_off))
    assert err <= 1e-9, err


# ---------------------------------------------------------------- ONNX policies (asr.rl)
#
# The exported ONNX node needs numpy and onnxruntime, which Debian's python3 lacks: it is run
# with this venv's Python (numpy, onnxruntime) with the system's ROS packages appended to
# sys.path after the venv's own (asr.ros.environment.ros1 does the same), through runpy so the
# script runs as __main__ with its own argv (remappings, __name).


def onnx_deps():
    for m in ("torch", "stable_baselines3", "onnx", "onnxscript", "onnxruntime"):
        require(m)
    import torch

    torch.set_num_threads(1)


def reach_onnx(tmp_path):
    """An exported Reach2DOF PPO policy (untrained, its action layer scaled up so that it moves
    the arm and leaves the action Box), as asr.rl.export_onnx writes it."""
    import torch
    from test_rl_onnx import make_model

    from asr.rl.onnx_policy import export_onnx

    model, venv = make_model("asr/Reach2DOF-v0", 0, seed=2)
    with torch.no_grad():
        model.policy.action_net.weight.mul_(300.0)
    return export_onnx(model, tmp_path / "reach.onnx", vec_normalize=venv)


def start_onnx_node(path, master, log, name, remap=()):
    from asr.ros.environment import DIST_PACKAGES, tool_env

    env = tool_env(master)
    env["ROS_HOME"] = str(log.parent)
    code = (
        "import runpy, sys; sys.path.append(sys.argv[1]); sys.argv = sys.argv[2:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            DIST_PACKAGES,
            os.path.join(path, "scripts", "policy_node.py"),
            f"__name:={name}",
            *remap,
        ],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_onnx_package(tmp_path):
    onnx_deps()
    parse_package = require_ros1("catkin_pkg.package").parse_package
    import json
    import xml.etree.ElementTree as ET

    from asr.rl.onnx_policy import OnnxPolicy

    onnx_path = reach_onnx(tmp_path)
    for obj in (onnx_path, OnnxPolicy(onnx_path)):
        path = export_policy(
            obj, "qbmove_arm_2dof", tmp_path / "src", namespace="arm", target=[0.1, -0.2]
        )
        pkg = parse_package(os.path.join(path, "package.xml"))
        pkg.validate()
        assert "python3-numpy" in [x.name for x in pkg.exec_depends]
        assert (
            open(os.path.join(path, "scripts", "policy_node.onnx"), "rb").read()
            == open(onnx_path, "rb").read()
        )
        assert "policy_node.onnx" in open(os.path.join(path, "CMakeLists.txt")).read()
        assert "onnxruntime" in open(os.path.join(path, "README.md")).read()
        node = ET.parse(os.path.join(path, "launch", "policy_node.launch")).getroot()
        assert node.find("node").get("launch-prefix") == "$(arg python)"
        d = json.load(open(os.path.join(path, "scripts", "policy_node.json")))
        assert (d["kind"], d["task"], d["onnx"], d["target"]) == (
            "onnx",
            "Reach2DOF",
            "policy_node.onnx",
            [0.1, -0.2],
        )
        assert d["metadata"]["task_id"] == "asr/Reach2DOF-v0" and d["env_dt"] == 0.02
        assert "import onnxruntime" in open(os.path.join(path, "scripts", "policy_node.py")).read()
    # (the other kinds' nodes stay free of numpy / onnxruntime: test_package_validates)
    with pytest.raises(ValueError, match="exported for 'qbmove_arm_2dof'"):
        export_policy(onnx_path, "pendulum_1dof", tmp_path / "bad")
    from asr.envs.tasks import EquilibriumTracking

    with pytest.raises(
        ValueError,
        match="EquilibriumTracking has observation size 4 and action "
        "size 2.*size 8 and gives actions of size 4",
    ):
        OnnxPolicy(onnx_path).check_task(EquilibriumTracking)  # what _from_onnx calls
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00junk")
    with pytest.raises(ValueError, match="junk.onnx"):
        export_policy(junk, "qbmove_arm_2dof", tmp_path / "bad")
    assert not os.path.exists(tmp_path / "bad") or not os.listdir(tmp_path / "bad")


def test_closed_loop_onnx_policy(ros_node, ros_master, tmp_path):
    """The exported ONNX node against `asr ros --lockstep` reproduces the asr rollout of the same
    OnnxPolicy (the Loop harness above; its node started with start_onnx_node)."""
    onnx_deps()
    from asr.envs.tasks import Reach2DOF
    from asr.rl.onnx_policy import OnnxPolicy

    live_node()
    policy = OnnxPolicy(reach_onnx(tmp_path), env=Reach2DOF)
    env = Reach2DOF(1)
    obs, _ = env.reset(seed=4)
    target = env.target[0].copy()
    package = export_policy(
        policy, "qbmove_arm_2dof", tmp_path / "src", namespace="loop_onnx", target=target
    )
    acts, q_off, q_live, refs = reach_loop(
        policy,
        package,
        "loop_onnx",
        ros_node,
        tmp_path,
        ros_master,
        env,
        obs,
        starter=start_onnx_node,
    )
    periods = len(acts)
    da = np.max(np.abs(refs - np.stack([acts[:, :2], acts[:, 2:]], axis=-1)))
    err = np.max(np.abs(q_live - q_off))
    print(
        f"\nONNX node in lockstep vs asr rollout, {periods} env steps: references {da:.1e}, "
        f"q {err:.1e} rad"
    )
    assert da <= 1e-9, da
    assert err <= 1e-9, err
    assert np.ptp(q_off) > 0.1  # the arm moved
    assert np.any(acts == np.float32(0.59999996))  # the clip inside the graph is exercised
