"""asr.warp.mujoco.MjwSim (MuJoCo Warp + asr's actuators on Warp) against asr.Sim (MuJoCo + asr's
C core) on asr's robots, Warp's CPU device.

Tolerance basis: what bare MuJoCo Warp and bare MuJoCo differ on the same robot under the same
torques. MuJoCo Warp computes in float32, MuJoCo in float64, so they cannot agree better.
Two measures of it, both asserted:

- BARE_1S: benchmarks/bench_warp.py's "bare" section (committed code; figures in
  benchmarks/results/warp.json and docs/gpu.md): 1 s of simulated time, prescribed sinusoidal
  joint torques as qfrc_applied, 4 worlds, the robot's own MJCF timestep and Euler integrator.
  The coupled difference must stay within MARGIN_1S times it.
- live, in each test: asr.Sim's own joint torques replayed into bare MuJoCo Warp as
  qfrc_applied (same robot, same start, same torques step by step) against asr.Sim's link
  state. MjwSim, whose actuators see MuJoCo Warp's float32 link state, feeds the difference back
  through the springs: compare() on the four robots without contacts, float64 and float32
  actuators, measured up to 2.0x the bare difference in q (rrbot_sea, float32) and 3.2x in qd
  (pendulum_1dof); on the two with contacts (qbmove_arm_5dof, ur10; float64) below 1x; the bound
  is MARGIN_LIVE times it.

The first run compiles MuJoCo Warp's kernels on the CPU device (and the actuator kernels): from
an empty cache this file took 92 s at a load of 7 on the 2-core machine, its first test 54 s;
later runs load them from build/warp-cache (asr.warp.runtime) and take 15 to 40 s.
"""

import numpy as np
import pytest

from tests.conftest import require

wp = require("warp")
mjw = require("mujoco_warp")

import asr  # noqa: E402
from asr.core.ffi import lib  # noqa: E402
from asr.warp.mujoco import MjwSim, torque_rollout  # noqa: E402

N = 3
# (robot, variant, steps): a few hundred steps of each robot's MJCF timestep
ROBOTS = [
    ("pendulum_1dof", "qbmove_advanced", 300),
    ("rrbot_sea", "k188", 200),
    ("qbmove_arm_2dof", "vertical", 200),
    ("qbmove_3r", "vertical", 200),
    ("qbmove_arm_5dof", "soft", 200),
    ("ur10", "rigid", 200),
]
# benchmarks/bench_warp.py --sections bare (1 s, 4 worlds), on this machine: max |dq| rad,
# max |dqd| rad/s of bare MuJoCo Warp (float32) against bare MuJoCo (float64)
BARE_1S = {
    "pendulum_1dof": (4.836e-06, 2.005e-05),
    "rrbot_sea": (1.532e-06, 1.413e-06),
    "qbmove_arm_2dof": (1.226e-06, 7.394e-06),
    "qbmove_3r": (1.584e-06, 9.813e-06),
    # with contacts: the float32 difference grows through them
    "qbmove_arm_5dof": (4.407e-02, 1.755e00),
    "ur10": (3.310e-02, 7.286e00),
}
MARGIN_1S = 2.0
MARGIN_LIVE = 4.0
ARM = ("qbmove_arm_2dof", "vertical")


def refs_for(robot, n, steps, dt):
    """(n, steps, J, 2) references: the robot's initial ones, equilibria plus 0.3 sin(2 pi 20 t
    + 2 pi i / n) rad (20 Hz: the links move within a few hundred steps)."""
    nj = len(robot.joints)
    refs = np.zeros((n, steps, nj, 2))
    refs[...] = np.array(robot.initial_refs)
    t = np.arange(steps)[None, :, None] * dt
    phase = 2 * np.pi * np.arange(n)[:, None, None] / n
    refs[..., 0] += 0.3 * np.sin(2 * np.pi * 20 * t + phase)
    return refs


def host(rec):
    return {k: v.numpy() for k, v in rec.items()}


