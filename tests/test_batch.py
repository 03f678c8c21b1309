"""The batch: N instances equal N single runs bit for bit, thread count and rollout do not change
results, state fields are zero-copy read-only views, non-finite states freeze exactly the
instance concerned, per-instance parameters touch only their instance.

References here are independent runs of the same core (single-instance batches, one thread,
step-by-step), compared with np.array_equal: the design promises bit-identical results."""

import contextlib
import uuid

import numpy as np
import pytest

import asr
from asr._ffi import lib

DT = 2e-3  # two motor sub-steps per step at the default max_substep


# ---------------------------------------------------------------- helpers


def state_of(b):
    """Every state field, copied, as {name: (N, J) array}."""
    return {f: b.field(f).copy() for f in asr.FIELDS}


def assert_states_equal(a, b, what=""):
    for f in asr.FIELDS:
        assert np.array_equal(a[f], b[f]), f"{what}: field {f} differs"


def run_steps(b, inputs, on_error="raise"):
    """Step b through inputs (list of dicts of step keyword arrays); record every field."""
    rec = {f: [] for f in asr.FIELDS}
    for kw in inputs:
        b.step(
            kw["q"],
            kw["qd"],
            kw["refs"],
            DT,
            tau_ext=kw.get("tau_ext"),
            tau_ff=kw.get("tau_ff"),
            on_error=on_error,
        )
        for f in asr.FIELDS:
            rec[f].append(b.field(f).copy())
    return {f: np.stack(v) for f, v in rec.items()}


def slice_inputs(inputs, i):
    """The inputs of instance i as a one-instance batch sees them."""
    return [{k: (None if v is None else v[i : i + 1]) for k, v in kw.items()} for kw in inputs]


# Five joints of five models and three different modes, with per-instance parameter arrays.
N_SWEEP = 5
SWEEP_JOINTS = [
    (
        "qbmove_advanced",
        6,
        {
            "kp": [60.0, 125.0, 200.0, 90.0, 300.0],
            "k1": [0.0019, 0.003, 0.01, 0.0025, 0.006],
            "a2": [8.9992, 7.0, 9.5, 6.0, 8.0],
            "ki": [0.0, 5.0, 0.0, 10.0, 1.0],
            "ctrl_period": [0.0, 1e-3, 0.0, 2e-3, 0.0],
        },
    ),
    (
        "sea",
        5,
        {
            "k": [100.0, 200.0, 300.0, 400.0, 50.0],
            "kd": [1.0, 4.5, 2.0, 3.0, 0.5],
            "friction": [0.0, 0.02, 0.1, 0.05, 0.2],
        },
    ),
    ("bavs", 3, {"ke": [8.71, 6.0, 10.0, 7.5, 9.0], "max_def": [0.27, 0.2, 0.3, 0.25, 0.27]}),
    (
        "qbmove",
        6,
        {"k": [0.022, 0.03, 0.015, 0.022, 0.05], "V_supply": [8.0, 12.0, 8.0, 6.0, 24.0]},
    ),
    ("awas2", 6, {"L": [0.05, 0.06, 0.05, 0.04, 0.05], "Ks": [10.0, 20.0, 5.0, 10.0, 15.0]}),
]
SINGLE_MOTOR = [1, 4]  # sea and awas2 take a feed-forward torque


def sweep_joints(i=None):
    """The joints with per-instance arrays (i None) or instance i's scalars."""
    out = []
    for model, mode, params in SWEEP_JOINTS:
        p = {k: (np.array(v) if i is None else float(v[i])) for k, v in params.items()}
        out.append(asr.Joint(model, mode, p))
    return out


