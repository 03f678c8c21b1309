"""asr's node as the ament_python package asr_ros2 (`asr ros2-package`, asr.ros.ament_node):
colcon (.venv-ros2's, as asr/ros/interfaces/build.py runs it) builds it; the installed asr_node,
run as `ros2 run` runs it, is seen on the ROS 2 graph by a bare rclpy peer and stops on SIGINT
with 0; a bad option exits 2. The launch file, which needs launch_ros (not on PyPI), is read
with ast: one launch argument per `asr ros2` option, each passed to the node."""

import ast
import runpy
import signal
import subprocess
import sys
import types
import xml.etree.ElementTree as ET

import pytest

from asr.cli import main, ros2_parser
from asr.ros.ament_node import EXECUTABLE, LAUNCH, MESSAGES, PACKAGE, node_argv, options
from tests.support.paths import ROOT
from tests.support.ros2 import ROS2_VENV, asr_env, ros2_interfaces, ros2_python, run_peer
from tests.support.ros2_node import RATE, ROBOT

BUILD_PY = ROOT / "asr" / "ros" / "interfaces" / "build.py"


def write_package(tmp_path):
    assert main(["ros2-package", str(tmp_path / "src")]) == 0
    return tmp_path / "src" / PACKAGE


@pytest.fixture(scope="module")
def install(tmp_path_factory):
    """colcon build of the written package into a tmp install (its path)."""
    ros2_python()
    ros2_interfaces()
    tmp = tmp_path_factory.mktemp("ament")
    write_package(tmp)
    env = runpy.run_path(str(BUILD_PY))["build_env"](ROS2_VENV)
    cmd = [str(ROS2_VENV / "bin" / "colcon"), "--log-base", str(tmp / "log"), "build"]
    cmd += ["--base-paths", str(tmp / "src"), "--build-base", str(tmp / "build")]
    cmd += ["--install-base", str(tmp / "install"), "--merge-install"]
    proc = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp / "install"


def node_env(install):
    """asr_env() with the install on the paths, as `source install/setup.bash` puts it."""
    env = asr_env()
    site = sorted(install.glob("lib/python3*/site-packages"))[-1]
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    env["AMENT_PREFIX_PATH"] = f"{install}:{env['AMENT_PREFIX_PATH']}"
    return env


@pytest.mark.ros2
def test_colcon_installs_the_executable_launch_file_and_index(install):
    exe = install / "lib" / PACKAGE / EXECUTABLE
    assert exe.is_file() and exe.stat().st_mode & 0o111, exe
    share = install / "share" / PACKAGE
    xml = ET.parse(share / "package.xml").getroot()
    assert xml.findtext("name") == PACKAGE
    depends = [e.text for e in xml.iter("exec_depend")]
    assert sorted(set(depends)) == sorted(depends)  # each once
    assert {"rclpy", "launch", "launch_ros", *MESSAGES} <= set(depends)
    assert (install / "share" / "ament_index" / "resource_index" / "packages" / PACKAGE).is_file()
    assert (share / "launch" / LAUNCH).is_file()


@pytest.mark.ros2
def test_installed_asr_node_runs_asr_ros2_on_the_graph(install, tmp_path):
    exe = install / "lib" / PACKAGE / EXECUTABLE
    ns = "ament_x"
    args = ["--robot", ROBOT, f"--rate={RATE}", "--namespace", ns, "--lean=true"]
    args += ["--variant=", "--ros-args", "--log-level", "warn"]  # what ros2 run / launch add
    with open(tmp_path / "node.stderr", "w") as err:
        proc = subprocess.Popen(
            [str(exe), *args], env=node_env(install), stdout=subprocess.DEVNULL, stderr=err
        )
        try:
            got = run_peer("graph_probe.py", "asr", f"/{ns}", f"/{ns}/joint_states")
        finally:
            proc.send_signal(signal.SIGINT)
            code = proc.wait(20)
    log = (tmp_path / "node.stderr").read_text()
    assert code == 0, log[-3000:]
    assert got["found"] and got["publishes"], got


@pytest.mark.ros2
def test_installed_asr_node_bad_option_exits_2(install):
    exe = install / "lib" / PACKAGE / EXECUTABLE
    proc = subprocess.run(
        [str(exe), "--bogus", "1"], env=node_env(install), capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "unrecognized arguments: --bogus 1" in proc.stderr


def fake_launch_modules():
    """{module name: stand-in} for launch and launch_ros (not on PyPI): each class records its
    call as (class name, args, kwargs), enough to run generate_launch_description()."""
    mods = {}
    where = {
        "launch": ["LaunchDescription"],
        "launch.actions": ["DeclareLaunchArgument"],
        "launch.substitutions": ["LaunchConfiguration"],
        "launch_ros.actions": ["Node"],
    }
    for module, names in where.items():
        mod = types.ModuleType(module)
        for name in names:
            setattr(mod, name, lambda *a, _n=name, **k: (_n, a, k))
        mods[module] = mod
    mods["launch_ros"] = types.ModuleType("launch_ros")
    return mods


def test_launch_file_declares_and_passes_every_asr_ros2_option(tmp_path, monkeypatch):
    text = (write_package(tmp_path) / "launch" / LAUNCH).read_text()
    tree = ast.parse(text)
    (table,) = [n.value for n in tree.body if isinstance(n, ast.Assign)]
    want = {a.dest for a in ros2_parser()._actions if a.option_strings and a.dest != "help"}
    assert {"robot", "rate", "namespace", "lockstep", "no_clock", "lean"} <= want
    assert {row[0] for row in ast.literal_eval(table)} == want
    # run it with stand-ins for launch / launch_ros: what it would hand to ros2 launch
    for name, mod in fake_launch_modules().items():
        monkeypatch.setitem(sys.modules, name, mod)
    scope = {}
    exec(compile(text, LAUNCH, "exec"), scope)
    kind, (items,), _ = scope["generate_launch_description"]()
    assert kind == "LaunchDescription"
    *declared, node = items
    config = ros2_parser().parse_args([])
    got = {a[0]: k["default_value"] for kind, a, k in declared if kind == "DeclareLaunchArgument"}
    assert len(got) == len(declared) and set(got) == want
    for dest, default in got.items():  # each default read back gives the parser's default
        back = node_argv(ros2_parser(), [f"--{dest.replace('_', '-')}={default}"])
        assert getattr(ros2_parser().parse_args(back), dest) == getattr(config, dest), dest
    kind, _, k = node
    assert (kind, k["package"], k["executable"]) == ("Node", PACKAGE, EXECUTABLE)
    assert k["namespace"] == ("LaunchConfiguration", ("namespace",), {})
    passed = {(opt, sub[1][0]) for opt, sub in k["arguments"]}
    assert passed == {(o + "=", d) for d, o, *_ in options(ros2_parser())}


def test_node_argv_reads_launch_forms_and_leaves_ros_args():
    argv = ["--robot=r", "--variant=", "--lockstep=true", "--lean=false", "--no-clock=1"]
    argv += ["--rate", "5", "--ros-args", "-r", "__ns:=/a", "--", "--name=n", "--ros-args", "-p"]
    got = node_argv(ros2_parser(), argv)
    assert got == ["--robot=r", "--lockstep", "--no-clock", "--rate", "5", "--name=n"]
    args = ros2_parser().parse_args(got)
    assert (args.robot, args.variant, args.lockstep, args.lean, args.rate) == (
        "r", None, True, False, 5.0,
    )  # fmt: skip