def compare(name, variant, steps, dtype):
    """MjwSim and asr.Sim on the same robot, references and steps (N worlds), and bare MuJoCo
    Warp replaying asr.Sim's torques: (asr.Sim's records, MjwSim's, MjwSim, asr.Sim, figures:
    max |dq| rad and |dqd| rad/s of MjwSim and of the bare replay against asr.Sim)."""
    sim = asr.Sim(name, N, variant=variant)
    mjs = MjwSim(name, N, variant=variant, dtype=dtype, device="cpu")
    refs = refs_for(sim.robot, N, steps, sim.dt)
    fields = ("q", "qd", "tau_joint", "th1")
    want = sim.rollout(steps, refs, record=fields)
    got = host(mjs.rollout(steps, refs, record=fields))
    bare_q, bare_qd = torque_rollout(sim.robot, want["tau_joint"], device="cpu")
    figures = {
        "dq": np.abs(got["q"] - want["q"]).max(),
        "dqd": np.abs(got["qd"] - want["qd"]).max(),
        "live_q": np.abs(bare_q - want["q"]).max(),
        "live_qd": np.abs(bare_qd - want["qd"]).max(),
    }
    return want, got, mjs, sim, figures


@pytest.mark.slow  # 1-5 s warm (MuJoCo Warp's step costs ms on the CPU device)
@pytest.mark.parametrize(
    "name,variant,steps,dtype",
    [(*r, "float64") for r in ROBOTS] + [("qbmove_arm_2dof", "vertical", 200, "float32")],
)
def test_matches_asr_sim_within_the_bare_engines_difference(name, variant, steps, dtype):
    want, got, mjs, sim, fig = compare(name, variant, steps, dtype)
    assert mjs.dt == sim.dt and mjs.n_joints == sim.n_joints and mjs.n_instances == N
    for f in want:
        assert got[f].shape == (N, steps, sim.n_joints)
        assert got[f].dtype == np.dtype(dtype)
    # the links moved (a comparison of resting links would prove little)
    assert np.ptp(want["q"]) > 0.02
    assert fig["dq"] <= MARGIN_LIVE * fig["live_q"], fig
    assert fig["dqd"] <= MARGIN_LIVE * fig["live_qd"], fig
    assert fig["dq"] <= MARGIN_1S * BARE_1S[name][0], fig
    assert fig["dqd"] <= MARGIN_1S * BARE_1S[name][1], fig
    # the torques follow: the spring's stiffness times the link difference, and the motors
    tau_scale = np.abs(want["tau_joint"]).max()
    assert np.abs(got["tau_joint"] - want["tau_joint"]).max() <= 1e-4 * tau_scale
    assert np.abs(got["th1"] - want["th1"]).max() <= 1e-5
    # the state read back is the last record
    np.testing.assert_array_equal(mjs.q, got["q"][:, -1].astype(np.float64))
    # MuJoCo Warp's time is a float32 sum of dt per step
    np.testing.assert_allclose(mjs.time, steps * sim.dt, rtol=steps * 2.0**-24)


@pytest.mark.slow  # 1-5 s warm (MuJoCo Warp's step costs ms on the CPU device)
def test_external_and_feed_forward_torques_as_asr_sim():
    """rrbot_sea (mode 5, one motor): tau_ext held (NumPy), tau_ff per step (a Warp array)."""
    name, variant, steps = "rrbot_sea", "k188", 200
    sim = asr.Sim(name, N, variant=variant)
    mjs = MjwSim(name, N, variant=variant, dtype="float64", device="cpu")
    refs = refs_for(sim.robot, N, steps, sim.dt)
    ext = np.array([[0.5], [-0.5], [1.0]])
    ff = (
        2.0 * np.sin(2 * np.pi * 10 * np.arange(steps) * sim.dt)[None, :, None] * np.ones((N, 1, 1))
    )
    want = sim.rollout(steps, refs, tau_ext=ext, tau_ff=ff, record=("q", "qd", "tau_joint"))
    ff_w = wp.array(ff, dtype=wp.float64, device="cpu")
    got = host(mjs.rollout(steps, refs, tau_ext=ext, tau_ff=ff_w))
    bare_q, bare_qd = torque_rollout(sim.robot, want["tau_joint"], device="cpu")
    live_q = np.abs(bare_q - want["q"]).max()
    live_qd = np.abs(bare_qd - want["qd"]).max()
    assert np.abs(got["q"] - want["q"]).max() <= MARGIN_LIVE * live_q
    assert np.abs(got["qd"] - want["qd"]).max() <= MARGIN_LIVE * live_qd
    tau_scale = np.abs(want["tau_joint"]).max()
    assert np.abs(got["tau_joint"] - want["tau_joint"]).max() <= 1e-4 * tau_scale
    # the inputs mattered: without them the torques differ by far more than the tolerance
    bare = MjwSim(name, N, variant=variant, dtype="float64", device="cpu")
    none = host(bare.rollout(steps, refs, record=("tau_joint",)))
    assert np.abs(none["tau_joint"] - want["tau_joint"]).max() > 100 * 1e-4 * tau_scale
    with pytest.raises(ValueError, match="tau_ext"):
        mjs.rollout(2, refs[:, :2], tau_ext=np.zeros((N, 2)))
    with pytest.raises(ValueError, match="tau_ff: Warp array of float32, expected float64"):
        mjs.rollout(2, refs[:, :2], tau_ff=wp.zeros((N, 1), dtype=wp.float32, device="cpu"))


