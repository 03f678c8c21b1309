"""The plots' data beyond the live stream (PROTOCOL.md "Plots", "RL"): GET /api/plots/range
serves any past window of the whole run (the record's dropped steps live on in its archive),
exactly the steps a plain asr.Sim rolls out; the archive stays within its bound by halving its
resolution with min/max (peaks survive); GET /api/rl/runs answers the runs of the server session
with their hyperparameters (read from the trainer's config.json where not remembered) and curves
(the runs themselves: tests/dashboard/test_dashboard_plots_read.py); bad queries get a 422 naming
the parameter. Waits are in simulated time or on the trainer, with generous deadlines."""

import collections

import numpy as np
import pytest

from tests.conftest import require

require("fastapi")
require("httpx")

from asr_dashboard import frames, rl_runs  # noqa: E402
from tests.support.dashboard_samples import direct_q, start_held, synthetic_frame  # noqa: E402
from tests.support.dashboard_server import app_client, wait_sim_past  # noqa: E402


@pytest.mark.slow
def test_range_serves_the_whole_run_beyond_the_window():
    # window 1 s at speed max: by 4 s the record holds the last second only; the steps of
    # 0.5..1.5 s come from the archive, every one of them (points > steps: no decimation)
    with app_client(window_s=1.0) as client:
        start_held(client)
        client.post("/api/control", json={"speed": "max"})
        wait_sim_past(client, 4.0)
        state = client.post("/api/control", json={"paused": True}).json()
        r = client.get("/api/plots/range", params={"t0": 0.5, "t1": 1.5, "points": 4000})
        assert r.status_code == 200, r.text
        body = r.json()
        whole = client.get("/api/plots/range", params={"points": 100}).json()
        bad = [
            client.get("/api/plots/range", params=p)
            for p in ({"t0": 2, "t1": 1}, {"points": 1}, {"t0": -1}, {"t1": "nan"})
        ]
    dt = state["dt"]
    x = np.array(body["x"])
    first = int(round(0.5 / dt))
    np.testing.assert_allclose(x, dt * np.arange(first, first + x.size), atol=1e-9)
    assert x[0] == pytest.approx(0.5) and x[-1] == pytest.approx(1.5)
    # trace order: (instance, joint, series); q is series 0 of each joint
    q = direct_q(int(round(1.5 / dt)))[0, first - 1 :]  # (T, J)
    series = len(body["y"]) // 2
    for k in range(2):
        np.testing.assert_allclose(body["y"][k * series], q[:, k], rtol=0, atol=2e-5)
    assert body["span"][0] == pytest.approx(dt) and body["span"][1] == pytest.approx(state["time"])
    assert body["run_id"] == state["run_id"]
    # the whole run, decimated to at most 100 points per trace
    assert 50 <= len(whole["x"]) <= 100 and whole["x"][0] == pytest.approx(dt)
    assert all(b.status_code == 422 for b in bad), [b.text for b in bad]
    assert "t1 = 1 s is before t0 = 2 s" in bad[0].json()["detail"]
    assert "points" in str(bad[1].json()["detail"])


def test_archive_halves_within_its_bound_and_keeps_peaks():
    dt = 1e-3
    history = collections.deque()
    archive = frames.archive_of(history)
    archive.max_bytes = 200_000  # a small bound: halved several times
    peak_at = 5000  # a spike in one step of q
    for k in range(300):
        f = synthetic_frame(k * 40, 40, 2, 3, dt)
        if k * 40 < peak_at <= k * 40 + 40:
            f["q"][:, peak_at - k * 40 - 1] = 1e6
        history.append(f)
        frames.keep_newest(history, 1000)
    assert archive.nbytes <= archive.max_bytes and archive.halvings >= 2
    span = frames.run_span(history)
    assert span == (pytest.approx(dt), pytest.approx(12000 * dt))
    parts = frames.run_frames(history, 0.0, 1.0)
    t = np.concatenate([p["t"] for p in parts])
    assert np.all(np.diff(t) > 0)
    assert max(p["q"].max() for p in frames.run_frames(history, 4.0, 6.0)) == 1e6
    # the record itself is untouched: the newest 1000 steps, every one
    assert sum(f["t"].size for f in history) == 1000


def test_runs_history_reads_a_runs_trainer_config(tmp_path):
    # the trainer's config.json (asr/rl/training.py) nests the PPO hyperparameters; a run's
    # folder without one (failed before its first update) gives {}; no runs: an empty list
    (tmp_path / "config.json").write_text(
        '{"task": "asr/Throw-v0", "algo": "ppo", "seed": 3, "num_envs": 4, "total_steps": 64,'
        ' "hyperparameters": {"learning_rate": 0.001, "n_steps": 16, "batch_size": 64,'
        ' "gamma": 0.99, "n_epochs": 10}, "robot": "qbmove_arm_2dof"}'
    )
    cfg = rl_runs.config_from_disk(str(tmp_path))
    assert cfg == {
        "task": "asr/Throw-v0",
        "algo": "PPO",
        "num_envs": 4,
        "total_steps": 64,
        "seed": 3,
        "learning_rate": 0.001,
        "n_steps": 16,
        "batch_size": 64,
        "gamma": 0.99,
    }
    assert rl_runs.config_from_disk(str(tmp_path / "missing")) == {}
    history = rl_runs.RunsHistory(max_runs=3)
    for run in range(1, 6):
        history.remember(run, {"task": "asr/Throw-v0", "gamma": run / 10, "path": "/x"})
    assert sorted(history._configs) == [3, 4, 5] and "path" not in history._configs[5]
    with app_client() as client:
        assert client.get("/api/rl/runs").json() == {"runs": [], "max_runs": rl_runs.MAX_RUNS}
