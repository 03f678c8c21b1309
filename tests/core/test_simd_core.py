"""The lane-parallel actuator step (csrc/core/joint_kernel.h on csrc/core/lanes.h,
docs/integration.md "Lanes"), built per instruction set (baseline, AVX2, AVX-512).

A built-in model runs its lane formula, ASR_LANES instances per vector; a user model's callback
is called lane by lane (the scalar path). Each lane performs the IEEE operations of the scalar
formula in the same order, so results must be bit-identical whatever the path, the lane an
instance lands in, the batch size and the thread count. The scalar path is reached here by
registering a built-in model's own C callbacks as a user model (its "twin"): the batch then
calls them one instance at a time.
"""

import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import asr
from asr.core.ffi import lib
from asr.core.models import get_model
from tests.conftest import IN_CI
from tests.support.paths import ROOT  # noqa: E402
from tests.support.simd import COMPLIANT, DT, inputs, run, varied_batch  # noqa: E402


@pytest.fixture(scope="module")
def twins():
    """name -> the name of a user model with the built-in's C callbacks, parameters, defaults."""
    names = {}
    for name in COMPLIANT:
        model = get_model(name)
        spec = model.spec
        twin = f"{name}_scalar_twin"
        asr.register_model(
            twin,
            model.cdef.elastic,
            model.cdef.refmap,
            params=spec.params,
            nmotor=spec.nmotor,
            kinematic_th2=spec.kinematic_th2,
            defaults={p.name: p.default for p in spec.common},
            preset=spec.preset,
        )
        names[name] = twin
    yield names
    for twin in names.values():
        asr.unregister_model(twin)


def assert_bits_equal(a, b, what):
    for f in asr.FIELDS:
        assert np.array_equal(a[f], b[f], equal_nan=True), f"{what}: field {f} differs"


@pytest.mark.parametrize("mode", range(7))
@pytest.mark.parametrize("name", COMPLIANT)
def test_lane_path_equals_the_scalar_callbacks_bit_for_bit(twins, name, mode):
    """Every built-in model and mode, 9 instances (two full vectors and one lane): the lane
    formula and the model's own callbacks called per instance give the same bits."""
    n = 9
    lanes, st_lanes = run(varied_batch(name, mode, n), name, mode, n)
    scalar, st_scalar = run(varied_batch(twins[name], mode, n), name, mode, n)
    assert np.array_equal(st_lanes, st_scalar)
    assert np.all(st_lanes == 0), st_lanes
    assert_bits_equal(lanes, scalar, f"{name} mode {mode}")
    # the run exercises the model: torques move, and differ between instances
    assert np.ptp(lanes["tau_joint"]) > 0 and not np.array_equal(
        lanes["tau_joint"][0], lanes["tau_joint"][1]
    )


@pytest.mark.parametrize("scheme,dt", [("trapezoid", 1e-3), ("euler", 2.5e-3)])
def test_sub_steps_and_schemes_equal_the_scalar_callbacks(twins, scheme, dt):
    """Several motor sub-steps per step (the model re-evaluated inside the step) and the
    trapezoidal scheme take the same bits on both paths."""
    outs = []
    for name in ("qbmove_advanced", twins["qbmove_advanced"]):
        b = varied_batch(name, 6, 5)
        b.motor_scheme = scheme
        q, qd, refs, ext = inputs("qbmove_advanced", 6, 5, 200)
        b.reset(q[:, 0], refs[:, 0])
        outs.append(b.rollout(200, dt, refs, q, qd, tau_ext=ext, record=asr.FIELDS))
    assert_bits_equal(outs[0], outs[1], f"{scheme}, dt {dt}")


@pytest.mark.parametrize("name", ["qbmove_advanced", "awas2", "qbmove"])
def test_an_instance_gives_the_same_bits_in_any_lane_and_batch_size(name):
    """Instance k of a 16-instance batch against batches of 1, 3, 7 and 9 instances starting at
    offsets 0-3 (so k lands in other lanes and in partly filled vectors)."""
    mode = 6
    master, _ = run(varied_batch(name, mode, 16), name, mode, 16)
    for n in (1, 3, 7, 9):
        for first in (0, 1, 2, 3):
            out, st = run(varied_batch(name, mode, n, first=first), name, mode, n, first=first)
            assert np.all(st == 0)
            part = {f: master[f][first : first + n] for f in asr.FIELDS}
            assert_bits_equal(out, part, f"{name}: n {n}, first {first}")


def test_large_odd_batch_on_one_two_and_three_threads():
    """1001 instances (250 vectors and one lane) on 1, 2 and 3 threads: the same bits, and the
    first nine equal a batch of nine."""
    name, mode, n = "qbmove_advanced", 6, 1001
    runs = [
        run(varied_batch(name, mode, n, threads=k), name, mode, n, steps=60)[0] for k in (1, 2, 3)
    ]
    for k in (1, 2):
        assert_bits_equal(runs[0], runs[k], f"threads {k + 1}")
    nine, _ = run(varied_batch(name, mode, 9), name, mode, 9, steps=60)
    assert_bits_equal({f: runs[0][f][:9] for f in asr.FIELDS}, nine, "first nine")


