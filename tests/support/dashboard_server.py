"""A real dashboard server for the browser and load tests: uvicorn on 127.0.0.1 and a free
port, in a background thread (running_server) or in its own process (server_process, for
figures of the server alone: memory, threads, open files), stopped at the end."""

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
import uvicorn

from asr_dashboard.server import uvicorn_config
from asr_dashboard.settings import Settings
from tests.conftest import IN_CI, require
from tests.support.paths import ROOT as ROOT_PATH

ROOT = str(ROOT_PATH)
# the server answers loopback Host names only (dashboard/security.py), not TestClient's default
BASE = "http://127.0.0.1"
STREAM = "ws://127.0.0.1/ws/stream"


# a short Reach2DOF training (128 env-steps: two PPO updates), a policy to watch or export
SHORT_TRAINING = {
    "task": "asr/Reach2DOF-v0",
    "num_envs": 4,
    "n_steps": 16,
    "batch_size": 64,
    "total_steps": 128,
    "seed": 0,
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_path():
    """Debian's Chromium (make test installs it): a failure when CI is set and it is missing,
    else a skip."""
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        if IN_CI:
            pytest.fail("Debian's chromium is required in CI (make test installs it)")
        pytest.skip("chromium not installed (a failure when CI is set)")
    return path


@contextlib.contextmanager
def running_server(**settings):
    """Yield the base URL of a dashboard serving Settings(**settings)."""
    port = free_port()
    config = uvicorn_config(Settings(**settings), port, log_level="warning")
    config.ws_ping_interval = None
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("dashboard server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.contextmanager
def app_client(**settings):
    """An in-process client (fastapi's TestClient, lifespan run) of the dashboard serving
    Settings(**settings), under the loopback BASE URL."""
    from fastapi.testclient import TestClient

    from asr_dashboard.app import create_app

    with TestClient(create_app(Settings(**settings)), base_url=BASE) as c:
        yield c


@contextlib.contextmanager
def chromium_page(launch_args=(), **settings):
    """A dashboard serving Settings(**settings) (running_server) and a page of Debian's Chromium
    (driven by Playwright) open on it; the page carries base_url and js_errors (errors thrown in
    the page). launch_args: extra Chromium command-line switches."""
    sync_api = require("playwright.sync_api")
    chromium = chromium_path()
    with running_server(**settings) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", *launch_args])
        pg = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(url)
        pg.base_url, pg.js_errors = url, errors
        yield pg
        browser.close()


def page_api(pg, method, path, body=None):
    """(status, JSON body) of a request the chromium_page `pg` makes itself (fetch in the page:
    its origin, its cookies); `body` is sent as JSON."""
    out = pg.evaluate(
        """async ([method, path, body]) => {
            const opts = {method, headers: {'Content-Type': 'application/json'}};
            if (body !== null) opts.body = JSON.stringify(body);
            const r = await fetch(path, opts);
            return [r.status, await r.text()];
        }""",
        [method, path, body],
    )
    return out[0], json.loads(out[1])


def wait_for(fn, timeout, what, every=0.1):
    """fn()'s first truthy value, polled every `every` s; a failure after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


# How long a check waits for the simulation to advance or for a few stream frames: the CI host is
# shared and busy, so a stepping loop can lose whole seconds; a real stop still fails, after this.
SIM_DEADLINE_S = 60.0


def sim_time(target):
    """Simulated time of a real server (a base URL) or of a TestClient."""
    if isinstance(target, str):
        return get_json(target + "/api/state")["time"]
    return target.get("/api/state").json()["time"]


def wait_sim_past(target, t, what="the simulation to advance"):
    """Wait (up to SIM_DEADLINE_S) until target's simulated time is past `t`; that time."""
    return wait_for(lambda: (now := sim_time(target)) > t and now, SIM_DEADLINE_S, what, 0.02)


def assert_running(target):
    """The simulation advances: its time passes the time read now (within SIM_DEADLINE_S)."""
    wait_sim_past(target, sim_time(target), "the simulation to run (it stopped)")


def plotted_time(pg, plot):
    """The simulated time of the last sample a chromium_page has plotted in #`plot` (s; -1
    before any, also before Plotly has drawn the plot at all: its element has no .data yet)."""
    return pg.evaluate(
        """(plot) => Math.max(-1, ...((document.getElementById(plot) || {}).data || [])
            .map(t => Array.from(t.x || []).filter(v => v !== null).pop() ?? -1))""",
        plot,
    )


def wait_plotted(pg, seconds, plot):
    """Wait until a chromium_page has plotted `seconds` s of simulated time past the server's
    time now: a settling or a history measured in the simulation's time, which a busy host
    only delays (deadline: SIM_DEADLINE_S plus four times the span, the pacing's real time)."""
    t = sim_time(pg.base_url) + seconds
    wait_for(
        lambda: plotted_time(pg, plot) >= t,
        SIM_DEADLINE_S + 4 * seconds,
        f"{seconds} s of simulated time plotted in #{plot}",
    )


_MERGED = re.compile(r'"merged":\s*(\d+)')


def frames_in(text):
    """The runner frames a stream message (its JSON text) carries: 1 for an extend frame, n for
    an extend that merged n frames for a client reading slower than they come (its "merged",
    dashboard/PROTOCOL.md), 0 for any other message."""
    if not text.startswith('{"type":"extend"'):
        return 0
    m = _MERGED.search(text)
    return int(m.group(1)) if m else 1


def get_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def wait_serving(url, proc, timeout=60):
    """Wait until the server process `proc` answers GET url/api/state (RuntimeError if it ends
    or takes longer than `timeout` s)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            get_json(url + "/api/state", timeout=2)
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("dashboard server process did not start") from None
            time.sleep(0.2)


@contextlib.contextmanager
def server_process(*args, env=None):
    """Yield (base URL, Popen) of `asr dashboard --port <free> *args` in its own process."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "asr.cli",
            "dashboard",
            "--port",
            str(port),
            "--log-level",
            "warning",
            *args,
        ],
        cwd=ROOT,
        env=dict(os.environ, **(env or {})),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(url, proc)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def proc_status(pid):
    """{'rss_mb', 'threads', 'fds'} of a process, from /proc."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return {
        "rss_mb": int(fields["VmRSS"].split()[0]) / 1024,
        "threads": int(fields["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
    }