@pytest.mark.slow  # 1-5 s warm (MuJoCo Warp's step costs ms on the CPU device)
def test_params_override_the_robots():
    """rrbot_sea k188 with k100's spring (Kt, Dt) by params steps as the k100 variant, by joint
    name or index."""
    refs = refs_for(asr.load_robot("rrbot_sea", "k100"), 2, 50, 1e-3)
    k100 = host(MjwSim("rrbot_sea", 2, variant="k100", device="cpu").rollout(50, refs))
    for joint in ("joint1", 0):
        sim = MjwSim(
            "rrbot_sea", 2, variant="k188", device="cpu", params={joint: {"Kt": 100.0, "Dt": 0.3}}
        )
        np.testing.assert_array_equal(sim.batch.get_param(0, "Kt"), [100.0, 100.0])
        got = host(sim.rollout(50, refs))
        for f in got:
            np.testing.assert_array_equal(got[f], k100[f])
    k188 = host(MjwSim("rrbot_sea", 2, variant="k188", device="cpu").rollout(50, refs))
    assert not np.array_equal(k188["tau_joint"], k100["tau_joint"])


def test_both_start_at_the_robots_initial_state():
    sim = asr.Sim(ARM[0], N, variant=ARM[1])
    mjs = MjwSim(ARM[0], N, variant=ARM[1], device="cpu")
    np.testing.assert_allclose(mjs.q, sim.q, atol=1e-7)  # float32 of the same angles
    assert np.all(mjs.qd == 0.0) and np.all(mjs.time == 0.0)
    np.testing.assert_allclose(mjs.batch.field("th1"), sim.batch.field("th1"), atol=1e-6)


@pytest.mark.slow  # 1-5 s warm (MuJoCo Warp's step costs ms on the CPU device)
def test_reset_mask_resets_only_its_worlds():
    n, k = 3, 40
    a = MjwSim(ARM[0], n, variant=ARM[1], dtype="float64", device="cpu")
    b = MjwSim(ARM[0], n, variant=ARM[1], dtype="float64", device="cpu")
    refs = refs_for(a.robot, n, 1, a.dt)[:, 0]  # held (n, J, 2)
    a.rollout(k, refs)
    b.rollout(k, refs)
    q_new = np.array([[0.3, -0.2], [0.0, 0.0], [-0.1, 0.25]])
    mask = np.array([True, False, True])
    a.reset(q_new, refs, mask=mask)
    q_after, qd_after = a.q, a.qd
    np.testing.assert_allclose(q_after[mask], q_new[mask], atol=1e-7)
    assert np.all(qd_after[mask] == 0.0)
    np.testing.assert_array_equal(q_after[1], b.q[1])  # world 1 untouched
    np.testing.assert_allclose(a.time, [0.0, k * a.dt, 0.0], rtol=1e-6)
    # the reset worlds' motors are where refs put them, world 1's as it was
    th1 = a.batch.field("th1")
    np.testing.assert_array_equal(th1[1], b.batch.field("th1")[1])
    fresh = MjwSim(ARM[0], n, variant=ARM[1], dtype="float64", device="cpu")
    fresh.reset(q_new, refs)
    np.testing.assert_array_equal(th1[mask], fresh.batch.field("th1")[mask])
    # stepping on: world 1 as the run never reset, worlds 0 and 2 as a fresh start
    ra, rb, rf = (host(s.rollout(k, refs, record=("q", "tau_joint"))) for s in (a, b, fresh))
    for f in ("q", "tau_joint"):
        np.testing.assert_array_equal(ra[f][1], rb[f][1])
        np.testing.assert_allclose(ra[f][mask], rf[f][mask], rtol=0, atol=1e-6)
        assert not np.allclose(ra[f][1], rf[f][1], rtol=0, atol=1e-6)


