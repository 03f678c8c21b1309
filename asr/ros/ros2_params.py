"""The ROS 2 node's parameters (asr.ros.ros2_node): what `ros2 param list / describe / get / set`
see. The table is built from asr's own tables, never retyped: every model parameter of every
joint (ModelSpec.all_params: PID gains, limits, friction, drive, springs) as
`joints.<joint>.<param>` with its ParamSpec range, the stiffness preset of every joint that takes
one as `joints.<joint>.stiffness_preset` with the command's range (NodeCore.command_range), and
the node's start-up configuration (robot, variant, engine, rate, lockstep) read-only.

Checks: rclpy applies each descriptor's range (a FloatingPointRange / IntegerRange is closed:
the hull of asr's range) and read_only first; the on-set callback (NodeParameters.on_set) then
applies asr's exact rule, the one the node's commands and the batch use (open ends, integers,
pos_min < pos_max, the held commands staying inside ranges that a parameter bounds), and
rejects with a reason naming parameter, value and range. A set of parameters
(set_parameters_atomically) is applied all or none, under the node's stepping lock: a period
sees the parameters from before or after the set, never part of it; the change takes effect at
the next period. Parameters are configuration: a reset keeps them (the stiffness preset, a
command, goes back to the initial one as every held command does). A stiffness preset parameter
follows the held preset (topic commands, steps, trajectories, reset) within MIRROR_PERIOD_S: a
timer in the executor thread, the one that serves the parameter services, sets it.

No rclpy import at module level: `parameter_table` and `markdown_table` run without ROS 2.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable
from typing import Any

from asr.ros.node_core import NodeCore

PRESET = "stiffness_preset"  # the per-joint parameter that is the stiffness preset command
MIRROR_PERIOD_S = 0.1  # the stiffness preset parameters follow the held presets this often
READ_ONLY_NOTE = "read-only: fixed when the node starts (restart the node to change it)"


@dataclasses.dataclass(frozen=True)
class ParamEntry:
    """One ROS parameter of the node. kind: "double", "integer", "string" or "bool"; value: its
    value at start; lo, hi, lo_open, hi_open: the valid range (numbers; inf where unbounded);
    joint: the joint index (None: node-wide); key: the model parameter's name, PRESET, or None
    (read-only)."""

    name: str
    kind: str
    value: Any
    read_only: bool
    description: str
    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    unit: str = ""
    joint: int | None = None
    key: str | None = None

    @property
    def range_text(self) -> str:
        """The valid range in interval notation with its unit ('' for text and flags)."""
        if self.kind in ("string", "bool"):
            return ""
        text = (
            f"{'(' if self.lo_open else '['}{_num(self.lo)}, {_num(self.hi)}"
            f"{')' if self.hi_open else ']'}"
        )
        if self.kind == "integer":
            text += " (integer)"
        return f"{text} {self.unit}" if self.unit else text


def _num(x: float) -> str:
    return "inf" if x == math.inf else "-inf" if x == -math.inf else f"{x:g}"


def parameter_table(core: NodeCore, lockstep: bool) -> list[ParamEntry]:
    """The node's parameters: the read-only start-up ones, then per joint its stiffness preset
    (where it takes one) and its model parameters in ModelSpec.all_params order."""
    robot = core.robot
    out = [
        ParamEntry(
            "robot", "string", robot.name, True, f"the robot (asr.load_robot); {READ_ONLY_NOTE}"
        ),
        ParamEntry(
            "variant", "string", robot.variant or "", True, f"the robot's variant; {READ_ONLY_NOTE}"
        ),
        ParamEntry("engine", "string", core.engine, True, f"the link engine; {READ_ONLY_NOTE}"),
        ParamEntry(
            "rate",
            "double",
            1.0 / core.period,
            True,
            "publishing rate, Hz: one period is period_steps MJCF steps (the rate asked for, "
            f"rounded to whole steps); {READ_ONLY_NOTE}",
            lo=0.0,
            hi=1.0 / core.sim.dt,
            lo_open=True,
            unit="Hz",
        ),
        ParamEntry(
            "lockstep",
            "bool",
            bool(lockstep),
            True,
            f"true: one period per step message or step_period call; {READ_ONLY_NOTE}",
        ),
    ]
    batch = core.sim.batch
    for j, (jn, spec) in enumerate(zip(core.names, core.specs)):
        target = core.commands[j].get(PRESET)
        if target is not None:
            lo, hi, unit, lo_open, hi_open = core._bounds(j, target)
            value = (
                float(batch.get_param(j, spec.preset.param)[0])
                if spec.preset.kind == "param"
                else float(core.held()[0][j, 1])
            )
            out.append(
                ParamEntry(
                    f"joints.{jn}.{PRESET}",
                    "double",
                    value,
                    False,
                    f"{spec.preset.meaning}: the stiffness preset command (as topic {jn}/{PRESET}),"
                    " held from the next period; it follows the held preset (topic commands, "
                    f"steps, trajectories, reset) within {MIRROR_PERIOD_S:g} s",
                    lo,
                    hi,
                    lo_open,
                    hi_open,
                    unit,
                    j,
                    PRESET,
                )
            )
        for p in spec.all_params:
            if spec.preset.kind == "param" and p.name == spec.preset.param and target:
                continue  # the same quantity as joints.<j>.stiffness_preset
            value = float(batch.get_param(j, p.name)[0])
            out.append(
                ParamEntry(
                    f"joints.{jn}.{p.name}",
                    "integer" if p.integer else "double",
                    int(value) if p.integer else value,
                    False,
                    f"{spec.name} {p.group}: {p.doc}; takes effect at the next period",
                    p.lo,
                    p.hi,
                    p.lo_open,
                    p.hi_open,
                    p.unit,
                    j,
                    p.name,
                )
            )
    return out


def check_value(core: NodeCore, entry: ParamEntry, value: Any) -> float:
    """value as a float when it is valid for parameter `entry`: the stiffness preset by the
    command's check (NodeCore.check_command), a model parameter by its ParamSpec (the C core's
    rule, the batch's); ValueError naming parameter, value and range otherwise. Only the
    parameter's own range: bounds between parameters and held commands are checked on apply."""
    if entry.read_only or entry.joint is None or entry.key is None:
        raise ValueError(f"{entry.name}: got {value!r}; {READ_ONLY_NOTE}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{entry.name}: got {value!r}, expected a number in {entry.range_text}")
    v = float(value)
    if entry.key == PRESET:
        why = core.check_command(entry.joint, core.commands[entry.joint][PRESET], v)
    else:
        spec = core.specs[entry.joint].param(entry.key)
        why = None if spec.valid(v) else "out of range"
    if why is not None:
        raise ValueError(f"{entry.name}: got {value!r}, valid range {entry.range_text}")
    return v


