"""asr's stamped state messages (asr_msgs, asr.ros.ros2_stamped).

Without ROS: the ActuatorState message that asr/ros/interfaces/build.py generates from
csrc/core/asr_fields.h lists exactly asr.FIELDS, in order, with the units of asr.FIELD_UNITS,
and the generated text is the same on every run.
With real ROS 2 (rclpy over Fast DDS; the peer tests/support/ros2_peers/stamped.py runs without
asr): a lockstep node's actuator_states carry joint_states' stamps and values, and the whole
record equals an in-process NodeCore stepped through the same periods, bit for bit;
held_references_stamped equals held_references."""

import importlib.util
import json
import re

import numpy as np
import pytest

import asr
from asr.ros.node_core import NodeCore
from tests.support.paths import ROOT
from tests.support.ros2 import NodeProcess, ros2_interfaces, run_peer
from tests.support.ros2_node import RATE, ROBOT


def load_build():
    """asr/ros/interfaces/build.py as a module (a script, not part of the asr package)."""
    path = ROOT / "asr" / "ros" / "interfaces" / "build.py"
    spec = importlib.util.spec_from_file_location("asr_interfaces_build", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_actuator_state_lists_every_field_with_its_unit(tmp_path):
    build = load_build()
    folder = build.generate_asr_msgs(tmp_path)
    text = (folder / "msg" / "ActuatorState.msg").read_text()
    decl = re.findall(r"^# unit: (.*)\nfloat64\[\] (\w+)$", text, re.M)
    assert [name for _, name in decl] == list(asr.FIELDS)
    assert [unit for unit, _ in decl] == [asr.FIELD_UNITS[f] or "-" for f in asr.FIELDS]
    # nothing else is a field: the header, the joint names, then the float64[] fields
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert lines == ["std_msgs/Header header", "string[] name"] + [
        f"float64[] {f}" for f in asr.FIELDS
    ]
    held = (folder / "msg" / "HeldReferences.msg").read_text()
    assert [ln for ln in held.splitlines() if ln and not ln.startswith("#")] == [
        "std_msgs/Header header",
        "string[] name",
        "float64[] ref1",
        "float64[] ref2",
        "uint8[] mode",
    ]
    # deterministic, and the committed package files beside the generated ones
    again = build.generate_asr_msgs(tmp_path / "again")
    for rel in ("msg/ActuatorState.msg", "msg/HeldReferences.msg", "CMakeLists.txt"):
        assert (again / rel).read_bytes() == (folder / rel).read_bytes()


def test_a_field_change_changes_the_build_digest(tmp_path, monkeypatch):
    build = load_build()
    header = tmp_path / "asr_fields.h"
    header.write_text(build.FIELDS_HEADER.read_text())
    monkeypatch.setattr(build, "FIELDS_HEADER", header)
    python = ROOT / ".venv" / "bin" / "python"
    before = build.digest(python)
    header.write_text(header.read_text().replace('"motor 1 angle"', '"motor one angle"'))
    assert build.digest(python) != before
    assert (
        "motor one angle"
        in build.asr_msgs_files(build.parse_fields(header.read_text()))["msg/ActuatorState.msg"]
    )


@pytest.mark.ros2
@pytest.mark.slow
def test_actuator_states_align_with_joint_states_and_match_the_engine(tmp_path):
    ros2_interfaces()
    core = NodeCore(ROBOT, rate=RATE)  # the node's core, stepped here with the same inputs
    n = 10
    rng = np.random.default_rng(5)
    refs = np.repeat(core.held()[0][None], n, axis=0)  # (n, J, 2): mode 6 (q ref, stiffness)
    refs[:, :, 0] += np.cumsum(rng.uniform(-0.05, 0.05, (n, len(core.names))), axis=0)
    with NodeProcess(tmp_path, robot=ROBOT, rate=RATE, lockstep=True) as node:
        out = run_peer("stamped.py", json.dumps({"refs": refs.tolist()}))
        assert node.stop() == 0, f"the node did not exit cleanly:\n{node.log()[-2000:]}"
    assert out["fields"] == list(asr.FIELDS)
    joints = {s[0]: s for s in out["joint_states"]}
    states = out["actuator_states"]
    stamps = [k * core.period_ns for k in range(n + 1)]
    assert [s[0] for s in states] == stamps
    # the engine's record: the reset state, then each period's end
    want = [dict(core.state())]
    want[0].update({f: core.sim.batch.field(f)[0].copy() for f in asr.FIELDS if f not in want[0]})
    for k in range(n):
        assert core.hold_references(refs[k], "step")
        s = dict(core.step_period())
        s.update({f: core.sim.batch.field(f)[0].copy() for f in asr.FIELDS if f not in s})
        want.append(s)
    for (stamp, names, got), engine in zip(states, want):
        assert names == list(core.names)
        _, position, velocity, effort = joints[stamp]  # a joint_states message of that stamp
        assert got["q"] == position and got["qd"] == velocity and got["tau_link"] == effort
        for f in asr.FIELDS:  # bit for bit
            assert got[f] == engine[f].tolist(), (stamp, f)
    assert states[-1][2]["q"] != states[0][2]["q"]  # it moved
    held = out["held_stamped"]
    assert [h[0] for h in held] == stamps
    for (_stamp, names, ref1, ref2, mode), data in zip(held, out["held"]):
        assert names == list(core.names) and mode == core.modes
        assert np.column_stack([ref1, ref2]).ravel().tolist() == data
    assert [np.column_stack(h[2:4]).tolist() for h in held[1:]] == refs.tolist()