def sweep_inputs(steps, n=N_SWEEP):
    """Time-varying references, a moving prescribed link q(t), qd(t), external and
    feed-forward torques, different for every instance and joint."""
    nj = len(SWEEP_JOINTS)
    i = np.arange(n)[:, None]
    j = np.arange(nj)[None, :]
    inputs = []
    for k in range(steps):
        t = k * DT
        q = 0.3 * np.sin(2.5 * t + 0.7 * i + 0.4 * j)
        qd = 0.75 * np.cos(2.5 * t + 0.7 * i + 0.4 * j)
        refs = np.zeros((n, nj, 2))
        ii = np.arange(n)
        refs[:, 0, 0] = 0.5 * np.sin(2 * np.pi * 1.5 * t + 0.3 * ii)
        refs[:, 0, 1] = 0.2 + 0.1 * ii
        refs[:, 1, 0] = 0.4 * np.sin(2 * np.pi * t + ii)
        refs[:, 2, 0] = 0.3 * np.sin(3 * t + 0.2 * ii)
        refs[:, 2, 1] = 0.05 + 0.03 * ii
        refs[:, 3, 0] = 0.6 * np.sin(2 * t + ii)
        refs[:, 3, 1] = 0.3
        refs[:, 4, 0] = 0.2 * np.sin(4 * t + ii)
        refs[:, 4, 1] = 0.005 + 0.004 * ii + 0.002 * np.sin(t)
        tau_ext = 0.05 * np.cos(t + i + j)
        tau_ff = np.zeros((n, nj))
        tau_ff[:, SINGLE_MOTOR] = 0.1 * np.sin(5 * t + i)
        inputs.append({"q": q, "qd": qd, "refs": refs, "tau_ext": tau_ext, "tau_ff": tau_ff})
    return inputs


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


# ---------------------------------------------------------------- non-finite state detection

BLOW_N = 4
BLOW_I = 2  # the instance whose spring overflows
BLOW_STEP = 71  # exp(1000 * 0.71) overflows; exp(1000 * 0.70) does not
A1 = [8.9992, 8.9992, 1000.0, 8.9992]


def blow_joints(i=None):
    a1 = np.array(A1) if i is None else A1[i]
    return [asr.Joint("sea", 5, {"k": 200.0}), asr.Joint("qbmove_advanced", 3, {"a1": a1})]


def blow_inputs(n, steps=100, rows=None):
    rows = np.arange(n) if rows is None else np.asarray(rows)
    inputs = []
    for k in range(steps):
        q = np.zeros((len(rows), 2))
        q[:, 0] = 0.1 * np.sin(0.05 * k + rows)
        q[:, 1] = 0.01 * k  # link moves away from the motors held at 0: deflection grows
        refs = np.zeros((len(rows), 2, 2))
        refs[:, 0, 0] = 0.2
        inputs.append(
            {"q": q, "qd": np.zeros_like(q), "refs": refs, "tau_ext": np.full((len(rows), 2), 0.1)}
        )
    return inputs


def test_nonfinite_instance_is_frozen_and_others_match_single_runs():
    b = asr.Batch(blow_joints(), BLOW_N)
    inputs = blow_inputs(BLOW_N)
    rec = run_steps(b, inputs, on_error="flag")  # never raises in flag mode
    expected_status = np.zeros(BLOW_N, dtype=int)
    expected_status[BLOW_I] = lib.ASR_ERR_NONFINITE
    assert np.array_equal(b.status, expected_status)
    errs = b.errors()
    assert len(errs) == 1
    e = errs[0]
    assert (e["instance"], e["joint"], e["step"], e["code"]) == (
        BLOW_I,
        1,
        BLOW_STEP,
        lib.ASR_ERR_NONFINITE,
    )
    assert "non-finite" in e["reason"]
    # the frozen instance applies no torque (not even the external one) from then on
    assert np.all(rec["tau_joint"][BLOW_STEP:, BLOW_I] == 0.0)
    assert np.all(rec["tau_link"][BLOW_STEP:, BLOW_I] == 0.0)
    assert np.all(np.isfinite(rec["tau_joint"]))
    # before the overflow it ran normally
    assert np.all(rec["tau_joint"][:BLOW_STEP, BLOW_I, 1] != 0.0)
    # the others kept running and equal their single runs bit for bit
    for i in set(range(BLOW_N)) - {BLOW_I}:
        s = asr.Batch(blow_joints(i), 1)
        rs = run_steps(s, blow_inputs(1, rows=[i]))
        assert np.all(s.status == 0)
        for f in asr.FIELDS:
            assert np.array_equal(rec[f][:, i : i + 1], rs[f]), f"instance {i}, field {f}"
    # check() raises for the frozen instance
    with pytest.raises(asr.SimulationError) as ei:
        b.check()
    assert (ei.value.instance, ei.value.joint, ei.value.step) == (BLOW_I, 1, BLOW_STEP)


