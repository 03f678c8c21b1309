"""The dashboard's RL panel (dashboard/PROTOCOL.md "RL"): a real `asr train` process (PPO, tiny
budget) started, paused, resumed and stopped over /api/rl, its learning curve growing in
GET /api/rl/status and in `rl` WebSocket messages, "watch" driving the live robot with the
checkpoint's policy, the exports, the request checks (422 naming the field, 409 Busy, Origin),
the process gone after stop and after the server stops; then the page in Debian's Chromium
(Playwright): start a training, see the curve grow, stop, watch, export, and the stream keeps
living while the trainer runs (its rate judged against the rate just before, in the same run)."""

import json
import os
import time
import urllib.request

import pytest

from tests.conftest import require

require("fastapi")
require("httpx")
require("stable_baselines3")
require("onnxruntime")
from fastapi.testclient import TestClient  # noqa: E402

from asr_dashboard.app import create_app  # noqa: E402
from asr_dashboard.rl import read_curve  # noqa: E402
from asr_dashboard.settings import Settings  # noqa: E402
from tests.support.dashboard_exports import assert_ros_package  # noqa: E402
from tests.support.dashboard_server import wait_for  # noqa: E402
from tests.support.paths import ROOT  # noqa: E402

BASE = "http://127.0.0.1"
STREAM = "ws://127.0.0.1/ws/stream"
# a tiny PPO: 64 env-steps per update, so rows come every fraction of a second; a budget far
# beyond the test, which stops it
TRAIN = {
    "task": "asr/Reach2DOF-v0",
    "num_envs": 4,
    "n_steps": 16,
    "batch_size": 64,
    "total_steps": 10**7,
    "learning_rate": 1e-3,
    "gamma": 0.95,
    "seed": 0,
}


def alive(pid):
    """True while pid is a live (not zombie) process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def proc_state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(rl_num_envs_max=16, rl_stop_s=3)), base_url=BASE) as c:
        yield c
        c.post("/api/rl/stop")


def rows(client):
    return len(client.get("/api/rl/status").json()["curve"]["steps"])


# How long the page test waits for an answer or a drawn update: the CI host is shared and busy
# (load ~10 on 2 cores); a real stop still fails, after this
ANSWER_MS = 60000


def stream_rate(pg, seconds):
    """The page's extend frames per second of wall time over `seconds` s."""
    frames0, t0 = int(pg.get_attribute("#status", "data-frames") or 0), time.monotonic()
    pg.wait_for_timeout(seconds * 1000)
    frames1 = int(pg.get_attribute("#status", "data-frames") or 0)
    return (frames1 - frames0) / (time.monotonic() - t0)


def last_step(client):
    steps = client.get("/api/rl/status").json()["curve"]["steps"]
    return steps[-1] if steps else None


