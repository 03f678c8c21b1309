"""One Batch or Sim shared by many Python threads: calls are serialised by the object's lock, so
nothing crashes and every result is one that some serial order of the same calls gives.

Before the lock, two threads in Sim.rollout crashed the interpreter (exit 139) in every try, and
Batch.set_param reallocated a parameter array under the worker threads of a running rollout.
About 12 s in all (bounded by time; a busy host runs on until the counts checked are reached)."""

import collections
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import asr
from tests.support.paths import SUPPORT  # noqa: E402

HAMMER = SUPPORT / "thread_hammer.py"
SECONDS = 3.0  # per timed test
N = 4


@pytest.mark.parametrize("kind", ["sim", "batch"])
@pytest.mark.slow
def test_threads_hammering_one_object_neither_crash_nor_raise(kind):
    """Six threads call rollout, step, set_param (shared <-> per instance), reset, set_mode,
    threads and reads on one object, in a child process so that a crash fails this test."""
    proc = subprocess.run(
        [sys.executable, str(HAMMER), kind, str(SECONDS), "6"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, (
        f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    )
    ops = int(proc.stdout.split()[1])
    assert ops > 50, proc.stdout


def _until(deadline, fn, enough=lambda: True):
    """Call fn until `deadline` has passed and enough() holds: the counts the test needs decide
    when it has run enough, not the wall clock alone (a busy shared host runs fewer calls in the
    window), within a generous 60 s more."""

    def run():
        while time.monotonic() < deadline or (not enough() and time.monotonic() < deadline + 60):
            fn()

    return run


def _run_threads(targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _batch():
    joints = [asr.Joint("qbmove_advanced", 6), asr.Joint("sea", 5)]
    return asr.Batch(joints, 2500, threads=2)


@pytest.mark.slow
def test_a_batch_rollout_sees_one_parameter_value_while_another_thread_switches_it():
    """kp switches between 60 (one shared value) and 90 (per-instance array) on one thread while
    others run reset + rollout units: each unit's record equals the serial rollout with kp = 60
    or with kp = 90 throughout, bit for bit, never a mix."""
    b = _batch()
    n, nj = b.n_instances, b.n_joints
    q = np.linspace(-0.4, 0.4, n * nj).reshape(n, nj)
    refs = np.zeros((n, nj, 2))
    refs[:, 0] = (0.5, 0.3)
    refs[:, 1, 0] = -0.2

    def unit(batch):
        batch.reset(0.0, refs)
        return batch.rollout(60, 1e-3, refs, q=q, record=("tau_joint", "th1"))["tau_joint"]

    serial = {}
    for kp in (60.0, 90.0):
        ref_batch = _batch()
        ref_batch.set_param(0, "kp", kp)
        serial[kp] = unit(ref_batch)
    assert not np.array_equal(serial[60.0], serial[90.0])

    deadline = time.monotonic() + SECONDS
    seen = collections.Counter()

    def switch():
        b.set_param(0, "kp", 60.0)
        b.set_param(0, "kp", np.full(n, 90.0))

    def rollouts():
        with b.lock:
            out = unit(b)
        match = [kp for kp, ref in serial.items() if np.array_equal(out, ref)]
        seen[match[0] if match else "mixed"] += 1

    def enough():
        return seen[60.0] + seen[90.0] > 10

    _run_threads([_until(deadline, switch, enough)] + [_until(deadline, rollouts, enough)] * 2)
    assert seen["mixed"] == 0, seen
    assert seen[60.0] + seen[90.0] > 10, seen


def _sim():
    return asr.Sim("qbmove_arm_2dof", N, threads=2)


def _refs(sim, seed):
    rng = np.random.default_rng(seed)
    refs = np.zeros((N, sim.n_joints, 2))
    refs[..., 0] = rng.uniform(-0.6, 0.6, (N, sim.n_joints))
    refs[..., 1] = rng.uniform(0.1, 0.6, (N, sim.n_joints))
    return refs


@pytest.mark.slow
def test_sim_units_from_threads_equal_serial_ones():
    """Four threads each run their own reset + rollout units (own start angles and references)
    on one Sim, one more switches the worker thread count and a stiffness parameter between a
    shared value and a per-instance array of the same value: every unit equals the same unit
    run serially on a fresh Sim, bit for bit."""
    sim = _sim()
    cases = [(np.full((N, sim.n_joints), 0.1 * t), _refs(sim, t)) for t in range(4)]

    def unit(s, case):
        q0, refs = case
        s.reset(q0)
        return s.rollout(80, refs, record=("q", "qd", "tau_joint", "th1", "th2"))

    serial = [unit(_sim(), c) for c in cases]
    k1 = sim.batch.get_param(0, "k1")[0]
    deadline = time.monotonic() + SECONDS
    checked, wrong = collections.Counter(), []

    def worker(t):
        def run():
            with sim.lock:
                out = unit(sim, cases[t])
            checked[t] += 1
            if any(not np.array_equal(out[f], serial[t][f]) for f in out):
                wrong.append(t)

        return run

    def meddle():
        sim.batch.threads = 1 if sim.batch.threads == 2 else 2
        sim.batch.set_param(0, "k1", np.full(N, k1))
        sim.batch.set_param(0, "k1", k1)
        _ = sim.q  # the getter, racing the workers

    def enough():
        return all(checked[t] >= 3 for t in range(4))

    _run_threads(
        [_until(deadline, meddle, enough)] + [_until(deadline, worker(t), enough) for t in range(4)]
    )
    assert not wrong, f"units that differ from the serial run: {wrong}"
    assert all(checked[t] >= 3 for t in range(4)), checked


def test_plain_rollouts_from_threads_follow_some_serial_order():
    """Without holding the lock, 3 threads x 8 rollouts of 25 steps with the same references
    continue one trajectory: the 24 records are exactly the 24 chunks of one serial run of
    24 rollouts (in some order), each once."""
    sim, ref_sim = _sim(), _sim()
    refs = _refs(sim, 7)
    chunks = collections.Counter(
        ref_sim.rollout(25, refs, record=("q", "th1"))["q"].tobytes() for _ in range(24)
    )
    got = collections.Counter()
    lock = threading.Lock()

    def worker():
        for _ in range(8):
            out = sim.rollout(25, refs, record=("q", "th1"))["q"].tobytes()
            with lock:
                got[out] += 1

    _run_threads([worker] * 3)
    assert got == chunks
    assert sim.batch.step_count == 24 * 25


def test_the_structure_c_relies_on_is_read_only():
    sim = asr.Sim("pendulum_1dof", 3)
    for name in (
        "datas",
        "models",
        "batch",
        "robot",
        "dt",
        "n_instances",
        "qpos_adr",
        "dof_adr",
        "lock",
    ):
        with pytest.raises(AttributeError):
            setattr(sim, name, getattr(sim, name)[:2] if name in ("datas", "models") else None)
    assert isinstance(sim.datas, tuple) and isinstance(sim.models, tuple)
    with pytest.raises(ValueError, match="read-only"):
        sim.qpos_adr[0] = 5
    for name in ("n_instances", "n_joints", "specs", "lock"):
        with pytest.raises(AttributeError):
            setattr(sim.batch, name, 1)
    out = sim.rollout(5, np.zeros((1, 2)), record="q")  # still intact
    assert out["q"].shape == (3, 5, 1)


def test_set_params_is_all_or_nothing():
    b = asr.Batch([asr.Joint("qbmove_advanced", 6)], 2)
    b.set_params(0, pos_min=0.5, pos_max=1.0)
    before = {p.name: b.get_param(0, p.name) for p in b.specs[0].all_params}
    with pytest.raises(ValueError, match="pos_max"):
        b.set_params(0, kp=78.0, pos_max=-0.5)
    after = {p.name: b.get_param(0, p.name) for p in b.specs[0].all_params}
    assert all(np.array_equal(before[k], after[k]) for k in before)
