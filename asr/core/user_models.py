"""User-defined compliance models: register_model builds a C model definition from ParamSpecs, a
PresetSpec and a C function pointer or Python callable (asr.core.model_callbacks checks and wraps
it)
and adds it to the registry; unregister_model removes it.

asr.models re-exports these names; import them from there.
"""

import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from asr.common.validate import CData
from asr.core.ffi import ffi, lib
from asr.core.model_callbacks import callbacks
from asr.core.model_registry import (
    _PRESET_KINDS,
    _REGISTRY,
    BUILTIN_MODELS,
    ModelSpec,
    ParamSpec,
    PresetSpec,
    RegisteredModel,
    _common_specs,
    _spec_of,
    c_text,
    get_model,
)

# a C function pointer (cffi cdata) or a Python callable
Callback = CData | Callable[..., object]

MAX_MODEL_PARAMS = lib.asr_model_max_params()  # own parameters of a model (the core's limit)


def _build_cdef(
    name: str,
    doc: str,
    nmotor: int,
    kinematic_th2: bool,
    params: Sequence[ParamSpec],
    defaults: Sequence[tuple[int, float]],
    preset: PresetSpec,
    keep: list[object],
) -> CData:
    cdef = ffi.new("asr_model_def*")
    keep.append(cdef)
    for field, text in (("name", name), ("doc", doc)):
        s = ffi.new("char[]", text.encode())
        keep.append(s)
        setattr(cdef, field, s)
    r = cdef.ref2
    r.kind = _PRESET_KINDS[preset.kind]
    r.lo, r.hi, r.soft, r.stiff = preset.lo, preset.hi, preset.soft, preset.stiff
    for field in ("meaning", "unit", "param", "below_param"):
        text = getattr(preset, field)
        if text is not None:
            s = ffi.new("char[]", text.encode())
            keep.append(s)
            setattr(r, field, s)
    cdef.nmotor = nmotor
    cdef.kinematic_th2 = int(kinematic_th2)
    cdef.nparam = len(params)
    cparams = ffi.new("asr_param_spec[]", max(len(params), 1))
    keep.append(cparams)
    for k, p in enumerate(params):
        c = cparams[k]
        for field in ("name", "unit", "group", "doc"):
            s = ffi.new("char[]", getattr(p, field).encode())
            keep.append(s)
            setattr(c, field, s)
        setattr(c, "def", p.default)
        c.lo, c.hi = p.lo, p.hi
        c.lo_open, c.hi_open, c.integer = int(p.lo_open), int(p.hi_open), int(p.integer)
    cdef.params = cparams
    cdefaults = ffi.new("asr_param_default[]", max(len(defaults), 1))
    keep.append(cdefaults)
    for d, (k, value) in enumerate(defaults):
        cdefaults[d].k, cdefaults[d].value = k, value
    cdef.ndefault = len(defaults)
    cdef.defaults = cdefaults
    return cdef


