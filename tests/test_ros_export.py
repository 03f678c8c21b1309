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
import time
import zipfile

import numpy as np
import pytest

from asr.iterative_learning import ILCResult
from asr.ros.export import FORMAT, export_policy, export_zip, policy_data
from tests.conftest import require, require_ros1

NODE_IMPORTS = {"json", "math", "os", "rospy", "sensor_msgs.msg", "std_msgs.msg"}
WAIT_S = 10.0


def fake_ilc(T=40, joints=("joint1", "joint2"), dt=1e-3, settle_s=0.05, seed=0):
    """An ILCResult of one instance with a random learned input (the node only reads input,
    presets, dt and metadata)."""
    rng = np.random.default_rng(seed)
    J = len(joints)
    u = rng.uniform(-1, 1, (1, T, J))
    return ILCResult(input=u, errors=np.zeros((1, 1)), iterations=np.ones(1, int),
                     converged=np.zeros(1, bool), reference=u.copy(), dt=dt, wall_s=0.0,
                     tol=0.1, presets=rng.uniform(0.2, 0.6, (1, J)),
                     metadata={"robot": "qbmove_arm_2dof", "variant": "vertical",
                               "joints": list(joints), "modes": [3] * J,
                               "settle_s": settle_s})


def workspace():
    return {"version": "asr.dashboard/1", "robot": "qbmove_arm_2dof", "variant": "vertical",
            "preset": {"joint1": 0.35, "joint2": 0.5}, "mode": {"joint1": 3, "joint2": 6},
            "params": {"joint1": {"kp": 150.0}},
            "reference": {"joint1": {"kind": "hold", "offset": 0.25, "amplitude": 0.0},
                          "joint2": {"kind": "step", "offset": 0.1, "amplitude": -0.4}},
            "speed": 1.0, "paused": False, "compare": []}


def linear_W(seed=1):
    return np.random.default_rng(seed).normal(0, 0.7, (2, 5))