def test_nonfinite_raises_simulation_error_once_in_raise_mode():
    b = asr.Batch(blow_joints(), BLOW_N)
    inputs = blow_inputs(BLOW_N)
    for k, kw in enumerate(inputs):
        if k == BLOW_STEP:
            with pytest.raises(asr.SimulationError) as ei:
                b.step(kw["q"], kw["qd"], kw["refs"], DT, tau_ext=kw["tau_ext"])
            err = ei.value
            assert isinstance(err, RuntimeError)
            assert (err.instance, err.joint, err.step) == (BLOW_I, 1, BLOW_STEP)
            assert err.code == lib.ASR_ERR_NONFINITE
            msg = str(err)
            assert f"instance {BLOW_I}" in msg and "joint 1" in msg and f"step {BLOW_STEP}" in msg
        elif k < BLOW_STEP:
            b.step(kw["q"], kw["qd"], kw["refs"], DT, tau_ext=kw["tau_ext"])
        else:
            # after: the instance stays frozen; 'raise' refuses to step until it is reset (it
            # would return zeros for it), 'flag' steps the others
            with pytest.raises(
                asr.SimulationError,
                match=rf"instance {BLOW_I}, joint 1, step "
                rf"{BLOW_STEP}: .* step refused: instance\(s\) \[{BLOW_I}\]",
            ):
                b.step(kw["q"], kw["qd"], kw["refs"], DT, tau_ext=kw["tau_ext"])
            tau = b.step(kw["q"], kw["qd"], kw["refs"], DT, tau_ext=kw["tau_ext"], on_error="flag")
            assert np.all(tau[BLOW_I] == 0.0)
    assert b.step_count == len(inputs)
    # reset clears the status, and the instance runs again
    b.reset()
    assert np.all(b.status == 0)
    assert b.errors() == []
    assert b.step_count == 0
    b.check()
    kw = inputs[10]
    tau = b.step(kw["q"], kw["qd"], kw["refs"], DT, tau_ext=kw["tau_ext"])
    assert np.all(tau[:, 1] != 0.0)
    assert np.all(np.isfinite(tau))


def test_nonfinite_in_rollout_flag_and_raise():
    steps = 100
    inputs = blow_inputs(BLOW_N, steps)
    q = np.stack([kw["q"] for kw in inputs], axis=1)
    refs = np.stack([kw["refs"] for kw in inputs], axis=1)
    b = asr.Batch(blow_joints(), BLOW_N)
    res = b.rollout(steps, DT, refs, q, 0.0, tau_ext=0.1, on_error="flag")
    assert b.errors()[0]["step"] == BLOW_STEP
    assert b.errors()[0]["instance"] == BLOW_I
    assert np.all(res["tau_joint"][BLOW_I, BLOW_STEP:] == 0.0)
    assert np.all(np.isfinite(res["tau_joint"]))
    c = asr.Batch(blow_joints(), BLOW_N)
    out = np.zeros((1, BLOW_N, steps, 2))
    with pytest.raises(asr.SimulationError) as ei:
        c.rollout(steps, DT, refs, q, 0.0, tau_ext=0.1, out=out)
    assert (ei.value.instance, ei.value.joint, ei.value.step) == (BLOW_I, 1, BLOW_STEP)
    # the whole rollout ran and was recorded even though it raised at the end
    assert np.array_equal(out[0], res["tau_joint"])


