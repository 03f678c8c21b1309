"""The batch's tables and input checks: the C core's name tables (state fields with their units
and docs, operation modes, motor sub-step schemes, SIMD kernels), asr.Joint, the checks and
conversions of the inputs asr.Batch and asr.Sim share (on_error, record, modes, dt, feed-forward
torques, per-step series) and the message for a parameter value the C core refused.

asr.core.batch re-exports the names it had before this module was split from it; import them from
there.
"""

import dataclasses
import os
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.validate import CData, FloatArray, IntArray
from asr.core.ffi import ffi, lib
from asr.core.model_registry import ModelSpec

# a rollout input as per_step gives it: (array, time stride in doubles)
Series = tuple[FloatArray, int]


def _c_names(name_of: Callable[[int], CData], count: int) -> tuple[str, ...]:
    """A C name table (name_of(k) for k < count) as a tuple of str."""
    return tuple(ffi.string(name_of(k)).decode() for k in range(count))


# the joint step's builds (csrc/core/asr_batch.h, ASR_SIMD_KERNELS), narrowest first: what ASR_SIMD
# may name
SIMD_KERNELS = _c_names(lib.asr_simd_name, lib.ASR_NSIMD)


def _check_simd_cap() -> None:
    """The environment variable ASR_SIMD, read by the C core when a batch is created, names a
    kernel or is unset/empty (a typo would silently cap nothing)."""
    cap = os.environ.get("ASR_SIMD", "")
    if cap and cap not in SIMD_KERNELS:
        raise ValueError(
            f"ASR_SIMD={cap!r} is not one of the step's instruction sets "
            f"{', '.join(SIMD_KERNELS)} (or unset for the widest this CPU runs)"
        )


# The state fields, listed once in csrc/core/asr_fields.h: names in record order, SI units ("" for
# counts, flags and the per-mode references) and docs ending in the unit.
FIELDS = _c_names(lib.asr_state_field_name, lib.ASR_NFIELD)
FIELD_UNITS: dict[str, str] = {
    f: ffi.string(lib.asr_state_field_unit(k)).decode() for k, f in enumerate(FIELDS)
}
FIELD_DOCS: dict[str, str] = {
    f: ", ".join(filter(None, (ffi.string(lib.asr_state_field_doc(k)).decode(), FIELD_UNITS[f])))
    for k, f in enumerate(FIELDS)
}

# The operation modes, listed once in csrc/core/asr_model.h (ASR_MODES): number -> description.
MODES: dict[int, str] = dict(enumerate(_c_names(lib.asr_mode_doc, lib.ASR_NMODE)))
ON_ERROR = ("raise", "flag")
# Motor sub-step schemes (csrc/core/motor.h): "euler" first order, L-stable (damps stiff modes and,
# numerically, an undamped motor oscillation by a damping ratio of about h w / 2); "trapezoid"
# second order, A-stable, no numerical damping (stiff modes ring instead of dying out).
MOTOR_SCHEMES: dict[str, int] = {
    n: k for k, n in enumerate(_c_names(lib.asr_motor_scheme_name, lib.ASR_NMOTOR_SCHEME))
}


