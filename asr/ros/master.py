"""A ROS master (Debian's roscore) on a free loopback port, started and stopped from Python:
for tests, examples and `asr ros --roscore`. ROS_HOME is a temporary folder, so the master's
logs never land in the user's ~/.ros."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import xmlrpc.client

from asr.ros.environment import INSTALL_HINT, tool_env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def master_is_up(uri, timeout=1.0, node=None):
    """True when a ROS master answers at `uri` within `timeout` s (and, with `node`, knows that
    node: roscore's "/rosout", since a roscore stopped before its rosout registered does not
    shut down promptly)."""
    proxy = xmlrpc.client.ServerProxy(uri)
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(timeout)
    try:
        code, _, _ = proxy.lookupNode("/asr_probe", node) if node else proxy.getPid("/asr_probe")
        return code == 1
    except (OSError, xmlrpc.client.Error, ValueError):
        return False
    finally:
        socket.setdefaulttimeout(old)


def wait_for_master(uri, timeout, node=None):
    """True when master_is_up(uri, node=node) within `timeout` s (polled every 0.2 s)."""
    deadline = time.monotonic() + timeout
    while not master_is_up(uri, max(0.1, min(1.0, deadline - time.monotonic())), node):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


@contextlib.contextmanager
def roscore(port=None, timeout=30.0):
    """Run roscore on 127.0.0.1:`port` (a free one by default); yields its ROS_MASTER_URI and
    stops it (and its rosout child) on exit. RuntimeError when it does not come up in
    `timeout` seconds; FileNotFoundError when roscore is not installed."""
    exe = shutil.which("roscore", path="/usr/bin:/bin")
    if exe is None:
        raise FileNotFoundError(f"roscore not found; install ROS 1: {INSTALL_HINT}")
    port = port or free_port()
    uri = f"http://127.0.0.1:{port}"
    home = tempfile.mkdtemp(prefix="asr-roscore-")
    env = tool_env(uri)
    env["ROS_HOME"] = home
    proc = subprocess.Popen(
        [exe, "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while not master_is_up(uri, node="/rosout"):
            if proc.poll() is not None:
                raise RuntimeError(
                    f"roscore exited with {proc.returncode}: "
                    f"{proc.stderr.read().decode(errors='replace')[-500:]}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"roscore did not answer at {uri} within {timeout:g} s")
            time.sleep(0.1)
        yield uri
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        proc.stderr.close()
        shutil.rmtree(home, ignore_errors=True)
