"""asr.ros.node_core.NodeCore, the middleware-neutral core of the live ROS 1 and ROS 2 nodes,
without ROS: topic sets per mode, held commands, every command range-checked against the
model's declared ranges (a rejected one leaves the state untouched), integer-ns stamps, reset,
the throttled rejection log and the engine argument."""

import math
import os
import shutil

import numpy as np
import pytest

import asr
from asr.ros.node_core import (
    ANGLE_BOUND,
    MOTOR_ANGLE_BOUND,
    TARGETS,
    TORQUE_BOUND,
    NodeCore,
    joint_commands,
    joint_states,
)
from tests.conftest import need_gazebo
from tests.support.paths import TESTS  # noqa: E402

ROBOTS = os.path.join(str(TESTS), "data", "robots")


def one_joint_robot(tmp_path, model, mode, params=""):
    """A 1-DOF robot folder (tests/data/robots/link_1dof's link) with one joint of `model` in
    `mode`: the modes no shipped robot uses (0, 1, 2, 4, 5)."""
    folder = tmp_path / f"{model}_mode{mode}"
    folder.mkdir()
    shutil.copy(os.path.join(ROBOTS, "link_1dof", "link.xml"), folder / "link.xml")
    (folder / "robot.toml").write_text(
        f'name = "r{mode}"\ndescription = "test"\ndefault_variant = "v"\n'
        f'[variants.v]\nmjcf = "link.xml"\n[[variants.v.joints]]\nname = "joint"\n'
        f'model = "{model}"\nmode = {mode}\n' + (f"params = {{ {params} }}\n" if params else "")
    )
    return str(folder)


def test_topic_sets_per_mode():
    """Which topics each joint offers, including [Kamedula2016]'s on a single-motor SEA."""
    models = asr.models()
    qb, sea = models["qbmove_advanced"], models["sea_damped"]
    assert set(joint_commands(qb, 6)) == {
        "equilibrium_position",
        "stiffness_preset",
        "external_torque",
    }
    assert set(joint_commands(qb, 4)) == {
        "motor_1_command",
        "motor_2_command",
        "torque_m1_command",
        "torque_m2_command",
        "external_torque",
    }
    assert joint_commands(qb, 2)["reference_2"] == "ref2"
    assert set(joint_commands(sea, 5)) == {
        "reference_1",
        "link_command",
        "feedforward_torque",
        "external_torque",
    }
    assert set(joint_states(sea, 5)) == {
        "link_state",
        "motor_1_state",
        "torque_el1_state",
        "torque_el2_state",
        "spring_torque",
        "link_torque",
        "motor_torque",
    }
    assert set(joint_states(models["rigid"], 1)) == {"link_state"}
    assert set(joint_commands(models["rigid"], 0)) == {"torque_command", "external_torque"}


def test_held_commands_and_presets():
    """A valid command is held, bad ones are rejected and counted; a SEA's stiffness preset
    sets its spring k; AwAS-II's pivot at or beyond its lever is refused."""
    core = NodeCore("pendulum_1dof", "sea", rate=50)
    assert core.set_command(0, "ref1", 0.3)
    assert not core.set_command(0, "ref1", float("nan"))
    assert not core.set_command(0, "preset", -5.0)
    assert not core.set_command(0, "preset", 0.0)  # (0, hi]: a spring needs some stiffness
    assert core.set_command(0, "preset", 300.0)
    assert not core.set_references(0, [0.1, 0.2], "refs")
    assert core.rejected == 4
    s = core.step_period()
    assert s["ref1"][0] == 0.3 and core.sim.batch.get_param(0, "k")[0] == 300.0
    assert s["stiffness"][0] == 300.0
    awas = NodeCore("pendulum_1dof", "awas2", rate=50)
    L = awas.sim.batch.get_param(0, "L")[0]
    lo, hi, unit = awas.command_range(0, "ref2")
    assert (lo, unit) == (0.0, "m") and hi == min(L, awas.specs[0].preset.hi)
    assert not awas.set_command(0, "ref2", L) and awas.rejected == 1
    assert awas.set_command(0, "ref2", 0.5 * min(L, hi))


