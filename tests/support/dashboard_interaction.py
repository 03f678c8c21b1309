"""The dashboard's interaction session through TestClient (the `client` fixture, `status`) and
its deadlines, for tests/dashboard/test_dashboard_interaction*.py."""

import pytest
from fastapi.testclient import TestClient

from asr_dashboard.app import create_app
from asr_dashboard.settings import Settings

BASE = "http://127.0.0.1"
STREAM = "ws://127.0.0.1/ws/stream"
# Deadlines on a shared, busy CI host (load ~10 on 2 cores): waits on simulated progress (the FSM
# reaching static, f_e settling, plotted samples) get SIM_S; those on one request's answer or a
# page update, ANSWER_S. A stalled session still fails, after them.
SIM_S = 90.0
ANSWER_S = 60.0
SIM_MS, ANSWER_MS = int(SIM_S * 1000), int(ANSWER_S * 1000)


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings()), base_url=BASE) as c:
        yield c
        c.post("/api/interaction/stop")


def status(client):
    return client.get("/api/interaction/status").json()
