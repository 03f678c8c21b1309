"""The batch: N instances equal N single runs bit for bit, thread count and rollout do not change
results, state fields are zero-copy read-only views.

References here are independent runs of the same core (single-instance batches, one thread,
step-by-step), compared with np.array_equal: the design promises bit-identical results."""

import numpy as np
import pytest

import asr
from tests.support.batch import (
    DT,
    N_SWEEP,
    SWEEP_JOINTS,
    assert_states_equal,
    run_steps,
    slice_inputs,
    state_of,
    sweep_inputs,
    sweep_joints,
)

# ---------------------------------------------------------------- a batch of N = N single runs


def test_batch_of_n_equals_n_single_runs_step():
    steps = 300
    inputs = sweep_inputs(steps)
    b = asr.Batch(sweep_joints(), N_SWEEP)
    rec = run_steps(b, inputs)
    assert np.all(b.status == 0)
    # the sweep really differs per instance (otherwise the comparison proves little)
    assert len({float(x) for x in rec["tau_joint"][-1, :, 0]}) == N_SWEEP
    for i in range(N_SWEEP):
        s = asr.Batch(sweep_joints(i), 1)
        rs = run_steps(s, slice_inputs(inputs, i))
        for f in asr.FIELDS:
            assert np.array_equal(rec[f][:, i : i + 1], rs[f]), f"instance {i}, field {f}"


def test_batch_of_n_equals_n_single_runs_rollout():
    steps = 200
    inputs = sweep_inputs(steps)
    refs = np.stack([kw["refs"] for kw in inputs], axis=1)
    q = np.stack([kw["q"] for kw in inputs], axis=1)
    qd = np.stack([kw["qd"] for kw in inputs], axis=1)
    ext = np.stack([kw["tau_ext"] for kw in inputs], axis=1)
    b = asr.Batch(sweep_joints(), N_SWEEP)
    res = b.rollout(steps, DT, refs, q, qd, tau_ext=ext, record=asr.FIELDS)
    for i in range(N_SWEEP):
        s = asr.Batch(sweep_joints(i), 1)
        rs = s.rollout(
            steps,
            DT,
            refs[i : i + 1],
            q[i : i + 1],
            qd[i : i + 1],
            tau_ext=ext[i : i + 1],
            record=asr.FIELDS,
        )
        for f in asr.FIELDS:
            assert np.array_equal(res[f][i : i + 1], rs[f]), f"instance {i}, field {f}"


def test_per_instance_params_at_construction_equal_set_param():
    inputs = sweep_inputs(60)
    a = asr.Batch(sweep_joints(), N_SWEEP)
    b = asr.Batch([asr.Joint(m, mode) for m, mode, _ in SWEEP_JOINTS], N_SWEEP)
    for j, (_, _, params) in enumerate(SWEEP_JOINTS):
        for name, v in params.items():
            b.set_param(j, name, list(v))
    b.reset()
    assert_states_equal(state_of(a), state_of(b), "after construction")
    ra, rb = run_steps(a, inputs), run_steps(b, inputs)
    for f in asr.FIELDS:
        assert np.array_equal(ra[f], rb[f]), f


# ---------------------------------------------------------------- threads


N_THREADED = 4096  # 2 joints: 8192 joint-steps, 8 threads' worth at 1024 per thread


def threaded_batch(threads):
    n = N_THREADED
    i = np.arange(n)
    b = asr.Batch(
        [
            asr.Joint(
                "qbmove_advanced", 6, {"kp": 60.0 + 0.05 * i, "k1": 0.0019 * (1 + (i % 7) / 7)}
            ),
            asr.Joint("sea_damped", 5, {"Kt": 100.0 + (i % 400)}),
        ],
        n,
        threads=threads,
    )
    return b


