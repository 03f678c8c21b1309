"""A Batch or Sim used carelessly keeps its state safe: read-only arrays cannot be made writable
again, frozen instances are not silently run, calls from inside the batch's own running step and
in a child forked mid-call are refused, and wrong argument types are named.

Crash/hang cases run in subprocesses with timeouts (generous: the CI host is shared and busy)."""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import pytest

import asr
from asr.core.errors import SimulationError
from tests.support.paths import TESTS  # noqa: E402

HERE = str(TESTS)
PENDULUM = os.path.join(HERE, "data", "robots", "pendulum")
ROOT = os.path.dirname(HERE)
TIMEOUT_S = 120  # a hang shows as a timeout; the work itself takes about a second


def _flip(arr):
    """Try to make arr writable again; True if NumPy allowed it."""
    try:
        arr.flags.writeable = True
    except ValueError:
        return False
    return True


def test_read_only_arrays_cannot_be_made_writable_again():
    b = asr.Batch(["qbmove", "sea"], 3)
    handed_out = {f"batch.{f}": b.field(f) for f in asr.FIELDS}
    handed_out.update(
        {
            "batch.status": b.status,
            "batch.q[0]": b.q[0],
            "step result": b.step(0.0, 0.0, np.zeros((3, 2, 2)), 1e-3),
        }
    )
    sim = asr.Sim(PENDULUM, 2)
    handed_out.update({"sim.qpos_adr": sim.qpos_adr, "sim.dof_adr": sim.dof_adr})
    ds = asr.datasheet("qbmove", n=11)
    handed_out.update(
        {f"datasheet.{k}": v for k, v in vars(ds).items() if isinstance(v, np.ndarray)}
    )
    flipped = [
        name
        for name, arr in handed_out.items()
        if _flip(arr) or (isinstance(arr.base, np.ndarray) and _flip(arr.base))
    ]
    assert flipped == []
    with pytest.raises(ValueError, match="read-only"):
        sim.qpos_adr[0] = 5
    sim.reset(0.3)  # the addresses it indexes with are its own
    assert np.allclose(sim.q, 0.3)


@pytest.fixture
def python_model():
    """A registered one-motor Python model whose elastic calls hooks["elastic"](q) first."""
    hooks = {}
    name = f"attack_batch_{uuid.uuid4().hex[:8]}"

    def elastic(q, qd, th1, th2, th1d, th2d, k):
        if "elastic" in hooks:
            hooks["elastic"](q)
        return {"tau1": -k * (q - th1), "stiffness": k, "kload1": k}

    asr.register_model(
        name, elastic, nmotor=1, params=[asr.ParamSpec("k", 5.0, 0.0, float("inf"), True, True)]
    )
    yield name, hooks
    asr.unregister_model(name)


def test_frozen_instances_raise_until_reset(python_model):
    name, hooks = python_model
    b = asr.Batch([asr.Joint(name, 5)], 3)
    refs = np.zeros((3, 1, 2))
    hooks["elastic"] = lambda q: 1 / 0 if q > 0.5 else None
    with pytest.raises(ZeroDivisionError):
        b.rollout(3, 1e-3, refs, q=[[0.0], [1.0], [0.0]])
    assert b.status.tolist() == [0, asr.core.ffi.lib.ASR_ERR_CALLBACK, 0]
    del hooks["elastic"]
    for run in (lambda: b.rollout(3, 1e-3, refs), lambda: b.step(0.0, 0.0, refs, 1e-3)):
        with pytest.raises(
            SimulationError,
            match=r"instance 1, joint 0, step 0: a user-defined "
            r"model failed; (rollout|step) refused: instance\(s\) \[1\] .*"
            r"reset\(instances=\.\.\.\) clears",
        ):
            run()
    assert b.step_count == 3  # refused before running
    flagged = b.rollout(2, 1e-3, refs, q=0.2, on_error="flag")["tau_joint"]
    assert np.all(flagged[1] == 0) and np.all(flagged[0] != 0)
    b.reset(instances=[1])
    assert np.all(b.rollout(2, 1e-3, refs, q=0.2)["tau_joint"] != 0)


def test_sim_rollout_with_frozen_instances_raises():
    sim = asr.Sim(PENDULUM, 2)
    refs = np.zeros((2, 1, 2))
    sim.batch.set_param(0, "link_vel_max", 1e-6)  # any motion stops the instance
    with pytest.raises(SimulationError):
        sim.rollout(50, refs)
    frozen = [e["instance"] for e in sim.batch.errors()]
    assert frozen
    with pytest.raises(SimulationError, match=r"Sim.rollout refused: instance\(s\)"):
        sim.rollout(5, refs)
    sim.rollout(5, refs, on_error="flag")


