"""The ROS 2 node's parameters (asr.ros.ros2_params) with real rclpy over Fast DDS: a peer
without asr (tests/support/ros2_peers/params.py) lists, describes, gets and sets them through
the node's parameter services, as `ros2 param` does; the states that follow are compared here
with an offline asr.Sim rollout with the same parameters."""

import json
import math
import threading

import numpy as np
import pytest

from asr.ros.node_core import NodeCore
from asr.ros.ros2_params import NodeParameters, markdown_table, parameter_table
from asr.sim.simulation import Sim
from tests.support.paths import ROOT
from tests.support.ros2 import NodeProcess, run_peer
from tests.support.ros2_node import RATE, ROBOT, control_period

STEPS = 40
KP = 20.0  # joint1's motor PID gain set at run time (default 125 N m/rad)
PRESET = 0.5  # joint2's stiffness preset set at run time (default 0.2 rad)
SETS = [
    ["joints.joint1.kp", KP],  # in range
    ["joints.joint2.stiffness_preset", PRESET],  # in range
    ["joints.joint1.kd", -1.0],  # below [0, inf): rclpy's descriptor check
    ["joints.joint1.tau_max", 0.0],  # the open end of (0, inf): asr's check in the callback
    ["joints.joint2.stiffness_preset", 0.9],  # above [0, 0.8]
    ["rate", 10.0],  # read-only
    ["joints.joint1.drive", 2],  # integer in [0, 1]
]
ATOMIC = [["joints.joint1.kd", 1.0], ["joints.joint1.motor_J", 0.0]]  # motor_J in (0, inf)
MIRROR = ["joints.joint1.stiffness_preset", 0.7]  # sent on the topic joint1/stiffness_preset


def _rollout(kp):
    """(STEPS, J) link angles at each period's end, joint1's kp and joint2's preset as set."""
    steps, _ = control_period()
    sim = Sim(ROBOT, 1)
    sim.batch.set_param(0, "kp", kp)
    refs = np.array([[0.0, 0.2], [0.0, PRESET]])
    series = np.broadcast_to(refs, (1, STEPS * steps, 2, 2))
    return sim.rollout(STEPS * steps, series, record=("q",))["q"][0, steps - 1 :: steps]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    with NodeProcess(tmp_path_factory.mktemp("ros2"), robot=ROBOT, rate=RATE, lockstep=True) as n:
        params = {"sets": SETS, "atomic": ATOMIC, "steps": STEPS, "mirror": MIRROR}
        out = run_peer("params.py", json.dumps(params))
        out["log"] = n.log()
        assert n.stop() == 0, f"the node did not exit cleanly on SIGINT:\n{n.log()[-2000:]}"
    return out


@pytest.mark.ros2
@pytest.mark.slow
def test_every_parameter_is_listed_and_described_from_asrs_tables(result):
    sim = Sim(ROBOT, 1)
    expected = {"robot", "variant", "engine", "rate", "lockstep"}
    for jn, spec in zip(sim.robot.joint_names, sim.batch.specs):
        expected |= {f"joints.{jn}.{p.name}" for p in spec.all_params}
        expected.add(f"joints.{jn}.stiffness_preset")
    assert expected <= set(result["names"]), expected - set(result["names"])
    d = result["descriptors"]
    for name in ("robot", "variant", "engine", "rate", "lockstep"):
        assert d[name]["read_only"] and "read-only" in d[name]["description"], name
    spec = sim.batch.specs[0]
    for p in spec.all_params:  # each range is the model's ParamSpec range, closed
        got = d[f"joints.joint1.{p.name}"]
        assert not got["read_only"]
        assert got["type"] == (2 if p.integer else 3), p.name  # ParameterType INTEGER / DOUBLE
        assert got["range"] == [p.lo, p.hi], p.name
    assert d["joints.joint2.stiffness_preset"]["range"] == [spec.preset.lo, spec.preset.hi]
    assert d["rate"]["range"] == [0.0, 1.0 / sim.dt]
    before = result["before"]
    assert before["robot"] == ROBOT and before["engine"] == "mujoco" and before["lockstep"] is True
    assert before["rate"] == RATE and before["joints.joint1.kp"] == spec.param("kp").default
    assert before["joints.joint2.stiffness_preset"] == 0.2
    assert math.isinf(before["joints.joint1.vel_max"])


@pytest.mark.ros2
@pytest.mark.slow
def test_sets_in_range_apply_out_of_range_and_read_only_are_refused(result):
    ok = [s[0] for s in result["sets"]]
    assert ok == [True, True, False, False, False, False, False], result["sets"]
    reasons = [s[1] for s in result["sets"]]
    assert "joints.joint1.kd" in reasons[2] and "-1.0" in reasons[2]  # rclpy: Min, Max, value
    assert reasons[3] == "joints.joint1.tau_max: got 0.0, valid range (0, inf) N m"
    assert "joints.joint2.stiffness_preset" in reasons[4] and "0.9" in reasons[4]
    assert "read-only" in reasons[5] and "rate" in reasons[5]
    assert "joints.joint1.drive" in reasons[6] and "2" in reasons[6]
    # atomic: one bad value refuses the whole set
    assert result["atomic"][0] is False
    assert result["atomic"][1] == "joints.joint1.motor_J: got 0.0, valid range (0, inf) kg m^2"
    after, before = result["after"], result["before"]
    assert after["joints.joint1.kp"] == KP and after["joints.joint2.stiffness_preset"] == PRESET
    changed = {n for n in before if before[n] != after[n] and before[n] == before[n]}
    assert changed == {"joints.joint1.kp", "joints.joint2.stiffness_preset"}, changed