@pytest.mark.slow
def test_launch_reset_on_the_device_equals_reset():
    n, k = 3, 20
    a = MjwSim(ARM[0], n, variant=ARM[1], dtype="float64", device="cpu")
    b = MjwSim(ARM[0], n, variant=ARM[1], dtype="float64", device="cpu")
    refs = refs_for(a.robot, n, 1, a.dt)[:, 0]
    for s in (a, b):
        s.rollout(k, refs)
    q_new = np.array([[0.3, -0.2], [0.1, 0.1], [-0.1, 0.25]])
    refs_new = refs + 0.05
    mask = np.array([True, False, True])
    a.reset(q_new, refs_new, mask=mask)
    b.launch_reset(
        wp.array(mask, dtype=wp.bool, device="cpu"),
        wp.array(q_new, dtype=wp.float64, device="cpu"),
        wp.array(refs_new, dtype=wp.float64, device="cpu"),
    )
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.qd, b.qd)
    np.testing.assert_array_equal(a.time, b.time)
    np.testing.assert_array_equal(a.batch.state.numpy(), b.batch.state.numpy())
    # held references (refs=None) are the reset worlds' new ones, world 1's old ones
    ra, rb = (host(s.rollout(k, None, record=("q", "tau_joint"))) for s in (a, b))
    for f in ra:
        np.testing.assert_array_equal(ra[f], rb[f])
    # without refs: the robot's initial references, as reset's default
    a.reset(q_new, mask=mask)
    b.launch_reset(
        wp.array(mask, dtype=wp.bool, device="cpu"), wp.array(q_new, dtype=wp.float64, device="cpu")
    )
    np.testing.assert_array_equal(a.batch.state.numpy(), b.batch.state.numpy())


@pytest.mark.slow
def test_a_nan_reference_stops_only_its_world():
    n, k = 3, 30
    sim = MjwSim(ARM[0], n, variant=ARM[1], dtype="float64", device="cpu")
    twin = MjwSim(ARM[0], n, variant=ARM[1], dtype="float64", device="cpu")
    held = refs_for(sim.robot, n, 1, sim.dt)[:, 0]
    bad = held.copy()
    bad[1, 0, 0] = np.nan
    # host refs are checked, as asr.Sim's
    with pytest.raises(ValueError, match="refs: must be finite"):
        sim.rollout(k, bad)
    # device refs are not read back: the NaN stops world 1's actuators, as the C core's status
    dev_bad = wp.array(bad, dtype=wp.float64, device="cpu")
    got = host(sim.rollout(k, dev_bad, record=("q", "tau_joint"), on_error="flag"))
    want = host(twin.rollout(k, held, record=("q", "tau_joint")))
    assert list(sim.status) == [0, lib.ASR_ERR_INPUT, 0]
    err = sim.batch.errors()[0]
    assert (err["instance"], err["joint"], err["step"]) == (1, 0, 0)
    assert np.all(got["tau_joint"][1] == 0.0)  # frozen: zero torque, the link falls freely
    for w in (0, 2):
        np.testing.assert_array_equal(got["q"][w], want["q"][w])
        np.testing.assert_array_equal(got["tau_joint"][w], want["tau_joint"][w])
    # raise: refused while world 1 stays frozen, until it is reset
    with pytest.raises(asr.SimulationError, match="reset"):
        sim.rollout(k, held)
    sim.reset(mask=np.array([False, True, False]))
    assert list(sim.status) == [0, 0, 0]
    sim.rollout(k, held)
    # raise after the rollout names the world
    with pytest.raises(asr.SimulationError) as info:
        sim.rollout(k, wp.array(bad, dtype=wp.float64, device="cpu"))
    assert info.value.instance == 1


def test_a_non_finite_engine_state_stops_only_its_world():
    sim = MjwSim(ARM[0], 3, variant=ARM[1], dtype="float64", device="cpu")
    qvel = sim.mjw_data.qvel.numpy()
    qvel[1, 0] = np.nan
    sim.mjw_data.qvel.assign(qvel)
    rec = host(sim.rollout(3, sim.robot.initial_refs, record=("q", "tau_joint"), on_error="flag"))
    assert list(sim.status) == [0, lib.ASR_ERR_INPUT, 0]
    assert np.all(rec["tau_joint"][1] == 0.0)
    assert np.all(np.isfinite(rec["q"][[0, 2]])) and np.any(rec["tau_joint"][0] != 0.0)


