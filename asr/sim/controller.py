"""What asr.Sim needs of a controller: the Python side of the C asr_controller hooks
(csrc/engine/asr_engine.h).

A controller runs inside the C rollout loop, per instance and step, with the GIL released: the
loop calls its C hooks (check before the rollout; begin and end per thread; after_step1 (may
rewrite the references), before_step2 and after_step2 around the engine's two step halves;
finish after an instance's last step). Python only hands the loop those hooks, once per rollout
(per window with a callable refs), and never runs per step. asr.Sim knows no controller by name:
`Sim(robot, controller=c)` takes any object `c` satisfying `Controller`, binds it to the Sim and
its link engine (`c.bind(sim, engine)`), and drives the `BoundController` it returns:

    Sim(..., controller=c)      -> bound = c.bind(sim, engine)   (settings and engine checked)
    Sim.reset(instances)        -> bound.reset(instances)        (after the engine and the batch)
    Sim.rollout(steps, refs, **inputs)
                                -> bound.check_inputs(steps, inputs)     (once per rollout)
                                -> record = (N, steps, sum of bound.record's columns) float64
                                -> with bound.hooks(inputs, record) as hooks:   (an asr_controller*)
                                       Batch.rollout_engine(engine, ..., controller=hooks)
                                -> bound.results(record)         ({field: array} in the output)

asr.controllers.interaction (asr.Admittance, asr.DirectForce) is one such controller: its
record is x_d, x_c, x_m, f_d, f_e, tau_e, fsm, ik_ok and its input the external wrench
`wrench_ext`; a rollout without a controller has neither.
"""

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from asr.common.validate import CData, FloatArray
from asr.core.batch_inputs import Series
from asr.engines.base import IndexArray, LinkEngine


@runtime_checkable
class BoundController(Protocol):
    """A controller bound to one Sim (sim.controller): its C hooks, record and inputs.

    record: {field: (columns, unit)} of what the controller records per instance and step, in
        the order of its C record (each instance's step writes sum(columns) float64 values, unit
        "" for counts, states and flags); a rollout returns each field as (N, steps, columns), a
        one-column field as (N, steps) (see results).
    inputs: the keyword arguments of Sim.rollout / Sim.step it takes (e.g. "wrench_ext"); a
        rollout given one that its controller does not take is refused, naming it.
    """

    record: Mapping[str, tuple[int, str]]
    inputs: tuple[str, ...]

    def reset(self, instances: IndexArray | None) -> None:
        """After Sim.reset of these instances (None: all), the engine and batch reset."""

    def check_inputs(self, steps: int, inputs: Mapping[str, npt.ArrayLike]) -> dict[str, Series]:
        """The inputs of a rollout of `steps` steps (names among `inputs`), checked (ValueError
        naming the input, its value and the valid shapes) and laid out as per-step series
        (array, time stride in doubles; asr.core.batch_inputs.per_step): (N, steps, ...) per
        step or held (N, ...) with stride 0."""
        ...

    def hooks(
        self, inputs: Mapping[str, Series], record: FloatArray
    ) -> AbstractContextManager[CData]:
        """A context manager giving the asr_controller* (csrc/engine/asr_engine.h) for one C
        rollout with these checked inputs (windows of check_inputs' series, the rollout's
        steps long), recording into `record` (C-contiguous (N, steps, sum of the record's
        columns) float64). The struct and what it points to stay valid inside the block."""
        ...

    def results(self, record: FloatArray) -> dict[str, npt.NDArray[Any]]:
        """{field: array} of a whole rollout's record (N, steps, sum of columns), per `record`'s
        layout, in the field's own dtype."""
        ...


@runtime_checkable
class Controller(Protocol):
    """What asr.Sim(..., controller=) takes: a controller's settings, bound to a Sim and its link
    engine (asr.engines.base.LinkEngine: its C struct c_engine, addresses, models) when the Sim
    is built. bind checks what the controller needs (the robot's description, the joints'
    modes, the engine; ValueError naming the parameter otherwise) and builds its C part."""

    def bind(self, sim: Any, engine: LinkEngine) -> BoundController:
        """The controller run by `sim` (the asr.Sim being built: the controller may read its
        robot, batch, n_instances, n_joints, dt and q) on its link engine."""
        ...


def record_columns(ctl: BoundController) -> int:
    """The values a controller records per instance and step (the sum of its record's columns)."""
    return int(sum(cols for cols, _ in ctl.record.values()))


def empty_record(ctl: BoundController | None, n: int, steps: int) -> FloatArray | None:
    """The (N, steps, columns) record of a controlled rollout, None without a controller."""
    return None if ctl is None else np.empty((n, steps, record_columns(ctl)))


__all__ = ["Controller", "BoundController", "record_columns", "empty_record"]