def test_out_of_range_commands_leave_the_state_untouched():
    """The cases that wound a link to 900 rad before ranges were checked: a stiffness preset of
    100 rad and an equilibrium of 1e300 rad are refused, the held commands stay as they were,
    and each rejection is logged once, naming the topic, the value and the valid range."""
    core = NodeCore("qbmove_arm_2dof", "horizontal", rate=100)
    lines = []
    core.log = lines.append
    before = core.held()
    assert not core.set_command(0, "preset", 100.0, "/j1/stiffness_preset")
    assert not core.set_command(1, "ref1", 1e300, "/j2/equilibrium_position")
    assert not core.set_command(1, "ref1", 7.0, "/j2/equilibrium_position")  # throttled
    assert not core.set_references(1, [0.3, 0.9], "/reference_2")  # preset hi is 0.8 rad
    assert not core.hold_references([[0.0, 0.2], [ANGLE_BOUND + 0.1, 0.2]], "/step")
    assert not core.set_command(0, "tau_ext", 2 * TORQUE_BOUND, "/j1/external_torque")
    for a, b in zip(before, core.held()):
        assert np.array_equal(a, b)
    assert core.rejected == 6
    assert len(lines) == 5, lines  # two rejections on one topic within a second: one line
    assert "/j1/stiffness_preset = 100.0" in lines[0] and "[0, 0.8] rad" in lines[0]
    assert "1e+300" in lines[1] and f"[{-ANGLE_BOUND:g}, {ANGLE_BOUND:g}] rad" in lines[1]
    assert "joint2 reference_2 = 0.9" in lines[2]
    q = core.step_period()["q"]
    assert np.all(np.abs(q) < 1.0)  # nothing wound up
    # a peer's array may be as long as it likes: its log line names the length, not every value
    assert not core.set_references(0, np.arange(100_000.0), "/reference_1")
    assert "(100000 values)" in lines[-1] and len(lines[-1]) < 400, lines[-1]
    assert core.set_references(1, [0.3, 0.7], "/reference_2")
    assert np.array_equal(core.held()[0][:, 1], [0.3, 0.7])


@pytest.mark.parametrize(
    "model, mode, params, target, expected",
    [
        ("rigid", 0, "", "ref1", (-TORQUE_BOUND, TORQUE_BOUND, "N m")),
        ("rigid", 0, "link_tau_max = 3.0", "ref1", (-3.0, 3.0, "N m")),
        ("rigid", 1, "", "ref1", (-ANGLE_BOUND, ANGLE_BOUND, "rad")),
        ("sea", 2, "", "ref1", (-MOTOR_ANGLE_BOUND, MOTOR_ANGLE_BOUND, "rad")),
        ("sea", 5, "pos_min = -1.0, pos_max = 2.0", "ref1", (-1.0, 2.0, "rad")),
        ("sea", 5, "tau_max = 4.0", "tau_ff", (-4.0, 4.0, "N m")),
        ("sea", 3, "", "preset", (0.0, 1000.0, "N m/rad")),
        ("qbmove_advanced", 2, "", "ref2", (-MOTOR_ANGLE_BOUND, MOTOR_ANGLE_BOUND, "rad")),
        ("qbmove_advanced", 4, "", "ref1", (-6.0, 6.0, "N m")),
        ("qbmove_advanced", 4, "drive = 1", "ref2", (-1.0, 1.0, "(PWM duty)")),
        ("qbmove_advanced", 6, "", "ref2", (0.0, 0.8, "rad")),
        ("qbmove_advanced", 6, "", "tau_ff", (0.0, 0.0, "N m (single-motor joints only)")),
    ],
)
def test_command_range_per_mode(tmp_path, model, mode, params, target, expected):
    """command_range is the model's declared range (parameters included) where it has one,
    else the documented bound; the ends are enforced by set_command."""
    core = NodeCore(one_joint_robot(tmp_path, model, mode, params), rate=100)
    lo, hi, unit = core.command_range(0, target)
    assert (lo, hi, unit) == expected
    lo_open = model == "sea" and target == "preset"
    assert core.set_command(0, target, hi)
    assert core.set_command(0, target, lo) != lo_open
    assert not core.set_command(0, target, hi + 1e-9 * max(1.0, abs(hi)))
    assert not core.set_command(0, target, lo - 1e-9 * max(1.0, abs(lo)))


