"""asr.Sim composes a Batch, a link engine and any asr.sim.Controller, knowing none by name: the
walk of `refs` through Sim.rollout stays in two rooms (asr.sim hands it to asr.core, which
checks it and runs the C rollout in one call), the controller's and the engine's Python hooks
run per rollout, never per step, a controller other than interaction control plugs in through
the protocol, and nothing outside asr.core touches the batch's C handle."""

import contextlib
import inspect
import re
import sys

import numpy as np
import pytest

import asr
from asr.core.ffi import ffi
from asr.engines.base import LinkEngine
from asr.engines.mujoco import Engine as MujocoEngine
from tests.support.paths import ROOT
from tests.support.source import code_names, imported_modules

# asr.common holds the house's shared helpers (validation, the serialising lock) that every
# room uses; it is not a room of its own
HELPERS = "common"


def room(module):
    """The subpackage of an asr module (asr.sim.simulation -> "sim"), None outside asr."""
    parts = module.split(".")
    return parts[1] if parts[0] == "asr" and len(parts) > 1 else None


def _touches(value, refs):
    if value is refs:
        return True
    if isinstance(value, np.ndarray) and isinstance(refs, np.ndarray):
        return np.may_share_memory(value, refs)
    if isinstance(value, tuple):
        return any(_touches(v, refs) for v in value)
    return False