def test_tiny_inertia_huge_torque_is_frozen_not_propagated():
    """motor_J = 1e-300 (inside (0, inf)) driven by 1e300 N m in mode 4."""
    params = {
        "motor_J": np.array([0.0233, 1e-300]),
        "tau_max": 1e300,
        "motor_D": 0.0,
        "kd": 0.0,
        "friction": 0.0,
        "k": 1e-300,
    }
    b = asr.Batch([asr.Joint("sea", 4, params)], 2)
    for _ in range(3):
        tau = b.step(0.0, 0.0, [[[1.0, 0.0]], [[1e300, 0.0]]], DT, on_error="flag")
        assert np.all(np.isfinite(tau))
    assert b.status[0] == 0
    assert b.status[1] == lib.ASR_ERR_NONFINITE
    assert b.errors()[0]["instance"] == 1 and b.errors()[0]["step"] == 0
    assert np.all(np.isfinite(np.stack([b.field(f)[0] for f in asr.FIELDS])))


def assert_running_instances_finite(b, what):
    """The documented contract (asr.h, ASR_ERR_NONFINITE): NaN or inf anywhere in an instance's
    state freezes it. A running instance therefore has a finite state."""
    running = b.status == 0
    for f in asr.FIELDS:
        v = b.field(f)[running]
        assert np.all(np.isfinite(v)), (
            f"{what}: field {f} of a running instance is non-finite ({v.ravel().tolist()}) "
            "but the instance was not frozen"
        )


def test_nonfinite_controller_output_is_detected():
    """kp = kd = 1e308 (inside [0, inf)) with a 1e10 rad reference: kp*e = inf at once, and
    kd*v = inf once the motor moves, so u = inf - inf = NaN. An infinite or NaN controller
    command held in the state (cmd1) must freeze the instance, not be silently turned into a
    saturated torque."""
    b = asr.Batch(
        [
            asr.Joint(
                "sea",
                5,
                {
                    "kp": np.array([125.0, 1e308]),
                    "kd": np.array([4.5, 1e308]),
                    "tau_max": 1.0,
                    "k": 1e4,
                    "friction": 0.0,
                },
            )
        ],
        2,
    )
    for k in range(6):
        b.step(0.1 * k, 100.0, [[[1e10, 0.0]]], 1e-3, on_error="flag")
        assert_running_instances_finite(b, f"step {k}")
        # the sane instance is unaffected
        assert b.status[0] == 0


def test_feedforward_on_zero_stiffness_is_detected():
    """awas2 at pivot 0 has zero stiffness; the feed-forward th_d += tau_ff / K divides by 0."""
    b = asr.Batch([asr.Joint("awas2", 6)], 2)
    for k in range(3):
        b.step(0.0, 0.0, [[[0.0, 0.02]], [[0.0, 0.0]]], 1e-3, tau_ff=1.0, on_error="flag")
        assert_running_instances_finite(b, f"step {k}")
        assert b.status[0] == 0


def test_huge_finite_inputs_are_not_reported_as_non_finite():
    """q = qd = 1e308 are finite; a rigid joint in mode 0 applies ref1 whatever the link state.
    The instance must not be frozen as 'non-finite input (NaN or inf)' (with the link speed
    bound off: by default such a speed is reported as a divergence)."""
    b = asr.Batch(asr.Joint("rigid", 0, {"link_vel_max": np.inf}), 2)
    q = np.array([[0.0], [1e308]])
    tau = b.step(q, q, [[[1.0, 0.0]], [[1.0, 0.0]]], DT, on_error="flag")
    assert b.errors() == []
    assert np.array_equal(tau, [[1.0], [1.0]])
    assert np.array_equal(b.q, q)


# ---------------------------------------------------------------- Python user models


