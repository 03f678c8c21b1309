"""Sim.rollout(record_qpos=addresses): chosen entries of each instance's MjData.qpos recorded in C
after every step (asr_qpos_recorder, csrc/engine/asr_engine.h), e.g. the snake's free base. The
reference is independent of the recorder: one-step rollouts, qpos read from MjData in Python
after each. Checked bit for bit on several instances over two threads, per-step and windowed
references, without a controller and around the interaction controller (whose own record and
run the recorder must leave unchanged); bad addresses are refused before anything steps."""

import numpy as np
import pytest

import asr
from asr.core.ffi import ffi, lib
from asr.engines.mujoco_scene import visible_geoms

N, STEPS = 3, 24


def snake_refs():
    """(N, STEPS, 12, 2) rad: sines of different amplitudes on every joint, preset 0.3 rad."""
    k = np.arange(STEPS)
    amp = np.linspace(0.3, 0.8, N * 12).reshape(N, 1, 12)
    refs = np.empty((N, STEPS, 12, 2))
    refs[..., 0] = amp * np.sin(0.25 * k)[None, :, None]
    refs[..., 1] = 0.3
    return refs


def snake_addresses(sim):
    """The free joint's 7 qpos entries (position m, quaternion w x y z) and two hinges'."""
    m = sim.models[0]
    free = int(np.asarray(m.jnt_qposadr)[np.asarray(m.jnt_type) == 0][0])
    return np.r_[free : free + 7, m.nq - 1, 8]


def stepwise(sim, steps, adr, refs=None, **inputs):
    """(N, steps, n): qpos[adr] read from each MjData after each of `steps` one-step rollouts
    (refs (N, steps, J, 2) or None: the held references), and {field: (N, steps, ...)}."""
    got, outs = [], []
    for k in range(steps):
        outs.append(sim.rollout(1, None if refs is None else refs[:, k : k + 1], **inputs))
        got.append([np.array(d.qpos[adr]) for d in sim.datas])
    fields = {f: np.concatenate([o[f] for o in outs], axis=1) for f in outs[0]}
    return np.stack(got, axis=1), fields