CASES = {
    "table": lambda: (fake_ilc(), "qbmove_arm_2dof", {}),
    "linear": lambda: ({"mean": linear_W(), "curve": [0.0]}, "pendulum_1dof",
                       {"target": [0.3]}),
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
    assert np.array_equal(np.array(d["values_1"]), res.input[0])     # JSON floats exact
    assert d["ref_2"] == res.presets[0].tolist() and d["start_s"] == 0.05
    w = policy_data(workspace(), "qbmove_arm_2dof")
    assert w["ref_1"] == [0.25, 0.1 - 0.4] and w["ref_2"] == [0.35, 0.5]
    assert w["gains"] == {"joint1": {"kp": 150.0}}
    # a second export replaces the package whole
    export_policy(res, "qbmove_arm_2dof", tmp_path)
    path = export_policy(workspace(), "qbmove_arm_2dof", tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["asr_qbmove_arm_2dof_policy"]
    assert "constant" in open(os.path.join(path, "scripts", "policy_node.json")).read()


@pytest.mark.parametrize("call, exc, words", [
    (lambda p: export_policy(fake_ilc(), "qbmove_arm_2dof", p, package="Bad-Name"),
     ValueError, "package: got 'Bad-Name'"),
    (lambda p: export_policy(fake_ilc(), "qbmove_arm_2dof", p, instance=1),
     ValueError, "instance: got 1, valid range [0, 0]"),
    (lambda p: export_policy(fake_ilc(), "pendulum_1dof", p), ValueError, "learned on"),
    (lambda p: export_policy(np.zeros((2, 4)), "pendulum_1dof", p), ValueError,
     "expected (act_dim, obs_dim + 1) = (2, 5)"),
    (lambda p: export_policy({"mean": linear_W(), "curve": []}, "pendulum_1dof", p,
                             target=[0.1, 0.2]), ValueError, "target: expected 1 values"),
    (lambda p: export_policy("policy.npz", "pendulum_1dof", p), TypeError, "obj: expected"),
    (lambda p: export_policy(dict(workspace(), reference={
        "joint1": {"kind": "sine", "offset": 0.0, "amplitude": 0.2}}), "qbmove_arm_2dof", p),
     ValueError, "kind 'sine' varies in time"),
    (lambda p: export_policy(fake_ilc(), "qbmove_arm_2dof", p, namespace="a b"), ValueError,
     "namespace: got 'a b'"),
    (lambda p: export_policy(fake_ilc(), "../etc", p), ValueError, "robot: got '../etc'"),
])
def test_bad_input(tmp_path, call, exc, words):
    with pytest.raises(exc) as err:
        call(tmp_path)
    assert words in str(err.value)
    assert not os.listdir(tmp_path)  # nothing half-written


# ---------------------------------------------------------------- the node on a real roscore


@pytest.fixture(scope="module")
def ros_node(ros_master, tmp_path_factory):
    """This test process as a rospy node (one per process)."""
    rospy = require_ros1("rospy")
    os.environ.setdefault("ROS_HOME", str(tmp_path_factory.mktemp("ros_home")))
    rospy.init_node("asr_export_test", anonymous=True, disable_signals=True)
    return rospy


def start_node(path, master, log, name):
    from asr.ros.environment import tool_env

    env = tool_env(master)
    env["ROS_HOME"] = str(log.parent)
    return subprocess.Popen(["/usr/bin/python3", os.path.join(path, "scripts", "policy_node.py"),
                             f"__name:={name}"], env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


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
        self.r1 = rospy.Subscriber(f"/{ns}/{robot}/reference_1", Float64MultiArray,
                                   lambda m: self.q.put((1, list(m.data))))
        self.r2 = rospy.Subscriber(f"/{ns}/{robot}/reference_2", Float64MultiArray,
                                   lambda m: self.q.put((2, list(m.data))))
        wait_for(lambda: self.pub.get_num_connections() > 0 and self.r1.get_num_connections()
                 > 0 and self.r2.get_num_connections() > 0, "the node connected", proc, log)

    def send(self, t, names, q, dq):
        """Publish the state at time t (s); the node's (reference_1, reference_2) answer. The
        first state is sent again until the node answers (a message published right after the
        connection is made may be lost); its duplicate answers, equal, are dropped."""
        m = self.JointState(name=list(names), position=list(q), velocity=list(dq))
        m.header.stamp = self.rospy.Time.from_sec(100.0 + t)  # any origin: the node counts from
        first = not self.started                              # its first state
        got = {}
        deadline = time.monotonic() + WAIT_S
        self.pub.publish(m)
        while len(got) < 2:
            try:
                k, v = self.q.get(timeout=0.3)
                got[k] = v
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no command within {WAIT_S} s; "
                                         f"{self.log.read_text()}") from None
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
        for t, k in [(0.0, 0), (0.03, 0)] + [(0.05 + (k + f) * dt, k) for k in (0, 1, 7, 39)
                                             for f in (1e-3, 0.5)] + [(0.2, 39)]:
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
    path = export_policy({"mean": W, "curve": []}, "pendulum_1dof", tmp_path, namespace="cem",
                         target=[target])
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
            np.testing.assert_allclose(np.concatenate([r1, r2]), held, rtol=0, atol=1e-12,
                                       err_msg=f"t = {t}")
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
                subs.append(ros_node.Subscriber(
                    f"/ws/{j}/{topic}", Float64,
                    lambda m, key=(j, topic): got.__setitem__(key, m.data)))
        wait_for(lambda: len(got) == 4, "the latched commands", proc, log)
        assert got == {("joint1", "equilibrium_position"): 0.25,
                       ("joint2", "equilibrium_position"): 0.1 - 0.4,
                       ("joint1", "stiffness_preset"): 0.35, ("joint2", "stiffness_preset"): 0.5}
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
        ws = c.get("/api/workspace").json()
        r = c.get("/api/export.ros.zip")
        assert r.status_code == 200, r.text
        pkg = f"asr_{ws['robot']}_policy"
        assert f'filename="{pkg}.zip"' in r.headers["content-disposition"]
        z = zipfile.ZipFile(io.BytesIO(r.content))
        names = set(z.namelist())
        assert {f"{pkg}/package.xml", f"{pkg}/scripts/policy_node.py",
                f"{pkg}/scripts/policy_node.json"} <= names
        assert z.getinfo(f"{pkg}/scripts/policy_node.py").external_attr >> 16 & 0o111
        import json

        data = json.loads(z.read(f"{pkg}/scripts/policy_node.json"))
        assert data["kind"] == "constant" and data["ref_2"] == [ws["preset"][j]
                                                                for j in data["joints"]]
        # refused (or answered) exactly as the other exports: a page under a foreign name
        # (DNS rebinding) gets 403; a read carries no state change, so Origin is the browser's
        # same-origin rule's business (dashboard/security.py)
        for headers in ({"host": "rebind.example:8000"}, {"origin": "http://evil.example"},
                        {"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:8000"}):
            want = c.get("/api/export.npz", headers=headers).status_code
            got = c.get("/api/export.ros.zip", headers=headers)
            assert got.status_code == want, (headers, got.text)
        assert c.get("/api/export.ros.zip",
                     headers={"host": "rebind.example:8000"}).status_code == 403
        # a workspace the interface cannot express answers 422 naming the reason
        c.post("/api/control", json={"reference": {"joint1": {"kind": "sine", "amplitude": 0.1,
                                                              "frequency": 1.0}}})
        r = c.get("/api/export.ros.zip")
        assert r.status_code == 422 and "varies in time" in r.text


def test_export_zip_roundtrip():
    data = export_zip(fake_ilc(), "qbmove_arm_2dof", package="my_policy")
    z = zipfile.ZipFile(io.BytesIO(data))
    assert "my_policy/launch/policy_node.launch" in z.namelist()