class NodeParameters:
    """The parameters of one Ros2Node: declared on its rclpy node, checked and applied by the
    on-set callback under `lock` (the node's stepping lock). on_change(joint) is called (lock
    held) for every joint whose model parameters changed."""

    def __init__(
        self,
        core: NodeCore,
        lock: threading.Lock,
        *,
        lockstep: bool,
        on_change: Callable[[int], None] | None = None,
    ) -> None:
        self.core = core
        self.lock = lock
        self.on_change = on_change
        self.table = {e.name: e for e in parameter_table(core, lockstep)}
        # model parameters that NodeCore.reset puts back (a preset of kind "param" in a mode
        # without the stiffness_preset command: rrbot_sea's spring): {name: value set}
        self._kept: dict[str, float] = {}
        self._mirroring = False  # the executor thread is mirroring held presets (sync)
        self._timer: Any = None

    def declare(self, node: Any) -> None:
        """Declare every parameter on rclpy node `node` with its descriptor and register the
        on-set callback."""
        from rcl_interfaces.msg import (
            FloatingPointRange,
            IntegerRange,
            ParameterDescriptor,
            ParameterType,
        )

        types = {
            "double": ParameterType.PARAMETER_DOUBLE,
            "integer": ParameterType.PARAMETER_INTEGER,
            "string": ParameterType.PARAMETER_STRING,
            "bool": ParameterType.PARAMETER_BOOL,
        }
        declared = []
        for e in self.table.values():
            d = ParameterDescriptor(
                name=e.name,
                type=types[e.kind],
                description=e.description,
                additional_constraints=f"valid range {e.range_text}" if e.range_text else "",
                read_only=e.read_only,
            )
            if e.kind == "double":
                d.floating_point_range = [
                    FloatingPointRange(from_value=float(e.lo), to_value=float(e.hi), step=0.0)
                ]
            elif e.kind == "integer":
                d.integer_range = [IntegerRange(from_value=int(e.lo), to_value=int(e.hi), step=1)]
            declared.append((e.name, e.value, d))
        node.declare_parameters("", declared)
        # values given at start (--ros-args -p name:=value) were declared without the callback
        given = {n: node.get_parameter(n).value for n, _, _ in declared}
        fixed = [
            n for n, v in given.items() if self.table[n].read_only and v != self.table[n].value
        ]
        if fixed:
            raise ValueError(f"{', '.join(fixed)}: {READ_ONLY_NOTE} (give it as an argument)")
        self.apply({n: v for n, v in given.items() if v != self.table[n].value})
        node.add_on_set_parameters_callback(self.on_set)
        if any(e.key == PRESET for e in self.table.values()):
            self._timer = node.create_timer(MIRROR_PERIOD_S, lambda: self.sync(node))

    def held_preset(self, e: ParamEntry) -> float:
        """The stiffness preset that joint e.joint holds now (e: a PRESET entry)."""
        assert e.joint is not None and e.key == PRESET
        pre = self.core.specs[e.joint].preset
        if pre.kind == "param" and pre.param is not None:
            return float(self.core.sim.batch.get_param(e.joint, pre.param)[0])
        return float(self.core.held()[0][e.joint, 1])

    def sync(self, node: Any) -> None:
        """Set the stiffness preset parameters to the held presets where they differ (a
        ParameterEvent each); run by a timer in the node's executor thread, the thread that
        serves the parameter services, so no set from a peer interleaves."""
        from rclpy.parameter import Parameter

        changed = []
        for e in self.table.values():
            if e.key == PRESET:
                v = self.held_preset(e)
                if node.get_parameter(e.name).value != v:
                    changed.append(Parameter(e.name, value=v))
        if changed:
            self._mirroring = True
            try:
                node.set_parameters(changed)
            finally:
                self._mirroring = False

    def on_set(self, params: list[Any]) -> Any:
        """rclpy's on-set callback: check every parameter of the set and apply them all, or
        none (SetParametersResult with the reason)."""
        from rcl_interfaces.msg import SetParametersResult

        if self._mirroring:  # sync: the values are the node's own, already held
            return SetParametersResult(successful=True)
        try:
            self.apply({p.name: p.value for p in params})
        except ValueError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def apply(self, values: dict[str, Any]) -> None:
        """Check and apply {parameter name: value}, all or none, under the stepping lock;
        ValueError (nothing changed) naming parameter, value and range."""
        core, batch = self.core, self.core.sim.batch
        checked = []
        for name, value in values.items():
            entry = self.table.get(name)
            if entry is None:
                raise ValueError(f"{name}: not a parameter of this node")
            checked.append((entry, check_value(core, entry, value)))
        with self.lock:
            old = [
                (e, float(batch.get_param(e.joint, e.key)[0]))
                for e, _ in checked
                if e.key != PRESET and e.joint is not None and e.key is not None
            ]
            try:
                for e, v in checked:
                    if e.key != PRESET:
                        self._set_param(e, v)
                self._check_held(checked)
            except ValueError:
                for e, v in reversed(old):
                    batch.set_param(e.joint, e.key, v)
                raise
            for e, v in checked:
                if e.joint is not None and e.key == core.specs[e.joint].preset.param:
                    self._kept[e.name] = v
            for e, v in checked:  # presets last: checked against the new parameters
                if e.key == PRESET and e.joint is not None:
                    core.set_command(e.joint, core.commands[e.joint][PRESET], v, e.name)
            if self.on_change is not None:
                for j in sorted({e.joint for e, _ in old if e.joint is not None}):
                    self.on_change(j)

    def after_reset(self) -> None:
        """Call (stepping lock held) after NodeCore.reset: parameters are configuration, so the
        model parameters that the reset put back to their initial values get the values set
        through the parameter services again."""
        for name, v in self._kept.items():
            e = self.table[name]
            assert e.joint is not None and e.key is not None
            self.core.sim.batch.set_param(e.joint, e.key, v)

    def _set_param(self, e: ParamEntry, v: float) -> None:
        """Set one model parameter in the batch (its check includes pos_min < pos_max)."""
        assert e.joint is not None and e.key is not None
        try:
            self.core.sim.batch.set_param(e.joint, e.key, v)
        except ValueError as exc:
            why = str(exc).split("valid range", 1)[-1].lstrip(": ")
            raise ValueError(f"{e.name}: got {v!r}, valid range {why}") from None

    def _check_held(self, checked: list[tuple[ParamEntry, float]]) -> None:
        """The held commands (and the presets of the set) inside the ranges the new parameters
        give (tau_max, link_tau_max, pos_min / pos_max, drive bound some): ValueError else."""
        core = self.core
        refs, _, tau_ff = core.held()
        for e, v in checked:
            if e.key == PRESET and e.joint is not None:
                why = core.check_command(e.joint, core.commands[e.joint][PRESET], v)
                if why is not None:
                    raise ValueError(f"{e.name}: got {v!r}, {why}")
        why = core.check_references(refs)
        for j in range(len(core.names)):
            if why is None and tau_ff[j] != 0:
                bad = core.check_command(j, "tau_ff", float(tau_ff[j]))
                why = None if bad is None else f"{core.names[j]} feedforward_torque: {bad}"
        if why is not None:
            names = ", ".join(f"{e.name} = {v!r}" for e, v in checked if e.key != PRESET)
            raise ValueError(f"{names}: refused, a held command would leave its range: {why}")


def markdown_table(core: NodeCore, lockstep: bool = False, joints: Any = None) -> str:
    """The node's parameters as a Markdown table (docs/ros.md), for `core`'s robot: the
    node-wide ones and those of the joints indexed in `joints` (None: every joint)."""
    rows = [
        "| parameter | type | default | valid range | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for e in parameter_table(core, lockstep):
        if joints is not None and e.joint is not None and e.joint not in joints:
            continue
        value = (
            _num(e.value)
            if e.kind == "double"
            else str(e.value).lower()
            if e.kind == "bool"
            else e.value
        )
        rows.append(
            f"| `{e.name}` | {e.kind}{', read-only' if e.read_only else ''} | `{value}` | "
            f"{e.range_text} | {e.description.replace('|', '/')} |"
        )
    return "\n".join(rows) + "\n"


__all__ = [
    "ParamEntry",
    "NodeParameters",
    "parameter_table",
    "check_value",
    "markdown_table",
    "PRESET",
]
