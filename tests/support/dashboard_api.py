"""The dashboard app at the default robot through FastAPI's TestClient (fixtures shared_client
and client) for tests/dashboard/test_dashboard_api.py and test_dashboard_robustness.py."""

import pytest
from fastapi.testclient import TestClient

from asr_dashboard.app import create_app
from asr_dashboard.settings import Settings

# the server answers loopback Host names only (dashboard/security.py), not TestClient's default
BASE = "http://127.0.0.1"
STREAM = "ws://127.0.0.1/ws/stream"


@pytest.fixture(scope="module")
def shared_client():
    with TestClient(create_app(Settings(update_hz=30)), base_url=BASE) as c:
        yield c


@pytest.fixture
def client(shared_client):
    """The shared app, back at the default robot and configuration."""
    r = shared_client.post("/api/robot", json=ROBOT)
    assert r.status_code == 200, r.text
    return shared_client


ROBOT = {"robot": "qbmove_arm_2dof", "variant": "vertical"}
