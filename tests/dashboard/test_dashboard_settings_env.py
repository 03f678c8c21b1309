"""Every dashboard setting (dashboard/PROTOCOL.md "Start") given in the environment as
ASR_DASHBOARD_<FIELD> takes effect in `asr dashboard` and `make run`, unless the command line
gives it (asr/cli.py, dashboard/settings.py, the Makefile's run target); a bad value is a
clear error naming the variable, the value and the valid range; the token is printed once, in
the URL to open, and hidden in the server's logs. The servers run in their own processes,
started as a user starts them."""

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest

from tests.conftest import require

require("fastapi")
require("uvicorn")
from asr.cli import build_parser, dashboard_settings  # noqa: E402
from asr_dashboard.settings import ENV_PREFIX, Settings, settings_from_env  # noqa: E402
from tests.support.dashboard_server import ROOT, wait_for  # noqa: E402

TOKEN = "env-token-0123456789abcdef"
ORIGIN = "http://mybox.lan:8000"
START_S = 120  # a server process answering: imports, the robot, uvicorn (a busy 2-core host)
DEADLINE_S = 30  # the house deadline for anything else


def env_name(field):
    return ENV_PREFIX + field.upper()


@pytest.fixture(autouse=True)
def no_dashboard_env(monkeypatch):
    """The settings of these tests only: none of the ASR_DASHBOARD_* of the shell running them."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)


def environment(**settings):
    """os.environ without ASR_DASHBOARD_* and make's HOST / PORT, with `settings` as
    ASR_DASHBOARD_<FIELD> variables."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(ENV_PREFIX) and k not in ("HOST", "PORT")
    }
    env.update({env_name(field): str(value) for field, value in settings.items()})
    return env


def free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def request(url, method="GET", headers=None):
    """The HTTP status of a request (None: nothing answers)."""
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=DEADLINE_S) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def get_json(url, headers):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
        return json.loads(r.read())


@contextlib.contextmanager
def started(argv, env, url):
    """Run `argv` (a dashboard server, in its own process group) until GET url/api/state gets
    an answer, any answer (401 included); yield (Popen, its output lines so far, growing)."""
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # make and its python stopped together
    )
    output = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        wait_for(
            lambda: request(url + "/api/state") is not None or proc.poll() is not None,
            START_S,
            f"{' '.join(argv)} to answer at {url}",
            every=0.2,
        )
        assert proc.poll() is None, "".join(output)
        yield proc, output
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        reader.join(timeout=DEADLINE_S)


def websocket_status(url, headers=None):
    """101 if the WebSocket /ws/stream at url (http://...) opens and sends its first view (a
    figure), else the HTTP status its handshake was refused with."""
    ws = require("websockets.sync.client")
    exceptions = require("websockets.exceptions")
    target = url.replace("http://", "ws://", 1)
    try:
        with ws.connect(target, additional_headers=headers or {}, open_timeout=DEADLINE_S) as c:
            assert json.loads(c.recv(timeout=DEADLINE_S))["type"] == "figure"
            return 101
    except exceptions.InvalidStatus as exc:
        return exc.response.status_code


AUTH = {"Authorization": f"token {TOKEN}"}


def check_token_required(url):
    """Every route and the WebSocket refuse a client without the token (401), and take it as
    ?token=, as Authorization."""
    assert request(url + "/api/state") == 401
    assert request(url + "/") == 401
    assert request(url + "/api/reset", "POST") == 401
    assert request(url + "/api/state?token=wrong-" + TOKEN) == 401
    assert request(url + "/api/state", headers=AUTH) == 200
    assert request(f"{url}/?token={TOKEN}") == 200
    assert websocket_status(url + "/ws/stream") == 401
    assert websocket_status(url + "/ws/stream", AUTH) == 101
    assert websocket_status(f"{url}/ws/stream?token={TOKEN}") == 101


def make_run(*args):
    """`make run`'s own command with `args`, its build steps skipped (-o), with this Python."""
    return [
        "make",
        "-s",
        "--no-print-directory",
        "-o",
        "build",
        "-o",
        "threejs",
        "run",
        *args,
        f"VENV={sys.prefix}",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["asr dashboard", "make run"])
