"""The dashboard server (dashboard/PROTOCOL.md): REST endpoints, the WebSocket stream, ILC,
workspace and exports, against the live qbmove_arm_2dof simulation (TestClient, lifespan on)."""

import io
import time

import numpy as np
import pytest

from tests.conftest import require

require("fastapi")
require("httpx")

from tests.support.dashboard_api import STREAM, client, shared_client  # noqa: E402,F401 (fixtures)
from tests.support.dashboard_server import SIM_DEADLINE_S, assert_running, sim_time, wait_for  # noqa: E402

N_SERIES = 7  # q, eq, defl, tau, stiffness, th1, th2 per instance and joint


def receive(ws, kind, limit=200):
    """The next message of type `kind` (others skipped)."""
    for _ in range(limit):
        m = ws.receive_json()
        if m["type"] == kind:
            return m
    raise AssertionError(f"no {kind!r} message in {limit} messages")


def defl_mean(frame, trace):
    return float(np.mean(frame["update"]["y"][trace]))


# ---------------------------------------------------------------- REST


def test_robots_state_and_static(client):
    robots = client.get("/api/robots").json()["robots"]
    arm = next(r for r in robots if r["name"] == "qbmove_arm_2dof")
    assert set(arm["variants"]) == {"vertical", "horizontal", "throw", "throw_rigid"}
    assert [j["name"] for j in arm["joints"]] == ["joint1", "joint2"]
    s = client.get("/api/state").json()
    assert (s["robot"], s["variant"], s["speed"], s["paused"], s["compare"]) == (
        "qbmove_arm_2dof",
        "vertical",
        1.0,
        False,
        [],
    )
    assert [j["mode"] for j in s["joints"]] == [6, 6]
    assert s["presets"] == {"joint1": 0.2, "joint2": 0.2}
    assert s["gains"]["joint1"]["kp"] == 125.0
    assert s["joints"][0]["params"]["k1"] == pytest.approx(0.01038)
    assert s["reference"]["joint1"]["kind"] == "hold"
    js = client.get("/static/plotly.min.js")
    assert js.status_code == 200 and "plotly" in js.text[:2000].lower()
    assert client.get("/openapi.json").json()["paths"]["/api/control"]
    assert_running(client)


@pytest.mark.slow
def test_control_stiffness_push_reset_speed_pause(client):
    s = client.post(
        "/api/control",
        json={
            "params": {"joint1": {"kp": 200, "kd": 5}},
            "mode": {"joint2": 6},
            "reference": {"joint1": {"kind": "sine", "amplitude": 0.2, "frequency": 1.0}},
            "speed": 2,
        },
    ).json()
    assert s["gains"]["joint1"]["kp"] == 200 and s["gains"]["joint1"]["kd"] == 5
    assert s["reference"]["joint1"]["kind"] == "sine" and s["speed"] == 2.0
    # the buttons' presets (PROTOCOL.md "Presets"): off the clamp in the first view, which
    # swings the arm about its hanging pose (robot.toml first_view): the model's stiff on both
    buttons = {j["name"]: j["presets"]["stiff"] for j in s["joints"]}
    assert buttons == {"joint1": 0.6, "joint2": 0.6}
    assert all(j["presets"]["clamp_free"] for j in s["joints"])
    assert client.post("/api/stiffness/stiff").json()["presets"] == buttons
    assert client.post("/api/stiffness/soft").json()["presets"] == {"joint1": 0.2, "joint2": 0.2}
    r = client.post("/api/push", json={"joint": "joint2", "torque": 0.5, "duration": 0.05})
    assert r.status_code == 200 and r.json()["steps"] == 50
    assert client.post("/api/control", json={"speed": "max"}).json()["speed"] == "max"
    assert client.post("/api/control", json={"speed": "1"}).json()["speed"] == 1.0
    assert client.post("/api/control", json={"paused": True}).json()["paused"] is True
    t0 = sim_time(client)
    time.sleep(0.15)
    assert sim_time(client) == t0
    client.post("/api/control", json={"paused": False})
    assert_running(client)
    time.sleep(0.2)
    assert client.post("/api/reset").json()["time"] < 0.1