@contextlib.contextmanager
def python_model(elastic, nmotor=1):
    name = f"test_batch_{uuid.uuid4().hex[:8]}"
    spec = asr.register_model(
        name,
        elastic,
        nmotor=nmotor,
        params=[asr.ParamSpec("k", 5.0, 0.0, float("inf"), True, True)],
    )
    try:
        yield name, spec
    finally:
        asr.unregister_model(name)


def test_python_model_nan_is_detected_not_propagated():
    def elastic(q, qd, th1, th2, th1d, th2d, k):
        tau = float("nan") if q > 0.5 else -k * (q - th1)
        return {"tau1": tau, "stiffness": k, "kload1": k}

    with python_model(elastic) as (name, _):
        b = asr.Batch([asr.Joint(name, 5)], 3)
        q = np.array([[0.0], [0.6], [0.1]])
        with pytest.raises(asr.SimulationError) as ei:
            b.step(q, 0.0, 0.0, DT)
        assert (ei.value.instance, ei.value.joint, ei.value.step) == (1, 0, 0)
        assert ei.value.code == lib.ASR_ERR_NONFINITE
        assert np.array_equal(b.status, [0, lib.ASR_ERR_NONFINITE, 0])
        tau = b.tau_joint
        assert np.all(np.isfinite(tau))
        assert tau[1, 0] == 0.0
        assert tau[2, 0] == pytest.approx(-0.5)  # -k (q - th1), th1 = 0 at reset
        # flag mode: no exception, the instance stays frozen, the others keep going
        tau = b.step(q, 0.0, 0.0, DT, on_error="flag")
        assert np.all(np.isfinite(tau))
        assert b.errors()[0]["instance"] == 1
        assert_running_instances_finite(b, "python model")


@pytest.mark.parametrize("key", ["tau1", "stiffness", "load1", "kload1", "defl1"])
def test_python_model_nan_in_any_output_is_detected(key):
    def elastic(q, qd, th1, th2, th1d, th2d, k):
        out = {
            "tau1": -k * (q - th1),
            "stiffness": k,
            "kload1": k,
            "load1": k * (q - th1),
            "defl1": q - th1,
        }
        out[key] = float("nan")
        return out

    with python_model(elastic) as (name, _):
        b = asr.Batch([asr.Joint(name, 5)], 2)
        for _ in range(2):
            b.step(0.1, 0.0, 0.0, DT, on_error="flag")
        assert_running_instances_finite(b, f"NaN in {key}")
        assert np.all(b.status == lib.ASR_ERR_NONFINITE), f"NaN in {key} not reported"


# ---------------------------------------------------------------- parameters


def test_set_param_per_instance_changes_only_those_instances():
    n = 5
    joints = [asr.Joint("qbmove_advanced", 6), asr.Joint("sea", 5)]
    a, b = asr.Batch(joints, n), asr.Batch(joints, n)
    k1 = b.get_param(0, "k1")
    assert np.array_equal(k1, np.full(n, 0.0019))
    k1[3] = 0.01
    b.set_param(0, "k1", k1)
    assert np.array_equal(b.get_param(0, "k1"), k1)
    assert np.array_equal(b.get_param(1, "k"), np.full(n, 10.0))  # other joint untouched
    inputs = sweep_inputs(80, n)
    for kw in inputs:
        refs = kw["refs"][:, :2].copy()
        for x in (a, b):
            x.step(kw["q"][:, :2], kw["qd"][:, :2], refs, DT)
    sa, sb = state_of(a), state_of(b)
    others = [0, 1, 2, 4]
    for f in asr.FIELDS:
        assert np.array_equal(sa[f][others], sb[f][others]), f
    assert not np.array_equal(sa["tau_joint"][3], sb["tau_joint"][3])


