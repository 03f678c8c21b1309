"""asr.warp.WarpBatch beyond the equations (tests/warp/test_kernels.py): reset with a mask (NumPy
and a Warp device array), NaN references and other stops freezing only their instance with the C
core's status, the checks it shares with asr.Batch, and the clear errors of bad arguments.
Warp's CPU device, float64."""

import numpy as np
import pytest

from tests.conftest import require

wp = require("warp")
pytestmark = pytest.mark.slow  # the first run compiles the kernels (about 7 s, then cached)

import asr  # noqa: E402
from asr.core.errors import SimulationError  # noqa: E402
from asr.core.ffi import ffi, lib  # noqa: E402
from asr.warp import WarpBatch  # noqa: E402

N = 6
DT = 2e-3
JOINTS = [asr.Joint("qbmove_advanced", 6), asr.Joint("sea", 5), asr.Joint("awas2", 2)]


def _pair():
    cpu = asr.Batch(JOINTS, N)
    gpu = WarpBatch(JOINTS, N, device="cpu")
    spread = np.linspace(0.8, 1.2, N)
    for b in (cpu, gpu):
        b.set_param(0, "kp", 10.0 * spread)  # per instance: the parameters' (N, J, P) table
        b.set_param(1, "friction", 0.05)
    return cpu, gpu


def _inputs(k):
    t = k * DT
    q = np.tile([0.2 * np.sin(5 * t), -0.1 * t, 0.05], (N, 1))
    qd = np.tile([np.cos(5 * t), -0.1, 0.0], (N, 1))
    refs = np.zeros((N, 3, 2))
    refs[:, 0] = [0.3 * np.sin(3 * t), 0.3]
    refs[:, 1, 0] = 0.2
    refs[:, 2] = [0.1, 0.02]
    return q, qd, refs


def _c_step(cpu, q, qd, refs):
    """One step of the C core without asr.Batch.step's finiteness checks (as an engine
    coupling steps it): NaN inputs reach the core."""
    keep = [np.ascontiguousarray(a, dtype=float) for a in (q, qd, refs)]
    st = lib.asr_batch_step(
        cpu._b, DT, *(ffi.from_buffer("double[]", a) for a in keep), ffi.NULL, ffi.NULL
    )
    return st


def _state(gpu):
    return np.array(gpu.state.numpy())  # a copy: on the CPU device numpy() is a view


def test_reset_with_a_mask_resets_only_those_instances():
    cpu, gpu = _pair()
    for k in range(5):
        q, qd, refs = _inputs(k)
        cpu.step(q, qd, refs, DT)
        gpu.step(q, qd, refs, DT)
    np.testing.assert_array_equal(_state(gpu), cpu._state)
    q0 = np.full((N, 3), 0.1)
    _, _, refs0 = _inputs(0)
    mask = np.array([True, False, True, False, False, False])
    before = _state(gpu)
    cpu.reset(q0, refs0, instances=np.flatnonzero(mask))
    gpu.reset(q0, refs0, mask=mask)
    after = _state(gpu)
    np.testing.assert_array_equal(after, cpu._state)
    np.testing.assert_array_equal(after[~mask], before[~mask])  # the others untouched
    assert np.any(after[mask] != before[mask])
    assert gpu.step_count == cpu.step_count == 5  # a masked reset keeps the step count

    # the same from a mask on the device
    dmask = wp.array(~mask, dtype=wp.bool, device="cpu")
    cpu.reset(q0, refs0, instances=np.flatnonzero(~mask))
    gpu.reset(q0, refs0, mask=dmask)
    np.testing.assert_array_equal(_state(gpu), cpu._state)
    gpu.reset()
    assert gpu.step_count == 0


def test_nan_reference_stops_only_its_instance_as_the_c_core():
    cpu, gpu = _pair()
    for k in range(6):
        q, qd, refs = _inputs(k)
        if k == 3:
            refs[2, 1, 0] = np.nan  # instance 2, joint 1
            qd[4, 0] = 1e5  # instance 4: faster than link_vel_max, diverged
        assert _c_step(cpu, q, qd, refs) != lib.ASR_OK or k != 3
        gpu.step(q, qd, refs, DT, on_error="flag")
    np.testing.assert_array_equal(gpu.status, cpu.status)
    assert gpu.status[2] == lib.ASR_ERR_INPUT and gpu.status[4] == lib.ASR_ERR_DIVERGED
    assert np.count_nonzero(gpu.status) == 2
    assert [(e["instance"], e["joint"], e["step"]) for e in gpu.errors()] == [(2, 1, 3), (4, 0, 3)]
    np.testing.assert_array_equal(_state(gpu), cpu._state)
    tau = gpu.field("tau_joint")
    assert np.all(tau[[2, 4]] == 0.0) and np.all(tau[[0, 1, 3, 5]] != 0.0)
    with pytest.raises(SimulationError, match="instance 2, joint 1, step 3"):
        gpu.step(*_inputs(6), DT)  # on_error='raise' refuses while instances stay frozen