def check_on_error(on_error: object) -> None:
    """Check an on_error argument (Batch.step / rollout, Sim)."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error: got {on_error!r}, valid: {ON_ERROR}")


def check_record(record: str | Iterable[str]) -> tuple[str, ...]:
    """A record argument (a field name or names) as a tuple of known state field names."""
    names: tuple[object, ...]
    if isinstance(record, str):
        names = (record,)
    elif isinstance(record, (list, tuple)):
        names = tuple(record)
    else:
        raise TypeError(
            f"record: expected a state field name or a list of them, got "
            f"{type(record).__name__} {record!r}; valid names: {', '.join(FIELDS)}"
        )
    checked = []
    for f in names:
        if not isinstance(f, str) or f not in FIELDS:
            raise ValueError(f"record: unknown state field {f!r}; valid: {', '.join(FIELDS)}")
        checked.append(f)
    return tuple(checked)


@dataclasses.dataclass
class Joint:
    """One joint of a batch: compliance model name, operation mode (0-6) and parameter values
    (scalars or per-instance arrays). mode None: 6 for compliant models, 0 for 'rigid'."""

    model: str
    mode: int | None = None
    params: dict[str, npt.ArrayLike] = dataclasses.field(default_factory=dict)


def per_step(
    value: npt.ArrayLike, name: str, n: int, steps: int, nj: int, tail: tuple[int, ...] = ()
) -> Series:
    """A rollout input in the layout Batch.rollout and Sim.rollout share, as (array, time stride
    in doubles): per step (N, steps, J, *tail), or held (N, J, *tail) (broadcast; stride 0)."""
    arr = V.real_array(value, name)
    full = (n, steps, nj) + tail
    if arr.ndim == len(full):
        return V.finite_array(arr, name, full), nj * int(np.prod(tail, dtype=int))
    return V.broadcast_input(arr, name, (n, nj) + tail), 0


def window(series: Series | None, t0: int) -> Series | None:
    """A per_step series from step t0 on (held series and None unchanged)."""
    if series is None or series[1] == 0:
        return series
    return np.ascontiguousarray(series[0][:, t0:]), series[1]


def record_indices(record: Sequence[str]) -> IntArray:
    """The C field indices of recorded state field names (one placeholder when none)."""
    return np.array([FIELDS.index(f) for f in record] or [0], dtype=np.intc)


def as_series(series: Series | None, keep: list[CData]) -> CData:
    """An asr_series for a per_step (array, stride_t), or a zero one for None; keeps the buffer
    alive in `keep`."""
    s = ffi.new("asr_series*")
    if series is not None:
        arr, stride_t = series
        buf = ffi.from_buffer("double[]", arr)
        keep.append(buf)
        s.data = buf
        s.stride_i = arr[0].size
        s.stride_t = stride_t
    return s[0]


def _record_buffer(out: FloatArray, record: Sequence[str]) -> CData:
    """The C pointer recorded fields go into (NULL when nothing is recorded)."""
    return ffi.from_buffer("double[]", out, require_writable=True) if record else ffi.NULL


def _as_joint(j: object, index: int) -> Joint:
    if isinstance(j, str):
        return Joint(j)
    if isinstance(j, dict):
        d = dict(j)
        if "model" not in d:
            raise ValueError(f"joints[{index}]: a joint dict needs a 'model' key")
        j = Joint(d.pop("model"), d.pop("mode", None), d.pop("params", d))
    if isinstance(j, Joint):
        if not isinstance(j.params, Mapping):
            raise TypeError(
                f"joints[{index}].params: expected a mapping {{parameter name: "
                f"value}}, got {type(j.params).__name__} {j.params!r}"
            )
        return j
    raise TypeError(
        f"joints[{index}]: expected an asr.Joint, a model name or a dict, got {type(j).__name__}"
    )


def check_mode(mode: object, spec: ModelSpec, where: str) -> int:
    """Check an operation mode (0-6) for a joint of model `spec`; `where` prefixes the message.
    Internal: for asr.Batch, asr.load_robot and the dashboard."""
    mode = V.positive_int(mode, f"{where}mode", lo=0, hi=6)
    if spec.nmotor == 0 and mode > 1:
        raise ValueError(
            f"{where}mode: model {spec.name!r} has no spring; got mode {mode}, "
            "valid modes 0 (link torque) and 1 (link PID)"
        )
    return mode


def param_refusal(
    model: ModelSpec,
    j: int,
    k: int,
    v: FloatArray,
    i: int,
    get_param: Callable[[int, str], FloatArray],
) -> str:
    """Why C refused value v[i] for parameter k of joint j, of ModelSpec `model`
    (asr_batch_set_param checks the range and keeps pos_min < pos_max; the message says which,
    with the valid range). get_param(j, name): the batch's current values, for the other bound."""
    spec = model.all_params[k]
    where = f"joint {j} ({model.name}) {spec.name}: got {V.num(v[i])}"
    if not spec.valid(v[i]):
        unit = f" {spec.unit}" if spec.unit else ""
        return f"{where}, valid range {spec.range_text}{unit}"
    other = "pos_max" if spec.name == "pos_min" else "pos_min"
    o = get_param(j, other)
    bound = (
        V.num(o[i])
        if v.size > 1 or np.all(o == o[0])
        else f"{V.num(o.min())} to {V.num(o.max())} across the instances"
    )
    return f"{where}, valid range: pos_min < pos_max (the other bound, {other}, is {bound})"


def check_feed_forward(specs: Sequence[ModelSpec], tau_ff: FloatArray) -> None:
    """Feed-forward motor torques (M, J), N m, for joints of ModelSpecs `specs`: nonzero only on
    single-motor joints."""
    for j, spec in enumerate(specs):
        if spec.nmotor != 1 and np.any(tau_ff[:, j] != 0):
            raise ValueError(
                f"tau_ff[:, {j}]: feed-forward torque is defined for "
                f"single-motor joints only; joint {j} ({spec.name}) has "
                f"{spec.nmotor} motors"
            )


def check_step_length(dt: object, max_substep: float) -> float:
    """A step length dt, s, that max_substep (s) splits into at most ASR_MAX_SUBSTEPS motor
    sub-steps; returns it as a float."""
    dt = V.positive_float(dt, "dt")
    ratio = dt / max_substep  # inf for a subnormal max_substep: no integer to round
    if not ratio <= lib.ASR_MAX_SUBSTEPS:
        raise ValueError(
            f"dt: {dt!r} s with max_substep {max_substep!r} s needs "
            f"{ratio:.3g} motor sub-steps per step, valid range "
            f"[1, {lib.ASR_MAX_SUBSTEPS}]; raise max_substep or lower dt"
        )
    return dt


def _doc(text: str) -> str:
    """A property's docstring, wrapped at 100 columns."""
    return textwrap.fill(
        f'"""{text}."""', 100, initial_indent=" " * 8, subsequent_indent=" " * 8
    ).lstrip()


def state_fields_source() -> str:
    """The text of asr/core/state_fields.py: one typed read-only property per state field (FIELDS,
    FIELD_DOCS), so that batch.q and the rest are visible to type checkers and IDEs without a
    second list of names. write_state_fields() writes it; a test checks it matches the C table."""
    head = [
        '"""The state fields of asr.Batch as typed read-only properties (batch.q, batch.tau_joint,',
        "...): live (N, J) views of the state block. GENERATED from the C field table",
        "(csrc/core/asr_fields.h) by asr.core.batch_inputs.write_state_fields(); do not edit.",
        '"""',
        "",
        "from asr.common.validate import FloatArray",
        "",
        "",
        "class StateFields:",
        '    """Typed access to the state views {field: (N, J) read-only view} a Batch holds."""',
        "",
        "    _views: dict[str, FloatArray]",
    ]
    body = [
        f"\n    @property\n    def {f}(self) -> FloatArray:\n        {_doc(FIELD_DOCS[f])}\n"
        f'        return self._views["{f}"]'
        for f in FIELDS
    ]
    return "\n".join(head) + "\n" + "\n".join(body) + "\n"


def write_state_fields() -> None:
    """Regenerate asr/core/state_fields.py after the C field table changed:
    .venv/bin/python -c "from asr.core.batch_inputs import write_state_fields as w; w()"."""
    with open(os.path.join(os.path.dirname(__file__), "state_fields.py"), "w") as fh:
        fh.write(state_fields_source())
