"""The dashboard under a hostile page and hostile clients, each against a real server on
127.0.0.1 (issue 28): lone surrogates in JSON bodies, concurrent policy exports, exports by GET
from any page, half-sent HTTP requests (slowloris), connection floods and WebSocket message
floods. Every loop is bounded in count and time; the time bounds are generous (the CI host is
shared) and stated where they are checked."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import require
from tests.support.dashboard_server import (
    frames_in,
    free_port,
    get_json,
    server_process,
    wait_serving,
)

POST_ROUTES = [
    "/api/control",
    "/api/robot",
    "/api/workspace",
    "/api/push",
    "/api/compare",
    "/api/ilc/start",
    "/api/rl/start",
    "/api/interaction/start",
    "/api/interaction/law",
    "/api/interaction/reference",
    "/api/datasheet",
]
# raw bytes: Python's json.dumps would not write a lone surrogate from a str the test builds
SURROGATE_BODIES = [
    b'{"preset": {"\\ud800": 0.1}}',
    b'{"preset": {"joint1": "\\udfff"}}',
    b'{"robot": "\\ud800"}',
    b'{"\\udc00": 1}',
    b'["\\ud800"]',
    b'{"joint": "\\ud83d", "torque": 1, "duration": 0.1}',
]


def post(url, body=b"", headers=None, timeout=60):
    """(status, body bytes, headers) of a POST; HTTP errors are answers too."""
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def ws_url(url):
    return url.replace("http://", "ws://") + "/ws/stream"


@pytest.fixture(scope="module")
def server():
    with server_process() as (url, proc):
        yield url, proc


# ---------------------------------------------------------------- lone surrogates


@pytest.mark.parametrize("path", POST_ROUTES)
def test_lone_surrogates_get_a_readable_4xx_on_every_post_route(server, path):
    url, _ = server
    for body in SURROGATE_BODIES:
        status, data, _ = post(url + path, body)
        assert 400 <= status < 500, (path, body, status, data[:300])
        detail = json.loads(data.decode("utf-8"))["detail"]  # strict UTF-8: nothing unencodable
        assert detail, (path, body)
    assert get_json(url + "/api/state")["robot"]  # the server is fine afterwards


# ---------------------------------------------------------------- slowloris


def half_request(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /api/sta")  # half a request line, never finished
    return s


def closed_by_server(s):
    """True once the server closed `s` (EOF or reset), False while it is open."""
    s.setblocking(False)
    try:
        return s.recv(1024) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


HEADER_TIMEOUT_S = 2.0
CLOSE_BOUND_S = 30.0  # generous: the server closes them after HEADER_TIMEOUT_S


@pytest.mark.slow
def test_half_sent_requests_are_closed_and_others_are_served():
    """100 connections that send half a request line are closed by the server within
    CLOSE_BOUND_S (it closes them after header_timeout_s = 2 s), and a normal client is served
    while they are open."""
    env = {"ASR_DASHBOARD_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S)}
    with server_process(env=env) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        socks = [half_request(port) for _ in range(100)]
        t0 = time.monotonic()
        try:
            assert get_json(url + "/api/state", timeout=10)["robot"]  # served meanwhile
            open_ = socks
            while open_ and time.monotonic() - t0 < CLOSE_BOUND_S:
                open_ = [s for s in open_ if not closed_by_server(s)]
                time.sleep(0.2)
            print(
                f"{100 - len(open_)} of 100 half-sent requests closed in "
                f"{time.monotonic() - t0:.1f} s"
            )
            assert not open_, f"{len(open_)} of 100 still open after {CLOSE_BOUND_S} s"
            assert get_json(url + "/api/state", timeout=10)["robot"]
        finally:
            for s in socks:
                s.close()


@pytest.mark.slow
def test_a_body_sent_slowly_is_cut_off():
    """Headers complete, a body that never comes: closed after body_timeout_s (2 s here),
    within CLOSE_BOUND_S."""
    env = {"ASR_DASHBOARD_BODY_TIMEOUT_S": "2"}
    with server_process(env=env) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(
            f"POST /api/control HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: "
            "application/json\r\nContent-Length: 1000\r\n\r\n{".encode()
        )
        t0 = time.monotonic()
        try:
            while not closed_by_server(s):
                assert time.monotonic() - t0 < CLOSE_BOUND_S, "a slow body kept its connection"
                time.sleep(0.2)
        finally:
            s.close()


@pytest.mark.slow
def test_connections_beyond_the_limit_are_closed_at_once():
    """max_connections = 20: of 40 idle connections at most 20 stay open; the rest are closed
    by the server straight away (checked within 10 s, generous)."""
    env = {"ASR_DASHBOARD_MAX_CONNECTIONS": "20", "ASR_DASHBOARD_HEADER_TIMEOUT_S": "60"}
    with server_process(env=env) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        time.sleep(1.0)  # the start-up check's connection is gone
        socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(40)]
        try:
            time.sleep(1.0)
            deadline = time.monotonic() + 10
            while True:
                closed = sum(closed_by_server(s) for s in socks)
                if closed >= 20 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert closed >= 20, f"only {closed} of 40 closed with max_connections = 20"
        finally:
            for s in socks:
                s.close()
        assert get_json(url + "/api/state", timeout=10)["robot"]  # slots free again


# ---------------------------------------------------------------- WebSocket floods

WINDOW_S = 6.0


async def count_frames(url, seconds):
    """Runner frames a reading client gets in `seconds` after its figure (frames_in: an extend
    the server merged for a slow reader counts as the frames it holds)."""
    websockets = require("websockets")
    async with websockets.connect(url, max_size=None, ping_interval=None) as ws:
        await asyncio.wait_for(ws.recv(), 30)  # the figure
        n, t_end = 0, time.monotonic() + seconds
        while (left := t_end - time.monotonic()) > 0:
            try:
                text = await asyncio.wait_for(ws.recv(), left)
            except asyncio.TimeoutError:
                break
            n += frames_in(text)
        return n


async def flood(url, count, told):
    """Send `count` control messages as fast as possible; told gets what the server said
    about it: error texts, or the close code and reason."""
    websockets = require("websockets")
    message = json.dumps({"type": "control", "speed": 1.0})
    async with websockets.connect(url, max_size=None, ping_interval=None) as ws:

        async def listen():
            async for text in ws:
                if text.startswith('{"type":"error"'):
                    told.append(json.loads(text)["message"])

        listener = asyncio.ensure_future(listen())
        try:
            for _ in range(count):
                await ws.send(message)
        except websockets.ConnectionClosed:
            pass
        # told within 30 s (generous): the server reads the backlog first
        deadline = time.monotonic() + 30
        while not told and not listener.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        listener.cancel()
        if ws.close_code is not None:
            told.append(f"closed {ws.close_code} {ws.close_reason}")


# The flood outruns the bucket by count, whatever the host's speed: a client may send at most
# burst + rate * t messages in t s, so FLOOD messages are more than the bucket lets through unless
# the server takes (FLOOD - burst) / rate s to read them. At the default 20 per second a starved
# host that read fewer than 20 messages per second of each flooder never emptied the bucket and
# told no one; the flood's server runs at FLOOD_RATE per second (the default burst, 40).
FLOOD, FLOOD_RATE = 2000, 1.0


@pytest.mark.slow
def test_message_flooders_do_not_starve_a_reading_client():
    """Five clients sending FLOOD messages each to a server whose bucket they outrun by count: a
    reading client still gets at least a third of the frames it gets alone (measured just
    before, same server), and each flooder is told (an error message naming the limit, or the
    close code 1008)."""
    env = {"ASR_DASHBOARD_WS_MESSAGES_PER_S": str(FLOOD_RATE)}
    with server_process(env=env) as (url, _):
        alone = asyncio.run(count_frames(ws_url(url), WINDOW_S))
        told = [[] for _ in range(5)]

        async def main():
            reader = asyncio.ensure_future(count_frames(ws_url(url), WINDOW_S))
            await asyncio.sleep(1.0)  # the reader has its figure
            await asyncio.gather(*(flood(ws_url(url), FLOOD, t) for t in told))
            return await reader

        flooded = asyncio.run(main())
    print(
        f"frames in {WINDOW_S} s: {alone} alone, {flooded} with 5 flooders; told: "
        f"{[t[:2] for t in told]}"
    )
    assert flooded >= alone / 3, (alone, flooded)
    for t in told:
        assert any("too many messages" in m or "1008" in m for m in t), t


# ---------------------------------------------------------------- exports: POST, one at a time

MOVED = [
    "/api/export.npz",
    "/api/export.html",
    "/api/export.ros.zip",
    "/api/ilc/result.npz",
    "/api/datasheet?joint=joint1",
    "/api/rl/policy.onnx",
    "/api/rl/policy.ros.zip",
]
TRAIN = {
    "task": "asr/Reach2DOF-v0",
    "num_envs": 4,
    "n_steps": 16,
    "batch_size": 64,
    "total_steps": 640,
    "learning_rate": 1e-3,
    "gamma": 0.95,
    "seed": 0,
}


def status_of(method, url, headers=None):
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("path", MOVED)
def test_work_and_exports_are_post_with_the_origin_check(server, path):
    """Any page can make a browser send a GET: the routes that make files or start work answer
    only POST (405 to GET), and a POST from a foreign page's Origin is refused (403)."""
    url, _ = server
    assert status_of("GET", url + path) == 405
    assert status_of("POST", url + path, {"Origin": "http://evil.example"}) == 403


