"""The dashboard's RL panel for every registered task, task by task, over the HTTP / WebSocket
API (dashboard/PROTOCOL.md "RL"): a short training started with POST /api/rl/start ends
"finished", as the `rl` messages of /ws/stream tell; the task's metric names the curve; Watch
drives the task's robot with the checkpoint's policy (the env steps advance, Throw's episodes end
at its release); the ONNX export is the task's policy (its metadata, its observation and action
sizes) and the ROS 2 package of it carries the task's node data (Throw: the release)."""

import io
import json
import time
import zipfile

import numpy as np
import pytest

from tests.conftest import require

require("fastapi")
require("httpx")
require("stable_baselines3")
require("onnxruntime")
gymnasium = require("gymnasium")
from fastapi.testclient import TestClient  # noqa: E402

import asr  # noqa: E402,F401  (registers the asr/ ids)
from asr_dashboard.app import create_app  # noqa: E402
from asr_dashboard.settings import Settings  # noqa: E402
from tests.support.dashboard_exports import assert_ros_package  # noqa: E402
from tests.support.dashboard_server import wait_for  # noqa: E402

TASKS = sorted(k for k in gymnasium.registry if k.startswith("asr/"))
BASE = "http://127.0.0.1"
STREAM = "ws://127.0.0.1/ws/stream"
TRAIN = {"num_envs": 4, "n_steps": 16, "batch_size": 64, "total_steps": 128, "seed": 0}
DEADLINE_S = 180.0  # a trainer's torch import and two PPO updates, on a busy host


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(Settings(rl_num_envs_max=16, rl_stop_s=3)), base_url=BASE) as c:
        yield c
        c.post("/api/rl/stop")


def finished_over_the_stream(client, run):
    """The first `rl` message of /ws/stream saying run `run` ended (the status it carries)."""
    deadline = time.monotonic() + DEADLINE_S
    with client.websocket_connect(STREAM) as ws:
        while time.monotonic() < deadline:  # state frames come at 30 Hz: never blocks long
            msg = json.loads(ws.receive_text())
            if msg["type"] == "rl" and msg["run"] == run and not msg["running"]:
                return msg
    raise AssertionError(f"no rl message of run {run} ending within {DEADLINE_S} s")


def node_data(zip_bytes, pkg, ros):
    """The exported node's data file (policy_node.json) in a package zip of ROS version ros."""
    z = zipfile.ZipFile(io.BytesIO(zip_bytes))
    folder = "scripts" if ros == 1 else pkg
    return json.loads(z.read(f"{pkg}/{folder}/policy_node.json"))


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_every_task_trains_watches_and_exports(client, task):
    from asr.rl import OnnxPolicy, task_class, task_metric

    cls = task_class(task)
    r = client.post("/api/rl/start", json={**TRAIN, "task": task})
    assert r.status_code == 200, r.text
    run = r.json()["run"]
    st = finished_over_the_stream(client, run)
    assert st["message"] == "finished" and st["returncode"] == 0, st
    assert st["curve"]["steps"][-1] >= TRAIN["total_steps"] and st["can_watch"]
    metric = task_metric(cls)
    assert st["metric"] == {"name": metric.name, "unit": metric.unit, "better": metric.better}
    assert all(np.isfinite(m) for m in st["curve"]["metric"] if m is not None)

    # Watch: the task's robot, driven by the policy; its env steps (and episodes) advance
    r = client.post("/api/rl/watch")
    assert r.status_code == 200, r.text
    state = r.json()
    assert (state["robot"], state["variant"]) == (cls.robot, cls.variant)
    assert state["watch"]["task"] == task and state["watch"]["run"] == run
    assert (state["watch"]["target"] is None) == (not hasattr(cls, "target_range"))
    first = state["watch"]
    moved = wait_for(
        lambda: (
            lambda s: (
                s["watch"]
                and (s["watch"]["episode"], s["watch"]["env_step"])
                > (first["episode"], first["env_step"] + 2)
                and s
            )
        )(client.get("/api/state").json()),
        60,
        "the watched policy to act",
    )
    assert moved["error"] is None
    assert client.post("/api/rl/manual").json()["watch"] is None

    # the exports: the task's ONNX policy, and the ROS packages running it
    r = client.post("/api/rl/policy.onnx")
    assert r.status_code == 200, r.text
    policy = OnnxPolicy.from_bytes(r.content)
    assert policy.metadata["task_id"] == task
    env = cls(3)
    obs, _ = env.reset(seed=1)
    act = policy(obs)
    env.close()
    assert act.shape == (3, cls.single_action_space.shape[0]) and np.all(np.isfinite(act))
    space = cls.single_action_space
    assert np.all((act >= space.low) & (act <= space.high))
    # ROS 2, the default (the ROS 1 package of every task: tests/rl/test_every_task_policy.py)
    r = client.post("/api/rl/policy.ros.zip")
    assert r.status_code == 200, r.text
    pkg = f"asr_{cls.robot}_policy"
    assert_ros_package(r.content, pkg, 2)
    data = node_data(r.content, pkg, 2)
    assert (data["task"], data["kind"], data["variant"]) == (cls.__name__, "onnx", cls.variant)
    assert data["release"] == any(n == "release" for n, _ in cls.ACTION)
    assert len(data["observation"]) == cls.single_observation_space.shape[0]
    assert len(data["action"]) == space.shape[0]