def test_every_target_has_a_finite_range():
    core = NodeCore("rrbot_sea", rate=100)
    for target in TARGETS:
        lo, hi, _ = core.command_range(0, target)
        assert math.isfinite(lo) and math.isfinite(hi) and lo <= hi, target
    with pytest.raises(ValueError, match="target: got 'ref3'"):
        core.command_range(0, "ref3")


def test_stamps_are_exact_integer_nanoseconds():
    """Simulated time as integer ns: periods * period_steps * round(dt * 1e9), never a float's
    rounding short (pendulum_1dof: dt = 0.1 ms, 50 Hz: 200 steps, 20 000 000 ns)."""
    core = NodeCore("pendulum_1dof", "sea", rate=50)
    assert core.period_steps == 200 and core.period_ns == 20_000_000
    stamps = []
    for _ in range(3):
        core.step_period()
        stamps.append(core.stamp_ns)
    assert stamps == [20_000_000, 40_000_000, 60_000_000]
    assert all(isinstance(s, int) for s in stamps)


def test_reset_restores_the_initial_state_and_commands():
    core = NodeCore("rrbot_sea", rate=100)
    s0 = {f: v.copy() for f, v in core.state().items()}
    k0 = core.sim.batch.get_param(0, "Kt")[0]
    assert core.set_command(0, "ref1", 0.5) and core.set_command(0, "preset", 2 * k0)
    assert core.set_command(0, "tau_ext", 1.0)
    for _ in range(5):
        core.step_period()
    assert core.stamp_ns > 0 and core.sim.batch.get_param(0, "Kt")[0] == 2 * k0
    core.reset()
    assert core.stamp_ns == 0 and core.sim.time == 0.0 and core.last is None
    assert core.sim.batch.get_param(0, "Kt")[0] == k0
    refs, ext, ff = core.held()
    assert np.array_equal(refs, core._initial) and not ext.any() and not ff.any()
    for f, v in core.state().items():
        assert np.array_equal(v, s0[f]), f
    core.reset(q0=[0.4], qd0=[0.0])
    s = core.state()
    assert s["q"][0] == 0.4 and s["qd"][0] == 0.0
    for bad, qd0, words in (
        ([10.0], None, ["q0[0] (joint1) = 10.0", "valid range"]),
        ([0.1, 0.2], None, ["q0: expected 1 values"]),
        ([float("nan")], None, ["q0[0]", "nan"]),
        ([0.1], [0.5], ["qd0: got [0.5] rad/s", "at rest"]),
    ):
        with pytest.raises(ValueError) as err:
            core.reset(q0=bad, qd0=qd0)
        assert all(w in str(err.value) for w in words), str(err.value)
    assert core.state()["q"][0] == 0.4  # a refused reset changes nothing


def test_engine_argument():
    """engine is asr.Sim's: 'gazebo' runs the SDF twin; anything else is named and refused
    before the robot loads."""
    with pytest.raises(ValueError, match="engine: got 'bullet', valid: mujoco, gazebo"):
        NodeCore("pendulum_1dof", engine="bullet")
    need_gazebo()  # fails in CI, skips elsewhere, without the Gazebo engine
    core = NodeCore(os.path.join(ROBOTS, "gz_pendulum"), engine="gazebo", rate=100)
    assert core.sim.engine == "gazebo"
    core.step_period()
    assert core.stamp_ns == 10_000_000 and abs(core.sim.time - 0.01) < 1e-12
