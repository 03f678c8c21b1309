"""A free-base robot on the timeline (PROTOCOL.md "Plots", GET /api/plots/pose): the run records
the free base's pose (the snake's head: position m, quaternion) after every step beside the
joints' angles, keeps it in the archive at the archive's resolution (a halved chunk keeps the
poses of the steps whose times it has, never a mix of minima and maxima), and the replayed pose
is the whole robot where it was at that step: base and links equal to a plain asr.Sim rolled
out to that step with the same references, not the base where it is now."""

import collections

import numpy as np
import pytest

from tests.conftest import require

require("fastapi")
require("httpx")

import asr  # noqa: E402
from asr_dashboard import frames  # noqa: E402
from tests.support.dashboard_samples import synthetic_frame  # noqa: E402
from tests.support.dashboard_server import app_client, wait_sim_past  # noqa: E402

ROBOT = "qbmove_snake"
PRESET = 0.3  # rad: the snake's stiffness preset (its robot.toml's initial s), every joint
SINE = {"amplitude": 0.8, "frequency": 0.8}  # rad, Hz: joint1 (yaw) and joint2 (pitch)


def test_archive_keeps_the_base_pose_of_the_steps_it_keeps():
    # the base's 7 numbers encode the step (k, 10 k, ..., 1e6 k): a halved chunk's pose must be
    # one step's whole pose, at the time kept for it
    dt, n = 1e-3, 2
    history = collections.deque()
    archive = frames.archive_of(history)
    archive.max_bytes = 200_000  # small: halved several times
    for k in range(300):
        f = synthetic_frame(k * 40, 40, n, 3, dt)
        steps = np.arange(k * 40 + 1, k * 40 + 41, dtype=float)
        f["base"] = np.broadcast_to(steps[None, :, None] * 10.0 ** np.arange(7), (n, 40, 7))
        history.append(f)
        frames.keep_newest(history, 1000)
    assert archive.halvings >= 2 and archive.nbytes <= archive.max_bytes
    halved = [f for level, f in archive.chunks if level > 0]
    assert halved, "no halved chunk: the test shows nothing"
    for f in [*archive.frames(), *history]:
        step = np.round(f["t"] / dt)  # the step of each kept time
        want = np.broadcast_to(step[None, :, None] * 10.0 ** np.arange(7), f["base"].shape)
        np.testing.assert_array_equal(f["base"], want)
    # sample_at: the nearest kept step's base, its time with it
    for t in (0.5, 3.21, 11.9):
        t_s, q, base = frames.sample_at(history, t)
        assert abs(t_s - t) < 0.05 and q.shape == (n, 3)
        want = np.full((n, 1), round(t_s / dt)) * 10.0 ** np.arange(7)
        np.testing.assert_array_equal(base, want)
    # a robot without a free base: no base, as before
    plain = collections.deque([synthetic_frame(0, 10, 1, 2, dt)])
    assert frames.sample_at(plain, 0.004)[2] is None


def test_frames_rollout_records_the_base_in_the_frames_one_call():
    # 2 snakes on 2 threads, sine references and a push: frames.rollout's base (the C record,
    # one Sim.rollout call) equals the pose read from MjData after each of 33 one-step rollouts
    steps, n = 33, 2
    refs = np.zeros((n, steps, 12, 2))
    refs[..., 1] = PRESET
    refs[:, :, :2, 0] = 0.8 * np.sin(0.2 * np.arange(steps))[None, :, None]
    push = np.zeros((n, 12))
    push[1, 3] = 0.5  # N m on instance 1's joint 4
    sim, ref = asr.Sim(ROBOT, n, threads=2), asr.Sim(ROBOT, n, threads=2)
    calls = []
    rollout = sim.rollout
    sim.rollout = lambda *a, **k: calls.append(k) or rollout(*a, **k)
    out = frames.rollout(sim, steps, refs, push, frames.RECORD)
    assert len(calls) == 1 and out["base"].shape == (n, steps, 7)
    adr = ref.free_base_adr
    want = np.empty((n, steps, 7))
    for k in range(steps):
        one = ref.rollout(1, refs[:, k : k + 1], tau_ext=push, record=frames.RECORD)
        want[:, k] = [d.qpos[adr] for d in ref.datas]
        assert np.array_equal(one["q"][:, 0], out["q"][:, k])
    np.testing.assert_array_equal(out["base"], want)
    assert "qpos" not in out
    # a robot without a free base: no base, one plain call
    arm = asr.Sim("qbmove_arm_2dof", 1)
    assert "base" not in frames.rollout(arm, 3, np.zeros((1, 3, 2, 2)), None, frames.RECORD)


