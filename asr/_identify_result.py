"""The result of asr.identify: estimates, confidence intervals and fit statistics, its text
summary and its .json / .npz files (asr.identification re-exports it)."""

import dataclasses
import json
import math
import os

import numpy as np

from asr._files import atomic_write

FORMAT = "asr.identification/1"
# the unit of each measured channel
_UNITS = {"q": "rad", "tau": "N m"}


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
            + ", ".join(f"{c} {v:.4g} {_UNITS[c]}" for c, v in self.residual_rms.items())
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
        """Read what save() wrote (.json or .npz)."""
        path = os.fspath(path)
        if path.endswith(".npz"):
            with np.load(path) as z:
                d = json.loads(str(z["meta"]))
        else:
            with open(path) as f:
                d = json.load(f)
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError(
                f"path: {path!r} is not an asr identification result (format {FORMAT!r})"
            )
        num = lambda v: math.nan if v is None else float(v)  # noqa: E731 - JSON null is NaN
        kw = {f.name: d[f.name] for f in dataclasses.fields(cls)}
        kw["names"] = tuple(d["names"])
        kw["covariance"] = np.array([[num(x) for x in row] for row in d["covariance"]])
        for key in ("estimates", "stderr", "initial", "residual_rms"):
            kw[key] = {k: num(v) for k, v in d[key].items()}
        kw["ci95"] = {k: (num(lo), num(hi)) for k, (lo, hi) in d["ci95"].items()}
        return cls(**kw)


def _json(x):
    x = float(x)
    return x if math.isfinite(x) else None
