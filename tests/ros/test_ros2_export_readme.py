"""The README of an exported ROS 2 package gives commands that work with what it says to install:
every command of its "from PyPI" section is run here as written, in a fresh virtual environment
(of .venv-ros2's Python, seeing its Jazzy wheels) from the package folder, each node command
seen on the ROS 2 graph by a bare rclpy peer; the commands PyPI's wheels cannot run (colcon,
ros2 launch / run) stand only in the section for a full ROS 2 install."""

import re
import signal
import subprocess
from pathlib import Path

import pytest

from asr.ros.export import export_policy
from tests.support.readme_commands import activate_env, overlay_venv, readme_commands
from tests.support.ros2 import bare_env, ros2_python, run_peer
from tests.support.ros_export import fake_ilc, onnx_deps, reach_onnx, workspace

PYPI = "## Run with ROS 2 Jazzy from PyPI"
FULL = "## With a full ROS 2 Jazzy install"
CASES = {
    # the constant policy latches joint1's equilibrium (its workspace "hold" 0.25 rad) at start
    "constant": (lambda tmp: (workspace(), {}), "joint1/equilibrium_position", 0.25),
    "table": (lambda tmp: (fake_ilc(), {}), "reference_1", None),
    # its README also installs numpy and onnxruntime
    "onnx": (lambda tmp: (reach_onnx(tmp), {"target": [0.1, -0.2]}), "reference_1", None),
}


def ros_arg(command, key, default):
    m = re.search(rf"\b{key}:=(\S+)", command)
    return m.group(1) if m else default


def run_node_command(command, cwd, env, published, expect, tmp_path):
    """Start a node command of the README; the peer finds it (name and namespace from its
    --ros-args remaps), publishing `published` (lockstep: `step`), then SIGINT ends it with 0."""
    ns = ros_arg(command, "__ns", "/")
    name = ros_arg(command, "__node", "policy_node")
    lockstep = ros_arg(command, "lockstep", "false") == "true"
    topic = "/".join(p for p in (ns.rstrip("/"), "step" if lockstep else published))
    log = tmp_path / f"node_{name}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["bash", "-c", command], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        args = [name, ns, topic] + ([repr(expect)] if expect is not None and not lockstep else [])
        got = run_peer("graph_probe.py", *args, timeout=120)
        assert proc.poll() is None, log.read_text()[-2000:]
    finally:
        proc.send_signal(signal.SIGINT)  # bash -c of one command execs it: the node gets it
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    assert got["found"] and got["publishes"], got
    if expect is not None and not lockstep:
        assert got["value"] == expect
    assert proc.returncode == 0, log.read_text()[-2000:]
    return topic


@pytest.mark.ros2
@pytest.mark.parametrize(
    "kind",
    ["constant"] + [pytest.param(k, marks=pytest.mark.slow) for k in ("table", "onnx")],
)
def test_readme_commands_run(tmp_path, kind):
    python = ros2_python()  # fail in CI, skip elsewhere, without .venv-ros2
    make, published, expect = CASES[kind]
    if kind == "onnx":
        onnx_deps()
    obj, kw = make(tmp_path)
    package = Path(export_policy(obj, "qbmove_arm_2dof", tmp_path / "src", ros=2, **kw))
    if kind == "onnx":
        assert (package / "README.md").read_text().count("pip install numpy onnxruntime") == 1
    sections = readme_commands((package / "README.md").read_text())
    pypi, full = sections.pop(PYPI), sections.pop(FULL)
    assert not any(sections.values()), sections  # every command stands in one of the two
    assert pypi and full
    not_on_pypi = ("colcon", "ros2", "source")
    assert not [c for c in pypi if c.split()[0] in not_on_pypi], pypi
    assert {c.split()[0] for c in full} <= set(not_on_pypi), full
    env = activate_env(bare_env(), overlay_venv(tmp_path / "venv", python))
    ran = []
    for command in pypi:
        if "--ros-args" in command:
            ran.append(run_node_command(command, package, env, published, expect, tmp_path))
            continue
        run = subprocess.run(
            ["bash", "-c", command],
            cwd=package,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, command + "\n" + run.stdout[-2000:] + run.stderr[-2000:]
        ran.append(command)
    # the README's node commands: the installed entry point (namespace, name) and the module run
    # from the folder with lockstep
    assert ran[-2:] == [f"/robot1/{published}", "/robot1/step"], ran
    assert (tmp_path / "venv" / "bin" / "policy_node").is_file()


def test_readme_wheels_are_those_of_the_ros2_extra(tmp_path):
    """The wheels the README installs are of asr-sim[ros2] (setup.cfg), the install asr
    documents for ROS 2, so that they stay the ones tested with asr's node."""
    import configparser

    from tests.support.paths import ROOT

    package = Path(export_policy(workspace(), "qbmove_arm_2dof", tmp_path, ros=2))
    pypi = readme_commands((package / "README.md").read_text())[PYPI]
    wheels = {w for c in pypi if c.startswith("pip install ") for w in c.split()[2:] if w != "."}
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    extra = set(cfg["options.extras_require"]["ros2"].split())
    assert {"ros-jazzy-rclpy", "ros-jazzy-sensor-msgs"} <= wheels <= extra, wheels - extra
