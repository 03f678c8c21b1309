"""Compliance models: their parameter specs, pure-function evaluation and user-defined models.

Built-in models live in C (csrc/core/model_*.c). Users add models without recompiling asr, either as
a C function pointer (fast path, e.g. from their own cffi module) or as a Python callable (slow
path, called once per joint and sub-step while the GIL is held; exceptions propagate).

This module holds the evaluation: compliance, reference_map and the second-reference check. The
specs and the registry live in asr.core.model_registry, register_model in asr.core.user_models;
their
public names are imported from here, as before.
"""

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.validate import CData, FloatArray
from asr.core.errors import raise_for_status
from asr.core.ffi import ffi, lib
from asr.core.model_callbacks import IN_FIELDS, OUT_NAMES
from asr.core.model_registry import BUILTIN_MODELS as BUILTIN_MODELS
from asr.core.model_registry import ModelSpec as ModelSpec
from asr.core.model_registry import ModelTable as ModelTable
from asr.core.model_registry import ParamSpec as ParamSpec
from asr.core.model_registry import PresetSpec as PresetSpec
from asr.core.model_registry import RegisteredModel, fmt_bound
from asr.core.model_registry import c_text as c_text
from asr.core.model_registry import get_model as get_model
from asr.core.model_registry import models as models
from asr.core.model_registry import preset_table as preset_table
from asr.core.user_models import MAX_MODEL_PARAMS as MAX_MODEL_PARAMS
from asr.core.user_models import register_model as register_model
from asr.core.user_models import unregister_model as unregister_model

# compliance()'s keyword of each asr_elastic_in field (IN_FIELDS, in C order)
_IN_KEYWORD = {
    "q": "q",
    "qd": "qd",
    "th1": "theta1",
    "th2": "theta2",
    "th1d": "theta1_d",
    "th2d": "theta2_d",
}


_NUMPY_OF_C = {"double": "f8", "int": "i4"}


def _struct_dtype(ctype: str, fields: tuple[str, ...]) -> np.dtype[np.void]:
    """NumPy view of a C struct array, laid out by the compiler's offsets and types."""
    types = dict(ffi.typeof(ctype).fields)
    return np.dtype(
        {
            "names": list(fields),
            "formats": [_NUMPY_OF_C[types[f].type.cname] for f in fields],
            "offsets": [ffi.offsetof(ctype, f) for f in fields],
            "itemsize": ffi.sizeof(ctype),
        }
    )


_IN_DTYPE = _struct_dtype("asr_elastic_in", IN_FIELDS)
_OUT_DTYPE = _struct_dtype("asr_elastic_out", OUT_NAMES)


# ---------------------------------------------------------------- pure functions


@dataclasses.dataclass
class Compliance:
    """Compliance model outputs, each an array of the broadcast input shape.

    tau_link, tau1, tau2: link torque and the torques of springs 1 and 2 on the link, N m.
    stiffness: -d tau_link/dq, N m/rad. damping: -d tau_link/dqd, N m s/rad.
    load1, load2: torques on motors 1 and 2, N m. defl1, defl2: clamped deflections, rad.
    clamped: number of springs at their deflection limit (int).
    """

    tau_link: FloatArray
    tau1: FloatArray
    tau2: FloatArray
    stiffness: FloatArray
    damping: FloatArray
    load1: FloatArray
    load2: FloatArray
    defl1: FloatArray
    defl2: FloatArray
    clamped: npt.NDArray[np.intc]


def _model_params(
    model: RegisteredModel, params: Mapping[str, npt.ArrayLike], shape: tuple[int, ...]
) -> tuple[FloatArray, int]:
    """The model's own parameters as an (n, nparam) array (pstride nparam) or one shared row."""
    spec = model.spec
    names = {p.name for p in spec.params}
    for name in params:
        if name not in names:
            raise ValueError(
                f"unknown parameter {name!r} for model {spec.name!r}; valid: "
                + (", ".join(sorted(names)) or "none")
            )
    columns: list[FloatArray] = []
    varying = False
    for p in spec.params:
        value = p.check(params.get(p.name, p.default), f"{spec.name}.")
        varying |= value.ndim > 0 and value.size > 1
        columns.append(value)
    if not varying:
        row = np.array(
            [float(np.asarray(c).reshape(-1)[0]) if np.ndim(c) else float(c) for c in columns]
            or [0.0]
        )
        return row, 0
    # already range-checked (which allows inf where the range does, e.g. max_def)
    table = np.stack([np.broadcast_to(c, shape).reshape(-1) for c in columns], axis=1)
    return np.ascontiguousarray(table), len(spec.params)


def _evaluate(model: RegisteredModel, fn: Callable[..., int], *args: CData) -> int:
    """Run C evaluation fn(cdef, *args) with this call's own binding of `model`, re-raising an
    exception its Python callbacks raised; returns the C status."""
    bound = model.bind(finite=True)
    st = fn(bound.cdef, *args)
    bound.raise_pending()
    return st