@pytest.mark.parametrize(
    "path, body, status, words",
    [
        ("/api/control", "{not json", 422, "JSON decode error"),
        ("/api/control", {"preset": {"joint1": 0.3}, "colour": "red"}, 422, "Extra inputs"),
        ("/api/control", {"speed": 0}, 422, "greater than 0"),
        ("/api/control", {"speed": 101}, 422, "less than or equal to 100; valid range (0, 100]"),
        ("/api/control", {"speed": "fast"}, 422, "'max'"),
        (
            "/api/control",
            {"mode": {"joint1": 9}},
            422,
            "less than or equal to 6; valid range [0, 6]",
        ),
        (
            "/api/control",
            {"params": {"joint1": {"kp": -1}}},
            422,
            "greater than or equal to 0; valid range [0, 1e+06]",
        ),
        ("/api/control", {"params": {"joint1": {"nope": 1}}}, 422, "unknown parameter 'nope'"),
        ("/api/control", {"preset": {"joint1": 2.0}}, 422, "valid range [0, 0.8]"),
        ("/api/control", {"preset": {"elbow": 0.3}}, 422, "unknown joint 'elbow'"),
        ("/api/control", {"reference": {"joint1": {"kind": "square"}}}, 422, "sine"),
        ("/api/robot", {"robot": "no_such_robot"}, 404, "available: "),
        (
            "/api/robot",
            {"robot": "qbmove_arm_2dof", "variant": "upside_down"},
            404,
            "unknown variant",
        ),
        ("/api/robot", {}, 422, "Field required"),
        (
            "/api/push",
            {"joint": "joint1", "torque": 1e6},
            422,
            "less than or equal to 100; valid range [-100, 100]",
        ),
        ("/api/push", {"joint": "elbow", "torque": 1}, 422, "unknown joint"),
        ("/api/compare", {"presets": [0.2] * 9}, 422, "n_compare_max"),
        ("/api/compare", {"presets": [0.2, 5.0]}, 422, "valid range"),
        (
            "/api/ilc/start",
            {"iterations": 0},
            422,
            "greater than or equal to 1; valid range [1, 50]",
        ),
        ("/api/ilc/start", {"iterations": 51}, 422, "less than or equal to 50"),
        ("/api/workspace", {"robot": "qbmove_arm_2dof", "bogus": 1}, 422, "Extra inputs"),
        ("/api/stiffness/medium", None, 422, "soft"),
    ],
)
def test_bad_input(client, path, body, status, words):
    if isinstance(body, str):
        r = client.post(path, content=body, headers={"content-type": "application/json"})
    else:
        r = client.post(path, json=body)
    assert r.status_code == status, r.text
    assert words in r.text
    s = client.get("/api/state").json()
    assert s["robot"] == "qbmove_arm_2dof" and s["presets"]["joint1"] == 0.2
    assert_running(client)


def test_switch_robot(client):
    s = client.post("/api/robot", json={"robot": "pendulum_1dof", "variant": "sea"}).json()
    assert s["robot"] == "pendulum_1dof" and s["joints"][0]["model"] == "sea"
    assert_running(client)
    s = client.post("/api/stiffness/stiff").json()
    assert s["presets"]["joint"] == 400 and s["joints"][0]["params"]["k"] == 400


# ---------------------------------------------------------------- stream


@pytest.mark.slow
def test_stream_figure_frames_and_control(client):
    with client.websocket_connect(STREAM) as ws:
        first = ws.receive_json()
        assert first["type"] == "figure"
        data = first["figure"]["data"]
        assert len(data) == 2 * N_SERIES
        assert first["figure"]["layout"]["uirevision"].startswith("run-")
        plots = {t["meta"]["plot"] for t in data}
        assert plots == {"plot-q", "plot-defl", "plot-tau", "plot-stiffness", "plot-motors"}
        defl1 = next(
            k
            for k, t in enumerate(data)
            if t["meta"]["field"] == "defl" and t["meta"]["joint"] == "joint1"
        )
        # ten frames of the 30 Hz stream, however long a busy host takes to send them: the
        # stream's rate is the pacing tests' claim (test_dashboard_pacing), not this one's
        frames = [receive(ws, "extend") for _ in range(10)]
        f = frames[-1]
        assert f["indices"] == list(range(2 * N_SERIES))
        assert len(f["update"]["x"]) == len(f["update"]["y"]) == 2 * N_SERIES
        assert 1 <= len(f["update"]["x"][0]) <= 50 and f["maxPoints"] > 0
        q, eq, d = (np.array(f["update"]["y"][defl1 + k]) for k in (-2, -1, 0))
        # each trace is rounded to 5 significant digits of its largest magnitude (figure.py):
        # half a unit of that digit for q and for eq, and of the 6th decimal for defl
        unit = 10.0 ** (np.floor(np.log10(max(np.abs(q).max(), np.abs(eq).max()))) - 4)
        np.testing.assert_allclose(d, q - eq, atol=unit + 0.5e-6 + 1e-12)
        before = defl_mean(f, defl1)

        ws.send_json({"type": "control", "preset": {"joint1": 0.6, "joint2": 0.6}})
        st = receive(ws, "state")["state"]
        assert st["presets"] == {"joint1": 0.6, "joint2": 0.6}
        # within 1 s of simulated time (0.5 s at 30 frames/s of a real-time stream; a busy host
        # slows the simulation, so frames are not counted), and 60 s of wall time at most
        start, deadline = f["update"]["x"][defl1][-1], time.monotonic() + 60
        while True:
            m = receive(ws, "extend")
            if abs(defl_mean(m, defl1) - before) > 0.02:
                break
            t_sim = m["update"]["x"][defl1][-1] - start
            assert t_sim < 1.0 and time.monotonic() < deadline, (
                f"the stiff preset did not change the deflection in {t_sim:.2f} s simulated"
            )