def register_model(
    name: str,
    elastic: Callback,
    refmap: Callback | None = None,
    *,
    params: Iterable[ParamSpec] = (),
    nmotor: int = 2,
    kinematic_th2: bool = False,
    defaults: Mapping[str, float] | None = None,
    doc: str = "",
    preset: PresetSpec | Mapping[str, object] | None = None,
) -> ModelSpec:
    """Register a user-defined compliance model under `name` (the toolbox's tauElastic,
    eqPres2Refs and InitParams, without recompiling asr).

    elastic: either a C function pointer of type ``asr_elastic_fn`` (a cffi cdata, fast path), or
        a Python callable ``elastic(q, qd, th1, th2, th1d, th2d, **params) -> mapping`` with keys
        ``tau1`` (N m on the link) and ``stiffness`` (-d tau_link/dq, N m/rad), optionally
        ``tau2``, ``damping``, ``load1``/``load2`` (torques on the motors, default -tau_i),
        ``kload1``/``kload2`` (their stiffness, used by the implicit motor update),
        ``cload1``/``cload2``, ``defl1``/``defl2`` (reals: NaN or inf is a ValueError naming
        it from compliance, and freezes that instance with status ASR_ERR_NONFINITE in a batch)
        and ``clamped`` (int 0, 1 or 2, or a bool: 0 or 1).
    refmap: a C ``asr_refmap_fn`` or a Python callable ``refmap(eq, preset, **params) ->
        (th1, th2)``, both finite; default th = eq +/- preset. A C pointer of any other type, or
        NULL, is a TypeError (C would call it blindly).
    params: ParamSpec of the model's own parameters, in the order C sees them; at most
        MAX_MODEL_PARAMS.
    nmotor: 1 or 2 dynamic motors. defaults: {common parameter name: default}.
    preset: a PresetSpec (or a dict of its fields): what the second reference means, its unit,
        the stiffness preset's kind and soft / stiff range (the dashboard's controls); default
        PresetSpec(): kind "ref", range [0, 1], soft 0.2, stiff 0.6, no unit.
    Exceptions raised by Python callables propagate out of the call that evaluated them (a
    batch's step or rollout, one compliance call), never out of another batch or thread's.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name: expected a non-empty str, got {name!r}")
    c_text(name, "name")
    c_text(doc, "doc")
    if name in _REGISTRY:
        raise ValueError(f"name: model {name!r} is already registered")
    if isinstance(nmotor, bool) or not isinstance(nmotor, numbers.Integral) or nmotor not in (1, 2):
        raise ValueError(f"nmotor: got {nmotor!r}, valid values 1 or 2")
    if not isinstance(kinematic_th2, (bool, np.bool_)):
        raise TypeError(f"kinematic_th2: expected True or False, got {kinematic_th2!r}")
    own = tuple(params)
    common = _common_specs(ffi.NULL)
    index = {p.name: k for k, p in enumerate(common)}
    names = _own_param_names(own, index)
    if preset is None:
        preset = PresetSpec()
    elif isinstance(preset, Mapping):
        preset = PresetSpec(**preset)
    elif not isinstance(preset, PresetSpec):
        raise TypeError(f"preset: expected a PresetSpec or a dict, got {type(preset).__name__}")
    for field in ("param", "below_param"):
        pname = getattr(preset, field)
        if pname is not None and pname not in names:
            raise ValueError(
                f"preset {field}: {pname!r} is not a parameter of the model; valid: {names}"
            )
    overrides = []
    for pname, value in (defaults or {}).items():
        if pname not in index:
            raise ValueError(f"defaults: unknown common parameter {pname!r}; valid: {list(index)}")
        v = common[index[pname]].check(value, "defaults: ")
        if v.ndim:
            raise ValueError(f"defaults: {pname}: expected one number, got shape {v.shape}")
        overrides.append((index[pname], float(v)))
    c_elastic, c_refmap, python = callbacks(elastic, refmap, names)
    keep = [elastic, refmap]  # a C function's cdata may own what it points into
    cdef = _build_cdef(name, doc, nmotor, kinematic_th2, own, overrides, preset, keep)
    cdef.elastic, cdef.refmap = c_elastic, c_refmap
    # a Python model's user pointer is set in each Binding's copy; this one stays NULL
    spec = _spec_of(cdef)
    _REGISTRY[name] = RegisteredModel(spec=spec, cdef=cdef, python=python, keep=keep)
    return spec


def _own_param_names(params: tuple[ParamSpec, ...], index: Mapping[str, int]) -> list[str]:
    """The names of a user model's own ParamSpecs, checked: type, count, no clash with each
    other or with a common parameter (index: {common name: k})."""
    for p in params:
        if not isinstance(p, ParamSpec):
            raise TypeError(f"params: expected ParamSpec items, got {type(p).__name__}")
    if len(params) > MAX_MODEL_PARAMS:
        raise ValueError(
            f"params: {len(params)} parameters given, at most {MAX_MODEL_PARAMS} "
            f"(a joint holds {MAX_MODEL_PARAMS + len(index)}: the {len(index)} "
            "common ones and the model's own)"
        )
    names = [p.name for p in params]
    clash = sorted(set(names) & set(index)) or sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise ValueError(
            f"params: parameter name(s) {clash} repeat a common joint parameter "
            "or each other; choose distinct names"
        )
    return names


def unregister_model(name: str) -> None:
    """Remove a user-registered model (batches created with it keep their own reference)."""
    if name in BUILTIN_MODELS:
        raise ValueError(f"name: {name!r} is a built-in model and cannot be removed")
    get_model(name)
    del _REGISTRY[name]
