"""Compliance models: their parameter specs, pure-function evaluation and user-defined models.

Built-in models live in C (csrc/core/model_*.c). Users add models without recompiling asr, either as
a C function pointer (fast path, e.g. from their own cffi module) or as a Python callable (slow
path, called once per joint and sub-step while the GIL is held; exceptions propagate).
"""

import dataclasses
import html
import numbers
from collections.abc import Mapping

import numpy as np

from asr import _validate as V
from asr._ffi import ffi, lib
from asr._model_callbacks import OUT_NAMES, Binding, PythonModel, callbacks
from asr.errors import raise_for_status

_INF = float("inf")
MAX_MODEL_PARAMS = lib.asr_model_max_params()  # own parameters of a model (the core's limit)


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One parameter: name, default, unit, valid range and meaning."""

    name: str
    default: float
    lo: float = -_INF
    hi: float = _INF
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False
    unit: str = ""
    group: str = "spring"
    doc: str = ""

    def __post_init__(self):
        where = f"ParamSpec {self.name!r}" if isinstance(self.name, str) else "ParamSpec"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(
                f"{where}: name must be a Python identifier (it is passed as a "
                f"keyword argument), got {self.name!r}"
            )
        for field in ("unit", "group", "doc"):
            c_text(getattr(self, field), f"{where}: {field}")
        for field in ("default", "lo", "hi"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value:
                raise ValueError(f"{where}: {field} must be a real number, got {value!r}")
        if not self.lo <= self.hi:
            raise ValueError(f"{where}: lo = {self.lo!r} > hi = {self.hi!r}; valid: lo <= hi")
        if not self.valid(self.default):
            raise ValueError(
                f"{where}: default {self.default!r} outside its valid range {self.range_text}"
            )

    @property
    def range_text(self):
        """The valid range in interval notation, e.g. '(0, inf)'."""
        lo = "[" if not self.lo_open else "("
        hi = "]" if not self.hi_open else ")"
        text = f"{lo}{_fmt(self.lo)}, {_fmt(self.hi)}{hi}"
        return text + (" (integer)" if self.integer else "")

    def valid(self, values):
        """Boolean mask of the values inside the range: the C core's rule (asr_param_valid),
        the one the batch applies, so Python never disagrees with it."""
        v = np.asarray(values, dtype=np.float64)
        c = ffi.new(
            "asr_param_spec*",
            {
                "lo": self.lo,
                "hi": self.hi,
                "lo_open": self.lo_open,
                "hi_open": self.hi_open,
                "integer": self.integer,
            },
        )
        return np.array([bool(lib.asr_param_valid(c, x)) for x in v.flat], dtype=bool).reshape(
            v.shape
        )

    def check(self, values, where=""):
        """values as float64 if all are valid, else ValueError naming parameter, value, range."""
        v = V.real_array(values, self.name)
        ok = self.valid(v)
        if not ok.all():
            bad = v[~ok].flat[0] if v.ndim else v.item()
            unit = f" {self.unit}" if self.unit else ""
            raise ValueError(
                f"{where}{self.name}: got {V.num(bad)}, valid range {self.range_text}{unit}"
            )
        return v


def c_text(text, where):
    """text, a str that C can hold: no NUL character (C would cut the string there)."""
    if not isinstance(text, str):
        raise TypeError(f"{where}: expected a str, got {type(text).__name__}")
    if "\0" in text:
        raise ValueError(
            f"{where}: contains a NUL character at index {text.index(chr(0))} "
            f"(C strings end there), got {text[:40]!r}"
        )
    return text


def _fmt(x):
    return "inf" if x == _INF else "-inf" if x == -_INF else f"{x:g}"


def _spec_from_c(c):
    return ParamSpec(
        name=ffi.string(c.name).decode(),
        default=getattr(c, "def"),
        lo=c.lo,
        hi=c.hi,
        lo_open=bool(c.lo_open),
        hi_open=bool(c.hi_open),
        integer=bool(c.integer),
        unit=ffi.string(c.unit).decode(),
        group=ffi.string(c.group).decode(),
        doc=ffi.string(c.doc).decode(),
    )


_PRESET_KINDS = {
    "none": lib.ASR_PRESET_NONE,
    "ref": lib.ASR_PRESET_REF,
    "param": lib.ASR_PRESET_PARAM,
}  # asr_preset_kind


@dataclasses.dataclass(frozen=True)
class PresetSpec:
    """What a model's second reference (preset) means and its stiffness preset.

    kind: "ref" (the second reference of modes 3 and 6), "param" (a spring parameter, `param`,
    set directly: single-motor SEAs) or "none" (no stiffness command).
    lo, hi: the preset range offered; soft, stiff: the soft and stiff presets, in `unit`.
    below_param: a model parameter bounding the second reference from above, open: the reference
    must lie in [lo, that parameter) (AwAS-II: pivot s in [0, L)).
    """

    kind: str = "ref"
    lo: float = 0.0
    hi: float = 1.0
    soft: float = 0.2
    stiff: float = 0.6
    unit: str = ""
    meaning: str = "preset"
    param: str | None = None
    below_param: str | None = None

    def __post_init__(self):
        if self.kind not in _PRESET_KINDS:
            raise ValueError(f"preset kind: got {self.kind!r}, valid: {', '.join(_PRESET_KINDS)}")
        for field in ("lo", "hi", "soft", "stiff"):
            value = getattr(self, field)
            if (
                isinstance(value, bool)
                or not isinstance(value, numbers.Real)
                or not np.isfinite(value)
            ):
                raise ValueError(f"preset {field}: must be a finite real number, got {value!r}")
        if not self.lo <= min(self.soft, self.stiff) <= max(self.soft, self.stiff) <= self.hi:
            raise ValueError(
                f"preset: soft {self.soft!r} and stiff {self.stiff!r} must lie in "
                f"[lo, hi] = [{self.lo!r}, {self.hi!r}]"
            )
        c_text(self.unit, "preset unit")
        c_text(self.meaning, "preset meaning")
        if (self.kind == "param") != (self.param is not None):
            raise ValueError(
                "preset param: name the spring parameter for kind 'param' (and "
                f"only then), got kind {self.kind!r}, param {self.param!r}"
            )

    def as_dict(self):
        """The JSON form: kind, lo, hi, soft, stiff, unit, meaning (and param for kind 'param')."""
        d = dict(
            kind=self.kind,
            lo=self.lo,
            hi=self.hi,
            soft=self.soft,
            stiff=self.stiff,
            unit=self.unit,
            meaning=self.meaning,
        )
        if self.param is not None:
            d["param"] = self.param
        return d


def preset_table(specs=None):
    """Markdown table of the second reference and stiffness preset of every model in `specs`
    ({name: ModelSpec}, default asr.models()); docs/models.md holds this table."""
    lines = [
        "| model | second reference | preset kind | preset range | soft / stiff | unit | "
        "reference valid in |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, spec in (specs or models()).items():
        p = spec.preset
        kind = f"param `{p.param}`" if p.kind == "param" else p.kind
        none = p.kind == "none"
        rng = "" if none else f"[{_fmt(p.lo)}, {_fmt(p.hi)}]"
        soft_stiff = "" if none else f"{_fmt(p.soft)} / {_fmt(p.stiff)}"
        valid = f"[{_fmt(p.lo)}, {p.below_param})" if p.below_param else ""
        lines.append(
            f"| `{name}` | {p.meaning} | {kind} | {rng} | {soft_stiff} | {p.unit} | {valid} |"
        )
    return "\n".join(lines)


def _c_str(p):
    return ffi.string(p).decode() if p != ffi.NULL else None


def _preset_from_c(c):
    kinds = {v: k for k, v in _PRESET_KINDS.items()}
    return PresetSpec(
        kind=kinds[c.kind],
        lo=c.lo,
        hi=c.hi,
        soft=c.soft,
        stiff=c.stiff,
        unit=_c_str(c.unit) or "",
        meaning=_c_str(c.meaning) or "",
        param=_c_str(c.param),
        below_param=_c_str(c.below_param),
    )


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A compliance model: its own parameters, and the common joint parameters (motor, friction,
    controllers, electrical drive, link) with this model's defaults."""

    name: str
    doc: str
    nmotor: int
    kinematic_th2: bool
    params: tuple[ParamSpec, ...]
    common: tuple[ParamSpec, ...]
    preset: PresetSpec = PresetSpec()

    @property
    def all_params(self):
        """Common parameters first, then the model's own: the order of a joint's parameters."""
        return self.common + self.params

    def param(self, name):
        """The spec named `name`; ValueError listing the valid names otherwise."""
        for p in self.all_params:
            if p.name == name:
                return p
        raise ValueError(
            f"unknown parameter {name!r} for model {self.name!r}; valid: "
            + ", ".join(p.name for p in self.all_params)
        )

    def defaults(self):
        """{name: default} of every parameter."""
        return {p.name: p.default for p in self.all_params}