def test_stream_garbage(client):
    with client.websocket_connect(STREAM) as ws:
        assert ws.receive_json()["type"] == "figure"
        for bad, words in [
            ("not json", "not JSON"),
            ("[1, 2]", "'type'"),
            ('{"type": "dance"}', "dance"),
            ('{"type": "control", "speed": -1}', "greater than 0; valid range (0, 100]"),
            ('{"type": "control", "preset": {"joint1": 9}}', "valid range"),
            ('{"type": "push", "joint": "elbow", "torque": 1}', "unknown joint"),
        ]:
            ws.send_text(bad)
            err = receive(ws, "error")
            assert words in err["message"], (bad, err)
        ws.send_bytes(b"\x00\x01")
        assert "binary" in receive(ws, "error")["message"]
        ws.send_json({"type": "ping"})
        receive(ws, "pong")
        ws.send_json({"type": "push", "joint": "joint1", "torque": 0.5, "duration": 0.05})
        for _ in range(3):
            receive(ws, "extend")
    assert_running(client)


def test_compare_one_trace_set_per_preset(client):
    with client.websocket_connect(STREAM) as ws:
        assert ws.receive_json()["type"] == "figure"
        s = client.post("/api/compare", json={"presets": [0.2, 0.4, 0.6]}).json()
        assert s["compare"] == [0.2, 0.4, 0.6] and s["n_instances"] == 3
        fig = receive(ws, "figure")["figure"]
        assert len(fig["data"]) == 3 * 2 * N_SERIES
        assert sorted({t["meta"]["preset"] for t in fig["data"]}) == [0.2, 0.4, 0.6]
        assert sum("preset 0.4" in t["name"] for t in fig["data"]) == 2 * N_SERIES
        f = receive(ws, "extend")
        assert len(f["indices"]) == len(f["update"]["y"]) == 3 * 2 * N_SERIES
        s = client.post("/api/compare", json={"presets": []}).json()
        assert s["compare"] == [] and s["n_instances"] == 1
        assert len(receive(ws, "figure")["figure"]["data"]) == 2 * N_SERIES


def test_ilc(client):
    with client.websocket_connect(STREAM) as ws:
        assert ws.receive_json()["type"] == "figure"
        r = client.post(
            "/api/ilc/start",
            json={"iterations": 2, "preset": 0.2, "duration": 1.0, "gain": 0.5, "settle_s": 0.5},
        )
        assert r.status_code == 200, r.text
        events = []
        while not events or events[-1]["running"]:
            events.append(receive(ws, "ilc", limit=400))
        assert [e["iteration"] for e in events if e["running"]][:2] == [1, 2]
        assert len(events[-1]["errors"]) == 2
    st = client.get("/api/ilc").json()
    assert st["running"] is False and st["iteration"] == 2 and len(st["errors"]) == 2
    assert all(e > 0 for e in st["errors"]) and st["errors"][1] < st["errors"][0]
    res = np.load(io.BytesIO(client.post("/api/ilc/result.npz").content))
    assert res["input"].shape == (1, 1000, 2)
    assert client.post("/api/ilc/stop").json()["running"] is False
    assert_running(client)


def test_workspace_round_trip(client):
    client.post(
        "/api/control",
        json={
            "preset": {"joint1": 0.5},
            "params": {"joint2": {"kp": 150}},
            "reference": {
                "joint2": {
                    "kind": "chirp",
                    "amplitude": 0.1,
                    "frequency": 0.2,
                    "frequency_end": 1.0,
                    "period": 4.0,
                }
            },
            "speed": 0.5,
        },
    )
    saved = client.get("/api/workspace").json()
    assert saved["preset"]["joint1"] == 0.5 and saved["params"] == {"joint2": {"kp": 150.0}}
    client.post("/api/robot", json={"robot": "qbmove_arm_2dof", "variant": "horizontal"})
    s = client.post("/api/workspace", json=saved).json()
    assert (s["variant"], s["presets"]["joint1"], s["gains"]["joint2"]["kp"], s["speed"]) == (
        "vertical",
        0.5,
        150.0,
        0.5,
    )
    assert client.get("/api/workspace").json() == saved
    bad = dict(saved, robot="no_such_robot")
    assert client.post("/api/workspace", json=bad).status_code == 404
    assert client.get("/api/workspace").json() == saved
    assert_running(client)


def test_exports(client):
    # more than 5 samples of history: six frames published (each of at least one sample) since
    # the fixture's restart, counted rather than waited for by the clock
    f0 = client.get("/api/state").json()["frames"]
    wait_for(
        lambda: client.get("/api/state").json()["frames"] >= f0 + 6, SIM_DEADLINE_S, "6 frames"
    )
    r = client.post("/api/export.npz")
    assert r.status_code == 200
    z = np.load(io.BytesIO(r.content))
    T = z["t"].size
    assert T > 5 and z["q"].shape == (1, T, 2) and z["defl"].shape == (1, T, 2)
    np.testing.assert_allclose(z["defl"], z["q"] - z["eq"], atol=1e-5)
    assert np.all(np.diff(z["t"]) > 0)
    h = client.post("/api/export.html")
    assert h.status_code == 200 and h.headers["content-type"].startswith("text/html")
    assert "Plotly.newPlot" in h.text and "joint1 deflection" in h.text
