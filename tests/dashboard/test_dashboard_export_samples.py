"""POST /api/export.npz holds every simulation step of the exported span, evenly spaced at the
time step (PROTOCOL.md "First view": the history is a record of every step, the stream's frames
are decimated): whatever the frame rate, a busy machine (late ticks, long frames) or speed
"max"; checked against a plain asr.Sim rollout of the same motion and against the record's
stated bound. No wall-clock pacing: the tests wait for simulated time, with generous deadlines."""

import contextlib
import io
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import require

require("fastapi")
require("httpx")

from asr_dashboard import frames  # noqa: E402
from tests.support.dashboard_samples import direct_q, start_held, synthetic_frame  # noqa: E402
from tests.support.dashboard_server import app_client, wait_sim_past  # noqa: E402


def paused_export(client, seconds):
    """(npz, state) after `seconds` s of simulated time since the restart, paused: the export
    then covers exactly the steps up to the state's time."""
    wait_sim_past(client, seconds)
    state = client.post("/api/control", json={"paused": True}).json()
    r = client.post("/api/export.npz")
    assert r.status_code == 200, r.text
    return np.load(io.BytesIO(r.content)), state


def assert_every_step(z, state, first_step=1):
    """t holds consecutive steps first_step..: evenly spaced at dt, ending at the state's time."""
    dt, t = state["dt"], z["t"]
    T = t.size
    assert T > 1 and z["q"].shape == (1, T, 2)
    np.testing.assert_allclose(np.diff(t), dt, rtol=0, atol=1e-9)
    np.testing.assert_allclose(t, dt * np.arange(first_step, first_step + T), rtol=0, atol=1e-9)
    assert t[-1] == pytest.approx(state["time"], abs=1e-9)


@pytest.mark.slow
def test_export_at_a_low_frame_rate_holds_every_step():
    # 5 frames per second: 200 steps per frame at dt = 1 ms, each sent decimated to 50 samples;
    # the export still holds all of them, the very motion a plain asr.Sim rolls out
    with app_client(update_hz=5) as client:
        start_held(client)
        z, state = paused_export(client, 2.0)
    dt = state["dt"]
    steps = int(round(state["time"] / dt))
    assert_every_step(z, state)
    assert z["t"].size == steps  # N / dt samples for N s
    np.testing.assert_allclose(z["q"], direct_q(steps), rtol=0, atol=1e-9)
    np.testing.assert_allclose(z["defl"], z["q"] - z["eq"], rtol=0, atol=1e-12)


@contextlib.contextmanager
def busy_machine(processes=3):
    """Processes spinning on the CPUs (more than the 2 cores of the CI host) while the block
    runs: the runner's ticks come late, so its frames are long and irregular."""
    spin = [sys.executable, "-c", "while True: pass"]
    procs = [subprocess.Popen(spin) for _ in range(processes)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=30)


@pytest.mark.slow
def test_export_on_a_busy_machine_holds_every_step():
    # max_samples 5: every frame (33 steps at 30 Hz, more when a tick is late) is sent
    # decimated; the record keeps every step however the ticks fall
    with app_client(update_hz=30, max_samples=5) as client:
        start_held(client)
        with busy_machine():
            z, state = paused_export(client, 2.0)
    steps = int(round(state["time"] / state["dt"]))
    assert_every_step(z, state)
    assert z["t"].size == steps
    np.testing.assert_allclose(z["q"], direct_q(steps), rtol=0, atol=1e-9)


@pytest.mark.slow
def test_export_holds_the_last_window_of_steps():
    # speed max: frames of many steps, the window (1 s) passed several times over; the export
    # holds exactly the window's window_s / dt newest steps
    with app_client(window_s=1.0) as client:
        start_held(client)
        client.post("/api/control", json={"speed": "max"})
        z, state = paused_export(client, 3.0)
    dt = state["dt"]
    steps = int(round(1.0 / dt))
    assert z["t"].size == steps
    assert_every_step(z, state, first_step=int(round(state["time"] / dt)) - steps + 1)
    q = direct_q(int(round(state["time"] / dt)))
    np.testing.assert_allclose(z["q"], q[:, -steps:], rtol=0, atol=1e-9)


def test_record_bound():
    dt = 1e-3
    # the default arm: the whole window (10 s) fits (1.2 MB)
    small = synthetic_frame(0, 33, 1, 2, dt)
    assert frames.record_steps(small, 10.0, dt) == 10000
    # a large compare view (64 instances x 12 joints) over 600 s does not: the newest steps
    # that fit in RECORD_MAX_BYTES
    big = synthetic_frame(0, 4, 64, 12, dt)
    per_step = 8 * (1 + 7 * 64 * 12)
    steps = frames.record_steps(big, 600.0, dt)
    assert steps == frames.RECORD_MAX_BYTES // per_step < 600000
    assert steps * per_step <= frames.RECORD_MAX_BYTES


def test_keep_newest_cuts_the_oldest_frame():
    from collections import deque

    history = deque(synthetic_frame(k * 7, 7, 2, 3, 1e-3) for k in range(5))  # steps 1..35
    kept = history[-1]
    frames.keep_newest(history, 12)
    t = np.concatenate([f["t"] for f in history])
    q = np.concatenate([f["q"] for f in history], axis=1)
    np.testing.assert_allclose(t, 1e-3 * np.arange(24, 36))
    assert np.array_equal(q[0, :, 0], np.arange(24, 36)) and q.shape == (2, 12, 3)
    assert history[-1] is kept  # the newest frames are kept as they are
    frames.keep_newest(history, 100)  # within the bound: unchanged
    assert sum(f["t"].size for f in history) == 12