def test_the_snake_base_recorded_in_c_equals_qpos_read_between_one_step_rollouts():
    refs = snake_refs()
    one = asr.Sim("qbmove_snake", N, threads=2)
    adr = snake_addresses(one)
    out = one.rollout(STEPS, refs, record_qpos=adr)
    want, fields = stepwise(asr.Sim("qbmove_snake", N, threads=2), STEPS, adr, refs)
    assert out["qpos"].shape == (N, STEPS, adr.size) and out["qpos"].dtype == np.float64
    assert np.array_equal(out["qpos"], want)
    for f in ("q", "qd", "tau_joint"):  # recording changes nothing of the run
        assert np.array_equal(out[f], fields[f]), f
    base = out["qpos"][..., :3]
    assert (
        np.ptp(base, axis=1).max(axis=-1).min() > 1e-5
    )  # every base moved (60 um): the record is no constant
    assert not np.array_equal(out["qpos"][0], out["qpos"][1])  # each instance its own row
    # references as a function (a C call per 5 steps, each holding refs(t0)): each window
    # records into its own part of the array
    windowed = asr.Sim("qbmove_snake", N, threads=2).rollout(
        STEPS, lambda sim, t: refs[:, t], every=5, record_qpos=adr
    )
    held = refs[:, np.arange(STEPS) // 5 * 5]
    want_held, _ = stepwise(asr.Sim("qbmove_snake", N), STEPS, adr, held)
    assert np.array_equal(windowed["qpos"], want_held)
    assert not np.array_equal(want_held, want)
    # one thread, and Sim.step's (N, n)
    assert np.array_equal(
        asr.Sim("qbmove_snake", N).rollout(STEPS, refs, record_qpos=adr)["qpos"], want
    )
    assert np.array_equal(
        asr.Sim("qbmove_snake", N).step(refs[:, 0], record_qpos=adr)["qpos"], want[:, 0]
    )


def test_the_record_around_the_interaction_controller_changes_nothing_of_it():
    def sim():
        s = asr.Sim(
            "ur10", N, threads=2, controller=asr.Admittance((1, 1, 1), (900,) * 3, (1300,) * 3)
        )
        s.controller.setpoint(position=(0.5, 0.0, 0.15), duration=0.05)
        return s

    adr = np.arange(6)[::-1]  # every entry of the arm's qpos, in reverse
    wrench = (1.0, 2.0, 3.0, 0.0, 0.0, 0.0)
    out = sim().rollout(STEPS, wrench_ext=wrench, record_qpos=adr)
    plain = sim().rollout(STEPS, wrench_ext=wrench)
    want, _ = stepwise(sim(), STEPS, adr, wrench_ext=wrench)
    assert np.array_equal(out["qpos"], want)
    assert np.ptp(want, axis=1).max() > 1e-3  # the arm moved towards its setpoint
    assert set(out) == set(plain) | {"qpos"}
    for f in plain:  # the controller's own record and the run, unchanged by the wrapper
        assert np.array_equal(out[f], plain[f]), f


@pytest.mark.parametrize(
    "adr, error, match",
    [
        ([0, 19], ValueError, r"record_qpos: address 19 outside qpos, valid range \[0, 18\]"),
        ([-1], ValueError, r"record_qpos: address -1 .*\[0, 18\]"),
        ([0.0, 1.0], TypeError, r"record_qpos: expected a 1-D sequence of int.*0\.0"),
        ([[0, 1]], TypeError, r"record_qpos: expected a 1-D"),
        ("base", TypeError, r"record_qpos: expected .*'base'"),
    ],
)
def test_bad_addresses_are_refused_before_anything_steps(adr, error, match):
    sim = asr.Sim("qbmove_snake", 2)
    before = np.array(sim.datas[1].qpos)
    with pytest.raises(error, match=match):
        sim.rollout(3, snake_refs()[:2, :3], record_qpos=adr)
    assert sim.time == 0.0 and np.array_equal(sim.datas[1].qpos, before)


def test_no_addresses_record_an_empty_array_and_the_c_recorder_refuses_null():
    out = asr.Sim("qbmove_snake", 2).rollout(4, snake_refs()[:2, :4], record_qpos=[])
    assert out["qpos"].shape == (2, 4, 0)
    ctl = ffi.new("asr_controller*")
    assert lib.asr_qpos_recorder(ffi.NULL, ctl) == lib.ASR_ERR_NULL
    assert lib.asr_qpos_recorder(ffi.new("asr_qpos_record*"), ffi.NULL) == lib.ASR_ERR_NULL


def test_free_base_adr_and_poses_at_a_given_base():
    """Sim.free_base_adr: the snake's free joint's 7 qpos entries (from the model's joint types,
    read independently here), none for the arm; geom_poses_at(q, i, base=...) draws the robot
    with its base moved, equal to MuJoCo's own kinematics of that qpos, and leaves the live data
    as it was; a base of the wrong shape or not finite is refused by name."""
    import mujoco

    sim = asr.Sim("qbmove_snake", 1)
    m = sim.models[0]
    free = int(
        np.asarray(m.jnt_qposadr)[np.asarray(m.jnt_type) == int(mujoco.mjtJoint.mjJNT_FREE)][0]
    )
    np.testing.assert_array_equal(sim.free_base_adr, np.arange(free, free + 7))
    assert asr.Sim("qbmove_arm_2dof", 1).free_base_adr.size == 0
    sim.rollout(5, np.tile([0.2, 0.3], (1, 12, 1)))
    live = np.array(sim.datas[0].qpos)
    base = live[sim.free_base_adr] + np.r_[0.05, -0.02, 0.01, 0, 0, 0, 0]
    q = sim.q[0] + 0.1
    got = np.asarray(sim.geom_poses_at(q, 0, base=base), float)
    d = mujoco.MjData(m)
    d.qpos[:] = live
    d.qpos[sim.qpos_adr] = q
    d.qpos[sim.free_base_adr] = base
    mujoco.mj_kinematics(m, d)
    geoms = visible_geoms(m)
    np.testing.assert_allclose(got[:, :3], d.geom_xpos[geoms], atol=1e-12)
    np.testing.assert_allclose(got[:, 3:], d.geom_xmat[geoms], atol=1e-12)
    now = np.asarray(sim.geom_poses_at(q, 0), float)  # the base where it is now: elsewhere
    assert np.abs(now[:, :3] - got[:, :3]).max() > 0.01
    np.testing.assert_array_equal(np.array(sim.datas[0].qpos), live)
    with pytest.raises(ValueError, match=r"base: expected shape \(7,\)"):
        sim.geom_poses_at(q, 0, base=np.zeros(6))
    with pytest.raises(ValueError, match="base: got"):
        sim.geom_poses_at(q, 0, base=np.r_[base[:6], np.nan])
