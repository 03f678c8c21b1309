"""The dashboard's interaction-control panel (dashboard/PROTOCOL.md "Interaction control"): a
ur10 session on its own Sim started over /api/interaction, its FSM reaching "static" over the
plate, a force reference with direct force control in the status and in `interaction` WebSocket
messages, a law change, the request checks (422 naming the field, 409 for a second start,
Origin), the session thread gone after stop; then the page in Debian's Chromium (Playwright):
start, the FSM text becomes "static", the plot receives points."""

import json
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import require

require("fastapi")
require("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from asr_dashboard.app import create_app  # noqa: E402
from asr_dashboard.settings import Settings  # noqa: E402
from tests.support.dashboard_interaction import (  # noqa: E402
    ANSWER_MS,
    BASE,
    SIM_MS,
    SIM_S,
    STREAM,
    client,  # noqa: E402,F401 (fixtures)
    status,
)
from tests.support.dashboard_server import wait_for  # noqa: E402

THREAD = "asr-dashboard-interaction"
# direct force on z only: kp 0, ki 2e-4 m/(N s)
DIRECT = {"law": "direct_force", "kp": [0, 0, 0], "ki": [0, 0, 2e-4]}


def session_threads():
    return [t for t in threading.enumerate() if t.name == THREAD]


def threads_since(before):
    """Names of the threads alive now that were not in `before`, but those of shared pools
    started on first use and kept for reuse: tqdm's monitor (the first progress bar in the
    process) and the event loop's default executor (asyncio_N, the server's run_in_executor)."""
    return [
        t.name
        for t in threading.enumerate()
        if t not in before and t.name != "tqdm_monitor" and not t.name.startswith("asyncio_")
    ]


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    "path, body, field, words",
    [
        ("start", {"law": "admittance", "mass": [-1, 1, 1]}, "mass", "positive definite"),
        ("start", {"law": "impedance"}, "law", "direct_force"),
        ("start", {"variant": "vsa_medium"}, "variant", "vsa_soft"),
        ("start", {"variant": "/etc/passwd"}, "variant", "rigid"),
        ("start", {"ki": [0, 0, "NaN"]}, "ki", "finite"),
        ("start", {"position": [1.5, 0.2, 0.07]}, "position", "outside [0.4, 1] m"),
        ("start", {"kp": [0, 0]}, "kp", "at least 3"),
        ("start", {"out": "/tmp/x"}, "out", "Extra inputs are not permitted"),
    ],
)
def test_start_refuses_bad_values(client, path, body, field, words):
    r = client.post(f"/api/interaction/{path}", json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    if isinstance(detail, str):  # asr's own message or the box check: the field first
        assert detail.startswith(f"{field}: ") and words in detail, detail
    else:
        assert any(field in e["loc"] for e in detail) and words in json.dumps(detail), detail
    assert "/work" not in r.text and not status(client)["running"]
    assert not session_threads()


def test_commands_need_a_session(client):
    r = client.post("/api/interaction/reference", json={"force": [0, 0, 10]})
    assert r.status_code == 409 and "start" in r.text


def test_state_changing_routes_check_the_origin(client):
    for path in ("start", "stop", "law", "reference"):
        r = client.post(
            f"/api/interaction/{path}", json={}, headers={"Origin": "http://evil.example"}
        )
        assert r.status_code == 403, (path, r.text)
    assert not status(client)["running"]


def test_options(client):
    o = client.get("/api/interaction/options").json()
    assert o["variants"] == ["rigid", "vsa_soft", "vsa_stiff"]
    assert o["laws"] == ["admittance", "direct_force"] and o["box"]["z"] == [0.055, 0.3]


# ------------------------------------------------------------------ a session


@pytest.mark.slow
def test_session_lifecycle(client):
    before = set(threading.enumerate())
    r = client.post("/api/interaction/start", json=DIRECT)
    assert r.status_code == 200, r.text
    st = r.json()
    assert st["running"] and st["law"] == "direct_force" and st["fsm"] == "joint"
    assert st["gains"]["ki"] == [0, 0, 2e-4] and len(session_threads()) == 1

    # a second start is refused
    r = client.post("/api/interaction/start", json=DIRECT)
    assert r.status_code == 409 and "already running" in r.text

    # the setpoint over the plate ends in the static law
    st = wait_for(
        lambda: (lambda s: s["fsm"] == "static" and s)(status(client)),
        SIM_S,
        "the FSM to reach static",
    )
    assert abs(st["x_d"][2] - 0.07) < 1e-3 and abs(st["x_d"][0] - 0.6) < 1e-3, st

    # 10 N along z: in the status and in the interaction messages with samples
    r = client.post("/api/interaction/reference", json={"force": [0, 0, 10]})
    assert r.status_code == 200, r.text
    assert r.json()["force_reference"] == [0, 0, 10]
    with client.websocket_connect(STREAM) as ws:
        for _ in range(500):
            msg = json.loads(ws.receive_text())
            if msg["type"] == "interaction" and msg["samples"]["t"]:
                break
        assert msg["type"] == "interaction", msg["type"]
        assert msg["f_d"] == [0, 0, 10] and msg["fsm"] == "static"
        assert len(msg["samples"]["t"]) <= 10 and len(msg["samples"]["f_e"][0]) == 3
        assert all(f == [0, 0, 10] for f in msg["samples"]["f_d"])
    assert status(client)["f_d"] == [0, 0, 10]
    # direct force brings the tool down onto the plate and holds 10 N there
    st = wait_for(
        lambda: (lambda s: abs(s["f_e"][2] - 10.0) < 0.5 and s)(status(client)),
        SIM_S,
        "f_e z to reach 10 N",
    )
    assert abs(st["x_m"][2] - 0.06) < 2e-3, st  # the sphere on the plate (tcp z 0.06)

    # bad references: non-finite force (pydantic), a position outside the box
    r = client.post("/api/interaction/reference", json={"force": [0, 0, "Infinity"]})
    assert r.status_code == 422 and "force" in r.text
    r = client.post("/api/interaction/reference", json={"position": [0.6, 0.2, 0.01]})
    assert r.status_code == 422 and r.json()["detail"].startswith("position: z = 0.01 m")
    # bad gains while running: asr's message, the session goes on with the old law
    r = client.post("/api/interaction/law", json={"law": "admittance", "stiffness": [1, -1, 1]})
    assert r.status_code == 422 and r.json()["detail"].startswith("stiffness: got -1"), r.text
    assert status(client)["law"] == "direct_force"

    # a law change: a new controller from the present pose, the force reference kept
    r = client.post("/api/interaction/law", json={"law": "admittance"})
    assert r.status_code == 200, r.text
    st = r.json()
    assert st["law"] == "admittance" and st["gains"]["stiffness"] == [1300, 1300, 0]
    st = wait_for(
        lambda: (lambda s: s["fsm"] == "static" and s["f_d"] == [0, 0, 10] and s)(status(client)),
        SIM_S,
        "static again with the force reference",
    )
    # a position move: a trajectory, during which other inputs are refused (409, asr's text)
    # (0.35 m at 0.1 m/s: 3.5 s, far longer than the next request takes)
    r = client.post("/api/interaction/reference", json={"position": [0.95, 0.2, 0.07]})
    assert r.status_code == 200 and r.json()["fsm"] == "trajectory", r.text
    r = client.post("/api/interaction/reference", json={"force": [0, 0, 5]})
    assert r.status_code == 409 and "not in the static state" in r.text, r.text
    r = client.post("/api/interaction/reference", json={"position": [0.6, 0.2, 0.07]})
    assert r.status_code == 409 and "state trajectory" in r.text, r.text

    # stop: the thread ends
    st = client.post("/api/interaction/stop").json()
    assert not st["running"] and st["message"] == "stopped"
    wait_for(lambda: not session_threads(), 5, "the session thread to end")
    # nothing the session started outlives it (threads may take a moment to finish)
    try:
        wait_for(lambda: not threads_since(before), 10, "the session's threads to end")
    except AssertionError:
        raise AssertionError(f"threads left by the session: {threads_since(before)}") from None
    assert client.post("/api/interaction/law", json=DIRECT).status_code == 409


def test_session_is_stopped_when_the_server_stops():
    with TestClient(create_app(Settings()), base_url=BASE) as c:
        assert c.post("/api/interaction/start", json={"variant": "vsa_stiff"}).json()["running"]
        assert len(session_threads()) == 1
    assert not session_threads()


# How long one request may take while the session steps on a host loaded by two busy processes
# (2 cores): a few scheduler slices and a tick's lock hold are milliseconds; the bound is generous
# for a shared CI host, yet far under the tens of seconds a starving loop held requests for.
REQUEST_BOUND_S = 5.0


@pytest.mark.slow
def test_requests_answer_while_the_session_steps_under_load():
    """Python's locks are not fair: the session thread must let waiting requests in between its
    ticks. With two busy processes beside it, status reads and a force reference each answer
    within REQUEST_BOUND_S while the session's time goes on."""
    with TestClient(create_app(Settings()), base_url=BASE) as c:
        assert c.post("/api/interaction/start", json=DIRECT).status_code == 200
        wait_for(lambda: status(c)["fsm"] == "static", SIM_S, "the FSM to reach static")
        hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
        try:
            t_sim0, latencies = status(c)["time"], []
            end = time.monotonic() + 4.0
            while time.monotonic() < end:
                t0 = time.monotonic()
                assert c.get("/api/interaction/status").status_code == 200
                latencies.append(time.monotonic() - t0)
            t0 = time.monotonic()
            r = c.post("/api/interaction/reference", json={"force": [0, 0, 5]})
            latencies.append(time.monotonic() - t0)
            t_sim1 = status(c)["time"]
        finally:
            for h in hogs:
                h.kill()
                h.wait()
        c.post("/api/interaction/stop")
    print(
        f"{len(latencies)} requests under load: worst {max(latencies) * 1e3:.0f} ms, median "
        f"{sorted(latencies)[len(latencies) // 2] * 1e3:.1f} ms; session time "
        f"{t_sim0:.2f} -> {t_sim1:.2f} s"
    )
    assert r.status_code == 200 and r.json()["force_reference"] == [0, 0, 5], r.text
    assert t_sim1 > t_sim0, "the session did not step"
    assert max(latencies) < REQUEST_BOUND_S, f"a request waited {max(latencies):.1f} s"


# ------------------------------------------------------------------ the page


@pytest.mark.browser
def test_interaction_panel_in_chromium():
    sync_api = require("playwright.sync_api")
    from tests.support.dashboard_server import chromium_path, running_server

    chromium = chromium_path()
    with running_server() as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            pg = browser.new_page(viewport={"width": 1280, "height": 1600})
            errors = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.goto(url)
            pg.wait_for_function(
                "() => document.querySelectorAll('#ic-law option').length == 2"
                " && document.getElementById('ic-gain-ki-z')",
                timeout=ANSWER_MS,
            )
            assert pg.input_value("#ic-law") == "direct_force"
            pg.fill("#ic-gain-ki-z", "0.0002")
            pg.click("#btn-ic-start")
            pg.wait_for_function(
                "() => document.getElementById('ic-fsm').dataset.state === 'static'", timeout=SIM_MS
            )
            assert pg.text_content("#ic-fsm") == "static"
            pg.click("#btn-ic-force")  # 10 N on z (the panel's default)
            pg.wait_for_function(
                "() => +document.getElementById('plot-ic').dataset.points > 50", timeout=SIM_MS
            )
            traces = pg.evaluate(
                "() => document.getElementById('plot-ic').data.map("
                "t => [t.name, t.y.length, t.y[t.y.length - 1]])"
            )
            assert [t[0] for t in traces] == ["f_e z", "f_d z"] and traces[0][1] > 50
            pg.wait_for_function(
                "() => { const d = document.getElementById('plot-ic').data;"
                " return d && d[1].y[d[1].y.length - 1] === 10; }",
                timeout=SIM_MS,
            )
            # a server error shows in the panel
            pg.fill("#ic-pos-z", "0.5")
            pg.click("#btn-ic-position")
            pg.wait_for_selector("#ic-error:not([hidden])", timeout=ANSWER_MS)
            assert "outside" in pg.text_content("#ic-error")
            pg.click("#btn-ic-stop")
            pg.wait_for_function(
                "() => document.getElementById('ic-status').dataset.running === '0'",
                timeout=ANSWER_MS,
            )
            assert not errors, errors
        finally:
            browser.close()