def torch_loaded(pid):
    with open(f"/proc/{pid}/maps") as f:
        return "libtorch" in f.read()


@pytest.mark.slow
def test_concurrent_policy_exports_all_succeed_in_a_child_process(server):
    """Three ONNX and one ROS export at once: each is 200 with a valid file or 429 saying why
    (never a 500), the two after them succeed, and torch never loads into the server (the
    export runs in a child process). Bound: the training's first checkpoint within 300 s."""
    from concurrent.futures import ThreadPoolExecutor

    require("onnxruntime")
    url, proc = server
    status, data, _ = post(url + "/api/rl/start", json.dumps(TRAIN).encode())
    assert status == 200, data
    deadline = time.monotonic() + 300
    while not get_json(url + "/api/rl/status")["has_checkpoint"]:
        assert time.monotonic() < deadline, "no checkpoint in 300 s"
        time.sleep(1.0)
    paths = ["/api/rl/policy.onnx"] * 3 + ["/api/rl/policy.ros.zip"]
    with ThreadPoolExecutor(len(paths)) as pool:
        answers = list(pool.map(lambda p: post(url + p, timeout=600), paths))
    print("concurrent exports:", [(s, len(d)) for s, d, _ in answers])
    for path, (status, data, _) in zip(paths, answers):
        assert status in (200, 429), (path, status, data[:300])
        if status == 429:
            assert "waiting" in json.loads(data)["detail"]
    assert sum(s == 200 for s, _, _ in answers) >= 1
    for path in ("/api/rl/policy.onnx", "/api/rl/policy.ros.zip"):
        status, data, _ = post(url + path, timeout=600)
        assert status == 200, (path, data[:300])
    import onnxruntime

    onnx = next(d for (s, d, _), p in zip(answers, paths) if s == 200 and p.endswith("onnx"))
    onnxruntime.InferenceSession(onnx, providers=["CPUExecutionProvider"])
    assert not torch_loaded(proc.pid)
    post(url + "/api/rl/stop")


