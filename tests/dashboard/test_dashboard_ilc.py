"""The dashboard's ILC panel (dashboard/ilc.py, PROTOCOL.md "ILC"): the paper's gain schedule
converges on the default arm, a constant gain is stopped early as diverging, a stop is final,
and the status events only move forward."""

import math

import numpy as np
import pytest

from tests.conftest import require

require("fastapi")
require("httpx")

import asr  # noqa: E402
from asr.experiments.mengacci2021_ilc import k_off  # noqa: E402
from asr.learning.iterative_learning import ilc  # noqa: E402
from asr.references import min_jerk  # noqa: E402
from asr_dashboard import ilc as rules  # noqa: E402
from tests.support.dashboard_server import STREAM, app_client  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with app_client(update_hz=10) as c:
        yield c


def run_to_end(client, body, stop_after=None):
    """Start an ILC run, collect its `ilc` events until the final one; optionally POST stop
    after `stop_after` iterations. Returns (events, GET /api/ilc)."""
    with client.websocket_connect(STREAM) as ws:
        r = client.post("/api/ilc/start", json=body)
        assert r.status_code == 200, r.text
        events = []
        while not events or events[-1]["running"]:
            m = ws.receive_json()
            if m["type"] != "ilc":
                continue
            events.append(m)
            if stop_after is not None and m["iteration"] == stop_after and not m.get("stopping"):
                assert client.post("/api/ilc/stop").status_code == 200
    return events, client.get("/api/ilc").json()


def test_gain_schedule_is_the_papers():
    schedule = rules.gain_schedule(0.5, 10.0)
    for n in (1, 5, 10, 30):
        assert schedule(n) == pytest.approx(0.5 * math.exp(-n / 10), rel=1e-15)
    assert rules.gain_schedule(0.5, None)(40) == 0.5


@pytest.mark.parametrize(
    "errors, expected",
    [
        ([0.8, 0.5, 0.3, 0.2], False),  # falling
        ([0.3, 0.1, 0.15, 0.18, 0.21], True),  # grew 3 times, 0.21 > 2 x 0.1
        ([0.3, 0.1, 0.12, 0.14, 0.16], False),  # grew 3 times, but below 2 x the minimum
        ([0.1, 0.5, 0.4, 0.6, 0.7], False),  # grew only twice in a row
        ([0.1, 0.3], False),  # too few trials
    ],
)
def test_diverging_rule(errors, expected):
    assert rules.diverging(errors) is expected


def independent_errors(max_iter):
    """asr.ilc driven directly as asr.experiments.mengacci2021_ilc does (the paper's K_off), 5 s
    trial."""
    sim = asr.Sim("qbmove_arm_2dof", 1, variant="vertical")
    T = int(round(5.0 / sim.dt))
    q = min_jerk((np.arange(T) + 1) * sim.dt, 0.0, 0.8, 5.0)
    res = ilc(
        sim,
        np.stack([q, q], axis=1),
        schedule=k_off,
        preset=0.2,
        tol=0.08,
        max_iter=max_iter,
        settle_s=1.0,
    )
    return res.errors[: res.iterations[0], 0]


def test_defaults_converge_with_the_papers_schedule(client):
    events, st = run_to_end(client, {})
    assert st["running"] is False and st["verdict"] == "converged", st
    assert st["message"].startswith("converged")
    errors = np.array(st["errors"])
    assert errors[-1] <= 0.08 < errors[:-1].min()
    assert np.all(np.diff(errors) < 0)  # falls at every trial
    np.testing.assert_allclose(errors, independent_errors(20), rtol=1e-9)
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert [e["running"] for e in events].count(False) == 1


def test_constant_gain_is_stopped_as_diverging(client):
    events, st = run_to_end(client, {"gain_decay": None, "iterations": 50})
    assert st["verdict"] == "diverging" and "diverging" in st["message"], st
    errors = st["errors"]
    assert len(errors) < 50  # stopped early
    assert rules.diverging(errors) and not rules.diverging(errors[:-1])
    assert np.all(np.diff(errors[-4:]) > 0) and errors[-1] > 2 * min(errors)


