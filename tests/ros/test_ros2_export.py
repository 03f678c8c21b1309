"""asr.ros.export with ros=2: ament_python packages whose rclpy node runs without asr (in
.venv-ros2, `import asr` failing there), in lockstep with asr's live ROS 2 node
(`python -m asr.cli ros2 --lockstep`); the states the live node published are compared with the
offline asr rollout of the same policy (tests/support/ros_export_loop.py, ros2_loop)."""

import ast
import json
import os
import subprocess

import numpy as np
import pytest

from asr.ros.export import export_policy
from tests.conftest import require_ros1
from tests.support.ros_export import (
    fake_ilc,
    linear_W,
    onnx_deps,
    reach_onnx,
    smooth_ilc,
    workspace,
)
from tests.support.ros_export_loop import reach_offline, ros2_loop, ros2_module_command

CASES = {
    "table": lambda: (fake_ilc(), "qbmove_arm_2dof", {}),
    "linear": lambda: ({"mean": linear_W(), "curve": [0.0]}, "pendulum_1dof", {"target": [0.3]}),
    "constant": lambda: (workspace(), "qbmove_arm_2dof", {}),
}
NODE_IMPORTS = {
    "json",
    "math",
    "os",
    "sys",
    "rclpy",
    "rclpy.executors",
    "rclpy.node",
    "rclpy.qos",
    "rcl_interfaces.msg",
    "sensor_msgs.msg",
    "std_msgs.msg",
}


def imports_of(path):
    names = set()
    for n in ast.walk(ast.parse(open(path).read())):
        if isinstance(n, ast.Import):
            names |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            names.add(n.module)
    return names


@pytest.mark.ros  # catkin_pkg (Debian's python3-catkin-pkg) validates the package.xml
@pytest.mark.parametrize("kind", sorted(CASES))
def test_ros2_package(tmp_path, kind):
    parse_package = require_ros1("catkin_pkg.package").parse_package
    obj, robot, kw = CASES[kind]()
    old_umask = os.umask(0o077)
    try:
        path = export_policy(obj, robot, tmp_path, namespace="arm", ros=2, **kw)
    finally:
        os.umask(old_umask)
    name = f"asr_{robot}_policy"
    pkg = parse_package(os.path.join(path, "package.xml"))
    pkg.validate()
    assert (pkg.package_format, pkg.name) == (3, name)
    assert [d.name for d in pkg.buildtool_depends] == ["ament_python"]
    assert {"rclpy", "std_msgs", "sensor_msgs"} <= {d.name for d in pkg.exec_depends}
    assert [e.content for e in pkg.exports if e.tagname == "build_type"] == ["ament_python"]
    cfg = open(os.path.join(path, "setup.cfg")).read()
    assert (
        f"[develop]\nscript_dir=$base/lib/{name}\n[install]\ninstall_scripts=$base/lib/{name}\n"
        == cfg
    )
    assert os.path.getsize(os.path.join(path, "resource", name)) == 0
    setup = open(os.path.join(path, "setup.py")).read()
    assert f'"policy_node = {name}.policy_node:main"' in setup
    node = os.path.join(path, name, "policy_node.py")
    assert imports_of(node) <= NODE_IMPORTS, imports_of(node) - NODE_IMPORTS
    data = json.load(open(os.path.join(path, name, "policy_node.json")))
    assert (data["kind"], data["namespace"], data["node"]) == (kind, "arm", "policy_node")
    # the launch file: valid Python declaring node_name and ns, which name the node (launch and
    # launch_ros are not installed here: it is parsed, not run)
    tree = ast.parse(open(os.path.join(path, "launch", "policy_node.launch.py")).read())
    calls = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            calls.setdefault(n.func.id, []).append(n)
    declared = {ast.literal_eval(c.args[0]): c for c in calls["DeclareLaunchArgument"]}
    assert set(declared) == {"node_name", "ns", "lockstep", "use_stamps"}
    default = {k: ast.literal_eval(c.keywords[0].value) for k, c in declared.items()}
    assert (default["node_name"], default["ns"]) == ("policy_node", "arm")
    (launched,) = calls["Node"]
    kws = {k.arg: k.value for k in launched.keywords}
    assert ast.literal_eval(kws["executable"]) == "policy_node"
    for kw_name, arg in (("name", "node_name"), ("namespace", "ns")):
        assert ast.unparse(kws[kw_name]) == f"LaunchConfiguration('{arg}')"
    modes = {
        os.path.relpath(os.path.join(root, n), path): os.stat(os.path.join(root, n)).st_mode & 0o777
        for root, dirs, files in os.walk(path)
        for n in dirs + files
    }
    assert {m for k, m in modes.items() if os.path.isdir(os.path.join(path, k))} == {0o755}
    assert {m for k, m in modes.items() if not os.path.isdir(os.path.join(path, k))} == {0o644}