def test_get_param_round_trips():
    n = 4
    b = asr.Batch([asr.Joint("sea", 5), asr.Joint("bavs", 3)], n)
    v = np.array([150.0, 250.0, 1e-3, 1e6])
    b.set_param(0, "k", v)
    got = b.get_param(0, "k")
    assert np.array_equal(got, v)
    got[0] = -5.0  # a copy: changing it changes nothing
    assert np.array_equal(b.get_param(0, "k"), v)
    b.set_param(0, "k", 42.0)  # back to one shared value
    assert np.array_equal(b.get_param(0, "k"), np.full(n, 42.0))
    b.set_param(1, "ke", [1.0, 2.0, 3.0, 4.0])  # lists work
    assert np.array_equal(b.get_param(1, "ke"), [1.0, 2.0, 3.0, 4.0])
    b.set_params(1, a=[0.0, 1e-6, 2e-6, 3e-6], max_def=0.2)
    assert np.array_equal(b.get_param(1, "a"), [0.0, 1e-6, 2e-6, 3e-6])
    assert np.array_equal(b.get_param(1, "max_def"), np.full(n, 0.2))
    b.set_param(0, "drive", np.array([0, 1, 1, 0]))  # integer parameter, per instance
    assert np.array_equal(b.get_param(0, "drive"), [0.0, 1.0, 1.0, 0.0])
    # defaults of every parameter are reported as the model spec says
    spec = asr.models()["bavs"]
    for p in spec.all_params:
        if p.name not in ("ke", "a", "max_def"):
            assert np.array_equal(b.get_param(1, p.name), np.full(n, p.default)), p.name


def test_field_units_and_docs_come_from_one_list():
    from asr.batch import FIELD_DOCS, FIELD_UNITS

    assert set(FIELD_UNITS) == set(FIELD_DOCS) == set(asr.FIELDS)
    assert asr.FIELD_UNITS is FIELD_UNITS and "FIELD_UNITS" in asr.__all__  # exported
    assert FIELD_UNITS["q"] == "rad" and FIELD_UNITS["stiffness"] == "N m/rad"
    assert FIELD_UNITS["clamp_steps"] == ""
    assert all(FIELD_DOCS[f].endswith(f", {u}") for f, u in FIELD_UNITS.items() if u)
    assert asr.FIELDS.index("tau_joint") == 0 and asr.FIELDS.index("q") == 25
    assert len(asr.FIELDS) == 32


def test_parameter_rules_are_the_c_cores():
    """Range and ordering checks live in C (asr_batch_set_param, asr_param_valid); Python's
    ParamSpec.valid calls the same rule and set_param only explains C's refusal: the value, the
    valid range (or the pos_min < pos_max rule with the other bound) and nothing is changed."""
    spec = asr.ParamSpec("x", 1.0, lo=0.0, hi=2.0, lo_open=True, integer=True)
    values = [np.nan, -np.inf, 0.0, 1e-300, 1.0, 1.5, 2.0, 2.0 + 1e-15, np.inf]
    assert spec.valid(values).tolist() == [
        False,
        False,
        False,
        False,
        True,
        False,
        True,
        False,
        False,
    ]
    b = asr.Batch(["sea"], 3)
    b.set_param(0, "pos_min", np.array([-1.0, 0.0, 1.0]))
    with pytest.raises(
        ValueError,
        match=r"joint 0 \(sea\) pos_max: got 0.5, valid range: "
        r"pos_min < pos_max \(the other bound, pos_min, is 1\)",
    ):
        b.set_param(0, "pos_max", np.array([2.0, 2.0, 0.5]))
    with pytest.raises(ValueError, match=r"pos_max: got 0.5, .*pos_min, is -1 to 1 across"):
        b.set_param(0, "pos_max", 0.5)
    with pytest.raises(ValueError, match=r"kp: got -1, valid range \[0, inf\) N m/rad"):
        b.set_param(0, "kp", np.array([1.0, -1.0, 2.0]))
    assert b.get_param(0, "pos_max").tolist() == [np.inf] * 3
