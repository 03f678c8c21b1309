"""Only the user's own page drives the dashboard (dashboard/security.py): Host names it answers
to (DNS rebinding refused), Origin on the WebSocket and state-changing routes, the token beyond
loopback, robots named only from the list, error texts without server paths. The in-process
checks use TestClient; the cross-origin, rebinding and token checks run Debian's Chromium
against real servers on 127.0.0.1."""

import http.server
import os
import shutil
import threading

import pytest

from tests.conftest import require

require("fastapi")
require("httpx")
from fastapi.testclient import TestClient  # noqa: E402
from starlette.testclient import WebSocketDenialResponse  # noqa: E402

from asr.cli import build_parser, dashboard_settings, main  # noqa: E402
from asr.robots.robot import robots_dir  # noqa: E402
from asr_dashboard.app import create_app  # noqa: E402
from asr_dashboard.settings import Settings  # noqa: E402
from tests.support.dashboard_server import get_json, wait_sim_past  # noqa: E402
from tests.support.paths import TESTS  # noqa: E402

HERE = str(TESTS)
ROOT = os.path.dirname(HERE)
BASE, STREAM = "http://127.0.0.1:8000", "ws://127.0.0.1:8000/ws/stream"
TOKEN = "s3cret-token-0123456789"


@pytest.fixture(scope="module")
def client():
    with TestClient(
        create_app(Settings(allow_origins=("http://mybox.lan:8000",))), base_url=BASE
    ) as c:
        yield c


def no_server_path(text):
    for path in (ROOT, robots_dir(), os.path.realpath(robots_dir()), HERE):
        assert path not in text, text
    return True


# ---------------------------------------------------------------- robots by name only


@pytest.mark.parametrize(
    "name",
    [
        "../tests/robots/pendulum",
        os.path.join(HERE, "data", "robots", "pendulum"),
        "qbmove_arm_2dof/../pendulum_1dof",
        "./pendulum_1dof",
        "..",
        ".",
        "/etc",
        "pendulum_1dof/",
        "no_such_robot",
    ],
)
@pytest.mark.slow
def test_a_robot_is_a_name_from_the_list(client, name):
    r = client.post("/api/robot", json={"robot": name})
    assert r.status_code == 404, r.text
    detail = r.json()["detail"]
    assert "available: pendulum_1dof" in detail and no_server_path(detail)
    ws = client.get("/api/workspace").json()
    assert client.post("/api/workspace", json=dict(ws, robot=name)).status_code == 404
    assert client.get("/api/state").json()["robot"] == "qbmove_arm_2dof"
    names = [r["name"] for r in client.get("/api/robots").json()["robots"]]
    assert client.post("/api/robot", json={"robot": names[0]}).status_code == 200
    assert (
        client.post(
            "/api/robot", json={"robot": "qbmove_arm_2dof", "variant": "vertical"}
        ).status_code
        == 200
    )


def test_broken_robots_are_reported_without_server_paths(tmp_path, monkeypatch):
    """A robot folder whose MJCF entry leaves the folder, and one that does not build: listed
    and refused with the robot's name, never the folder's path."""
    pendulum = os.path.join(HERE, "data", "robots", "pendulum")
    for name in ("escapes", "broken", "good"):
        shutil.copytree(pendulum, tmp_path / name)
    toml = (tmp_path / "good" / "robot.toml").read_text()
    (tmp_path / "escapes" / "robot.toml").write_text(
        toml.replace('mjcf = "pendulum.xml"', 'mjcf = "../good/pendulum.xml"')
    )
    (tmp_path / "broken" / "robot.toml").write_text(
        toml.replace('name = "joint"', 'name = "elbow"')
    )
    monkeypatch.setenv("ASR_ROBOTS", str(tmp_path))
    with TestClient(create_app(Settings(robot="good", variant=None)), base_url=BASE) as c:
        listed = {r["name"]: r for r in c.get("/api/robots").json()["robots"]}
        assert "outside the robot's folder" in listed["escapes"]["error"]
        for name, words in (
            ("escapes", "outside the robot's folder"),
            ("broken", "'elbow' is not a hinge or slide joint"),
        ):
            r = c.post("/api/robot", json={"robot": name})
            assert r.status_code == 422 and words in r.text, r.text
            assert str(tmp_path) not in r.text and f"robot '{name}'" in r.text
        assert str(tmp_path) not in c.get("/api/robots").text
        assert c.get("/api/state").json()["robot"] == "good"


