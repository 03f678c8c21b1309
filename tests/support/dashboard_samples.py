"""A held session, its expected joint angles and synthetic frames, for the sample exports
(tests/dashboard/test_dashboard_export_samples.py, test_dashboard_rl_runs.py)."""

import numpy as np

import asr

JOINTS = ("joint1", "joint2")
PRESET = 0.2  # rad: the arm's soft preset, both joints


def start_held(client):
    """The default arm (vertical), one instance, both joints held at eq 0 at the soft preset,
    restarted: its run from rest in the first view's pose (as direct_q rolls it out)."""
    hold = {j: {"kind": "hold", "amplitude": 0.0, "offset": 0.0} for j in JOINTS}
    for path, body in (
        ("/api/compare", {"presets": []}),
        ("/api/control", {"reference": hold, "preset": dict.fromkeys(JOINTS, PRESET)}),
    ):
        r = client.post(path, json=body)
        assert r.status_code == 200, r.text
    assert client.post("/api/reset").status_code == 200


def direct_q(steps):
    """(1, steps, 2) link angles of start_held's run from a plain asr.Sim rollout."""
    sim = asr.Sim("qbmove_arm_2dof", 1, variant="vertical")
    refs = np.zeros((1, steps, 2, 2))
    refs[..., 1] = PRESET
    sim.reset(q0=sim.robot.first_view_eq, refs=refs[:, 0])
    return sim.rollout(steps, refs, record=("q",))["q"]


def synthetic_frame(t0, steps, n, J, dt):
    """A record frame of `steps` steps from step t0: every field's value is its step number."""
    t = dt * np.arange(t0 + 1, t0 + steps + 1)
    ramp = np.broadcast_to(
        np.arange(t0 + 1, t0 + steps + 1, dtype=float)[None, :, None], (n, steps, J)
    )
    return {
        "t": t,
        **{f: ramp.copy() for f in ("q", "eq", "defl", "tau", "stiffness", "th1", "th2")},
    }