@pytest.mark.parametrize("call", ["reset", "set_param", "step", "rollout", "get_param"])
def test_calls_from_inside_the_running_step_are_refused(python_model, call):
    name, hooks = python_model
    b = asr.Batch([asr.Joint(name, 5)], 1)
    refs = np.zeros((1, 1, 2))
    calls = {
        "reset": lambda: b.reset(0.7),
        "set_param": lambda: b.set_param(0, "k", 50.0),
        "step": lambda: b.step(0.0, 0.0, refs, 1e-3),
        "rollout": lambda: b.rollout(1, 1e-3, refs),
        "get_param": lambda: b.get_param(0, "k"),
    }
    hooks["elastic"] = lambda q: calls[call]()
    with pytest.raises(
        RuntimeError,
        match=rf"Batch\.{call}: refused, called from inside a "
        r"callback .* of this batch's running rollout",
    ):
        b.rollout(2, 1e-3, refs, q=0.3)
    del hooks["elastic"]
    assert b.get_param(0, "k")[0] == 5.0
    b.reset(instances=[0])  # the batch is usable afterwards
    assert b.rollout(2, 1e-3, refs, q=0.3)["tau_joint"][0, 0, 0] == pytest.approx(-5.0 * 0.3)


FORK_SCRIPT = textwrap.dedent("""
    import os, sys, threading, time, uuid
    import numpy as np
    import asr

    inside, forked = threading.Event(), threading.Event()
    def elastic(q, qd, th1, th2, th1d, th2d, k):
        if not inside.is_set():
            inside.set()
            forked.wait()  # hold the rollout (and the batch lock) open across the fork
        return {"tau1": -k * (q - th1), "stiffness": k, "kload1": k}
    name = "fork_" + uuid.uuid4().hex[:8]
    asr.register_model(name, elastic, nmotor=1,
                       params=[asr.ParamSpec("k", 5.0, 0.0, float("inf"), True, True)])
    b = asr.Batch([asr.Joint(name, 5)], 2)
    sea = asr.Batch(["sea"], 2)
    worker = threading.Thread(target=b.rollout, args=(50, 1e-3, np.zeros((2, 1, 2))))
    worker.start()
    inside.wait()
    pid = os.fork()
    if pid == 0:
        try:
            b.rollout(2, 1e-3, np.zeros((2, 1, 2)))
            print("child: busy batch ran", flush=True)
        except RuntimeError as exc:
            print("child: busy batch refused:", exc, flush=True)
        sea.rollout(5, 1e-3, np.zeros((2, 1, 2)))
        new = asr.Batch(["qbmove"], 4000, threads=4)
        new.rollout(20, 1e-3, np.zeros((4000, 1, 2)))
        print("child: idle and new batches ran", flush=True)
        os._exit(0)
    forked.set()
    worker.join()
    _, status = os.waitpid(pid, 0)
    print("parent: child exit", os.waitstatus_to_exitcode(status), "step_count", b.step_count,
          flush=True)
""")


def test_fork_during_a_rollout_in_another_thread_does_not_hang_the_child():
    # its own process group: a hung forked child is killed with it, never left behind
    proc = subprocess.Popen(
        [sys.executable, "-W", "ignore", "-c", FORK_SCRIPT],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the forked child or its parent hung for {TIMEOUT_S} s: {out}{err}")
    assert proc.returncode == 0, out + err
    assert (
        "child: busy batch refused: Batch.rollout: refused, this process was forked while "
        "another thread was inside a call on this batch" in out
    ), out + err
    assert "child: idle and new batches ran" in out
    assert "parent: child exit 0 step_count 50" in out


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda b, s: b.rollout(2, 1e-3, np.zeros((2, 1, 2)), record=5),
            r"record: expected a state field name or a list of them, got int 5; "
            r"valid names: tau_joint",
        ),
        (
            lambda b, s: b.rollout(2, 1e-3, np.zeros((2, 1, 2)), record=None),
            r"record: expected .* got NoneType None",
        ),
        (lambda b, s: s.rollout(2, np.zeros((1, 1, 2)), record=5), r"record: expected"),
        (lambda b, s: pickle.dumps(b), r"a Batch cannot be pickled .* Save what rebuilds it"),
        (lambda b, s: pickle.dumps(s), r"a Sim cannot be pickled: .* Save what rebuilds it"),
        (lambda b, s: asr.Batch(5), r"joints: expected a sequence of asr.Joint"),
        (
            lambda b, s: asr.Batch([asr.Joint("qbmove", 6, 5)]),
            r"joints\[0\].params: expected a mapping \{parameter name: value\}, got int 5",
        ),
        (lambda b, s: asr.Batch([{"model": "qbmove", "params": [1]}]), r"joints\[0\].params"),
        (
            lambda b, s: asr.Sim(PENDULUM, 1, params=5),
            r"params: expected a mapping \(dict\), got int",
        ),
        (lambda b, s: asr.Sim(PENDULUM, 1, params={0: 5}), r"params\[0\]: expected a mapping"),
        (lambda b, s: asr.Sim(PENDULUM, 1, mujoco_params=5), r"mujoco_params: expected a mapping"),
        (
            lambda b, s: asr.Sim(PENDULUM, 1, mujoco_params={"body_mass": 5}),
            r"mujoco_params\['body_mass'\]: expected a mapping",
        ),
        (lambda b, s: s.coupling_limit("a", 0), r"instance: expected an int, got str 'a'"),
    ],
)
def test_wrong_argument_types_are_named(make, message):
    b, s = asr.Batch(["qbmove"], 2), asr.Sim(PENDULUM, 1)
    with pytest.raises(TypeError, match=message):
        make(b, s)


def test_field_with_an_unhashable_name_is_a_value_error():
    with pytest.raises(ValueError, match=r"field: unknown state field \[1\]; valid: tau_joint"):
        asr.Batch(["qbmove"], 1).field([1])
