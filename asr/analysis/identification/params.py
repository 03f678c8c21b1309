"""The parameters asr.identify fits or holds: names resolved against the joints' models,
start values and bounds checked, and the search variable of each (log or scaled value)."""

import dataclasses
import math

import numpy as np

from asr.common import validate as V


@dataclasses.dataclass(frozen=True)
class _Param:
    """A fitted parameter: its key, joint index, asr name and spec, and how it is searched:
    u = log(value) for a parameter valid only >= 0 (scales of decades, never 0 or below), else
    u = value / scale."""

    key: str
    joint: int
    name: str
    spec: object
    log: bool
    scale: float

    def to_u(self, value):
        return np.log(value) if self.log else value / self.scale

    def from_u(self, u):
        return np.exp(u) if self.log else u * self.scale

    def dvalue_du(self, value):
        return value if self.log else self.scale

    def u_bounds(self, lo, hi):
        """Bounds of u for the value bounds [lo, hi], open ends of the spec moved inside."""
        eps = 1e-12
        if self.log:
            return (
                math.log(lo) if lo > 0 else -np.inf,
                math.log(hi) - (eps if self.spec.hi_open else 0) if math.isfinite(hi) else np.inf,
            )
        return (
            lo / self.scale + (eps if self.spec.lo_open else 0),
            hi / self.scale - (eps if self.spec.hi_open else 0),
        )


def _split_key(key, joint, joint_names, what):
    """(joint index, parameter name) of "name" (joint `joint`) or "<joint>.<name>"."""
    if not isinstance(key, str) or not key:
        raise TypeError(f"{what}: parameter names must be non-empty str, got {key!r}")
    if "." not in key:
        return joint, key
    jname, _, name = key.partition(".")
    if joint_names is None or jname not in joint_names:
        valid = ", ".join(joint_names or ()) or "none (one joint: use plain names)"
        raise ValueError(f"{what}: {key!r} names joint {jname!r}; joints: {valid}")
    return joint_names.index(jname), name


def _resolve(keys, specs, joint, joint_names, what, own_only=False):
    """[(key, joint index, ParamSpec)] of parameter keys, checked against the joints' models."""
    out = []
    for key in keys:
        j, name = _split_key(key, joint, joint_names, what)
        spec = specs[j]
        names = [p.name for p in (spec.params if own_only else spec.all_params)]
        if name not in names:
            extra = (
                " (static data identify the spring's own parameters only)"
                if own_only and name in {p.name for p in spec.all_params}
                else ""
            )
            raise ValueError(
                f"{what}: {key!r} is not a parameter of model {spec.name!r}{extra}; "
                f"valid: {', '.join(names) or 'none'}"
            )
        out.append((key, j, spec.param(name)))
    return out


def fitted_params(params, x0, bounds, specs, joint, joint_names, start, own_only):
    """The fitted parameters (_Param list), their start values and value bounds (lo, hi)."""
    if isinstance(params, str):
        params = [params]
    params = list(params)
    if not params:
        raise ValueError("params: got no parameter names; name at least one to fit")
    if len(set(params)) != len(params):
        raise ValueError(f"params: repeated names in {params}")
    resolved = _resolve(params, specs, joint, joint_names, "params", own_only)
    x0 = dict(x0 or {})
    bounds = dict(bounds or {})
    for what, given in (("x0", x0), ("bounds", bounds)):
        stray = sorted(set(given) - set(params))
        if stray:
            raise ValueError(f"{what}: {stray} are not among the fitted params {params}")
    plist, values, limits = [], [], []
    for key, j, spec in resolved:
        if spec.integer:
            raise ValueError(f"params: {key!r} takes integer values; it cannot be fitted")
        value = float(spec.check(x0.get(key, start(j, spec)), "x0: "))
        lo, hi = bounds.get(key, (spec.lo, spec.hi))
        lo, hi = float(lo), float(hi)
        if not (max(lo, spec.lo) <= value <= min(hi, spec.hi)) or not lo < hi:
            raise ValueError(
                f"bounds: {key!r} got ({V.num(lo)}, {V.num(hi)}) with start "
                f"{V.num(value)}; need lo < start < hi inside the valid range "
                f"{spec.range_text}"
            )
        log = spec.lo >= 0 and value > 0
        plist.append(_Param(key, j, spec.name, spec, log, abs(value) or 1.0))
        values.append(value)
        limits.append((max(lo, spec.lo), min(hi, spec.hi)))
    return plist, np.array(values), limits


def fixed_params(fixed, plist, specs, joint, joint_names, own_only):
    """{joint index: {name: value}} of the held parameters, checked (never a fitted one)."""
    out = {}
    fitted = {(p.joint, p.name) for p in plist}
    for key, j, spec in _resolve(list(fixed or {}), specs, joint, joint_names, "fixed", own_only):
        if (j, spec.name) in fitted:
            raise ValueError(f"fixed: {key!r} is also among the fitted params")
        out.setdefault(j, {})[spec.name] = float(spec.check(fixed[key], "fixed: "))
    return out