@dataclasses.dataclass
class _Model:
    """A registered model: its spec and the C definition the core uses."""

    spec: ModelSpec
    cdef: object  # asr_model_def* (built-in: the static C definition)
    python: PythonModel | None = None
    keep: list = dataclasses.field(default_factory=list)

    def bind(self, finite=False):
        """The C definition for one user of the model: a batch, or one evaluation (finite:
        see Binding)."""
        return Binding(self, finite)


def _common_specs(cdef):
    specs = []
    for k in range(lib.ASR_NCOMMON):
        c = lib.asr_common_param_spec(k)
        base = _spec_from_c(c)
        specs.append(dataclasses.replace(base, default=lib.asr_common_param_default(cdef, k)))
    return tuple(specs)


def _spec_of(cdef):
    return ModelSpec(
        name=ffi.string(cdef.name).decode(),
        doc=ffi.string(cdef.doc).decode() if cdef.doc != ffi.NULL else "",
        nmotor=cdef.nmotor,
        kinematic_th2=bool(cdef.kinematic_th2),
        params=tuple(_spec_from_c(cdef.params[k]) for k in range(cdef.nparam)),
        common=_common_specs(cdef),
        preset=_preset_from_c(cdef.ref2),
    )


_REGISTRY: dict[str, _Model] = {}


