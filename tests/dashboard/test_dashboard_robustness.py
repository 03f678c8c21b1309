"""Nothing a user does crashes the dashboard or wedges it: a control change or a workspace is
applied whole or not at all, NaN / Infinity / 5000-digit numbers / deep nesting get a clear 422
or an error on the stream (which goes on), a diverging parameter pauses the simulation with one
error naming it, and broken robot folders are listed with their error (TestClient, loopback)."""

import json
import math
import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.conftest import require

require("fastapi")
require("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from asr_dashboard.app import create_app  # noqa: E402
from asr_dashboard.runner import SimRunner  # noqa: E402
from asr_dashboard.settings import Settings  # noqa: E402

# the app at the default robot (fixtures client, shared_client) and its helpers
from tests.support.dashboard_api import BASE, STREAM, client, shared_client  # noqa: E402,F401
from tests.support.dashboard_server import SIM_DEADLINE_S, assert_running  # noqa: E402
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

ROOT = str(ROOT_PATH)
# the configuration a failed command must leave as it was (not time, frames, clients)
CONFIG = (
    "robot",
    "variant",
    "joints",
    "presets",
    "reference",
    "gains",
    "speed",
    "paused",
    "compare",
    "n_instances",
)


def config(client):
    state = client.get("/api/state").json()
    return {k: state[k] for k in CONFIG}


def post_text(client, path, text):
    return client.post(path, content=text, headers={"content-type": "application/json"})


def drain(ws, seconds):
    """The messages received over about `seconds` s (bounded: a ping every 50 ms, read up to
    its pong, so a quiet stream never blocks)."""
    out, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        ws.send_json({"type": "ping"})
        for _ in range(1000):
            m = ws.receive_json()
            if m["type"] == "pong":
                break
            out.append(m)
        time.sleep(0.05)
    return out


def drain_frames(ws, n):
    """The messages received until `n` extend frames have come (pinging as drain does), within
    SIM_DEADLINE_S: counted, not timed, so a busy host that sends them late still passes."""
    out, deadline = [], time.monotonic() + SIM_DEADLINE_S
    while sum(m["type"] == "extend" for m in out) < n:
        assert time.monotonic() < deadline, f"fewer than {n} frames in {SIM_DEADLINE_S:.0f} s"
        out += drain(ws, 0.1)
    return out


def answer(ws, limit=1000):
    """The first error or pong after a message (frames and states skipped)."""
    for _ in range(limit):
        m = ws.receive_json()
        if m["type"] in ("error", "pong"):
            return m
    raise AssertionError(f"no answer in {limit} messages")


# ---------------------------------------------------------------- whole or not at all


@pytest.mark.slow
def test_a_control_change_is_applied_whole_or_not_at_all(client):
    r = client.post("/api/control", json={"params": {"joint1": {"pos_min": 0.5, "pos_max": 1.0}}})
    assert r.status_code == 200, r.text
    before = config(client)
    for body, words in [
        # kp is valid, the limit order is not: kp stays 125 (it was applied before the 422)
        ({"params": {"joint1": {"kp": 78, "pos_max": -0.5}}}, "pos_min < pos_max"),
        ({"params": {"joint1": {"pos_min": 2.0}}}, "params joint1.pos_min: got 2"),
        ({"params": {"joint1": {"kp": 78}, "joint2": {"k1": -1}}}, "k1"),
        ({"params": {"joint1": {"kd": 1, "k1": int("1" + "0" * 400)}}}, "too large"),
        (
            {"mode": {"joint1": 3}, "params": {"joint1": {"kd": 1}}, "preset": {"joint2": 5.0}},
            "preset joint2",
        ),
        (
            {"mode": {"joint1": 5}, "speed": 3, "reference": {"elbow": {"kind": "step"}}},
            "unknown joint 'elbow'",
        ),
    ]:
        r = client.post("/api/control", json=body)
        assert r.status_code == 422 and words in r.json()["detail"], (body, r.text)
        assert config(client) == before, body
    # both limits moved past each other in one request: set in an order that stays valid
    for lo, hi in ((2.0, 3.0), (-1.0, 0.1)):
        r = client.post("/api/control", json={"params": {"joint1": {"pos_min": lo, "pos_max": hi}}})
        assert r.status_code == 200, r.text
        params = r.json()["joints"][0]["params"]
        assert (params["pos_min"], params["pos_max"]) == (lo, hi)
    assert_running(client)


def test_a_control_that_fails_while_applied_is_rolled_back_exactly(monkeypatch):
    """Past validation, a failure anywhere (here: the presets) puts back every value exactly,
    the live Sim's parameters and modes included, also when the Sim had been rebuilt."""
    runner = SimRunner(Settings())  # not started: commands are applied at once
    runner.control(
        {
            "params": {"joint1": {"kp": 50.0, "pos_min": -1.0, "pos_max": 1.0}},
            "mode": {"joint2": 5},
            "speed": 2.0,
        }
    )
    batch0 = runner.session.sim.batch

    def exact():
        b = runner.session.sim.batch
        return (
            json.dumps(runner.state(), sort_keys=True),
            runner.workspace(),
            b is batch0,
            [int(m) for m in b.modes],
            [
                [b.get_param(k, p.name).tolist() for p in spec.all_params]
                for k, spec in enumerate(b.specs)
            ],
        )

    before = exact()

    def boom():
        raise RuntimeError("preset failed")

    monkeypatch.setattr(runner.session, "apply_presets", boom)
    change = {
        "params": {"joint1": {"kp": 78.0, "pos_min": 2.0, "pos_max": 3.0}, "joint2": {"k1": 0.02}},
        "mode": {"joint1": 5, "joint2": 6},
        "preset": {"joint1": 0.3},
        "reference": {
            "joint1": {
                "kind": "sine",
                "amplitude": 0.2,
                "frequency": 1.0,
                "frequency_end": 2.0,
                "period": 5.0,
                "offset": 0.0,
            }
        },
        "speed": "max",
        "paused": True,
    }
    with pytest.raises(RuntimeError, match="preset failed"):
        runner.control(change)
    assert exact() == before
    # in a compare view a preset rebuilds the Sim (one instance): the old one comes back
    monkeypatch.undo()
    runner.set_compare([0.2, 0.6])
    batch0 = runner.session.sim.batch
    before = exact()
    monkeypatch.setattr(runner.session, "apply_presets", boom)
    with pytest.raises(RuntimeError, match="preset failed"):
        runner.control(change)
    assert exact() == before and runner.session.sim.n_instances == 2


@pytest.mark.slow
def test_a_workspace_is_loaded_whole_or_not_at_all(client):
    for path, body in [
        (
            "/api/control",
            {
                "params": {"joint1": {"kp": 50.0}},
                "mode": {"joint2": 5},
                "reference": {"joint1": {"kind": "sine", "amplitude": 0.1}},
                "speed": 2.0,
            },
        ),
        ("/api/compare", {"presets": [0.2, 0.4]}),
        ("/api/control", {"paused": True}),
    ]:
        assert client.post(path, json=body).status_code == 200
    before, saved = config(client), client.get("/api/workspace").json()
    pendulum = {"robot": "pendulum_1dof", "variant": "sea"}
    for ws, status in [
        # each fails after the new robot was loaded: at its params, limits, compare, preset
        (dict(pendulum, params={"joint": {"k": -1.0}}), 422),
        (dict(pendulum, params={"joint": {"pos_min": 1.0, "pos_max": 0.0}}), 422),
        (dict(pendulum, speed=3.0, compare=[200.0] * 9), 422),  # n_compare_max = 8
        (dict(saved, variant="horizontal", compare=[0.9]), 422),
        (dict(saved, robot="no_such_robot"), 404),
    ]:
        r = client.post("/api/workspace", json=ws)
        assert r.status_code == status, (ws, r.text)
        assert config(client) == before, ws
        assert client.get("/api/workspace").json() == saved
    # the saved one loads back whole
    r = client.post("/api/workspace", json=saved)
    assert r.status_code == 200 and config(client) == before
    client.post("/api/control", json={"paused": False})
    assert_running(client)


# ---------------------------------------------------------------- NaN, Infinity, digits


DIGITS_5000 = "9" * 5000
BIG_INT = "1" + "0" * 400  # parses, but no float holds it


@pytest.mark.parametrize(
    "path, text, words",
    [
        ("/api/control", '{"params": {"joint1": {"kp": NaN}}}', "kp"),
        ("/api/control", '{"params": {"joint1": {"kp": Infinity}}}', "kp"),
        ("/api/control", '{"params": {"joint1": {"k1": NaN}}}', "k1"),
        ("/api/control", '{"params": {"joint1": {"k1": ' + BIG_INT + "}}}", "k1"),
        ("/api/control", '{"speed": -Infinity}', "speed"),
        ("/api/control", '{"preset": {"joint1": NaN}}', "joint1"),
        ("/api/control", '{"reference": {"joint1": {"amplitude": Infinity}}}', "amplitude"),
        ("/api/control", '{"preset": {"joint1": ' + DIGITS_5000 + "}}", "5000 digits"),
        ("/api/control", '{"paused": "' + "z" * 100_000 + '"}', "paused"),
        ("/api/control", '{"params": {"joint1": {"' + "k" * 100_000 + '": 1}}}', "at most 100"),
        ("/api/push", '{"joint": "joint1", "torque": NaN}', "torque"),
        ("/api/compare", '{"presets": [0.2, Infinity]}', "presets"),
        ("/api/workspace", '{"robot": "qbmove_arm_2dof", "speed": NaN}', "speed"),
    ],
)
def test_rest_answers_422_naming_the_field(client, path, text, words):
    before = config(client)
    r = post_text(client, path, text)
    assert r.status_code == 422 and words in r.text, r.text[:500]
    assert len(r.content) < 2000, len(r.content)  # a trimmed echo, not the 100 kB value
    assert config(client) == before


@pytest.mark.slow
def test_json_scan_is_linear_in_the_size_of_the_body():
    """1 MB of escaped quotes (an unterminated string) is scanned for nesting in one pass; it
    was scanned again from every quote (about an hour on the event loop, every client frozen).
    In a process of its own, so that the old behaviour fails the test at its timeout."""
    code = """if True:
        from fastapi.testclient import TestClient
        from asr_dashboard.app import create_app
        from asr_dashboard.settings import Settings
        body = b'"' + b'\\\\"' * 500_000
        with TestClient(create_app(Settings()), base_url="http://127.0.0.1") as c:
            r = c.post("/api/control", content=body,
                       headers={"content-type": "application/json"})
            print(r.status_code, len(r.content))
    """
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    status, size = done.stdout.split()
    assert status == "422" and int(size) < 2000, done.stdout + done.stderr[-2000:]


def test_the_stream_answers_bad_json_with_an_error_and_goes_on(client):
    nested = '{"type": "control", "preset": ' + "[" * 10_000 + "]" * 10_000 + "}"
    with client.websocket_connect(STREAM) as ws:
        assert ws.receive_json()["type"] == "figure"
        for text, words in [
            ('{"type": "control", "params": {"joint1": {"kp": Infinity}}}', "kp"),
            ('{"type": "control", "speed": -Infinity}', "speed"),
            ('{"type": "control", "params": {"joint1": {"k1": NaN}}}', "k1"),
            ('{"type": "control", "preset": {"joint1": ' + DIGITS_5000 + "}}", "5000 digits"),
            ('{"type": "ping", "n": ' + "1" * 4301 + "}", "4301 digits"),
            ('{"type": "control", "params": {"joint1": {"k1": ' + BIG_INT + "}}}", "k1"),
            ('{"type": "push", "joint": "joint1", "torque": ' + BIG_INT + "}", "torque"),
            (nested, "nested more than 32 levels"),
            ('{"type": "control", "preset": ' + "[" * 30 + "]" * 30 + "}", "preset"),
            ('"' + '\\"' * 20_000, "not JSON"),
            ("[NaN, Infinity]", "expected a JSON object"),
        ]:
            ws.send_text(text)
            m = answer(ws)
            assert m["type"] == "error" and words in m["message"], (text[:60], m)
            assert len(m["message"]) < 2000
            ws.send_json({"type": "ping"})
            assert answer(ws)["type"] == "pong", text[:60]
        # the stream goes on: frames, and a valid control answered with its state
        drain_frames(ws, 3)
        ws.send_json({"type": "control", "params": {"joint1": {"kp": 126.0}}})
        for _ in range(1000):
            m = ws.receive_json()
            if m["type"] == "state" and m["state"]["gains"]["joint1"]["kp"] == 126.0:
                break
        else:
            raise AssertionError("no state after a valid control")
    assert_running(client)


# ---------------------------------------------------------------- divergence


@pytest.mark.slow
def test_a_diverging_parameter_pauses_once_and_names_itself(client):
    k1 = client.get("/api/state").json()["joints"][0]["params"]["k1"]
    with client.websocket_connect(STREAM) as ws:
        assert ws.receive_json()["type"] == "figure"
        r = client.post("/api/control", json={"params": {"joint1": {"k1": 1e308}}})
        assert r.status_code == 200, r.text
        messages = drain(ws, 2.0)
        errors = [m["message"] for m in messages if m["type"] == "error"]
        print(f"error messages in 2 s after k1 = 1e308: {len(errors)}")
        assert len(errors) == 1, errors[:3]  # was one per restart, 30 a second
        assert "joint1.k1" in errors[0] and "1e+308" in errors[0], errors[0]
        assert "non-finite" in errors[0] and "resume" in errors[0] and "reset" in errors[0]
        state = client.get("/api/state").json()
        assert state["paused"] is True and "joint1.k1" in state["error"]
        # the controls stay usable: k1 back and resume, it runs again without errors
        r = client.post("/api/control", json={"params": {"joint1": {"k1": k1}}, "paused": False})
        assert r.status_code == 200, r.text
        messages = drain_frames(ws, 5)
        assert not [m for m in messages if m["type"] == "error"]
        frames = [m for m in messages if m["type"] == "extend"]
        for m in frames:
            assert all(v is not None and math.isfinite(v) for y in m["update"]["y"] for v in y)
    state = client.get("/api/state").json()
    assert state["error"] is None and state["paused"] is False
    assert_running(client)


# ---------------------------------------------------------------- robots list


def test_broken_robot_folders_are_listed_with_their_error(tmp_path, monkeypatch):
    for name in ("good", "bad_toml", "no_mjcf", "not_xml", "deep_toml"):
        shutil.copytree(os.path.join(ROOT, "robots", "pendulum_1dof"), tmp_path / name)
    (tmp_path / "bad_toml" / "robot.toml").write_text('name = "bad_toml\n[variants\n')
    os.remove(tmp_path / "no_mjcf" / "pendulum.xml")
    (tmp_path / "not_xml" / "pendulum.xml").write_text("this is not XML {")
    (tmp_path / "deep_toml" / "robot.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    monkeypatch.setenv("ASR_ROBOTS", str(tmp_path))
    with TestClient(create_app(Settings(robot="good", variant=None)), base_url=BASE) as c:
        r = c.get("/api/robots")
        assert r.status_code == 200, r.text
        listed = {e["name"]: e for e in r.json()["robots"]}
        assert str(tmp_path) not in r.text
        assert sorted(listed) == ["bad_toml", "deep_toml", "good", "no_mjcf", "not_xml"]
        good = listed["good"]
        assert "error" not in good and good["default_variant"] == "qbmove_advanced"
        assert set(good["variants"]) == {"sea", "awas2", "bavs", "qbmove_advanced"}
        assert [j["name"] for j in good["joints"]] == ["joint"]
        for name in ("bad_toml", "no_mjcf", "not_xml", "deep_toml"):
            entry = listed[name]
            assert f"robot '{name}'" in entry["error"], entry
            assert entry["variants"] == [] and entry["joints"] == []
            r = c.post("/api/robot", json={"robot": name})
            assert r.status_code in (404, 422) and str(tmp_path) not in r.text, r.text
        assert c.get("/api/state").json()["robot"] == "good"


# ---------------------------------------------------------------- Host header


def test_a_foreign_host_gets_403_on_every_export(client):
    """test_dashboard_security.py::test_host_header covers /api/state, /api/export.npz and the
    page; the other downloads are refused the same way."""
    for method, path in (
        ("POST", "/api/export.html"),
        ("POST", "/api/ilc/result.npz"),
        ("GET", "/api/workspace"),
        ("GET", "/api/robots"),
    ):
        r = client.request(method, path, headers={"host": "evil.example"})
        assert r.status_code == 403 and "Host header" in r.text, (path, r.status_code)


@pytest.mark.slow
def test_a_user_model_gets_its_preset_controls(tmp_path, monkeypatch):
    """A user-registered model's preset spec reaches GET /api/robots, the state and the soft /
    stiff buttons without a dashboard table."""
    import asr

    shutil.copytree(os.path.join(ROOT, "robots", "pendulum_1dof"), tmp_path / "user")
    (tmp_path / "user" / "robot.toml").write_text(
        'name = "user"\ndefault_variant = "cubic"\n[variants.cubic]\nmjcf = "pendulum.xml"\n'
        '[[variants.cubic.joints]]\nname = "joint"\nmodel = "test_dash_cubic"\nmode = 3\n'
    )
    preset = asr.PresetSpec(
        lo=0.0, hi=0.9, soft=0.15, stiff=0.7, unit="rad", meaning="pretension angle"
    )
    asr.register_model(
        "test_dash_cubic",
        lambda q, qd, th1, th2, th1d, th2d, k: {"tau1": -k * (q - th1), "stiffness": k},
        params=(asr.ParamSpec("k", 50.0, 0.0, float("inf"), lo_open=True),),
        preset=preset,
    )
    monkeypatch.setenv("ASR_ROBOTS", str(tmp_path))
    expected = dict(
        kind="ref", lo=0.0, hi=0.9, soft=0.15, stiff=0.7, unit="rad", meaning="pretension angle"
    )
    try:
        with TestClient(create_app(Settings(robot="user", variant=None)), base_url=BASE) as c:
            robots = {e["name"]: e for e in c.get("/api/robots").json()["robots"]}
            assert robots["user"]["joints"][0]["preset_range"] == expected
            assert c.get("/api/state").json()["joints"][0]["preset_range"] == expected
            r = c.post("/api/stiffness/stiff")
            assert r.status_code == 200 and r.json()["presets"]["joint"] == 0.7, r.text
            r = c.post("/api/control", json={"preset": {"joint": 0.95}})
            assert r.status_code == 422 and "[0, 0.9] rad" in r.text, r.text
    finally:
        asr.unregister_model("test_dash_cubic")
