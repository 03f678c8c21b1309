"""The dashboard server's memory over a tour of every feature, against a real server in its own
process (so that /proc/PID/status is its own; the trainer and the export children are other
processes and not counted): the live stream read over a WebSocket, compare of 8, reset, an ILC
run, a short RL training, watching its policy, the policy.onnx and ROS package exports, an
interaction session with a force reference, the .npz and .html history exports. The server's
peak resident memory (VmHWM) stays under PEAK_MB, and torch never loads into it (RL watch runs
the policy with onnxruntime; torch alone would take ~500 MB). The figures are printed."""

import asyncio
import json
import time
import urllib.request

import pytest

from tests.conftest import require
from tests.support.dashboard_server import SHORT_TRAINING, get_json, server_process, wait_for

PEAK_MB = 250.0
TRAIN = SHORT_TRAINING


def memory_mb(pid):
    """(VmRSS, VmHWM) of process pid, MB: its resident memory now and at its peak."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))


def mapped_libraries(pid):
    """The shared libraries mapped into process pid (their file names)."""
    with open(f"/proc/{pid}/maps") as f:
        return {line.split()[-1].rsplit("/", 1)[-1] for line in f if ".so" in line}


def post(url, path, body=None, timeout=120):
    """(status, answer bytes) of POST url+path with a JSON body."""
    req = urllib.request.Request(
        url + path,
        data=json.dumps(body or {}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def post_json(url, path, body=None):
    status, data = post(url, path, body)
    assert status == 200, data[:300]
    return json.loads(data)


async def read_stream(url, messages):
    """Read `messages` messages of the live stream (the figure first, then its frames)."""
    websockets = require("websockets")
    ws_url = url.replace("http://", "ws://") + "/ws/stream"
    kinds = []
    async with websockets.connect(ws_url, max_size=None, ping_interval=None) as ws:
        while len(kinds) < messages:
            kinds.append(json.loads(await asyncio.wait_for(ws.recv(), 30))["type"])
    return kinds


def tour(url, pid):
    """Every feature once, each checked to have worked; [(phase, s, (VmRSS, VmHWM) MB after)]."""
    phases, clock = [], [time.monotonic()]

    def done(phase):
        now = time.monotonic()
        phases.append((phase, now - clock[0], memory_mb(pid)))
        clock[0] = now

    kinds = asyncio.run(read_stream(url, 40))
    assert "extend" in kinds, kinds
    state = post_json(url, "/api/compare", {"presets": [0.1 * k for k in range(1, 9)]})
    assert len(state["compare"]) == 8, state["compare"]
    t = post_json(url, "/api/reset")["time"]
    wait_for(lambda: get_json(url + "/api/state")["time"] > t + 0.2, 30, "the loop running")
    post_json(url, "/api/compare", {"presets": []})
    done("stream, compare of 8, reset")

    post_json(url, "/api/ilc/start", {"iterations": 2, "duration": 2.0})
    ilc = wait_for(
        lambda: (lambda s: not s["running"] and s)(get_json(url + "/api/ilc")), 60, "the ILC"
    )
    assert len(ilc["errors"]) == 2, ilc
    done("ILC")

    post_json(url, "/api/rl/start", TRAIN)
    st = wait_for(
        lambda: (lambda s: not s["running"] and s)(get_json(url + "/api/rl/status")),
        60,
        "the training to finish",
    )
    assert st["message"] == "finished" and st["can_watch"], st
    done("RL training")
    assert post_json(url, "/api/rl/watch")["watch"]["task"] == TRAIN["task"]
    wait_for(
        lambda: get_json(url + "/api/state")["watch"]["env_step"] >= 3, 30, "the policy acting"
    )
    post_json(url, "/api/rl/manual")
    done("watch")
    status, onnx = post(url, "/api/rl/policy.onnx")
    assert status == 200 and len(onnx) > 1000
    status, ros = post(url, "/api/rl/policy.ros.zip?ros=2")
    assert status == 200 and ros[:2] == b"PK"
    done("policy exports")

    post_json(url, "/api/interaction/start", {"law": "direct_force"})
    wait_for(
        lambda: get_json(url + "/api/interaction/status")["fsm"] == "static", 30, "the contact"
    )
    post_json(url, "/api/interaction/reference", {"force": [0, 0, 10]})
    assert not post_json(url, "/api/interaction/stop")["running"]
    done("interaction")

    status, npz = post(url, "/api/export.npz")
    assert status == 200 and npz[:2] == b"PK"
    status, html = post(url, "/api/export.html")
    assert status == 200 and b"<html" in html[:1000].lower()
    done("history exports")
    return phases


@pytest.mark.slow
def test_server_memory_over_a_tour():
    require("websockets")
    require("onnxruntime")
    require("stable_baselines3")
    with server_process() as (url, proc):
        start_rss, start_peak = memory_mb(proc.pid)
        t0 = time.monotonic()
        phases = tour(url, proc.pid)
        end_rss, peak = memory_mb(proc.pid)
        libraries = mapped_libraries(proc.pid)
    print(
        f"dashboard server memory: {start_rss:.0f} MB at start (peak {start_peak:.0f}), "
        f"peak {peak:.0f} MB over the tour, {end_rss:.0f} MB at its end "
        f"({time.monotonic() - t0:.1f} s)"
    )
    for phase, seconds, (rss, hwm) in phases:
        print(f"  {phase}: {seconds:.1f} s, {rss:.0f} MB after (peak so far {hwm:.0f} MB)")
    torch_libs = sorted(name for name in libraries if "torch" in name)
    assert not torch_libs, torch_libs
    assert any("onnxruntime" in name for name in libraries)  # the watched policy ran here
    assert peak < PEAK_MB, f"peak resident memory {peak:.0f} MB, bound {PEAK_MB:.0f} MB"