def _load_builtins():
    for m in range(lib.asr_model_count()):
        cdef = lib.asr_model_get(m)
        spec = _spec_of(cdef)
        _REGISTRY[spec.name] = _Model(spec=spec, cdef=cdef)


_load_builtins()
BUILTIN_MODELS = tuple(_REGISTRY)


class ModelTable(dict):
    """{name: ModelSpec}, a plain dict whose repr is a one-row-per-model summary (the full specs,
    with every common parameter, run to tens of thousands of characters)."""

    _HEAD = ("name", "motors", "params", "preset (kind: range, unit)", "preset meaning")

    def _rows(self):
        return [
            (
                name,
                str(spec.nmotor),
                str(len(spec.params)),
                _preset_summary(spec.preset),
                spec.preset.meaning,
            )
            for name, spec in self.items()
        ]

    def __repr__(self):
        rows = [self._HEAD] + self._rows()
        widths = [max(len(r[c]) for r in rows) for c in range(len(self._HEAD) - 1)]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(r, widths)) + "  " + r[-1] for r in rows
        ]
        example = "qbmove_advanced" if "qbmove_advanced" in self else next(iter(self), "sea")
        return "\n".join(
            [f"asr.models(): {len(self)} compliance models (a dict {{name: ModelSpec}})"]
            + lines
            + [
                f"details of one model: asr.models()[{example!r}] (.params: its own parameters "
                "with defaults, units and ranges; .preset; .common: motor and controller)"
            ]
        )

    __str__ = __repr__

    def _repr_html_(self):
        def row(cells, tag):
            return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"

        body = "".join(row(r, "td") for r in self._rows())
        return (
            f"<table>{row(self._HEAD, 'th')}{body}</table><p>details of one model: "
            "<code>asr.models()[name]</code></p>"
        )


def _preset_summary(p):
    """A PresetSpec in one cell, e.g. 'ref: [0, 0.045] m, < L' or 'param k: [0, 1000] N m/rad'."""
    if p.kind == "none":
        return "none"
    what = f"param {p.param}" if p.kind == "param" else "ref"
    below = f", < {p.below_param}" if p.below_param else ""
    return f"{what}: [{_fmt(p.lo)}, {_fmt(p.hi)}]" + (f" {p.unit}" if p.unit else "") + below


def models():
    """{name: ModelSpec} of every available model, built-in and user-registered: a dict whose
    repr is a compact table (name, motors, number of own parameters, preset)."""
    return ModelTable((name, m.spec) for name, m in _REGISTRY.items())