def compliance(
    model: str,
    q: npt.ArrayLike,
    theta1: npt.ArrayLike,
    theta2: npt.ArrayLike = 0.0,
    *,
    qd: npt.ArrayLike = 0.0,
    theta1_d: npt.ArrayLike = 0.0,
    theta2_d: npt.ArrayLike = 0.0,
    **params: npt.ArrayLike,
) -> Compliance:
    """Evaluate compliance model `model` at link angle q (rad) and motor angles theta1, theta2
    (rad; for awas2 theta2 is the pivot position s in m). Inputs broadcast against each other and
    against array-valued parameters; velocities (rad/s) matter for damped models only.
    Returns a Compliance with arrays of the broadcast shape."""
    m = get_model(model)
    inputs = {
        "q": q,
        "theta1": theta1,
        "theta2": theta2,
        "qd": qd,
        "theta1_d": theta1_d,
        "theta2_d": theta2_d,
    }
    arrays = {k: V.finite(V.real_array(v, k), k) for k, v in inputs.items()}
    param_arrays = [np.asarray(v) for v in params.values() if np.ndim(v) > 0]
    try:
        shape = np.broadcast_shapes(
            *(a.shape for a in arrays.values()), *(a.shape for a in param_arrays)
        )
    except ValueError:
        raise ValueError(
            "q, theta1, theta2, velocities and parameters do not broadcast against each other"
        ) from None
    _check_ref2_params(m.spec, arrays["theta2"], params, "theta2")
    n = int(np.prod(shape))
    table, pstride = _model_params(m, params, shape)
    inp = np.zeros(n, dtype=_IN_DTYPE)
    for field in IN_FIELDS:
        inp[field] = np.broadcast_to(arrays[_IN_KEYWORD[field]], shape).reshape(-1)
    out = np.zeros(n, dtype=_OUT_DTYPE)
    st = _evaluate(
        m,
        lib.asr_compliance_eval,
        n,
        ffi.from_buffer("double[]", table),
        pstride,
        ffi.cast("asr_elastic_in*", ffi.from_buffer(inp)),
        ffi.cast("asr_elastic_out*", ffi.from_buffer(out, require_writable=True)),
    )
    if st != lib.ASR_OK:
        raise_for_status(
            st,
            f"compliance({model!r})",
            detail=f" at point {_first_bad(out, shape)} (q, theta1, theta2 and parameters there)",
        )
    res = {
        k: np.ascontiguousarray(out[k]).reshape(shape)
        for k in (
            "tau1",
            "tau2",
            "stiffness",
            "damping",
            "load1",
            "load2",
            "defl1",
            "defl2",
            "clamped",
        )
    }
    return Compliance(tau_link=np.asarray(res["tau1"] + res["tau2"]), **res)


def _first_bad(out: npt.NDArray[np.void], shape: tuple[int, ...]) -> tuple[int, ...]:
    """Index, in the broadcast shape, of the first point C marked bad (clamped = -1)."""
    idx = int(np.argmax(out["clamped"] == -1))
    return tuple(int(i) for i in np.unravel_index(idx, shape)) if shape else ()


def check_ref2(spec: ModelSpec, ref2: FloatArray, bound: FloatArray, name: str) -> None:
    """Check second references `ref2` of model `spec` against its rule: with
    spec.preset.below_param set (AwAS-II: the pivot s, singular at L), every value must lie in
    [lo, bound), bound the values of that parameter (broadcast against ref2). ValueError naming
    `name`, the first bad value and the bound there; no rule: nothing to check."""
    pre = spec.preset
    if pre.below_param is None:
        return
    bad = ~((ref2 >= pre.lo) & (ref2 < bound))
    if np.any(bad):
        value = np.broadcast_to(ref2, bad.shape)[bad].flat[0]
        at = np.broadcast_to(bound, bad.shape)[bad].flat[0]
        unit = f" {pre.unit}" if pre.unit else ""
        raise ValueError(
            f"{name}: {pre.meaning} = {V.num(value)}{unit}, valid range "
            f"[{fmt_bound(pre.lo)}, {pre.below_param}) with {pre.below_param} = "
            f"{V.num(at)}{unit}"
        )


def _check_ref2_params(
    spec: ModelSpec, ref2: FloatArray, params: Mapping[str, npt.ArrayLike], name: str
) -> None:
    """check_ref2 with the bounding parameter from keyword `params` or its default."""
    if spec.preset.below_param is None:
        return
    p = spec.param(spec.preset.below_param)
    check_ref2(spec, ref2, p.check(params.get(p.name, p.default), f"{spec.name}."), name)


def reference_map(
    model: str, equilibrium: npt.ArrayLike, preset: npt.ArrayLike, **params: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Map (equilibrium, preset) to motor references (theta1, theta2) for `model`; arrays
    broadcast. Units: rad, except the awas2 preset (pivot position, m)."""
    m = get_model(model)
    eq = V.finite(V.real_array(equilibrium, "equilibrium"), "equilibrium")
    pre = V.finite(V.real_array(preset, "preset"), "preset")
    param_arrays = [np.asarray(v) for v in params.values() if np.ndim(v) > 0]
    try:
        shape = np.broadcast_shapes(eq.shape, pre.shape, *(a.shape for a in param_arrays))
    except ValueError:
        raise ValueError("equilibrium, preset and parameters do not broadcast") from None
    _check_ref2_params(m.spec, pre, params, "preset")
    n = int(np.prod(shape))
    table, pstride = _model_params(m, params, shape)
    eqb = np.ascontiguousarray(np.broadcast_to(eq, shape)).reshape(-1)
    prb = np.ascontiguousarray(np.broadcast_to(pre, shape)).reshape(-1)
    th1, th2 = np.empty(n), np.empty(n)
    st = _evaluate(
        m,
        lib.asr_reference_map_eval,
        n,
        ffi.from_buffer("double[]", table),
        pstride,
        ffi.from_buffer("double[]", eqb),
        ffi.from_buffer("double[]", prb),
        ffi.from_buffer("double[]", th1),
        ffi.from_buffer("double[]", th2),
    )
    raise_for_status(
        st,
        f"reference_map({model!r})",
        detail="; equilibrium and preset must give finite motor angles",
    )
    return th1.reshape(shape), th2.reshape(shape)


__all__ = [
    "ParamSpec",
    "ModelSpec",
    "PresetSpec",
    "Compliance",
    "models",
    "compliance",
    "reference_map",
    "register_model",
    "unregister_model",
    "check_ref2",
    "preset_table",
]