def test_launch_step_on_device_arrays_and_a_refused_preset():
    """launch_step takes device arrays as they are: an AwAS-II pivot outside [0, L), which
    asr.Batch.step refuses before stepping, stops its instance with ASR_ERR_RANGE as the C core
    does."""
    cpu, gpu = _pair()
    q, qd, refs = _inputs(0)
    refs[1, 2, 1] = 0.07  # L is 0.05
    _c_step(cpu, q, qd, refs)
    dev = [wp.array(a, dtype=wp.float64, device="cpu") for a in (q, qd, refs)]
    tau = gpu.launch_step(DT, *dev)
    assert tau.shape == (N, 3) and tau is gpu.launch_step(DT, *dev)  # the same view each call
    assert gpu.status[1] == cpu.status[1] == lib.ASR_ERR_RANGE
    with pytest.raises(ValueError, match="pivot"):
        gpu.step(q, qd, refs, DT)  # the host path checks as asr.Batch.step does


def test_parameters_are_checked_by_the_c_core_and_uploaded():
    cpu, gpu = _pair()
    for b in (cpu, gpu):
        b.set_mode(1, 4)
        b.set_param(1, "k", 100.0)
    q, qd, refs = _inputs(1)
    cpu.step(q, qd, refs, DT)
    gpu.step(q, qd, refs, DT)
    np.testing.assert_array_equal(_state(gpu), cpu._state)
    assert gpu.modes[1] == 4
    with pytest.raises(ValueError, match="mode"):
        gpu.set_mode(0, 9)
    with pytest.raises(ValueError, match="kp"):
        gpu.set_param(0, "kp", -1.0)
    with pytest.raises(ValueError, match="unknown parameter"):
        gpu.set_param(0, "nope", 1.0)
    gpu.set_params(1, k=250.0, max_def=0.5)
    np.testing.assert_array_equal(gpu.get_param(1, "k"), np.full(N, 250.0))


def test_bad_arguments_give_clear_errors():
    with pytest.raises(ValueError, match="dtype: got 'float16', valid: float64, float32"):
        WarpBatch(JOINTS, N, dtype="float16", device="cpu")
    with pytest.raises(ValueError, match="device: unknown Warp device 'cuda:7'.*cpu"):
        WarpBatch(JOINTS, N, device="cuda:7")
    with pytest.raises(ValueError, match="mode"):
        WarpBatch([asr.Joint("rigid", 3)], N, device="cpu")
    _, gpu = _pair()
    q, qd, refs = _inputs(0)
    with pytest.raises(ValueError, match=r"q: shape \(2, 2\) does not broadcast to \(6, 3\)"):
        gpu.step(np.zeros((2, 2)), qd, refs, DT)
    with pytest.raises(ValueError, match="dt"):
        gpu.step(q, qd, refs, -1.0)
    with pytest.raises(ValueError, match="mask: expected a bool array of shape"):
        gpu.reset(mask=np.ones(N + 1, dtype=bool))
    with pytest.raises(ValueError, match="field: unknown state field"):
        gpu.field("torque")


def test_a_user_model_is_refused():
    name = "warp_refused_spring"
    asr.register_model(name, lambda q, qd, th1, th2, th1d, th2d: {"tau1": 0.0, "stiffness": 0.0})
    try:
        with pytest.raises(ValueError, match="user .*not on Warp yet"):
            WarpBatch([asr.Joint(name, 5)], N, device="cpu")
    finally:
        asr.unregister_model(name)


def test_parameters_shared_by_every_instance_take_one_row():
    cpu = asr.Batch(JOINTS, N)
    gpu = WarpBatch(JOINTS, N, device="cpu")
    assert gpu._a.params.shape[0] == 1 and gpu._a.prow_stride == 0
    for k in range(4):
        q, qd, refs = _inputs(k)
        cpu.step(q, qd, refs, DT)
        gpu.step(q, qd, refs, DT)
    np.testing.assert_array_equal(_state(gpu), cpu._state)
    assert np.any(cpu.field("tau_joint") != 0.0)