def get_model(name):
    """The registered model `name`; ValueError listing the valid names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"model: expected a model name (str), got {type(name).__name__}")
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"model: unknown model {name!r}; valid: {', '.join(_REGISTRY)}") from None


# ---------------------------------------------------------------- user-defined models


_IN_FIELDS = ("q", "qd", "th1", "th2", "th1d", "th2d")


_NUMPY_OF_C = {"double": "f8", "int": "i4"}


def _struct_dtype(ctype, fields):
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


_IN_DTYPE = _struct_dtype("asr_elastic_in", _IN_FIELDS)
_OUT_DTYPE = _struct_dtype("asr_elastic_out", OUT_NAMES)


def _build_cdef(name, doc, nmotor, kinematic_th2, params, defaults, preset, keep):
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
    name,
    elastic,
    refmap=None,
    *,
    params=(),
    nmotor=2,
    kinematic_th2=False,
    defaults=None,
    doc="",
    preset=None,
):
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
    params = tuple(params)
    common = _common_specs(ffi.NULL)
    index = {p.name: k for k, p in enumerate(common)}
    names = _own_param_names(params, index)
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
    cdef = _build_cdef(name, doc, nmotor, kinematic_th2, params, overrides, preset, keep)
    cdef.elastic, cdef.refmap = c_elastic, c_refmap
    # a Python model's user pointer is set in each Binding's copy; this one stays NULL
    spec = _spec_of(cdef)
    _REGISTRY[name] = _Model(spec=spec, cdef=cdef, python=python, keep=keep)
    return spec


def _own_param_names(params, index):
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


def unregister_model(name):
    """Remove a user-registered model (batches created with it keep their own reference)."""
    if name in BUILTIN_MODELS:
        raise ValueError(f"name: {name!r} is a built-in model and cannot be removed")
    get_model(name)
    del _REGISTRY[name]


# ---------------------------------------------------------------- pure functions


@dataclasses.dataclass
class Compliance:
    """Compliance model outputs, each an array of the broadcast input shape.

    tau_link, tau1, tau2: link torque and the torques of springs 1 and 2 on the link, N m.
    stiffness: -d tau_link/dq, N m/rad. damping: -d tau_link/dqd, N m s/rad.
    load1, load2: torques on motors 1 and 2, N m. defl1, defl2: clamped deflections, rad.
    clamped: number of springs at their deflection limit (int).
    """

    tau_link: np.ndarray
    tau1: np.ndarray
    tau2: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    load1: np.ndarray
    load2: np.ndarray
    defl1: np.ndarray
    defl2: np.ndarray
    clamped: np.ndarray


def _model_params(model, params, shape):
    """The model's own parameters as an (n, nparam) array (pstride nparam) or one shared row."""
    spec = model.spec
    names = {p.name for p in spec.params}
    for name in params:
        if name not in names:
            raise ValueError(
                f"unknown parameter {name!r} for model {spec.name!r}; valid: "
                + (", ".join(sorted(names)) or "none")
            )
    columns, varying = [], False
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


def _evaluate(model, fn, *args):
    """Run C evaluation fn(cdef, *args) with this call's own binding of `model`, re-raising an
    exception its Python callbacks raised; returns the C status."""
    bound = model.bind(finite=True)
    st = fn(bound.cdef, *args)
    bound.raise_pending()
    return st


def compliance(model, q, theta1, theta2=0.0, *, qd=0.0, theta1_d=0.0, theta2_d=0.0, **params):
    """Evaluate compliance model `model` at link angle q (rad) and motor angles theta1, theta2
    (rad; for awas2 theta2 is the pivot position s in m). Inputs broadcast against each other and
    against array-valued parameters; velocities (rad/s) matter for damped models only.
    Returns a Compliance with arrays of the broadcast shape."""
    m = get_model(model)
    arrays = {
        "q": q,
        "theta1": theta1,
        "theta2": theta2,
        "qd": qd,
        "theta1_d": theta1_d,
        "theta2_d": theta2_d,
    }
    arrays = {k: V.finite(V.real_array(v, k), k) for k, v in arrays.items()}
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
    for field, key in zip(_IN_FIELDS, ("q", "qd", "theta1", "theta2", "theta1_d", "theta2_d")):
        inp[field] = np.broadcast_to(arrays[key], shape).reshape(-1)
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


def _first_bad(out, shape):
    """Index, in the broadcast shape, of the first point C marked bad (clamped = -1)."""
    idx = int(np.argmax(out["clamped"] == -1))
    return tuple(int(i) for i in np.unravel_index(idx, shape)) if shape else ()


def check_ref2(spec, ref2, bound, name):
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
            f"[{_fmt(pre.lo)}, {pre.below_param}) with {pre.below_param} = "
            f"{V.num(at)}{unit}"
        )


def _check_ref2_params(spec, ref2, params, name):
    """check_ref2 with the bounding parameter from keyword `params` or its default."""
    if spec.preset.below_param is None:
        return
    p = spec.param(spec.preset.below_param)
    check_ref2(spec, ref2, p.check(params.get(p.name, p.default), f"{spec.name}."), name)


def reference_map(model, equilibrium, preset, **params):
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