def threaded_inputs(steps):
    n = N_THREADED
    i = np.arange(n)[:, None]
    j = np.arange(2)[None, :]
    t = (np.arange(steps) * DT)[:, None, None]
    q = 0.2 * np.sin(3 * t + 0.001 * i + j)
    qd = 0.6 * np.cos(3 * t + 0.001 * i + j)
    refs = np.zeros((steps, n, 2, 2))
    refs[..., 0] = 0.5 * np.sin(2 * t + 0.002 * i)
    refs[:, :, 0, 1] = 0.1 + 0.4 * (i[:, 0] % 5) / 5
    return q, qd, refs


def test_thread_count_does_not_change_results_step():
    steps = 25
    q, qd, refs = threaded_inputs(steps)
    finals = {}
    for threads in (1, 2, 3):
        b = threaded_batch(threads)
        assert b.threads == threads
        taus = []
        for k in range(steps):
            taus.append(b.step(q[k], qd[k], refs[k], DT).copy())
        finals[threads] = (np.stack(taus), state_of(b), b.status.copy())
    for threads in (2, 3):
        assert np.array_equal(finals[1][0], finals[threads][0]), f"tau, threads={threads}"
        assert_states_equal(finals[1][1], finals[threads][1], f"threads={threads}")
        assert np.array_equal(finals[1][2], finals[threads][2])
    assert np.all(finals[1][2] == 0)
    assert np.all(np.isfinite(finals[1][0]))


def test_thread_count_does_not_change_results_rollout():
    steps = 25
    q, qd, refs = (np.moveaxis(x, 0, 1) for x in threaded_inputs(steps))  # instance first
    record = ("tau_joint", "th1", "th2", "th1d", "stiffness", "cmd1", "int1")
    results = {}
    for threads in (1, 2, 3):
        b = threaded_batch(threads)
        res = b.rollout(steps, DT, refs, q, qd, record=record)
        results[threads] = ({f: res[f].copy() for f in record}, state_of(b))
    for threads in (2, 3):
        for f in record:
            assert np.array_equal(results[1][0][f], results[threads][0][f]), (threads, f)
        assert_states_equal(results[1][1], results[threads][1], f"threads={threads}")


def test_threads_setter_changes_nothing_mid_run():
    steps = 10
    q, qd, refs = threaded_inputs(2 * steps)
    a, b = threaded_batch(1), threaded_batch(1)
    for k in range(2 * steps):
        if k == steps:
            b.threads = 3
        a.step(q[k], qd[k], refs[k], DT)
        b.step(q[k], qd[k], refs[k], DT)
    assert b.threads == 3
    assert_states_equal(state_of(a), state_of(b), "threads changed mid-run")


# ---------------------------------------------------------------- rollout = steps


def test_rollout_equals_steps_with_trajectories_and_out():
    steps = 150
    inputs = sweep_inputs(steps)
    refs = np.stack([kw["refs"] for kw in inputs], axis=1)
    q = np.stack([kw["q"] for kw in inputs], axis=1)
    qd = np.stack([kw["qd"] for kw in inputs], axis=1)
    ext = np.stack([kw["tau_ext"] for kw in inputs], axis=1)
    a = asr.Batch(sweep_joints(), N_SWEEP)
    stepped = run_steps(a, [dict(kw, tau_ff=None) for kw in inputs])
    b = asr.Batch(sweep_joints(), N_SWEEP)
    record = asr.FIELDS
    out = np.full((len(record), N_SWEEP, steps, len(SWEEP_JOINTS)), np.nan)
    res = b.rollout(steps, DT, refs, q, qd, tau_ext=ext, record=record, out=out)
    assert set(res) == set(record)
    for r, f in enumerate(record):
        stepped_f = np.moveaxis(stepped[f], 0, 1)  # (N, steps, J)
        assert np.shares_memory(res[f], out), f"{f} is not a view into out"
        assert np.array_equal(out[r], stepped_f), f"out[{r}] ({f})"
        assert np.array_equal(res[f], stepped_f), f
    assert not np.isnan(out).any()
    assert b.step_count == a.step_count == steps
    assert_states_equal(state_of(a), state_of(b), "final state")