# ---------------------------------------------------------------- SIGTERM with a blocked worker

BLOCKED_SERVER = """
import asyncio, os, sys, time
import uvicorn
from asr_dashboard.server import uvicorn_config
from asr_dashboard.settings import Settings
config = uvicorn_config(Settings(), int(sys.argv[1]), "warning")
@config.app.get("/blocked")
async def blocked():  # a request whose worker thread never returns (a read that blocks)
    await asyncio.to_thread(time.sleep, 3600)
config.app.router.routes.insert(0, config.app.router.routes.pop())  # before the static mount
uvicorn.Server(config).run()
"""


@pytest.mark.slow
def test_sigterm_stops_the_server_with_a_blocked_worker():
    """A request stuck in a worker thread: SIGTERM still ends the server, within 60 s
    (generous; it cancels such requests after dashboard.server.SHUTDOWN_S = 5 s)."""
    from tests.support.dashboard_server import ROOT

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_SERVER, str(port)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=ROOT),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(url, proc)
        with pytest.raises(OSError):  # socket.timeout, a URLError: the request hangs
            urllib.request.urlopen(url + "/blocked", timeout=2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
@pytest.mark.browser
def test_the_page_downloads_its_exports_by_post():
    """The page's export buttons still download (their POSTs carry the page's own Origin);
    Chromium, a real server."""
    from tests.support.dashboard_server import chromium_page

    with chromium_page() as pg:
        pg.wait_for_function(
            "() => Number(document.getElementById('status').dataset.frames) > 5", timeout=30000
        )
        for button, name in (
            ("#btn-export-npz", "asr_history.npz"),
            ("#btn-export-html", "asr_history.html"),
        ):
            with pg.expect_download(timeout=60000) as dl:
                pg.click(button)
            assert dl.value.suggested_filename == name
            assert os.path.getsize(dl.value.path()) > 1000
        assert not pg.js_errors, pg.js_errors