# ---------------------------------------------------------------- Host, Origin


@pytest.mark.parametrize(
    "host, ok",
    [
        ("127.0.0.1:8000", True),
        ("localhost:8000", True),
        ("[::1]:8000", True),
        ("LOCALHOST", True),
        ("mybox.lan:8000", True),  # an --allow-origin host
        ("rebind.example:8000", False),
        ("127.0.0.1.nip.io:8000", False),
        ("", False),
        ("127.0.0.1:bad", False),
        ("192.168.1.20:8000", False),
        ("evil.example@127.0.0.1", False),
    ],
)
def test_host_header(client, host, ok):
    for method, path in (("GET", "/api/state"), ("POST", "/api/export.npz"), ("GET", "/")):
        r = client.request(method, path, headers={"host": host})
        assert (r.status_code == 200) == ok, (path, r.status_code)
        if not ok:
            assert r.status_code == 403 and "Host header" in r.text


@pytest.mark.parametrize(
    "origin, ok",
    [
        (None, True),
        ("http://127.0.0.1:8000", True),
        ("http://mybox.lan:8000", True),
        ("http://127.0.0.1:9000", False),
        ("http://localhost:8000", False),
        ("http://evil.example", False),
        ("null", False),
        ("https://127.0.0.1:8000", True),
    ],
)
@pytest.mark.slow
def test_origin_on_state_changing_routes_and_the_websocket(client, origin, ok):
    headers = {"origin": origin} if origin else {}
    client.post("/api/control", json={"paused": False})
    # a time past zero to go back from: waited for, not slept for (a busy host steps late)
    t0 = wait_sim_past(client, 0.0)
    run0 = client.get("/api/state").json()["run_id"]
    r = client.post("/api/reset", headers=headers)
    assert r.status_code == (200 if ok else 403), r.text
    # reset (a new run, time back to 0) only when allowed; its answer is the state just after it
    after = client.get("/api/state").json()
    assert (after["run_id"] != run0) == ok
    assert (r.json()["time"] < t0) if ok else (after["time"] >= t0)
    r = client.post("/api/control", json={"paused": True}, headers=headers)
    assert client.get("/api/state").json()["paused"] is ok
    client.post("/api/control", json={"paused": False})
    if not ok:
        assert "may not drive this dashboard" in r.text
        with (
            pytest.raises(WebSocketDenialResponse) as denied,
            client.websocket_connect(STREAM, headers=headers),
        ):
            pass
        assert denied.value.status_code == 403
    else:
        with client.websocket_connect(STREAM, headers=headers) as ws:
            assert ws.receive_json()["type"] == "figure"
    # reading is for the browser's same-origin rule: a GET answers whatever the Origin
    assert client.get("/api/state", headers=headers).status_code == 200


def test_bound_address_and_every_interface():
    with TestClient(create_app(Settings(host="192.168.7.7")), base_url=BASE) as c:
        assert c.get("/api/state", headers={"host": "192.168.7.7:8000"}).status_code == 200
        assert c.get("/api/state", headers={"host": "192.168.7.8:8000"}).status_code == 403
    with TestClient(create_app(Settings(host="0.0.0.0", token=TOKEN)), base_url=BASE) as c:
        auth = {"authorization": f"token {TOKEN}"}
        for host, status in (
            ("10.1.2.3:8000", 200),
            ("[fe80::1]:8000", 200),
            ("rebind.example:8000", 403),
        ):
            assert c.get("/api/state", headers={"host": host, **auth}).status_code == status
        assert c.get("/api/state", headers={"host": "10.1.2.3:8000"}).status_code == 401