def test_rollout_with_held_inputs_equals_steps():
    steps = 120
    n = N_SWEEP
    refs = sweep_inputs(1)[0]["refs"]
    q = np.linspace(-0.2, 0.2, n * len(SWEEP_JOINTS)).reshape(n, -1)
    a = asr.Batch(sweep_joints(), n)
    for _ in range(steps):
        a.step(q, 0.0, refs, DT, tau_ext=0.02)
    b = asr.Batch(sweep_joints(), n)
    res = b.rollout(steps, DT, refs, q, 0.0, tau_ext=0.02, record=("tau_joint", "th1"))
    assert res["tau_joint"].shape == (n, steps, len(SWEEP_JOINTS))
    assert np.array_equal(res["tau_joint"][:, -1], a.tau_joint)
    assert_states_equal(state_of(a), state_of(b), "held inputs")


def test_rollout_q_per_step_qd_held_equals_steps():
    """q given per step with qd held (each input has its own time stride)."""
    steps = 80
    inputs = sweep_inputs(steps)
    q = np.stack([kw["q"] for kw in inputs], axis=1)
    refs = np.stack([kw["refs"] for kw in inputs], axis=1)
    a = asr.Batch(sweep_joints(), N_SWEEP)
    for k in range(steps):
        a.step(q[:, k], 0.1, refs[:, k], DT)
    b = asr.Batch(sweep_joints(), N_SWEEP)
    b.rollout(steps, DT, refs, q, 0.1, record=())
    assert_states_equal(state_of(a), state_of(b), "q per step, qd held")


def test_consecutive_rollouts_equal_one_rollout():
    steps = 60
    inputs = sweep_inputs(steps)
    refs = np.stack([kw["refs"] for kw in inputs], axis=1)
    q = np.stack([kw["q"] for kw in inputs], axis=1)
    qd = np.stack([kw["qd"] for kw in inputs], axis=1)
    a = asr.Batch(sweep_joints(), N_SWEEP)
    ra = a.rollout(steps, DT, refs, q, qd)
    b = asr.Batch(sweep_joints(), N_SWEEP)
    h = steps // 2
    r1 = b.rollout(h, DT, refs[:, :h], q[:, :h], qd[:, :h])
    r2 = b.rollout(steps - h, DT, refs[:, h:], q[:, h:], qd[:, h:])
    assert np.array_equal(
        ra["tau_joint"], np.concatenate([r1["tau_joint"], r2["tau_joint"]], axis=1)
    )
    assert b.step_count == steps
    assert_states_equal(state_of(a), state_of(b), "split rollout")


# ---------------------------------------------------------------- state views


def test_state_fields_are_zero_copy_read_only_views():
    b = asr.Batch([asr.Joint("sea", 5), asr.Joint("qbmove_advanced", 6)], 3)
    th1 = b.th1
    assert th1.shape == (3, 2)
    assert np.shares_memory(th1, b.field("th1"))
    before = th1.copy()
    tau = b.step(0.1, 0.0, [[[0.5, 0.0], [0.3, 0.4]]], DT)
    # same memory after the step, and the values seen through the old view have moved
    assert np.shares_memory(b.th1, th1)
    assert np.shares_memory(b.field("th1"), th1)
    assert not np.array_equal(th1, before)
    assert np.array_equal(th1, b.field("th1"))
    # the returned torques are the tau_joint field itself
    assert np.shares_memory(tau, b.tau_joint)
    assert np.array_equal(tau, b.field("tau_joint"))
    assert not th1.flags.writeable
    with pytest.raises(ValueError):
        th1[0, 0] = 1.0
    with pytest.raises(ValueError):
        b.field("tau_joint")[...] = 0.0
    with pytest.raises(ValueError):
        tau[1, 1] = 3.0
    with pytest.raises(ValueError):
        b.status[0] = 5
    # different fields are different memory
    assert not np.shares_memory(b.th1, b.th2)
    b.step(0.1, 0.0, [[[0.5, 0.0], [0.3, 0.4]]], DT)
    assert np.array_equal(th1, b.field("th1"))