def test_on_loopback_the_environments_token_is_required(launcher):
    """The issue as reported: ASR_DASHBOARD_TOKEN set, the default host 127.0.0.1, the port
    given on the command line (as `make run` gives it)."""
    port = free_port("127.0.0.1")
    argv = (
        [sys.executable, "-m", "asr.cli", "dashboard", "--port", str(port)]
        if launcher == "asr dashboard"
        else make_run(f"PORT={port}")
    )
    url = f"http://127.0.0.1:{port}"
    with started(argv, environment(token=TOKEN), url) as (_, output):
        check_token_required(url)
    assert f"asr dashboard: http://127.0.0.1:{port}/?token={TOKEN} (" in "".join(output)


@pytest.mark.slow
def test_asr_dashboard_takes_its_settings_from_the_environment():
    """Token, host, port, frame rate and origins from the environment, on a loopback host."""
    host = "127.0.0.2"  # loopback, not the default: where the server listens says it was read
    port = free_port(host)
    env = environment(token=TOKEN, host=host, port=port, update_hz=12.5, allow_origins=ORIGIN)
    url = f"http://{host}:{port}"
    argv = [sys.executable, "-m", "asr.cli", "dashboard"]  # log level info: every request logged
    with started(argv, env, url) as (_, output):
        check_token_required(url)
        state = get_json(url + "/api/state", AUTH)
        assert state["update_hz"] == 12.5
        assert request(f"http://127.0.0.1:{port}/api/state") is None  # not the default host
        # the allowed origin may drive it (its host name is a valid Host header too), no other
        assert request(url + "/api/reset", "POST", dict(AUTH, Origin=ORIGIN)) == 200
        assert request(url + "/api/reset", "POST", dict(AUTH, Origin="http://evil.lan")) == 403
        headers = dict(AUTH, Host="mybox.lan:8000")
        assert request(url + "/api/state", headers=headers) == 200
        # the URL to open, with the token, printed at start; the token nowhere else
        wait_for(
            lambda: any("/ws/stream?token=<hidden>" in line for line in output),
            DEADLINE_S,
            "the WebSocket's handshake logged",
        )
    text = "".join(output)
    assert f"asr dashboard: http://{host}:{port}/?token={TOKEN} (" in text
    assert text.count(TOKEN) == 1, text
    assert re.search(r'"GET /\?token=<hidden> HTTP/1.1" 200', text), text


@pytest.mark.slow
def test_make_run_keeps_the_environment_and_its_own_port():
    """`make run`'s own command, with a token and a host in the environment and PORT on
    make's command line: the token is required, the host is the environment's, the port
    make's (over the environment's)."""
    host = "127.0.0.3"
    port, env_port = free_port(host), free_port(host)
    env = environment(token=TOKEN, host=host, port=env_port)
    argv = make_run(f"PORT={port}")
    url = f"http://{host}:{port}"
    with started(argv, env, url) as (_, output):
        check_token_required(url)
        assert request(f"http://{host}:{env_port}/api/state") is None
    assert f"asr dashboard: http://{host}:{port}/?token={TOKEN} (" in "".join(output)


