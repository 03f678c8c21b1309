"""The link engine interface (asr/engines): every engine is one module implementing
asr.engines.base.LinkEngine, and asr.Sim sees the same contract on each (reset, link state,
time, the C struct); the engine loop in C knows no controller (the interaction controller comes
in through asr_controller hooks), and asr.sim and asr.controllers.interaction do not import each
other."""

import importlib
import os

import numpy as np
import pytest

import asr
from asr import engines
from asr.core.ffi import ffi, lib
from asr.engines import gz_shim as gazebo
from asr.engines.base import LinkEngine
from tests.conftest import IN_CI
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402
from tests.support.source import imported_modules

ROOT = str(ROOT_PATH)


def available_engines():
    """The engines this machine runs: MuJoCo always, Gazebo when its shim loads (a failure in
    CI when it does not)."""
    names = ["mujoco"]
    if gazebo.available():
        names.append("gazebo")
    elif IN_CI:
        pytest.fail("the Gazebo engine is missing in CI")
    return names


def test_every_engine_is_one_module_with_the_interface():
    for name, module in engines.ENGINES.items():
        cls = importlib.import_module(module).Engine
        assert issubclass(cls, LinkEngine) and cls.name == name
        for method in ("reset", "q", "qd", "time"):
            assert getattr(cls, method) is not getattr(LinkEngine, method), (name, method)
    with pytest.raises(ValueError, match="engine: got 'bullet', valid: 'mujoco', 'gazebo'"):
        asr.Sim("pendulum_1dof", 1, engine="bullet")


@pytest.mark.parametrize("name", available_engines())
def test_the_contract_is_the_same_on_each_engine(name):
    """Reset places the links exactly at rest at time 0, q / qd / time read the engine, a
    rollout advances the time by steps * dt, and an instance reset alone leaves the others."""
    sim = asr.Sim("pendulum_1dof", 3, engine=name)
    sim.reset(q0=[[0.1], [0.2], [0.3]])
    assert sim.engine == name and sim.time == 0.0
    np.testing.assert_array_equal(sim.q, [[0.1], [0.2], [0.3]])
    np.testing.assert_array_equal(sim.qd, np.zeros((3, 1)))
    out = sim.rollout(200, np.zeros((1, 2)))
    np.testing.assert_array_equal(out["q"][:, -1], sim.q)
    assert sim.time == pytest.approx(200 * sim.dt, rel=1e-12)
    moved = sim.q
    sim.reset(q0=[0.5], instances=[1])
    np.testing.assert_array_equal(sim.q, [moved[0], [0.5], moved[2]])
    hint = sim.coupling_limit(0, 0)
    assert ("MJCF timestep" if name == "mujoco" else "SDF's max_step_size") in hint


def test_only_mujoco_offers_interaction_control():
    if "gazebo" not in available_engines():
        pytest.skip("the Gazebo engine is not available (a failure when CI is set)")
    ctl = asr.Admittance((1, 1, 1), (900, 900, 900), (1300, 1300, 1300))
    with pytest.raises(ValueError, match="not available with engine='gazebo'"):
        asr.Sim("pendulum_1dof", 1, engine="gazebo", controller=ctl)


def test_sim_and_interaction_do_not_import_each_other():
    for f in os.listdir(os.path.join(ROOT, "asr", "controllers")):
        if f.endswith(".py"):
            used = imported_modules(os.path.join(ROOT, "asr", "controllers", f))
            assert not {m for m in used if m == "asr.sim" or m.startswith("asr.sim.")}, f
    for f in os.listdir(os.path.join(ROOT, "asr", "engines")):
        if f.endswith(".py"):
            used = imported_modules(os.path.join(ROOT, "asr", "engines", f))
            assert not used & {"asr.sim", "asr.sim.simulation", "asr.controllers.interaction"}, f


def test_the_engine_loop_knows_no_controller():
    """csrc/engine/engine.c runs any controller through asr_controller hooks: no interaction
    names."""
    text = open(os.path.join(ROOT, "csrc", "engine", "engine.c")).read()
    assert "interaction" not in text and "ic_" not in text
    assert lib.asr_ic_controller(ffi.NULL, ffi.new("asr_controller*")) == lib.ASR_ERR_NULL
