"""The compliance model registry: the parameter, preset and model specs (ParamSpec, PresetSpec,
ModelSpec, read from the C definitions), the registered models (the built-in ones, loaded from the
C core at import, and the user-registered ones) and their listings (models(), preset_table).

asr.models re-exports the public names; import them from there.
"""

import dataclasses
import html
import numbers
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.validate import CData
from asr.core.ffi import ffi, lib
from asr.core.model_callbacks import Binding, PythonModel

_INF = float("inf")


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

    def __post_init__(self) -> None:
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
    def range_text(self) -> str:
        """The valid range in interval notation, e.g. '(0, inf)'."""
        lo = "[" if not self.lo_open else "("
        hi = "]" if not self.hi_open else ")"
        text = f"{lo}{fmt_bound(self.lo)}, {fmt_bound(self.hi)}{hi}"
        return text + (" (integer)" if self.integer else "")

    def valid(self, values: npt.ArrayLike) -> npt.NDArray[np.bool_]:
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

    def check(self, values: npt.ArrayLike, where: str = "") -> npt.NDArray[np.float64]:
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


def c_text(text: object, where: str) -> str:
    """text, a str that C can hold: no NUL character (C would cut the string there)."""
    if not isinstance(text, str):
        raise TypeError(f"{where}: expected a str, got {type(text).__name__}")
    if "\0" in text:
        raise ValueError(
            f"{where}: contains a NUL character at index {text.index(chr(0))} "
            f"(C strings end there), got {text[:40]!r}"
        )
    return text


def fmt_bound(x: float) -> str:
    return "inf" if x == _INF else "-inf" if x == -_INF else f"{x:g}"


def _spec_from_c(c: CData) -> ParamSpec:
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

    def __post_init__(self) -> None:
        if self.kind not in _PRESET_KINDS:
            raise ValueError(f"preset kind: got {self.kind!r}, valid: {', '.join(_PRESET_KINDS)}")
        for field in ("lo", "hi", "soft", "stiff"):
            value = getattr(self, field)
            if (
                isinstance(value, bool)
                or not isinstance(value, numbers.Real)
                or not np.isfinite(float(value))
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

    def as_dict(self) -> dict[str, str | float]:
        """The JSON form: kind, lo, hi, soft, stiff, unit, meaning (and param for kind 'param')."""
        d: dict[str, str | float] = dict(
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


def _c_str(p: CData) -> str | None:
    return ffi.string(p).decode() if p != ffi.NULL else None


def _preset_from_c(c: CData) -> PresetSpec:
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
    def all_params(self) -> tuple[ParamSpec, ...]:
        """Common parameters first, then the model's own: the order of a joint's parameters."""
        return self.common + self.params

    def param(self, name: str) -> ParamSpec:
        """The spec named `name`; ValueError listing the valid names otherwise."""
        for p in self.all_params:
            if p.name == name:
                return p
        raise ValueError(
            f"unknown parameter {name!r} for model {self.name!r}; valid: "
            + ", ".join(p.name for p in self.all_params)
        )

    def defaults(self) -> dict[str, float]:
        """{name: default} of every parameter."""
        return {p.name: p.default for p in self.all_params}


@dataclasses.dataclass
class RegisteredModel:
    """A registered model: its spec and the C definition the core uses."""

    spec: ModelSpec
    cdef: CData  # asr_model_def* (built-in: the static C definition)
    python: PythonModel | None = None
    keep: list[object] = dataclasses.field(default_factory=list)

    def bind(self, finite: bool = False) -> Binding:
        """The C definition for one user of the model: a batch, or one evaluation (finite:
        see Binding)."""
        return Binding(self, finite)


def _common_specs(cdef: CData) -> tuple[ParamSpec, ...]:
    specs = []
    for k in range(lib.ASR_NCOMMON):
        c = lib.asr_common_param_spec(k)
        base = _spec_from_c(c)
        specs.append(dataclasses.replace(base, default=lib.asr_common_param_default(cdef, k)))
    return tuple(specs)


def _spec_of(cdef: CData) -> ModelSpec:
    return ModelSpec(
        name=ffi.string(cdef.name).decode(),
        doc=ffi.string(cdef.doc).decode() if cdef.doc != ffi.NULL else "",
        nmotor=cdef.nmotor,
        kinematic_th2=bool(cdef.kinematic_th2),
        params=tuple(_spec_from_c(cdef.params[k]) for k in range(cdef.nparam)),
        common=_common_specs(cdef),
        preset=_preset_from_c(cdef.ref2),
    )


_REGISTRY: dict[str, RegisteredModel] = {}


def _load_builtins() -> None:
    for m in range(lib.asr_model_count()):
        cdef = lib.asr_model_get(m)
        spec = _spec_of(cdef)
        _REGISTRY[spec.name] = RegisteredModel(spec=spec, cdef=cdef)


_load_builtins()
BUILTIN_MODELS = tuple(_REGISTRY)


class ModelTable(dict[str, ModelSpec]):
    """{name: ModelSpec}, a plain dict whose repr is a one-row-per-model summary (the full specs,
    with every common parameter, run to tens of thousands of characters)."""

    _HEAD = ("name", "motors", "params", "preset (kind: range, unit)", "preset meaning")

    def _rows(self) -> list[tuple[str, ...]]:
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

    def __repr__(self) -> str:
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

    def _repr_html_(self) -> str:
        def row(cells: tuple[str, ...], tag: str) -> str:
            return "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"

        body = "".join(row(r, "td") for r in self._rows())
        return (
            f"<table>{row(self._HEAD, 'th')}{body}</table><p>details of one model: "
            "<code>asr.models()[name]</code></p>"
        )


def _preset_summary(p: PresetSpec) -> str:
    """A PresetSpec in one cell, e.g. 'ref: [0, 0.045] m, < L' or 'param k: [0, 1000] N m/rad'."""
    if p.kind == "none":
        return "none"
    what = f"param {p.param}" if p.kind == "param" else "ref"
    below = f", < {p.below_param}" if p.below_param else ""
    unit = f" {p.unit}" if p.unit else ""
    return f"{what}: [{fmt_bound(p.lo)}, {fmt_bound(p.hi)}]{unit}{below}"


def models() -> ModelTable:
    """{name: ModelSpec} of every available model, built-in and user-registered: a dict whose
    repr is a compact table (name, motors, number of own parameters, preset)."""
    return ModelTable((name, m.spec) for name, m in _REGISTRY.items())


def get_model(name: object) -> RegisteredModel:
    """The registered model `name`; ValueError listing the valid names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"model: expected a model name (str), got {type(name).__name__}")
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"model: unknown model {name!r}; valid: {', '.join(_REGISTRY)}") from None


def preset_table(specs: Mapping[str, ModelSpec] | None = None) -> str:
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
        rng = "" if none else f"[{fmt_bound(p.lo)}, {fmt_bound(p.hi)}]"
        soft_stiff = "" if none else f"{fmt_bound(p.soft)} / {fmt_bound(p.stiff)}"
        valid = f"[{fmt_bound(p.lo)}, {p.below_param})" if p.below_param else ""
        lines.append(
            f"| `{name}` | {p.meaning} | {kind} | {rng} | {soft_stiff} | {p.unit} | {valid} |"
        )
    return "\n".join(lines)