def test_token():
    with TestClient(create_app(Settings(token=TOKEN)), base_url=BASE) as c:
        for method, path in (
            ("GET", "/"),
            ("GET", "/api/state"),
            ("POST", "/api/export.html"),
            ("GET", "/static/app.js"),
        ):
            r = c.request(method, path)
            assert r.status_code == 401 and "needs its token" in r.text, path
        assert c.get("/api/state", params={"token": "wrong" + TOKEN}).status_code == 401
        assert c.get("/api/state", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
        with pytest.raises(WebSocketDenialResponse) as denied, c.websocket_connect(STREAM):
            pass
        assert denied.value.status_code == 401
        r = c.get("/", params={"token": TOKEN})  # the printed URL: sets the cookie
        assert r.status_code == 200 and "HttpOnly" in r.headers["set-cookie"]
        assert "SameSite=Strict" in r.headers["set-cookie"]
        assert c.get("/api/state").status_code == 200  # the cookie from now on
        # other local servers' cookies come along (cookies ignore ports), malformed ones too
        cookie = f"{c.cookies.get('asr_token_8000')}"
        c.cookies.clear()
        r = c.get("/api/state", headers={"cookie": f'x y=1; $$=2; asr_token_8000="{cookie}"; z'})
        assert r.status_code == 200
        c.cookies.set("asr_token_8000", cookie)
        assert c.post("/api/reset").status_code == 200
        with c.websocket_connect(STREAM) as ws:
            assert ws.receive_json()["type"] == "figure"


# ---------------------------------------------------------------- the command line


def cli_args(*argv):
    return build_parser().parse_args(["dashboard", *argv])


def test_cli_beyond_loopback_warns_and_requires_a_token():
    settings, lines = dashboard_settings(cli_args("--host", "0.0.0.0"))
    assert lines[0].startswith("WARNING") and "anyone on the network" in lines[0]
    assert settings.token and len(settings.token) >= 16
    assert f"?token={settings.token}" in lines[1]
    other, _ = dashboard_settings(cli_args("--host", "0.0.0.0"))
    assert other.token != settings.token  # random per start
    mine, lines = dashboard_settings(cli_args("--host", "192.168.7.7", "--token", TOKEN))
    assert mine.token == TOKEN and mine.host == "192.168.7.7" and "WARNING" in lines[0]
    local, lines = dashboard_settings(cli_args("--allow-origin", "HTTP://Box.lan:8000/"))
    assert local.token is None and len(lines) == 1 and "token" not in lines[0]
    assert local.allow_origins == ("http://box.lan:8000",)


@pytest.mark.parametrize(
    "argv, words",
    [
        (("--token", "short"), "at least 16 characters"),
        (("--allow-origin", "http://box.lan:8000/page"), "expected an origin"),
        (("--allow-origin", "box.lan"), "expected an origin"),
        (("--robot", "../tests/robots/pendulum"), "expected a robot name, not a path"),
        (("--robot", os.path.join(HERE, "data", "robots", "pendulum")), "not a path"),
    ],
)
def test_cli_bad_options(argv, words, capsys):
    with pytest.raises((ValueError, OSError), match=words):
        dashboard_settings(cli_args(*argv))
    assert main(["dashboard", *argv]) == 2
    assert words in capsys.readouterr().err


# ---------------------------------------------------------------- in Chromium


ATTACK_PAGE = b"""<!doctype html><title>another site</title><script>
// a page of another origin trying to drive the dashboard named in location.hash
const target = decodeURIComponent(location.hash.slice(1));
window.result = {opened: false, messages: 0, closed: null, posts: 0, read: null};
const ws = new WebSocket(target.replace("http", "ws") + "/ws/stream");
ws.onopen = () => { result.opened = true;
                    ws.send(JSON.stringify({type: "control", paused: true})); };
ws.onmessage = () => { result.messages += 1; };
ws.onclose = (e) => { result.closed = e.code; };
for (const path of ["/api/reset", "/api/stiffness/stiff"]) {  // simple requests: no preflight
  fetch(target + path, {method: "POST", mode: "no-cors"}).finally(() => { result.posts += 1; });
}
fetch(target + "/api/state").then((r) => r.text()).then((t) => { result.read = t; },
                                                          () => { result.read = "blocked"; });
</script>"""


class _AttackHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.end_headers()
        self.wfile.write(ATTACK_PAGE)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def attack_origin():
    """Another origin on loopback (another port) serving ATTACK_PAGE."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AttackHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    sync_api = require("playwright.sync_api")
    from tests.support.dashboard_server import chromium_path

    with sync_api.sync_playwright() as p:
        # rebind.test resolves to 127.0.0.1: what a DNS-rebinding attack achieves
        b = p.chromium.launch(
            executable_path=chromium_path(),
            args=["--no-sandbox", "--host-resolver-rules=MAP rebind.test 127.0.0.1"],
        )
        yield b
        b.close()


def attack(browser, attack_origin, url):
    """Open the other site's page against the dashboard at `url`; its result when done."""
    page = browser.new_page()
    page.goto(f"{attack_origin}/#{url}")
    page.wait_for_function("() => result.closed !== null || result.messages > 0", timeout=10000)
    page.wait_for_function("() => result.posts === 2 && result.read !== null", timeout=10000)
    # let the server apply whatever came through: a grace period for what must not happen (a
    # busy host only shortens what it catches; what must happen is waited for by the callers)
    page.wait_for_timeout(300)
    result = page.evaluate("() => result")
    page.close()
    return result


@pytest.mark.browser
def test_cross_origin_page_in_chromium(browser, attack_origin):
    from tests.support.dashboard_server import running_server, wait_for

    with running_server() as url:
        wait_sim_past(url, 0.0)  # running: waited for, not slept for (a busy host starts late)
        before = get_json(url + "/api/state")
        result = attack(browser, attack_origin, url)
        after = get_json(url + "/api/state")
        print(f"cross-origin page: {result}")
        assert result["opened"] is False and result["messages"] == 0
        assert result["read"] == "blocked"  # the browser's same-origin rule (no CORS)
        assert after["paused"] is False and after["presets"] == before["presets"]
        assert after["run_id"] == before["run_id"]
        wait_sim_past(url, before["time"], "the simulation to run on (neither reset nor paused)")
        # the dashboard's own page, in the same browser, drives it
        page = browser.new_page()
        page.goto(url)
        page.wait_for_function(
            "() => Number(document.getElementById('status').dataset.frames) > 5", timeout=20000
        )
        page.click("#btn-stiff")
        # the click's request applied: waited for (a generous deadline), not a fixed 0.5 s
        state = wait_for(
            lambda: (s := get_json(url + "/api/state"))["presets"] != before["presets"] and s,
            20,
            "the stiff button's preset",
        )
        assert state["presets"] == {j["name"]: j["presets"]["stiff"] for j in state["joints"]}
        # DNS rebinding: the other site's name now resolves to 127.0.0.1
        port = url.rsplit(":", 1)[1]
        response = page.goto(f"http://rebind.test:{port}/")
        assert response.status == 403
        statuses = page.evaluate("""() => Promise.all([['/api/state', 'GET'],
            ['/api/export.npz', 'POST'], ['/api/workspace', 'GET']].map(([p, method]) =>
            fetch(p, { method }).then((r) => r.status)))""")
        assert statuses == [403, 403, 403]
        page.close()
    # the same page, once its origin is allowed, does drive the dashboard: the check above is
    # what stopped it
    with running_server(allow_origins=(attack_origin,)) as url:
        wait_sim_past(url, 0.0)
        result = attack(browser, attack_origin, url)
        assert result["opened"] is True and result["messages"] > 0
        # the WebSocket's pause is applied after the page saw a message: waited for
        after = wait_for(
            lambda: (s := get_json(url + "/api/state"))["paused"] and s, 20, "the page's pause"
        )
        stiff = {j["name"]: j["presets"]["stiff"] for j in after["joints"]}  # the buttons'
        assert after["paused"] is True and after["presets"] == stiff


@pytest.mark.browser
def test_token_page_in_chromium(browser):
    from tests.support.dashboard_server import running_server

    with running_server(token=TOKEN) as url:
        page = browser.new_page()
        assert page.goto(url + "/").status == 401
        assert page.goto(f"{url}/?token={TOKEN}").status == 200
        # the page's REST calls and its WebSocket carry the token in the cookie
        page.wait_for_function(
            "() => Number(document.getElementById('status').dataset.frames) > 5", timeout=20000
        )
        page.click("#btn-stiff")
        page.wait_for_function("() => document.getElementById('error').hidden", timeout=5000)
        state = page.evaluate("() => fetch('/api/state').then((r) => r.json())")
        assert state["presets"] == {j["name"]: j["presets"]["stiff"] for j in state["joints"]}
        assert state["presets"] != {"joint1": 0.2, "joint2": 0.2}  # changed from the start
        page.close()