def disk_last_step(pid):
    """The last row's steps in the curve.json of the trainer `pid` (its --out folder)."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = f.read().decode().split("\0")
    steps = read_curve(os.path.join(argv[argv.index("--out") + 1], "curve.json"))["steps"]
    return steps[-1] if steps else None


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"task": "asr/Nope-v0"}, "task", "asr/Reach2DOF-v0"),
        ({"task": "/etc/passwd"}, "task", "asr/Reach2DOF-v0"),
        ({"algo": "SAC"}, "algo", "PPO"),
        ({"learning_rate": 0}, "learning_rate", "greater than 0"),
        ({"learning_rate": "NaN"}, "learning_rate", "finite"),
        ({"gamma": 1.5}, "gamma", "less than or equal to 1"),
        ({"n_steps": 0}, "n_steps", "greater than or equal to 1"),
        ({"batch_size": 1}, "batch_size", "greater than or equal to 2"),
        ({"num_envs": 0}, "num_envs", "greater than or equal to 1"),
        ({"total_steps": -5}, "total_steps", "greater than or equal to 1"),
        ({"out": "/tmp/x"}, "out", "Extra inputs are not permitted"),
    ],
)
def test_start_refuses_bad_values(client, change, field, words):
    r = client.post("/api/rl/start", json={**TRAIN, **change})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert any(field in e["loc"] for e in detail), detail
    assert words in json.dumps(detail), detail
    assert not client.get("/api/rl/status").json()["running"]


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"num_envs": 17}, "num_envs", "[1, 16]"),  # the server's rl_num_envs_max
        ({"batch_size": 65}, "batch_size", "n_steps * num_envs = 64"),
    ],
)
def test_start_refuses_values_beyond_the_server_limits(client, change, field, words):
    r = client.post("/api/rl/start", json={**TRAIN, **change})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail.startswith(f"{field}: got ") and words in detail, detail
    assert not client.get("/api/rl/status").json()["running"]


def test_tasks_are_the_registered_env_ids(client):
    import gymnasium

    import asr  # noqa: F401 - registers the ids

    t = client.get("/api/rl/tasks").json()
    assert t["tasks"] and all(x in gymnasium.registry for x in t["tasks"])
    assert "asr/Reach2DOF-v0" in t["watchable"] and t["algos"] == ["PPO"]


def test_state_changing_routes_check_the_origin(client):
    for path in ("/api/rl/start", "/api/rl/stop", "/api/rl/watch", "/api/rl/pause"):
        r = client.post(path, json=TRAIN, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403, (path, r.text)
    r = client.post("/api/rl/policy.onnx", headers={"Host": "evil.example"})
    assert r.status_code == 403
    assert not client.get("/api/rl/status").json()["running"]


def test_nothing_to_watch_or_export_before_a_training(client):
    assert client.post("/api/rl/watch").status_code == 404
    assert client.post("/api/rl/policy.onnx").status_code == 404


# ------------------------------------------------------------------ a training


@pytest.mark.slow
def test_training_lifecycle(client):
    r = client.post("/api/rl/start", json=TRAIN)
    assert r.status_code == 200, r.text
    st = r.json()
    pid = st["pid"]
    assert st["running"] and alive(pid) and st["config"]["task"] == TRAIN["task"]
    assert "/" not in json.dumps(st).replace("asr/", "")  # no server path in the answer

    # Busy while it runs
    r = client.post("/api/rl/start", json=TRAIN)
    assert r.status_code == 409 and "already running" in r.text

    # the curve grows, and reaches the clients as rl messages
    with client.websocket_connect(STREAM) as ws:
        n1 = wait_for(lambda: rows(client) >= 2 and rows(client), 60, "two curve rows")
        n2 = wait_for(lambda: rows(client) > n1 and rows(client), 30, "a third row")
        assert n2 > n1
        seen = []
        for _ in range(2000):
            msg = json.loads(ws.receive_text())
            if msg["type"] == "rl":
                seen.append(len(msg["curve"]["steps"]))
                if len(seen) >= 2 and seen[-1] > seen[0]:
                    break
        assert len(seen) >= 2 and seen[-1] > seen[0], seen
    curve = client.get("/api/rl/status").json()["curve"]
    assert curve["steps"] == sorted(curve["steps"]) and curve["steps"][0] > 0
    assert any(m is not None for m in curve["metric"])

    # pause = SIGSTOP: the process is stopped and the curve stands still; resume continues
    st = client.post("/api/rl/pause").json()
    assert st["paused"]
    wait_for(lambda: proc_state(pid) == "T", 10, "the trainer to stop (SIGSTOP)")
    # every row written before the stop reaches the status: the watcher has read the stopped
    # trainer's curve.json (its last step), waited for rather than given a fixed number of polls
    last = disk_last_step(pid)
    wait_for(lambda: last_step(client) == last, 30, "the rows written before the stop")
    n = rows(client)
    time.sleep(1.5)  # six of the watcher's polls (fewer on a busy host: never a false failure)
    assert rows(client) == n and last_step(client) == last
    st = client.post("/api/rl/resume").json()
    assert not st["paused"]
    wait_for(lambda: proc_state(pid) != "T", 10, "the trainer to continue (SIGCONT)")
    wait_for(lambda: rows(client) > n, 30, "a row after resume")

    # watch: the checkpoint's policy drives the live robot (the task's robot, references
    # from the policy), then back to manual control
    r = client.post("/api/rl/watch")
    assert r.status_code == 200, r.text
    state = r.json()
    assert state["robot"] == "qbmove_arm_2dof" and state["variant"] == "horizontal"
    assert state["watch"]["task"] == TRAIN["task"]
    t0 = state["time"]
    st = wait_for(
        lambda: (lambda s: s["time"] > t0 + 0.5 and s["watch"]["env_step"] > 0 and s)(
            client.get("/api/state").json()
        ),
        20,
        "the policy acting",
    )
    assert st["error"] is None and len(st["watch"]["target"]) == 2
    assert client.get("/api/rl/status").json()["watching"]["task"] == TRAIN["task"]
    # another robot ends the watch
    r = client.post("/api/robot", json={"robot": "pendulum_1dof"})
    assert r.status_code == 200 and r.json()["watch"] is None, r.text
    assert client.get("/api/rl/status").json()["watching"] is None
    assert client.post("/api/rl/watch").json()["watch"]["task"] == TRAIN["task"]
    state = client.post("/api/rl/manual").json()
    assert state["watch"] is None and state["reference"]["joint1"]["kind"] == "hold"
    assert client.get("/api/rl/status").json()["watching"] is None

    # exports of the latest checkpoint
    r = client.post("/api/rl/policy.onnx")
    assert r.status_code == 200, r.text
    import numpy as np
    import onnxruntime

    sess = onnxruntime.InferenceSession(r.content, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    out = sess.run(None, {inp.name: np.zeros((1, 8), dtype=np.float32)})[0]
    assert out.shape[-1] == 4 and np.all(np.isfinite(out))
    pkg = "asr_qbmove_arm_2dof_policy"
    for ros in (1, 2):  # the ROS 1 catkin and the ROS 2 ament_python package (?ros=)
        r = client.post("/api/rl/policy.ros.zip", params={"ros": ros})
        assert r.status_code == 200, r.text
        assert r.headers["content-disposition"].endswith(f'"{pkg}_ros{ros}.zip"')
        names = assert_ros_package(r.content, pkg, ros)
        assert any(n.endswith(".onnx") for n in names), names

    # stop: SIGTERM, the process is gone
    st = client.post("/api/rl/stop").json()
    assert not st["running"] and st["pid"] is None and st["message"] == "stopped"
    assert not alive(pid)
    # the curve stays (a page reload sees it), and a new training may start
    assert len(client.get("/api/rl/status").json()["curve"]["steps"]) >= n2


def test_stop_kills_a_paused_training(client):
    client.post("/api/rl/stop")  # whatever an earlier test left
    st = client.post("/api/rl/start", json=TRAIN).json()
    pid = st["pid"]
    assert client.post("/api/rl/pause").json()["paused"]
    st = client.post("/api/rl/stop").json()
    assert not st["running"] and not alive(pid)


@pytest.mark.slow
def test_a_short_training_finishes(short_run):
    st = short_run["status"]  # the status once the 128-step training has ended
    assert short_run["started"]["running"]
    assert st["message"] == "finished" and st["returncode"] == 0, st
    assert st["curve"]["steps"][-1] >= 128 and st["has_checkpoint"]


@pytest.mark.slow
def test_training_is_killed_when_the_server_process_stops():
    from tests.support.dashboard_server import server_process

    with server_process() as (url, server):
        req = urllib.request.Request(
            url + "/api/rl/start",
            data=json.dumps(TRAIN).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            pid = json.loads(r.read())["pid"]
        assert alive(pid)
        server.terminate()  # SIGTERM: uvicorn's graceful shutdown runs the lifespan's end
        server.wait(30)
    wait_for(lambda: not alive(pid), 10, "the trainer to be gone")


def test_training_is_killed_when_the_server_stops():
    with TestClient(create_app(Settings()), base_url=BASE) as c:
        st = c.post("/api/rl/start", json=TRAIN).json()
        pid = st["pid"]
        assert alive(pid)
    assert not alive(pid)


# ------------------------------------------------------------------ the page


@pytest.mark.browser
def test_rl_panel_in_chromium():
    sync_api = require("playwright.sync_api")
    from tests.support.dashboard_server import chromium_path, running_server

    chromium = chromium_path()
    with (
        running_server(robot="qbmove_arm_2dof", variant="vertical") as url,
        sync_api.sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            pg = browser.new_page(viewport={"width": 1280, "height": 1400}, accept_downloads=True)
            errors = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.goto(url)
            pg.wait_for_function(
                "() => document.querySelectorAll('#rl-task option').length > 0", timeout=ANSWER_MS
            )
            options = pg.eval_on_selector_all("#rl-task option", "os => os.map(o => o.value)")
            assert "asr/Reach2DOF-v0" in options
            pg.select_option("#rl-task", "asr/Reach2DOF-v0")
            for sel, value in (
                ("#rl-num-envs", "4"),
                ("#rl-n-steps", "16"),
                ("#rl-batch-size", "64"),
                ("#rl-total-steps", "10000000"),
            ):
                pg.fill(sel, value)
            # the stream's rate before the training, side by side with the one during it: what
            # the host gives the stream whatever else loads it
            pg.wait_for_function(
                "() => +document.getElementById('status').dataset.frames > 5", timeout=ANSWER_MS
            )
            before = stream_rate(pg, 3.0)
            pg.click("#btn-rl-start")
            pg.wait_for_function(
                "() => document.querySelector('#rl-status').dataset.running === '1'",
                timeout=ANSWER_MS,
            )

            # the stream while the trainer runs: extend frames counted over 8 s
            rate = stream_rate(pg, 8.0)
            print(f"stream: {before:.1f} updates/s before training, {rate:.1f} during it")
            # the trainer does not starve the stream (a trainer in the server's process, holding
            # its GIL, would stop it: ~0 frames). Judged against the rate this host gave the
            # stream just before, in this run: on a quiet host 10/s, far below the 30 Hz target;
            # on a shared 2-core CI host at load ~10 the trainer's process and its threads take a
            # further share of the two cores from the server, Chromium and this test alike, and
            # the stream fell to a third of its rate before (6.4/s of ~20), so a sixth of it
            assert rate >= min(10, before / 6), f"{rate:.1f} updates/s during training"

            # the curve grows on the page
            pg.wait_for_function(
                "() => +document.querySelector('#rl-status').dataset.rows >= 2", timeout=60000
            )
            n = int(pg.get_attribute("#rl-status", "data-rows"))
            pg.wait_for_function(
                f"() => +document.querySelector('#rl-status').dataset.rows > {n}", timeout=ANSWER_MS
            )
            points = pg.evaluate(
                "() => document.getElementById('plot-rl').data"
                ".reduce((n, t) => n + (t.x ? t.x.length : 0), 0)"
            )
            assert points > n
            # the progress bar: env-steps done of the total asked for, growing with the curve
            bar = (
                "() => { const b = document.getElementById('rl-progress'); "
                "return [b.value, b.max]; }"
            )
            done, total = pg.evaluate(bar)
            assert total == 10_000_000 and 0 < done < total
            pg.wait_for_function(
                f"() => document.getElementById('rl-progress').value > {done}", timeout=ANSWER_MS
            )

            pg.click("#btn-rl-stop")
            pg.wait_for_function(
                "() => document.querySelector('#rl-status').dataset.running === '0'",
                timeout=ANSWER_MS,
            )
            st = json.loads(
                pg.evaluate(
                    "async () => JSON.stringify(await (await fetch('/api/rl/status')).json())"
                )
            )
            assert not st["running"]

            # a reload still shows the curve
            pg.reload()
            pg.wait_for_function(
                "() => +document.querySelector('#rl-status').dataset.rows > 0", timeout=ANSWER_MS
            )

            # watch, then manual control
            pg.wait_for_selector("#btn-rl-watch:not([disabled])", timeout=ANSWER_MS)
            pg.click("#btn-rl-watch")
            # watch first exports the checkpoint as ONNX in a child (it imports torch): 6 s on
            # an idle host, 20 s on a loaded one
            pg.wait_for_selector("#btn-rl-manual:not([disabled])", timeout=90000)
            state = json.loads(
                pg.evaluate("async () => JSON.stringify(await (await fetch('/api/state')).json())")
            )
            assert state["watch"] and state["variant"] == "horizontal"
            pg.click("#btn-rl-manual")
            pg.wait_for_selector("#btn-rl-manual[disabled]", timeout=ANSWER_MS)

            # export: policy.onnx downloads
            with pg.expect_download(timeout=60000) as dl:
                pg.click("#btn-rl-onnx")
            path = dl.value.path()
            assert dl.value.suggested_filename == "policy.onnx" and os.path.getsize(path) > 1000
            # the ROS package in the version chosen beside its button (ROS 2 preselected)
            assert pg.input_value("#rl-ros-version") == "2"
            pg.select_option("#rl-ros-version", "1")
            with pg.expect_download(timeout=120000) as dl:
                pg.click("#btn-rl-ros")
            pkg = "asr_qbmove_arm_2dof_policy"
            assert dl.value.suggested_filename == f"{pkg}_ros1.zip"
            with open(dl.value.path(), "rb") as f:
                assert_ros_package(f.read(), pkg, 1)
            assert not errors, errors
        finally:
            browser.close()


# ------------------------------------------------------------------ watch runs ONNX, not torch

# a short training to its end, then watched, in a fresh process; argv: the training's JSON body,
# the folder to copy the finished run's folder into (the server removes its own at shutdown)
SHORT_RUN_SCRIPT = """
import json, os, shutil, sys, time
from fastapi.testclient import TestClient
from asr_dashboard.app import create_app
from asr_dashboard.settings import Settings