def test_max_iterations_verdict(client):
    _, st = run_to_end(client, {"iterations": 3})
    assert st["verdict"] == "max_iterations" and len(st["errors"]) == 3
    assert st["message"].startswith("stopped at max iterations")


@pytest.mark.slow
def test_lowpass_filter_option(client):
    _, st = run_to_end(client, {"iterations": 3, "lowpass_hz": 2.0})
    assert st["config"]["lowpass_hz"] == 2.0 and len(st["errors"]) == 3
    r = client.post("/api/ilc/start", json={"lowpass_hz": 600.0})  # Nyquist at dt = 1 ms: 500
    assert r.status_code == 422 and "lowpass cutoff_hz" in r.text


def test_stop_is_final(client):
    events, st = run_to_end(
        client, {"iterations": 50, "duration": 20.0, "gain_decay": None, "tol": 1e-6}, stop_after=1
    )
    assert st["running"] is False and st["verdict"] == "stopped", st
    assert st["stopping"] is False and len(st["errors"]) < 50
    assert any(e.get("stopping") for e in events)
    assert events[-1]["seq"] == st["seq"]  # nothing changed after the final event
    assert client.post("/api/ilc/stop").json() == st  # a stop after the end changes nothing


def test_kept_trials_are_bounded():
    assert rules.kept_trials(20, 1000, max_bytes=10**6) == set(range(1, 21))
    kept = rules.kept_trials(50, 10**5, max_bytes=10**6)  # room for 10 inputs
    assert len(kept) == 10 and {1, 50} <= kept
    assert rules.kept_trials(50, 10**9, max_bytes=10**6) == {1, 50}  # always the two ends


def load_result(data):
    import io
    import json

    with np.load(io.BytesIO(data)) as z:
        out = {k: z[k] for k in z.files}
    out["settings"] = json.loads(str(out["settings"]))
    return out


@pytest.mark.slow
def test_result_download_holds_every_trial(client):
    """POST /api/ilc/result.npz after a run: the learned feed-forward of every trial (the first
    the reference, the last the result's input, trial n's the input asr.ilc itself learns in n
    trials), the errors per trial equal to the status', and the run's settings."""
    body = {"iterations": 3, "gain_decay": None, "lowpass_hz": 2.0, "tol": 0.01}
    _, st = run_to_end(client, body)
    assert st["has_result"] and len(st["errors"]) == 3, st
    r = client.post("/api/ilc/result.npz")
    assert r.status_code == 200 and r.headers["content-disposition"].endswith('"asr_ilc.npz"')
    z = load_result(r.content)
    np.testing.assert_array_equal(z["trial_errors"], st["errors"])
    np.testing.assert_array_equal(z["trials"], [1, 2, 3])
    inputs = z["trial_inputs"]  # (K, N, T, J) rad
    assert inputs.shape == (3, 1) + z["reference"].shape[1:]
    np.testing.assert_array_equal(inputs[0], z["reference"])
    np.testing.assert_array_equal(inputs[-1], z["input"])
    assert z["settings"]["gain"] == 0.5 and z["settings"]["gain_decay"] is None
    assert z["settings"]["lowpass_hz"] == 2.0 and z["settings"]["iterations"] == 3
    assert z["settings"]["verdict"] == "max_iterations"
    # trial 2's input is what asr.ilc learns from one trial with the same settings
    from asr.learning.iterative_learning import lowpass

    sim = asr.Sim("qbmove_arm_2dof", 1, variant="vertical")
    ref = z["reference"][0]
    res = ilc(
        sim,
        ref,
        gain=0.5,
        filter=lowpass(2.0, sim.dt),
        preset=0.2,
        tol=0.01,
        max_iter=2,
        settle_s=1.0,
    )
    np.testing.assert_allclose(inputs[1], res.input, rtol=0, atol=1e-12)
    np.testing.assert_allclose(z["trial_errors"][:2], res.errors[:, 0], rtol=1e-12)
    assert len(r.content) < 64 << 20


def test_result_before_a_run_is_404():
    with app_client(update_hz=10) as c:
        r = c.post("/api/ilc/result.npz")
        assert r.status_code == 404 and "no ILC result yet" in r.text
        assert c.get("/api/ilc").json()["has_result"] is False