def trace(call, refs):
    """Run call() under a profiler; returns [(module, function, touches refs)] of every asr
    Python function called, in call order (a function touches refs when one of its arguments
    is refs, a view of it or a tuple holding one)."""
    calls = []

    def profile(frame, event, arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if room(module) is None:
            return
        args = frame.f_code.co_varnames[: frame.f_code.co_argcount + frame.f_code.co_kwonlyargcount]
        extra = frame.f_code.co_flags & 0x04 and frame.f_locals.get("args", ())
        values = [frame.f_locals.get(a) for a in args] + list(extra or ())
        calls.append((module, frame.f_code.co_name, any(_touches(v, refs) for v in values)))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return calls


def walk(calls):
    """The rooms the refs pass through in order, repeats and the shared helpers left out."""
    rooms = []
    for module, _, touched in calls:
        r = room(module)
        if touched and r != HELPERS and (not rooms or rooms[-1] != r):
            rooms.append(r)
    return rooms


def test_the_walk_of_refs_through_a_rollout_stays_in_sim_and_core():
    sim = asr.Sim("pendulum_1dof", 2)
    refs = np.zeros((2, 50, 1, 2)) + [0.2, 0.1]
    calls = trace(lambda: sim.rollout(50, refs, tau_ext=np.zeros((2, 1))), refs)
    assert walk(calls) == ["sim", "core"], [c for c in calls if c[2]]
    touched = {m for m, _, t in calls if t}
    assert all(room(m) in ("sim", "core", HELPERS) for m in touched), touched
    # one C rollout: the refs are checked once (not by the Sim and again by the batch)
    assert [f for m, f, _ in calls if f == "check_refs"] == ["check_refs"]


def _controlled(n=2):
    ctl = asr.Admittance((1, 1, 1), (900, 900, 900), (1300, 1300, 1300))
    return asr.Sim("ur10", n, controller=ctl)


@pytest.mark.parametrize("steps", [5, 60])
def test_a_controlled_rollout_calls_only_sim_core_and_the_parts_own_hooks(steps):
    """The controller's and the engine's Python hooks run once per rollout, whatever its length;
    the rest of the call is asr.sim and asr.core."""
    sim = _controlled()
    refs = np.zeros((2, 6, 2))
    sim.rollout(1, refs)  # the engine's one-time set-up of its warning watch
    wrench = np.zeros((2, steps, 6))
    calls = trace(lambda: sim.rollout(steps, refs, wrench_ext=wrench), refs)
    assert walk(calls) == ["sim", "core"]
    outside = sorted({(m, f) for m, f, _ in calls if room(m) not in ("sim", "core", HELPERS)})
    rooms = {room(m) for m, _ in outside}
    assert rooms <= {"controllers", "engines"}, outside
    hooks = {f for m, f in outside if m == "asr.controllers.bound"}
    assert {"check_inputs", "hooks", "results"} <= hooks
    assert {f for m, f in outside if m == "asr.engines.mujoco"} <= {"run_start", "check_run"}
    per_rollout = len([c for c in calls if room(c[0]) in ("controllers", "engines")])
    assert per_rollout < 40, per_rollout  # the same for 5 and 60 steps (see below)
    longer = np.zeros((2, steps * 3, 6))
    again = trace(lambda: sim.rollout(steps * 3, refs, wrench_ext=longer), refs)
    assert per_rollout == len([c for c in again if room(c[0]) in ("controllers", "engines")])


class NullController:
    """A controller that is not interaction control: C hooks that do nothing, one record field
    (zeros it writes itself in Python, to show the layout) and one input."""

    record = {"nothing": (2, "m")}
    inputs = ("nudge",)

    def __init__(self):
        self.bound_to, self.resets, self.seen = None, [], []

    def bind(self, sim, engine):
        self.bound_to = (sim, engine)
        return self

    def reset(self, instances):
        self.resets.append(None if instances is None else list(instances))

    def check_inputs(self, steps, inputs):
        if "nudge" not in inputs:
            return {}
        return {"nudge": (np.broadcast_to(np.asarray(inputs["nudge"], float), (2, 1)).copy(), 0)}

    @contextlib.contextmanager
    def hooks(self, inputs, record):
        self.seen.append((sorted(inputs), record.shape, record.flags.c_contiguous))
        record[...] = 0.0
        yield ffi.new("asr_controller*")  # every hook NULL: the loop calls none

    def results(self, record):
        return {"nothing": record.copy()}


def test_sim_takes_any_controller_satisfying_the_protocol():
    ctl = NullController()
    assert isinstance(ctl, asr.sim.Controller)
    sim = asr.Sim("pendulum_1dof", 2, controller=ctl)
    plain = asr.Sim("pendulum_1dof", 2)
    assert ctl.bound_to[0] is sim and isinstance(ctl.bound_to[1], LinkEngine)
    assert sim.controller is ctl and ctl.resets == [None]
    refs = np.array([[0.3, 0.1]])
    out = sim.rollout(30, refs, nudge=1.0)
    want = plain.rollout(30, refs)
    for f in want:
        np.testing.assert_array_equal(out[f], want[f])
    assert out["nothing"].shape == (2, 30, 2) and not out["nothing"].any()
    assert ctl.seen == [(["nudge"], (2, 30, 2), True)]
    # a callable refs runs one C call per window, each with its own contiguous record
    sim.rollout(10, lambda s, t: np.zeros((2, 1, 2)) + [0.3, 0.1], every=4)
    assert [s[1] for s in ctl.seen[1:]] == [(2, 4, 2), (2, 4, 2), (2, 2, 2)]
    sim.reset(instances=[1])
    assert ctl.resets == [None, [1]]
    with pytest.raises(ValueError, match=r"wrench_ext: needs a controller .*inputs: nudge"):
        sim.rollout(1, refs, wrench_ext=np.zeros(6))
    with pytest.raises(TypeError, match="controller: expected an asr.sim.Controller.*int"):
        asr.Sim("pendulum_1dof", controller=3)


def test_a_rollout_without_a_controller_has_no_controller_record():
    for method in (asr.Sim.rollout, asr.Sim.step):
        assert "wrench_ext" not in inspect.signature(method).parameters
    sim = asr.Sim("ur10", 1)
    out = sim.rollout(3, np.zeros((6, 2)), record=("q",))
    assert set(out) == {"q"}
    assert set(_controlled(1).rollout(3, record=("q",))) == {"q"} | set(
        asr.controllers.interaction.RECORD
    )


def test_sim_knows_no_controller_and_engines_know_no_interaction():
    for path in sorted((ROOT / "asr" / "sim").glob("*.py")):
        assert not {m for m in imported_modules(path) if m.startswith("asr.controllers")}, path
        named = code_names(path)
        for name in ("Admittance", "DirectForce", "Interaction", "wrench_ext", "split_record"):
            assert name not in named, (path, name)
        assert not {n for n in named if "interaction" in n.lower()}, path
    for cls in (LinkEngine, MujocoEngine):
        for name in ("interaction", "check_interaction", "sensors_at_rest"):
            assert not hasattr(cls, name), (cls, name)


def test_nothing_outside_core_touches_the_c_handle():
    pattern = re.compile(r"\._b\b|_rollout_engine|_c_hooks")
    found = []
    for top in ("asr", "dashboard"):
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith("asr/core/"):
                continue
            for k, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{rel}:{k}: {line.strip()}")
    assert not found, found