@pytest.mark.slow  # 1-5 s warm (MuJoCo Warp's step costs ms on the CPU device)
def test_records_are_device_arrays_torch_shares():
    torch = require("torch")
    sim = MjwSim(ARM[0], 2, variant=ARM[1], dtype="float32", device="cpu")
    steps = 5
    refs = wp.array(
        refs_for(sim.robot, 2, steps, sim.dt).astype(np.float32), dtype=wp.float32, device="cpu"
    )
    out = {"q": wp.zeros((2, steps, 2), dtype=wp.float32, device="cpu")}
    rec = sim.rollout(steps, refs, record=("q",), out=out)
    assert rec["q"] is out["q"]
    t = wp.to_torch(rec["q"])
    assert t.dtype == torch.float32 and tuple(t.shape) == (2, steps, 2)
    assert t.data_ptr() == rec["q"].ptr  # no copy
    np.testing.assert_array_equal(t.numpy(), rec["q"].numpy())
    np.testing.assert_array_equal(rec["q"].numpy()[:, -1], sim.q.astype(np.float32))


def test_step_returns_the_state_after_it():
    sim = MjwSim(ARM[0], 2, variant=ARM[1], device="cpu")
    out = sim.step(sim.robot.initial_refs)
    assert set(out) == {"q", "qd", "tau_joint"}
    np.testing.assert_array_equal(out["q"].numpy(), sim.q.astype(np.float32))


def test_capture_needs_cuda():
    sim = MjwSim(ARM[0], 2, variant=ARM[1], device="cpu")
    with pytest.raises(ValueError, match="capture: CUDA graphs need a CUDA device"):
        sim.rollout(2, sim.robot.initial_refs, capture=True)


@pytest.mark.skipif(
    not wp.is_cuda_available(),
    reason="no CUDA device: graph capture runs only on CUDA (not a CI dependency)",
)
def test_captured_rollout_equals_the_launched_one():
    a = MjwSim(ARM[0], 4, variant=ARM[1], dtype="float32", device="cuda:0")
    b = MjwSim(ARM[0], 4, variant=ARM[1], dtype="float32", device="cuda:0")
    refs = wp.array(
        refs_for(a.robot, 4, 50, a.dt).astype(np.float32), dtype=wp.float32, device="cuda:0"
    )
    ra = host(a.rollout(50, refs, capture=True))
    rb = host(b.rollout(50, refs))
    for f in ra:
        np.testing.assert_array_equal(ra[f], rb[f])


def test_bad_inputs():
    sim = MjwSim(ARM[0], 2, variant=ARM[1], device="cpu")
    with pytest.raises(ValueError, match="nworld"):
        MjwSim(ARM[0], 0, variant=ARM[1], device="cpu")
    with pytest.raises(ValueError, match="dtype: got 'float16'"):
        MjwSim(ARM[0], 2, variant=ARM[1], dtype="float16", device="cpu")
    with pytest.raises(ValueError, match="device: unknown Warp device 'tpu'"):
        MjwSim(ARM[0], 2, variant=ARM[1], device="tpu")
    with pytest.raises(ValueError, match="unknown joint 'elbow'"):
        MjwSim(ARM[0], 2, variant=ARM[1], device="cpu", params={"elbow": {"k1": 1.0}})
    with pytest.raises(ValueError, match="steps"):
        sim.rollout(0, sim.robot.initial_refs)
    with pytest.raises(ValueError, match="refs"):
        sim.rollout(3, np.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match=r"refs: expected shape \(2, 2, 2\) or \(2, 3, 2, 2\)"):
        sim.rollout(3, wp.zeros((2, 4, 2, 2), dtype=wp.float32, device="cpu"))
    with pytest.raises(ValueError, match="refs: Warp array of float64, expected float32"):
        sim.rollout(3, wp.zeros((2, 2, 2), dtype=wp.float64, device="cpu"))
    with pytest.raises(ValueError, match="unknown state field"):
        sim.rollout(3, sim.robot.initial_refs, record=("nope",))
    with pytest.raises(ValueError, match="on_error"):
        sim.rollout(3, sim.robot.initial_refs, on_error="ignore")
    with pytest.raises(ValueError, match=r"out\['q'\]: expected a contiguous Warp array"):
        sim.rollout(3, sim.robot.initial_refs, record=("q",), out={"q": np.zeros((2, 3, 2))})
    with pytest.raises(ValueError, match=r"out: 'qd' is not recorded"):
        sim.rollout(3, sim.robot.initial_refs, record=("q",), out={"qd": None})
    with pytest.raises(ValueError, match="mask: expected a bool array of shape"):
        sim.reset(mask=[1, 0])
    with pytest.raises(ValueError, match="q0"):
        sim.reset(q0=np.zeros((3, 2)))
    with pytest.raises(
        ValueError, match=r"q0: got 1000000000000 rad, valid range \[-1e\+10, 1e\+10\]"
    ):
        sim.reset(q0=[1e12, 0.0])
    sim.rollout(3, sim.robot.initial_refs)  # still works
