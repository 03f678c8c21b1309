"""ROS 2 for the tests: Jazzy's rclpy, Fast DDS and message packages from PyPI in .venv-ros2
(`make ros2`). Its Python packages (std_msgs, sensor_msgs, ...) have the names of Debian's ROS 1
ones that the test process imports, so ROS 2 runs only in subprocesses:

- `bare_env()`: .venv-ros2's Python as on a robot, without asr (exported packages, peers);
- `asr_env()`: the same Python with asr's tree and .venv's packages on PYTHONPATH (asr's node).

Both put the interface packages that PyPI lacks (simulation_interfaces, control_msgs, tf2_msgs:
asr/ros/interfaces/build.py's install, INTERFACES) on PYTHONPATH, LD_LIBRARY_PATH and
AMENT_PREFIX_PATH when they are built; `ros2_interfaces()` requires them.

Every subprocess of one test process shares a DDS domain of its own (ROS_DOMAIN_ID, domain_id())
with discovery on this host only, so two test runs on one machine, the workers of one parallel
run (pytest-xdist), or a ROS graph of the user's, do not see each other.
"""

import os
import subprocess
import sys
import sysconfig
import zlib
from pathlib import Path

import pytest

from tests.conftest import IN_CI
from tests.support.paths import ROOT, SUPPORT

ROS2_VENV = ROOT / ".venv-ros2"
ROS2_PYTHON = ROS2_VENV / "bin" / "python"


def domain_id(environ=os.environ, pid=None):
    """This test process's DDS domain, in 1..100 (0 is every ROS install's default domain;
    1..101 are valid for Fast DDS on one host): under pytest-xdist the run's id (shared by its
    workers) picks a first domain and worker gwN takes the N-th after it, so the workers of one
    run never share one; a plain run takes its process id's."""
    worker, run = environ.get("PYTEST_XDIST_WORKER"), environ.get("PYTEST_XDIST_TESTRUNUID")
    if worker and run and worker.startswith("gw") and worker[2:].isdigit():
        return 1 + (zlib.crc32(run.encode()) + int(worker[2:])) % 100
    return 1 + (os.getpid() if pid is None else pid) % 100


DOMAIN_ID = domain_id()


def ros2_python():
    """The path of .venv-ros2's Python; fail in CI, skip elsewhere, when it or rclpy is missing."""
    problem = None
    if not ROS2_PYTHON.exists():
        problem = f"{ROS2_VENV.name} is missing (make ros2)"
    else:
        check = subprocess.run(
            [str(ROS2_PYTHON), "-c", "import rclpy, sensor_msgs.msg"],
            capture_output=True,
            text=True,
            env=bare_env(),
            timeout=120,
        )
        if check.returncode:
            problem = f"rclpy does not import in {ROS2_VENV.name}: {check.stderr[-400:]}"
    if problem:
        if IN_CI:
            pytest.fail(f"ROS 2 is missing in CI: {problem}")
        pytest.skip(f"{problem} (a failure when CI is set)")
    return str(ROS2_PYTHON)


# simulation_interfaces, control_msgs and tf2_msgs, which PyPI lacks, built from their published
# definitions by asr/ros/interfaces/build.py (`make ros2`) into this colcon install
INTERFACES = ROOT / "build" / "ros2-interfaces" / "install"


def _interfaces_site():
    found = sorted(INTERFACES.glob("lib/python3*/site-packages"))
    return found[-1] if found else None


def ros2_interfaces():
    """The install folder of asr/ros/interfaces/build.py; fail in CI, skip elsewhere, when it
    is missing. bare_env() and asr_env() put it on their subprocesses' paths when it exists."""
    if _interfaces_site() is None:
        problem = f"{INTERFACES} is missing (python asr/ros/interfaces/build.py, or make ros2)"
        if IN_CI:
            pytest.fail(f"ROS 2 interfaces missing in CI: {problem}")
        pytest.skip(f"{problem} (a failure when CI is set)")
    return INTERFACES


def _ros_env(base=None):
    env = dict(os.environ if base is None else base)
    for key in ("PYTHONPATH", "VIRTUAL_ENV", "AMENT_PREFIX_PATH", "ROS_LOCALHOST_ONLY"):
        env.pop(key, None)
    site = _interfaces_site()
    if site is not None:
        env["PYTHONPATH"] = str(site)
        env["AMENT_PREFIX_PATH"] = os.pathsep.join((str(INTERFACES), str(ROS2_VENV)))
        libs = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(INTERFACES / "lib"), libs) if p)
    env["ROS_DOMAIN_ID"] = str(DOMAIN_ID)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["RMW_IMPLEMENTATION"] = "rmw_fastrtps_cpp"
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("ROS_LOG_DIR", str(ROOT / "build" / "ros2_logs"))
    return env


def bare_env(base=None):
    """Environment for .venv-ros2's Python without asr: `import asr` fails there."""
    return _ros_env(base)


def asr_env(base=None):
    """Environment for .venv-ros2's Python with asr importable (the tree, then .venv's
    site-packages: asr's NumPy, MuJoCo and cffi; .venv-ros2's NumPy is the same version)."""
    env = _ros_env(base)
    site = sysconfig.get_paths()["purelib"] if sys.prefix != sys.base_prefix else None
    paths = (str(ROOT), env.get("PYTHONPATH"), site)  # the interfaces before .venv's packages
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


PEERS = SUPPORT / "ros2_peers"


class NodeProcess:
    """asr's ROS 2 node (asr.ros.ros2_node.run_ros2_node(**kwargs)) in a subprocess of
    .venv-ros2's Python with asr importable; stderr goes to a file (`log()` reads it).
    A context manager: on exit it is stopped with SIGINT, then killed after 10 s."""

    def __init__(self, tmp_path, **kwargs):
        import json

        self.stderr_path = Path(tmp_path) / "node.stderr"
        code = (
            "import json, sys; from asr.ros.ros2_node import run_ros2_node; "
            f"sys.exit(run_ros2_node(**json.loads({json.dumps(json.dumps(kwargs))})))"
        )
        self._err = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(
            [ros2_python(), "-c", code],
            env=asr_env(),
            stdout=subprocess.DEVNULL,
            stderr=self._err,
            cwd=ROOT,
        )

    def log(self):
        return self.stderr_path.read_text()

    def stop(self):
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._err.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run_peer(script, *args, timeout=180):
    """Run tests/support/ros2_peers/<script> with .venv-ros2's Python without asr; its JSON result
    (stdout's last line). AssertionError with its stderr when it fails."""
    import json

    proc = subprocess.run(
        [ros2_python(), str(PEERS / script), *args],
        env=bare_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=PEERS,
    )
    assert proc.returncode == 0, f"peer {script} {args[:1]} failed:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_peer_beside_node(tmp_path, script, *args, peer_stops=False, **node):
    """Start asr's node (NodeProcess(tmp_path, **node)), run peer `script` with `args` beside
    it and return the peer's JSON result once the node exited with status 0 (AssertionError
    with the node's log otherwise): stopped by SIGINT from here, or with `peer_stops` by the
    peer, which gets the node's pid as its last argument."""
    ros2_interfaces()
    with NodeProcess(tmp_path, **node) as n:
        if peer_stops:
            out = run_peer(script, *args, str(n.proc.pid))
            code = n.proc.wait(timeout=60)
        else:
            out = run_peer(script, *args)
            code = n.stop()
        assert code == 0, f"the node's exit status {code}:\n{n.log()[-3000:]}"
    return out