with TestClient(create_app(Settings()), base_url="http://127.0.0.1") as c:
    r = c.post("/api/rl/start", json=json.loads(sys.argv[1]))
    assert r.status_code == 200, r.text
    started = r.json()
    deadline = time.monotonic() + 90
    while c.get("/api/rl/status").json()["running"] and time.monotonic() < deadline:
        time.sleep(0.2)
    status = c.get("/api/rl/status").json()
    run = os.path.join(c.app.state.rl.runs_root, f"run-{status['run']}")
    shutil.copytree(run, sys.argv[2], symlinks=True)
    r = c.post("/api/rl/watch")
    assert r.status_code == 200, r.text
    while c.get("/api/state").json()["watch"]["env_step"] < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    state = c.get("/api/state").json()
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "stable_baselines3"))
    print(json.dumps({"env_step": state["watch"]["env_step"], "heavy": heavy,
                      "onnxruntime": "onnxruntime" in sys.modules,
                      "started": started, "status": status}))
"""


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """A 128-step training run to its end by a dashboard in a fresh process, then watched: what
    that process saw ({env_step, heavy, onnxruntime, started, status}) and `folder`, a copy of
    the run's folder. One training for the three tests that need a finished one (each trainer
    and its torch import take seconds)."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("short_run") / "run"
    body = json.dumps({**TRAIN, "total_steps": 128})
    out = subprocess.run(
        [sys.executable, "-c", SHORT_RUN_SCRIPT, body, str(folder)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=str(ROOT),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "folder": folder}


@pytest.mark.slow
def test_watch_never_imports_torch_into_the_server(short_run):
    """The dashboard imported, a training run and watched in a fresh process: the watched policy
    acts (env steps go by) and neither torch nor stable_baselines3 is in sys.modules (the trainer
    and the ONNX export ran in children)."""
    got = short_run
    assert got["env_step"] >= 3 and got["onnxruntime"], got
    assert got["heavy"] == [], got["heavy"][:10]


@pytest.mark.slow
def test_watched_references_are_the_onnx_policys(short_run, tmp_path):
    """The watcher of a training folder (its policy exported in a child, run with onnxruntime)
    holds exactly the references the task makes of OnnxPolicy's actions on the same
    observations (the ONNX file exported here), and those actions are the torch policy's
    (the backend's predict: SB3's on the normalised observations, rsl_rl's on the raw ones) to
    float32 precision."""
    import numpy as np

    from asr.rl.onnx_policy import OnnxPolicy, export_onnx, load_training
    from asr_dashboard.policy_watch import PolicyWatcher
    from asr_dashboard.rl_tasks import task_class

    task = TRAIN["task"]
    folder = short_run["folder"]  # a finished 128-step training
    w = PolicyWatcher(str(folder), task, run_id=1, seed=5)
    policy = OnnxPolicy(export_onnx(folder, tmp_path / "policy.onnx"))
    model, vn, _ = load_training(folder)
    env = task_class(task)(3)  # link states to act on: the task's own, driven by the policy
    env.reset(seed=11)
    w.act(env.q.copy(), env.qd.copy())  # the watcher's episode starts (its own target)
    for _ in range(4):
        env.step(np.clip(np.asarray(policy(env.observe()), float), w.low, w.high))
        q, qd = env.q.copy(), env.qd.copy()
        mine = w.env  # the observation as the watcher builds it (its target, its env step)
        mine.set_state(q, qd, w.env_step)
        obs = mine.observe()
        action = np.clip(np.asarray(policy(obs), float), w.low, w.high)
        expected = np.asarray(mine.refs(action), float)
        np.testing.assert_array_equal(w.act(q, qd), expected)
        raw = obs if vn is None else vn.normalize_obs(obs)  # rsl_rl's actor normalises itself
        torch_action = model.predict(raw.astype(np.float32), deterministic=True)
        np.testing.assert_allclose(action, np.clip(torch_action[0], w.low, w.high), atol=1e-5)
    assert w.info()["env_step"] == 5 and w.info()["episode"] == 1