def test_step_equals_rollout_bit_for_bit():
    """Batch.step (loads and stores the records every step) and Batch.rollout (keeps a vector's
    state in its lanes for the whole run) give the same bits."""
    name, mode, n = "bavs", 6, 7
    q, qd, refs, ext = inputs(name, mode, n, 50)
    roll, _ = run(varied_batch(name, mode, n), name, mode, n, steps=50)
    b = varied_batch(name, mode, n)
    b.reset(q[:, 0], refs[:, 0])
    for t in range(50):
        b.step(q[:, t], qd[:, t], refs[:, t], DT, tau_ext=ext[:, t])
        for f in asr.FIELDS:
            assert np.array_equal(b.field(f), roll[f][:, t]), f"step {t}: field {f}"


def test_a_frozen_instance_leaves_its_lane_neighbours_unchanged():
    """Instance 2 blows up (its link speed past link_vel_max) at step 40: it freezes with zero
    torque, and the other instances of its vector give the bits of a run without the blow-up."""
    name, mode, n = "qbmove_advanced", 6, 6
    q, qd, refs, ext = inputs(name, mode, n, 80)
    bad_qd = qd.copy()
    bad_qd[2, 40:] = 2e4  # past link_vel_max (1e4 rad/s by default)
    out = {}
    for label, v in (("clean", qd), ("blow-up", bad_qd)):
        b = varied_batch(name, mode, n)
        b.reset(q[:, 0], refs[:, 0])
        out[label] = b.rollout(80, DT, refs, q, v, tau_ext=ext, record=asr.FIELDS, on_error="flag")
        if label == "blow-up":
            assert b.status[2] == lib.ASR_ERR_DIVERGED
            assert np.all(b.status[[0, 1, 3, 4, 5]] == 0)
    others = [0, 1, 3, 4, 5]
    assert_bits_equal(
        {f: out["clean"][f][others] for f in asr.FIELDS},
        {f: out["blow-up"][f][others] for f in asr.FIELDS},
        "neighbours",
    )
    assert np.all(out["blow-up"]["tau_joint"][2, 40:] == 0.0)
    assert np.array_equal(out["blow-up"]["tau_joint"][2, :40], out["clean"]["tau_joint"][2, :40])


# ------------------------------------------------------------------ instruction sets

KERNEL_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import asr
from tests.support import simd as T
arrays = {}
for name in T.COMPLIANT:
    for mode in range(7):
        b = T.varied_batch(name, mode, 9)
        out, status = T.run(b, name, mode, 9, steps=120)
        arrays.update({f"{name}/{mode}/{f}": out[f] for f in asr.FIELDS})
        arrays[f"{name}/{mode}/status"] = status
arrays["simd"] = np.array(b.simd)
np.savez(sys.argv[2], **arrays)
"""


def cpu_kernels():
    """The step's instruction sets this CPU runs, widest last (from /proc/cpuinfo's flags)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next(line for line in f if line.startswith("flags")).split())
    except (OSError, StopIteration):
        flags = set()
    kernels = ["baseline"]
    if "avx2" in flags:
        kernels.append("avx2")
        if {"avx512f", "avx512vl", "avx512dq"} <= flags:
            kernels.append("avx512")
    return kernels


@pytest.mark.slow
def test_every_instruction_set_gives_the_same_bits(tmp_path):
    """The step built for the baseline, AVX2 and AVX-512 (blends, min/max clamps, mask tests),
    each chosen through ASR_SIMD in a fresh process: every model and mode, 9 instances with
    differing controllers, every state field and status, bit for bit; Batch.simd names the
    kernel that ran (the cap, or the widest below it this CPU runs)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        why = f"the step is built for the baseline only on {platform.machine()} (not x86-64)"
        if IN_CI:  # the CI machines are x86-64 with AVX2: the kernels must be compared there
            pytest.fail(f"{why}: CI must run on x86-64")
        pytest.skip(why)
    here = str(ROOT)  # the repository, for the package tests
    available = cpu_kernels()
    assert len(available) >= 2, "no AVX2 on this x86-64 CPU: only one kernel could be compared"
    results = {}
    for cap in asr.core.batch.SIMD_KERNELS:
        path = tmp_path / f"{cap}.npz"
        env = dict(os.environ, ASR_SIMD=cap)
        subprocess.run(
            [sys.executable, "-c", KERNEL_SCRIPT, here, str(path)], env=env, check=True, timeout=300
        )
        with np.load(path) as z:
            results[cap] = {k: z[k] for k in z.files}
        expected = [
            k
            for k in available
            if asr.core.batch.SIMD_KERNELS.index(k) <= asr.core.batch.SIMD_KERNELS.index(cap)
        ][-1]
        assert str(results[cap].pop("simd")) == expected, cap
    assert asr.Batch("sea", 1).simd == available[-1]  # uncapped: the widest
    base = results["baseline"]
    for cap in asr.core.batch.SIMD_KERNELS[1:]:
        for key, value in base.items():
            assert np.array_equal(results[cap][key], value, equal_nan=True), f"{cap}: {key}"
    assert np.ptp(base["qbmove_advanced/6/tau_joint"]) > 0


def test_an_unknown_simd_cap_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("ASR_SIMD", "avx3")
    with pytest.raises(ValueError, match=r"ASR_SIMD='avx3'.*baseline, avx2, avx512"):
        asr.Batch("sea", 2)
    monkeypatch.setenv("ASR_SIMD", "avx2")
    assert asr.Batch("sea", 2).simd in ("baseline", "avx2")