def test_make_run_passes_only_the_host_and_port_it_is_given():
    def command(*args):
        done = subprocess.run(
            ["make", "-n", *make_run(*args)[2:]],
            cwd=ROOT,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split("asr.cli dashboard", 1)[1].split()

    assert command() == []
    assert command("HOST=0.0.0.0", "PORT=9000") == ["--host", "0.0.0.0", "--port", "9000"]


# ---------------------------------------------------------------- every field, in-process

# a valid value of each field other than its default
OTHER = {
    "robot": "pendulum_1dof",
    "variant": "sea",
    "host": "127.0.0.5",
    "allow_origins": "http://a.lan:1,HTTP://B.lan:2/",
    "token": TOKEN,
}


def other_value(field):
    """A valid value of `field` other than its default: OTHER's, else half the default, else
    one more."""
    if field in OTHER:
        return OTHER[field]
    info = Settings.model_fields[field]
    bounds = {k: getattr(m, k) for m in info.metadata for k in ("ge", "le") if hasattr(m, k)}
    half = info.default // 2 if isinstance(info.default, int) else info.default / 2
    ok = lambda v: bounds.get("ge", v) <= v <= bounds.get("le", v)  # noqa: E731
    return next(v for v in (half, info.default + 1) if v != info.default and ok(v))


def parsed(field, value):
    if field == "allow_origins":
        return ("http://a.lan:1", "http://b.lan:2")
    return type(Settings.model_fields[field].default)(value) if field not in OTHER else value


def cli(*argv):
    return dashboard_settings(build_parser().parse_args(["dashboard", *argv]))


def test_every_field_documented_with_its_variable():
    with open(os.path.join(ROOT, "dashboard", "PROTOCOL.md"), encoding="utf-8") as f:
        rows = re.findall(r"^  \| `(\w+)` \|.*\| `(ASR_DASHBOARD_\w+)` \|", f.read(), re.M)
    assert dict(rows) == {field: env_name(field) for field in Settings.model_fields}


def test_every_field_from_the_environment(monkeypatch):
    """Each field's variable takes effect in settings_from_env and in `asr dashboard`'s
    settings (robot and variant: the robot started)."""
    values = {field: other_value(field) for field in Settings.model_fields}
    for field, value in values.items():
        assert parsed(field, value) != Settings.model_fields[field].default, field
        monkeypatch.setenv(env_name(field), str(value))
    from_env = settings_from_env()
    settings, lines = cli()
    for field, value in values.items():
        assert getattr(from_env, field) == parsed(field, value), field
        assert getattr(settings, field) == parsed(field, value), field
    assert lines == [
        f"asr dashboard: http://127.0.0.5:{values['port']}/?token={TOKEN} (pendulum_1dof, sea)"
    ]


def test_the_command_line_overrides_the_environment(monkeypatch):
    for field, value in dict(OTHER, update_hz=12.5, port=8123).items():
        monkeypatch.setenv(env_name(field), str(value))
    settings, lines = cli(
        "--host", "127.0.0.1", "--port", "9001", "--update-hz", "50", "--token", "t" * 16,
        "--allow-origin", "http://c.lan:3", "--robot", "rrbot_sea",
    )  # fmt: skip
    assert (settings.host, settings.port, settings.update_hz) == ("127.0.0.1", 9001, 50.0)
    assert (settings.token, settings.allow_origins) == ("t" * 16, ("http://c.lan:3",))
    assert settings.robot == "rrbot_sea"
    assert lines[0].startswith(f"asr dashboard: http://127.0.0.1:9001/?token={'t' * 16} (rrbot_sea")


def test_beyond_loopback_the_environments_token_or_a_random_one(monkeypatch):
    monkeypatch.setenv("ASR_DASHBOARD_HOST", "0.0.0.0")
    settings, lines = cli()
    assert lines[0].startswith("WARNING") and len(settings.token) >= 16
    assert f"/?token={settings.token} (" in lines[1]
    monkeypatch.setenv("ASR_DASHBOARD_TOKEN", TOKEN)
    assert cli()[0].token == TOKEN
    assert cli("--host", "127.0.0.1")[0].token == TOKEN  # a token set stays set on loopback


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("update_hz", "0", "'0'; valid range (0, 240]"),
        ("update_hz", "nan", "'nan'; valid range (0, 240]"),
        ("update_hz", "fast", "'fast'; input should be a valid number"),
        ("port", "70000", "'70000'; valid range [1, 65535]"),
        ("threads", "1.5", "'1.5'; input should be a valid integer"),
        ("host", "", "''; non-empty"),
        ("allow_origins", "box.lan", "['box.lan']; allow_origins: expected an origin"),
        ("token", "short-secret", "a value of 12 characters; at least 16 characters"),
        ("max_json_depth", "3", "'3'; valid range [4, 1000]"),
    ],
)
def test_a_bad_environment_value_is_named_with_its_range(monkeypatch, field, value, words):
    """(Not through main(): on a code that ignored the variable, it would serve for ever.)"""
    monkeypatch.setenv(env_name(field), value)
    with pytest.raises(ValueError) as err:
        cli()
    text = str(err.value)
    assert text.startswith(f"{env_name(field)}: got {words}"), text
    assert "short-secret" not in text


def test_a_bad_option_is_named_as_the_option(monkeypatch):
    monkeypatch.setenv("ASR_DASHBOARD_UPDATE_HZ", "10")
    with pytest.raises(ValueError) as err:
        cli("--update-hz", "500", "--port", "0")
    assert sorted(str(err.value).splitlines()) == [
        "--port: got 0; valid range [1, 65535]",
        "--update-hz: got 500.0; valid range (0, 240]",
    ]


@pytest.mark.slow
def test_a_bad_environment_value_in_a_process_no_traceback():
    """`asr dashboard` exits with code 2 and the one line, no traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "asr.cli", "dashboard"],
        cwd=ROOT,
        env=environment(update_hz="0"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == "asr dashboard: ASR_DASHBOARD_UPDATE_HZ: got '0'; valid range (0, 240]\n"