def colcon_like_install(package, prefix):
    """What `colcon build` does with an ament_python package: setup.py install into a prefix
    (with .venv-ros2's setuptools); (the executable, its PYTHONPATH)."""
    from tests.support.ros2 import bare_env, ros2_python

    name = os.path.basename(package)
    run = subprocess.run(
        [ros2_python(), "setup.py", "install", "--prefix", str(prefix)]
        + ["--single-version-externally-managed", "--record", str(prefix / "installed.txt")],
        cwd=package,
        env=bare_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    for rel in (
        f"share/ament_index/resource_index/packages/{name}",
        f"share/{name}/package.xml",
        f"share/{name}/launch/policy_node.launch.py",
        f"lib/python3.11/site-packages/{name}/policy_node.json",
    ):
        assert (prefix / rel).is_file(), rel
    exe = prefix / "lib" / name / "policy_node"  # where `ros2 run` looks
    assert os.access(exe, os.X_OK)
    return [str(exe)], str(prefix / "lib" / "python3.11" / "site-packages")


@pytest.mark.ros2
@pytest.mark.slow
def test_ros2_closed_loop_ilc_table(tmp_path):
    """The ILC time table, installed as colcon would and run as `ros2 run` would, drives the
    live node; its states equal the offline rollout of the table to the bit."""
    robot, variant = "qbmove_arm_2dof", "vertical"
    res, table, q_off = smooth_ilc(robot)
    package = export_policy(res, robot, tmp_path / "src", namespace="elsewhere", ros=2)
    command, pythonpath = colcon_like_install(package, tmp_path / "install")
    periods = len(table)
    states = ros2_loop(
        tmp_path, "loop2_ilc", robot, variant, 1 / res.dt, periods, command, pythonpath
    )
    assert [st[0] for st in states] == [k * 1_000_000 for k in range(periods + 1)]  # 1 ms periods
    q_live = np.array([st[1] for st in states[1:]])
    assert np.array_equal(q_live, q_off), np.max(np.abs(q_live - q_off))


def reach_ros2(tmp_path, policy_fn, obj, ns, periods=40):
    """The Reach2DOF loop of an exported linear or ONNX policy (obj) offline and against
    `asr ros2 --lockstep`: (offline actions (periods, 4), offline q (periods, 2), live q)."""
    from asr.envs.tasks import Reach2DOF

    env = Reach2DOF(1)
    obs, _ = env.reset(seed=4)
    target, env_dt = env.target[0].copy(), env.env_dt
    package = export_policy(obj, "qbmove_arm_2dof", tmp_path / "src", target=[0.0, 0.0], ros=2)
    acts, q_off = reach_offline(policy_fn, env, obs, periods)
    command, pythonpath = ros2_module_command(package)
    target_param = f"target:=[{', '.join(repr(float(v)) for v in target)}]"  # the parameter
    states = ros2_loop(
        tmp_path,
        ns,
        "qbmove_arm_2dof",
        "horizontal",
        1 / env_dt,
        periods,
        command,
        pythonpath,
        params=(target_param,),
    )
    assert [st[0] for st in states] == [k * 20_000_000 for k in range(periods + 1)]  # 20 ms
    return acts, q_off, np.array([st[1] for st in states[1:]])


@pytest.mark.ros2
@pytest.mark.slow
def test_ros2_closed_loop_linear_policy(tmp_path):
    from asr.envs.cem import linear_policy
    from asr.envs.tasks import Reach2DOF

    W = np.random.default_rng(5).normal(0, 0.5, (4, 9))
    space = Reach2DOF.single_action_space
    acts, q_off, q_live = reach_ros2(
        tmp_path,
        lambda o: linear_policy(W[None], o, space.low, space.high),
        {"mean": W, "curve": []},
        "loop2_cem",
    )
    # the node's plain-Python arithmetic (math.fsum, math.tanh) against NumPy's: a few ulp
    err = np.max(np.abs(q_live - q_off))
    assert err <= 1e-9, err
    assert np.ptp(q_off) > 0.05  # the arm moved


@pytest.mark.ros2
@pytest.mark.slow
def test_ros2_closed_loop_onnx_policy(tmp_path):
    onnx_deps()
    from asr.envs.tasks import Reach2DOF
    from asr.rl.onnx_policy import OnnxPolicy

    policy = OnnxPolicy(reach_onnx(tmp_path), env=Reach2DOF)
    acts, q_off, q_live = reach_ros2(tmp_path, policy, policy, "loop2_onnx")
    err = np.max(np.abs(q_live - q_off))
    print(f"\nROS 2 ONNX node in lockstep vs asr rollout, {len(acts)} env steps: q {err:.1e} rad")
    assert err <= 1e-9, err  # same onnxruntime and NumPy versions (make ros2 pins them)
    assert np.ptp(q_off) > 0.1  # the arm moved
    assert np.any(acts == np.float32(0.59999996))  # the clip inside the graph is exercised


@pytest.mark.ros2
def test_ros2_node_refuses_bad_parameters(tmp_path):
    """A parameter out of range ends the node at start with one line naming the parameter,
    the value and the valid range (exit 2), not a traceback."""
    from tests.support.ros2 import bare_env

    obj, robot, kw = CASES["linear"]()
    package = export_policy(obj, robot, tmp_path, ros=2, **kw)
    command, pythonpath = ros2_module_command(package)
    for param, words in (
        (
            "target:=[0.1, 0.2]",
            "target: got [0.1, 0.2], valid: 1 finite values (rad, one per joint)",
        ),
        ("target:=.nan", "target: got nan, valid: 1 finite values"),
        ("target:=abc", "target: got 'abc', valid: 1 finite values"),
    ):
        run = subprocess.run(
            command + ["--ros-args", "-p", param],
            env=dict(bare_env(), PYTHONPATH=pythonpath),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 2 and words in run.stderr, (param, run.stderr[-2000:])
        assert "Traceback" not in run.stderr
