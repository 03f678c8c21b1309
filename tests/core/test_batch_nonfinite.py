"""The batch: non-finite states (from the core's springs, controllers or Python user models)
freeze exactly the instance concerned, and the others match their single runs bit for bit."""

import contextlib
import uuid

import numpy as np
import pytest

import asr
from asr.core.ffi import lib
from tests.support.batch import DT, run_steps

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