def direct_snake(steps_at, refs):
    """{step: (base (7,), geom poses (G, 12))} of a plain asr.Sim of the snake rolled out with
    refs (1, T, J, 2) to each step count in steps_at (ascending)."""
    sim = asr.Sim(ROBOT, 1)
    sim.reset(refs=refs[:, 0])
    adr = sim.free_base_adr
    out, done = {}, 0
    for k in steps_at:
        sim.rollout(k - done, refs[:, done:k], record=("q",))
        done = k
        # the kinematics of the state at the end of step k (geom_poses is of the step's start)
        geoms = np.asarray(sim.geom_poses_at(sim.q[0], 0), float)
        out[k] = (sim.datas[0].qpos[adr].copy(), geoms)
    return out


@pytest.mark.slow
def test_replayed_snake_has_its_base_where_it_was():
    with app_client(window_s=1.0) as client:
        r = client.post("/api/robot", json={"robot": ROBOT})
        assert r.status_code == 200, r.text
        joints = [j["name"] for j in r.json()["joints"]]
        assert len(joints) == 12, joints
        ref = {j: {"kind": "hold", "amplitude": 0.0, "offset": 0.0} for j in joints}
        ref.update({j: {"kind": "sine", "offset": 0.0, **SINE} for j in joints[:2]})
        configure = {"reference": ref, "preset": dict.fromkeys(joints, PRESET)}
        answers = [
            client.post("/api/compare", json={"presets": []}),
            client.post("/api/control", json=configure),
            client.post("/api/reset"),  # the run from rest, the generators at t = 0
        ]
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
        client.post("/api/control", json={"speed": "max"})
        wait_sim_past(client, 2.2)
        state = client.post("/api/control", json={"paused": True}).json()
        dt, t_end = state["dt"], state["time"]
        # scrub back: a time in the archive (window 1 s) and one in the record
        times = (0.5, round(t_end - 0.3, 3))
        poses = [client.get("/api/plots/pose", params={"t": t}).json() for t in times]
    steps = [int(round(p["t_sample"] / dt)) for p in poses]
    end = int(round(t_end / dt))
    t = dt * np.arange(end)
    refs = np.zeros((1, end, len(joints), 2))
    refs[..., 1] = PRESET
    refs[0, :, :2, 0] = (SINE["amplitude"] * np.sin(2 * np.pi * SINE["frequency"] * t))[:, None]
    want = direct_snake([*steps, end], refs)
    now_base, now_poses = want[end]
    for p, k in zip(poses, steps):
        assert p["run_id"] == state["run_id"] and abs(p["t_sample"] - k * dt) < 1e-9, p["t"]
        base, geoms = want[k]
        drawn = np.asarray(p["robot3d"]["poses"][0])
        # the whole robot where it was at that step: every geom's position and rotation
        np.testing.assert_allclose(drawn, geoms, rtol=0, atol=1e-4, err_msg=f"t = {p['t']}")
        np.testing.assert_allclose(p["base"][0], base, rtol=0, atol=1e-5)
        # ... not where it is now: the base moved since (else the test shows nothing)
        assert np.linalg.norm(base[:3] - now_base[:3]) > 5e-3, (p["t"], base, now_base)
        assert np.abs(drawn[:, :3] - now_poses[:, :3]).max() > 5e-3
