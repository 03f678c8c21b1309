"""The result of asr.identify: estimates, confidence intervals and fit statistics, its text
summary and its .json / .npz files (asr.analysis.identification re-exports it). Loading checks the
whole
file: anything malformed (not JSON, nested too deeply, a key missing, a value of the wrong type
or shape, NaN where a number must be finite) is a ValueError naming the file and the entry."""

import dataclasses
import json
import math
import os
import zipfile
import zlib

import numpy as np

from asr.common.files import atomic_write, parse_json, read_json

FORMAT = "asr.identification/1"
KINDS = ("static", "bench", "robot")
# the unit of each measured channel
UNITS = {"q": "rad", "tau": "N m"}
_WHAT = f"an identification result (format {FORMAT!r})"


@dataclasses.dataclass(frozen=True)
class Identification:
    """What `identify` found. Parameters are named as in the call ("k1", or "joint2.k1" for
    another joint of a robot) and valued in their SI units (asr.models()[model] specs).

    estimates {name: value}; stderr {name: standard error}; ci95 {name: (lo, hi)} 95 %
    confidence interval (Student's t); covariance (p, p) in `names` order (units: the product of
    the two parameters' units); initial {name: start value}.
    residual_rms {channel: RMS of simulated minus measured}, q in rad, tau in N m.
    cost: 0.5 * sum of squared weighted residuals at the solution; m residuals, dof = m - p.
    nfev / njev: residual / Jacobian evaluations; success, message: scipy's least_squares.
    kind: "static", "bench" or "robot"; source: the model name or "robot/variant".
    """

    names: tuple[str, ...]
    estimates: dict[str, float]
    stderr: dict[str, float]
    ci95: dict[str, tuple[float, float]]
    covariance: np.ndarray
    initial: dict[str, float]
    residual_rms: dict[str, float]
    cost: float
    m: int
    dof: int
    nfev: int
    njev: int
    success: bool
    message: str
    kind: str
    source: str

    def summary(self):
        """A text table: estimate, standard error, 95 % interval and start of every parameter."""
        rows = [
            f"identification ({self.kind}, {self.source}): {self.m} residuals, "
            f"{len(self.names)} parameters, {self.nfev} evaluations, "
            f"{'converged' if self.success else 'NOT converged'}: {self.message}",
            f"{'parameter':>14s} {'estimate':>12s} {'stderr':>11s} {'95% CI low':>12s} "
            f"{'95% CI high':>12s} {'start':>11s}",
        ]
        for n in self.names:
            lo, hi = self.ci95[n]
            rows.append(
                f"{n:>14s} {self.estimates[n]:12.6g} {self.stderr[n]:11.4g} {lo:12.6g} "
                f"{hi:12.6g} {self.initial[n]:11.4g}"
            )
        rows.append(
            "residual RMS: "
            + ", ".join(f"{c} {v:.4g} {UNITS[c]}" for c, v in self.residual_rms.items())
        )
        return "\n".join(rows)

    def to_dict(self):
        """A JSON-able dict of every field (non-finite numbers as None), plus "format"."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["names"] = list(self.names)
        d["covariance"] = [[_json(x) for x in row] for row in np.asarray(self.covariance)]
        for key in ("estimates", "stderr", "initial", "residual_rms"):
            d[key] = {k: _json(v) for k, v in d[key].items()}
        d["ci95"] = {k: [_json(lo), _json(hi)] for k, (lo, hi) in self.ci95.items()}
        d["format"] = FORMAT
        return d

    def save(self, path):
        """Write to `path`: .json (to_dict) or .npz (the arrays estimates, stderr, ci95 (p, 2),
        covariance, initial in `names` order, and the whole to_dict as the JSON string "meta"),
        atomically. Returns the path."""
        path = os.fspath(path)
        if path.endswith(".json"):
            with atomic_write(path, "w") as f:
                json.dump(self.to_dict(), f, indent=1)
                f.write("\n")
        elif path.endswith(".npz"):
            with atomic_write(path) as f:
                np.savez(
                    f,
                    names=np.array(self.names),
                    covariance=self.covariance,
                    estimates=self._column(self.estimates),
                    stderr=self._column(self.stderr),
                    ci95=np.array([self.ci95[n] for n in self.names]).reshape(-1, 2),
                    initial=self._column(self.initial),
                    meta=json.dumps(self.to_dict()),
                )
        else:
            raise ValueError(f"path: got {path!r}; valid endings .json and .npz")
        return path

    def _column(self, values):
        return np.array([values[n] for n in self.names])

    @classmethod
    def load(cls, path):
        """Read what save() wrote (.json or .npz). ValueError naming the file and what is wrong
        for a file that is not such a result (never a KeyError or TypeError); OSError
        (FileNotFoundError, ...) for one that cannot be read. Non-finite numbers, written as
        null, come back as NaN."""
        path = os.fspath(path)
        d = _read_npz_meta(path) if path.endswith(".npz") else read_json(path, _WHAT)
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            shown = _shown(d.get("format")) if isinstance(d, dict) else f"a JSON {_kind(d)}"
            raise ValueError(
                f"{path}: not an asr identification result (format {FORMAT!r}; got {shown})"
            )
        try:
            return cls(**_fields(d))
        except _Invalid as exc:
            raise ValueError(f"{path}: {exc}; it is not {_WHAT} as asr writes it") from None


class _Invalid(Exception):
    """An entry of a result file that is not what save() writes."""


def _read_npz_meta(path):
    """The parsed JSON of an .npz result's "meta" (a string array); ValueError naming the file
    for a file that is not an .npz (np.load never unpickles: allow_pickle is off) or whose meta
    is missing or not JSON."""
    try:
        z = np.load(path)
        if not hasattr(z, "files"):  # one array (an .npy file), not an archive
            raise ValueError("an .npy array, not an .npz archive")
        with z:
            meta = z["meta"] if "meta" in z.files else None
    except (ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:  # OSError: unreadable
        raise ValueError(f"{path}: not an .npz file ({exc}); it is not {_WHAT}") from None
    if meta is None or meta.dtype.kind != "U" or meta.shape != ():
        raise ValueError(f"{path}: no 'meta' string array; it is not {_WHAT}")
    return parse_json(str(meta), f"{path} (its 'meta')", _WHAT)


def _shown(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value):
    if isinstance(value, bool) or value is None:
        return "true/false" if value is not None else "null"
    return {dict: "object", list: "array", str: "string"}.get(type(value), "number")


def _number(value, entry, null=False, lo=-math.inf):
    """float of a JSON number >= lo (null: NaN, where allowed)."""
    if value is None and null:
        return math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            x = float(value)
        except OverflowError:
            x = math.inf
        if math.isfinite(x) and x >= lo:
            return x
    expected = "a finite number" + (f" >= {lo:g}" if lo > -math.inf else "")
    raise _Invalid(f"{entry}: got {_shown(value)}, expected {expected}{' or null' * null}")


def _count(value, entry, lo=0):
    if isinstance(value, int) and not isinstance(value, bool) and value >= lo:
        return value
    raise _Invalid(f"{entry}: got {_shown(value)}, expected a whole number >= {lo}")


def _of_type(value, entry, kind):
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = {dict: "an object", list: "an array", str: "a string", bool: "true or false"}
        raise _Invalid(f"{entry}: got {_shown(value)}, expected {names[kind]}")
    return value


def _per_name(d, key, names, convert):
    """{name: convert(value, entry)} of the object d[key], whose keys must be `names`."""
    values = _of_type(d[key], key, dict)
    if set(values) != set(names):
        raise _Invalid(
            f"{key}: has entries {sorted(values)}, expected one per parameter {list(names)}"
        )
    return {n: convert(values[n], f"{key}[{n!r}]") for n in names}


def _pair(value, entry):
    if not isinstance(value, list) or len(value) != 2:
        raise _Invalid(f"{entry}: got {_shown(value)}, expected [low, high]")
    return _number(value[0], f"{entry}[0]", null=True), _number(value[1], f"{entry}[1]", null=True)


def _fields(d):
    """The keyword arguments of Identification from a loaded file's dict, every entry checked."""
    missing = [f.name for f in dataclasses.fields(Identification) if f.name not in d]
    if missing:
        raise _Invalid(f"missing {', '.join(missing)}")
    names = _of_type(d["names"], "names", list)
    for k, n in enumerate(names):
        _of_type(n, f"names[{k}]", str)
    if not names or len(set(names)) != len(names):
        raise _Invalid(f"names: got {_shown(names)}, expected distinct parameter names")
    p = len(names)
    finite = lambda v, e: _number(v, e)  # noqa: E731
    nonnegative = lambda v, e: _number(v, e, null=True, lo=0.0)  # noqa: E731
    rows = _of_type(d["covariance"], "covariance", list)
    if len(rows) != p or any(not isinstance(r, list) or len(r) != p for r in rows):
        raise _Invalid(f"covariance: expected {p} rows of {p} numbers (one per parameter)")
    rms = _of_type(d["residual_rms"], "residual_rms", dict)
    if not rms or set(rms) - set(UNITS):
        raise _Invalid(f"residual_rms: has {sorted(rms)}, expected channels of {list(UNITS)}")
    m = _count(d["m"], "m", lo=p + 1)
    if _count(d["dof"], "dof") != m - p:
        raise _Invalid(f"dof: got {_shown(d['dof'])}, expected m - parameters = {m - p}")
    if d["kind"] not in KINDS:
        raise _Invalid(f"kind: got {_shown(d['kind'])}, expected one of {', '.join(KINDS)}")
    return {
        "names": tuple(names),
        "estimates": _per_name(d, "estimates", names, finite),
        "stderr": _per_name(d, "stderr", names, nonnegative),
        "ci95": _per_name(d, "ci95", names, _pair),
        "covariance": np.array(
            [
                [_number(x, f"covariance[{i}][{j}]", null=True) for j, x in enumerate(r)]
                for i, r in enumerate(rows)
            ]
        ).reshape(p, p),
        "initial": _per_name(d, "initial", names, finite),
        "residual_rms": {c: _number(v, f"residual_rms[{c!r}]", lo=0.0) for c, v in rms.items()},
        "cost": _number(d["cost"], "cost", lo=0.0),
        "m": m,
        "dof": m - p,
        "nfev": _count(d["nfev"], "nfev"),
        "njev": _count(d["njev"], "njev"),
        "success": _of_type(d["success"], "success", bool),
        "message": _of_type(d["message"], "message", str),
        "kind": d["kind"],
        "source": _of_type(d["source"], "source", str),
    }


def _json(x):
    x = float(x)
    return x if math.isfinite(x) else None