@pytest.mark.ros2
@pytest.mark.slow
def test_the_set_parameters_drive_the_simulation(result):
    _, period_ns = control_period()
    assert result["stamps"] == [k * period_ns for k in range(STEPS + 1)]
    # every period held joint2's new preset (joint1 kept its own)
    assert result["held"] == [[0.0, 0.2, 0.0, PRESET]] * STEPS
    q = np.array(result["q"][1:])
    assert np.array_equal(q, _rollout(KP)), "the states differ from asr.Sim with kp = 20"
    default = _rollout(Sim(ROBOT, 1).batch.get_param(0, "kp")[0])
    assert np.max(np.abs(default - q)) > 1e-6, "kp's effect is not observable in this test"


# ------------------------------------------------------------ without ROS 2 (asr.ros.ros2_params)


def test_the_table_takes_every_range_from_the_model_specs():
    core = NodeCore("rrbot_sea")
    table = {e.name: e for e in parameter_table(core, lockstep=False)}
    spec = core.specs[0]
    for p in spec.all_params:
        e = table[f"joints.{core.names[0]}.{p.name}"]
        assert (e.lo, e.hi, e.lo_open, e.hi_open) == (p.lo, p.hi, p.lo_open, p.hi_open)
        assert e.kind == ("integer" if p.integer else "double") and not e.read_only
    # mode 5 takes no stiffness_preset command: its spring (the preset parameter) is a model one
    assert f"joints.{core.names[0]}.stiffness_preset" not in table
    assert "| `joints.joint1.Kt` | double |" in markdown_table(core)


def test_a_refused_set_changes_nothing_and_a_reset_keeps_the_parameters():
    core = NodeCore("rrbot_sea")
    params = NodeParameters(core, threading.Lock(), lockstep=False)
    kt, kp = "joints.joint1.Kt", "joints.joint1.kp"
    batch = core.sim.batch
    with pytest.raises(ValueError, match=r"joints.joint1.tau_max: got 0.0, valid range \(0, inf\)"):
        params.apply({kp: 3.0, "joints.joint1.tau_max": 0.0})
    assert batch.get_param(0, "kp")[0] == core.specs[0].param("kp").default
    pos_min = batch.get_param(0, "pos_min")[0]
    with pytest.raises(
        ValueError, match="joints.joint1.pos_max: got 0.5, valid range pos_min < pos_max"
    ):
        params.apply({"joints.joint1.pos_min": 1.0, "joints.joint1.pos_max": 0.5})
    assert batch.get_param(0, "pos_min")[0] == pos_min  # the set's first value taken back
    with pytest.raises(ValueError, match="rate: got 10.0; read-only"):
        params.apply({"rate": 10.0})
    params.apply({kt: 55.0, kp: 3.0})
    core.reset()  # NodeCore puts a "param" preset back; the node then re-applies the parameter
    params.after_reset()
    assert batch.get_param(0, "Kt")[0] == 55.0 and batch.get_param(0, "kp")[0] == 3.0


def test_a_parameter_that_would_leave_a_held_command_out_of_range_is_refused():
    core = NodeCore("rrbot_sea")  # mode 5: a motor reference lies within [pos_min, pos_max]
    assert core.modes[0] == 5
    params = NodeParameters(core, threading.Lock(), lockstep=False)
    assert core.set_command(0, "ref1", 0.5)  # a held motor reference of 0.5 rad
    pos_max = core.sim.batch.get_param(0, "pos_max")[0]
    with pytest.raises(ValueError, match="a held command would leave its range: joint1 ref"):
        params.apply({"joints.joint1.pos_max": 0.25})
    assert core.sim.batch.get_param(0, "pos_max")[0] == pos_max
    params.apply({"joints.joint1.pos_max": 0.75})  # the held 0.5 rad stays inside
    assert core.command_range(0, "ref1")[1] == 0.75


def test_the_docs_table_is_the_codes():
    text = (ROOT / "docs" / "ros.md").read_text()
    begin = text.index("<!-- parameters:")
    table = text[text.index("\n", begin) + 1 : text.index("<!-- /parameters -->")]
    assert table == markdown_table(NodeCore(), joints=[0])


@pytest.mark.ros2
@pytest.mark.slow
def test_the_preset_parameters_follow_the_held_presets_and_a_reset_keeps_the_others(result):
    assert result["mirrored"], "joint1's preset parameter did not follow the topic command"
    after, before = result["after_reset"], result["after"]
    # the reset put the presets (commands) back and kept the parameters (configuration)
    assert after["joints.joint1.stiffness_preset"] == 0.2
    assert after["joints.joint2.stiffness_preset"] == 0.2
    assert after["joints.joint1.kp"] == KP
    rest = {n for n in before if "stiffness_preset" not in n and before[n] == before[n]}
    assert {n: after[n] for n in rest} == {n: before[n] for n in rest}
