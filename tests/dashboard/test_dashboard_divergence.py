"""A spring tuned past the explicit coupling's limit in the dashboard: the page gets an error
that says the simulation diverged and why, not a plot of a link running away, and the
simulation pauses until the user changes the spring back and resumes."""

import threading

import pytest

from tests.conftest import require

require("fastapi")
require("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from asr_dashboard.app import create_app  # noqa: E402
from asr_dashboard.settings import Settings  # noqa: E402
from tests.support.dashboard_server import assert_running  # noqa: E402

BASE = "http://127.0.0.1"
STREAM = "ws://127.0.0.1/ws/stream"
# pendulum_1dof / sea: 3.201e-4 kg m^2 link, 0.1 ms step; 2e5 N m/rad gives omega dt = 2.5
UNSTABLE_K = 2e5


STREAM_DEADLINE_S = 120.0  # generous: a busy host; a stream that sends nothing fails, not hangs


def next_error(ws, limit=400):
    """The first error message of the stream, within `limit` messages; read on a thread of its
    own so that a stream that stops sending (the receive has no timeout) fails the test after
    STREAM_DEADLINE_S instead of hanging the suite (seen once, in a full run beside a valgrind
    benchmark: the receive waited for minutes; not reproduced in isolation)."""
    out = {}

    def read():
        try:
            for _ in range(limit):
                m = ws.receive_json()
                if m["type"] == "error":
                    out["message"] = m["message"]
                    return
            out["failure"] = f"no error message in {limit} messages"
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            out["failure"] = f"the stream failed: {exc!r}"

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(STREAM_DEADLINE_S)
    if reader.is_alive():
        raise AssertionError(f"the stream sent no error message in {STREAM_DEADLINE_S} s")
    if "failure" in out:
        raise AssertionError(out["failure"])
    return out["message"]


@pytest.mark.slow
def test_diverging_spring_is_reported_on_the_stream():
    with TestClient(create_app(Settings(update_hz=30)), base_url=BASE) as client:
        r = client.post("/api/robot", json={"robot": "pendulum_1dof", "variant": "sea"})
        assert r.status_code == 200, r.text
        with client.websocket_connect(STREAM) as ws:
            r = client.post("/api/control", json={"params": {"joint": {"k": UNSTABLE_K}}})
            assert r.status_code == 200, r.text
            message = next_error(ws)
        assert "diverged" in message and "omega dt = 2.5" in message, message
        assert "link_vel_max" in message
        # the simulation pauses on it (one error, not one per restart) and names the change
        assert "joint.k 200 -> 200000" in message and "resume" in message, message
        state = client.get("/api/state").json()
        assert "diverged" in (state.get("error") or "") and state["paused"] is True
        # the controls stay usable: a stable stiffness is accepted and the simulation runs
        r = client.post("/api/control", json={"params": {"joint": {"k": 200.0}}, "paused": False})
        assert r.status_code == 200, r.text
        assert_running(client)  # its time advances again (a generous deadline: a busy host)
