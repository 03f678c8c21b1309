"""Parameter identification from data: fit a joint's parameters by nonlinear least squares.

>>> res = identify("qbmove_advanced", {"q": q, "theta1": th1, "theta2": th2, "tau": tau},
...                ["k1", "a1", "k2", "a2"])
>>> res.estimates["k1"], res.ci95["k1"]
>>> print(res.summary())

Three kinds of data (docs/identification.md has the formats and the method):

    "static"  torque-deflection samples (M,): q, theta1, theta2 (rad; awas2: the pivot, m) and
              the measured link torque tau (N m); residual asr.compliance(...).tau_link - tau,
              every parameter set of a Jacobian in ONE vectorised call.
    "bench"   an actuator alone (asr.Batch, no MuJoCo) with the link prescribed: references
              refs (steps, 2), link angles q (steps,) rad and velocities qd (steps,) rad/s held
              during step k, and the link torque tau (steps,) N m recorded after step k.
    "robot"   rollouts of a robot (asr.Sim): references refs (steps, J, 2) and the link angles
              q (steps, J) rad measured after every step (optionally link torques tau
              (steps, J) N m); the residual is the simulated minus the measured trajectory.

The finite-difference Jacobian of a rollout is ONE batched rollout whose p + 1 instances are the
point and its p perturbations (asr guarantees a batch equals its single runs), so an iteration
costs about one rollout of p + 1 instances rather than p + 1 rollouts.

Confidence intervals come from the Jacobian J of the residuals at the solution (parameters in
their SI units): cov = s^2 (J^T J)^-1, s^2 = (residual sum of squares) / (m - p), m residuals
and p parameters; stderr = sqrt(diag(cov)); ci95 = estimate +/- t_{0.975, m - p} stderr
(Student's t). They are exact for a model linear in its parameters with independent Gaussian
noise of one variance, and first-order (asymptotic) otherwise.
"""

import dataclasses
import json
import math
import os

import numpy as np

from asr import _validate as V
from asr._files import atomic_write
from asr._optional import need
from asr.batch import Batch, Joint
from asr.models import compliance, get_model

KINDS = ("static", "bench", "robot")
FORMAT = "asr.identification/1"
# the measured channel of each data key and what the simulation records for it
_UNITS = {"q": "rad", "tau": "N m"}
_RECORD = {"q": "q", "tau": "tau_link"}
_PENALTY = 1e6  # residual, in noise standard deviations, of a sample of a diverged rollout


# ---------------------------------------------------------------- the result


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


# ---------------------------------------------------------------- data in


def load_data(data):
    """The data as {key: float64 array}: a dict of arrays, an .npz, a .csv with a header row
    naming the columns (a column "<key>_<j>" is joint j's column of <key>), or a ROS bag (a
    .bag / .mcap file or a rosbag2 folder, read by asr.ros.bags; instance 0, its fields
    q, qd, tau_joint -> tau, th1 -> theta1, th2 -> theta2, ref1 / ref2 -> refs, t)."""
    if isinstance(data, dict):
        return {k: v for k, v in data.items()}
    if not isinstance(data, (str, os.PathLike)):
        raise TypeError(
            f"data: expected a dict of arrays or a path (.npz, .csv, ROS bag), got "
            f"{type(data).__name__}"
        )
    path = os.fspath(data)
    if not os.path.exists(path):
        raise ValueError(f"data: {path!r} does not exist")
    if path.endswith(".npz"):
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    if path.endswith(".csv"):
        return _read_csv(path)
    if path.endswith((".bag", ".mcap")) or os.path.isdir(path):
        return _read_bag(path)
    raise ValueError(
        f"data: got {path!r}; valid: a dict, .npz, .csv, .bag, .mcap or a rosbag2 folder"
    )


def _read_csv(path):
    table = np.genfromtxt(path, delimiter=",", names=True, dtype=np.float64, ndmin=1)
    if table.dtype.names is None:
        raise ValueError(f"data: {path!r} has no header row naming its columns")
    columns = {name: np.asarray(table[name], dtype=np.float64) for name in table.dtype.names}
    out, split = {}, {}
    for name, col in columns.items():
        key, _, j = name.rpartition("_")
        if key and j.isdigit():
            split.setdefault(key, {})[int(j)] = col
        else:
            out[name] = col
    for key, cols in split.items():
        if sorted(cols) != list(range(len(cols))):
            raise ValueError(
                f"data: {path!r} columns {key}_<j> must number the joints 0.."
                f"{len(cols) - 1}, got {sorted(cols)}"
            )
        out[key] = np.stack([cols[j] for j in range(len(cols))], axis=1)
    return out


def _read_bag(path):
    from asr.ros.bags import as_rollout, read_bag

    back = as_rollout(read_bag(path))
    out = {"t": back["t"]}
    for field, key in (
        ("q", "q"),
        ("qd", "qd"),
        ("tau_joint", "tau"),
        ("th1", "theta1"),
        ("th2", "theta2"),
    ):
        if field in back:
            out[key] = back[field][0]
    if "ref1" in back and "ref2" in back:
        out["refs"] = np.stack([back["ref1"][0], back["ref2"][0]], axis=-1)
    return out


def _array(data, key, shape=None, required=True):
    """data[key] as a finite float64 array of `shape` (None entries free); None if absent."""
    if key not in data:
        if required:
            raise ValueError(f"data: missing {key!r}; got keys {sorted(data)}")
        return None
    arr = V.finite(V.real_array(data[key], f"data[{key!r}]"), f"data[{key!r}]")
    if shape is not None:
        ok = arr.ndim == len(shape) and all(s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = (
                "("
                + ", ".join("any" if s is None else str(s) for s in shape)
                + ("," if len(shape) == 1 else "")
                + ")"
            )
            raise ValueError(f"data[{key!r}]: expected shape {want}, got {arr.shape}")
    return arr


def _per_joint(data, key, steps, nj, required=True):
    """A (steps, J) time series; (steps,) accepted for one joint."""
    arr = _array(data, key, required=required)
    if arr is not None and nj == 1 and arr.ndim == 1:
        arr = arr[:, None]
    if arr is not None and arr.shape != (steps, nj):
        raise ValueError(
            f"data[{key!r}]: expected shape ({steps}, {nj}) (steps, joints), got {arr.shape}"
        )
    return arr


def _refs(data, nj):
    """refs (steps, J, 2), from "refs" or the columns "ref1" and "ref2"."""
    if "refs" in data:
        r = _array(data, "refs")
        r = r[:, None] if nj == 1 and r.ndim == 2 else r
        if r.ndim != 3 or r.shape[1:] != (nj, 2) or r.shape[0] == 0:
            raise ValueError(f"data['refs']: expected shape (steps, {nj}, 2), got {r.shape}")
        return np.ascontiguousarray(r)
    if "ref1" not in data:
        raise ValueError(
            f"data: missing 'refs' (steps, J, 2) or 'ref1' / 'ref2' (steps, J); "
            f"got keys {sorted(data)}"
        )
    r1 = _array(data, "ref1")
    steps = r1.shape[0]
    r2 = _per_joint(data, "ref2", steps, nj, required=False)
    r1 = _per_joint(data, "ref1", steps, nj)
    return np.ascontiguousarray(np.stack([r1, np.zeros_like(r1) if r2 is None else r2], -1))


def _time_step(data, dt, steps, engine_dt=None):
    """The sample period, s: dt, data["dt"] or the spacing of data["t"]; equal to the robot's
    time step where one is given."""
    if dt is None and "dt" in data:
        dt = float(_array(data, "dt"))
    if dt is None and "t" in data:
        t = _array(data, "t", (steps,))
        if steps < 2:
            raise ValueError("data['t']: need at least two samples to give the time step")
        steps_t = np.diff(t)
        dt = float(np.mean(steps_t))
        if np.max(np.abs(steps_t - dt)) > 1e-6 * dt:
            raise ValueError("data['t']: samples must be evenly spaced (one per step)")
    if dt is None:
        if engine_dt is None:
            raise ValueError("dt: give the sample period (s) as dt=, data['dt'] or data['t']")
        return engine_dt
    dt = V.positive_float(dt, "dt")
    if engine_dt is not None and abs(dt - engine_dt) > 1e-6 * engine_dt:
        raise ValueError(
            f"dt: the data's sample period {V.num(dt)} s differs from the robot's "
            f"time step {V.num(engine_dt)} s; resample the data to one per step"
        )
    return dt


# ---------------------------------------------------------------- parameters


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


def _fitted(params, x0, bounds, specs, joint, joint_names, start, own_only):
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


def _fixed(fixed, plist, specs, joint, joint_names, own_only):
    """{joint index: {name: value}} of the held parameters, checked (never a fitted one)."""
    out = {}
    fitted = {(p.joint, p.name) for p in plist}
    for key, j, spec in _resolve(list(fixed or {}), specs, joint, joint_names, "fixed", own_only):
        if (j, spec.name) in fitted:
            raise ValueError(f"fixed: {key!r} is also among the fitted params")
        out.setdefault(j, {})[spec.name] = float(spec.check(fixed[key], "fixed: "))
    return out


# ---------------------------------------------------------------- residual evaluators
# Each takes P, (n, p) parameter sets in SI units, and returns {channel: (n, ...) simulated}.


def _static_model(model, data, plist, held):
    q = _array(data, "q", (None,))
    m = q.shape[0]
    arrays = {
        k: _array(data, k, (m,), required=k in ("theta1", "tau"))
        for k in ("theta1", "theta2", "qd", "theta1_d", "theta2_d", "tau")
    }
    inputs = {
        k: (0.0 if arrays[k] is None else arrays[k])
        for k in ("theta2", "qd", "theta1_d", "theta2_d")
    }

    def evaluate(P):
        values = {p.name: P[:, k][:, None] for k, p in enumerate(plist)}
        c = compliance(
            model,
            q,
            arrays["theta1"],
            inputs["theta2"],
            qd=inputs["qd"],
            theta1_d=inputs["theta1_d"],
            theta2_d=inputs["theta2_d"],
            **held,
            **values,
        )
        return {"tau": c.tau_link}

    return evaluate, {"tau": arrays["tau"]}


def _cached(make):
    """make(n) built once per instance count n (a batch of 1 for residuals, p + 1 for
    Jacobians)."""
    cache = {}

    def get(n):
        if n not in cache:
            cache[n] = make(n)
        return cache[n]

    return get


def _set_params(batch, plist, P):
    for k, p in enumerate(plist):
        batch.set_param(p.joint, p.name, P[:, k])


def _mark_diverged(outputs, batch):
    """outputs with the instances the batch froze (diverged, out of range) set to NaN: a
    trial point of the search may make a rollout diverge; its residuals become a penalty."""
    bad = np.asarray(batch.status) != 0
    for v in outputs.values():
        v[bad] = np.nan
    return outputs


def _bench_model(model, data, plist, held, mode, dt):
    q = _per_joint(data, "q", _array(data, "q").shape[0], 1)
    steps = q.shape[0]
    refs = _refs(data, 1)
    if refs.shape[0] != steps:
        raise ValueError(f"data['refs']: {refs.shape[0]} steps, data['q'] has {steps}")
    tau = _per_joint(data, "tau", steps, 1)
    dt = _time_step(data, dt, steps)
    qd = _per_joint(data, "qd", steps, 1, required=False)
    qd = np.gradient(q, dt, axis=0) if qd is None else qd
    batches = _cached(lambda n: Batch([Joint(model, mode, held.get(0, {}))], n))

    def evaluate(P):
        n = P.shape[0]
        batch = batches(n)
        _set_params(batch, plist, P)
        batch.reset(q[0], refs[0])
        tile = lambda a: np.ascontiguousarray(np.broadcast_to(a, (n,) + a.shape))  # noqa: E731
        out = batch.rollout(
            steps, dt, tile(refs), tile(q), tile(qd), record=("tau_link",), on_error="flag"
        )
        return _mark_diverged({"tau": out["tau_link"]}, batch)

    return evaluate, {"tau": tau}


def _robot_model(robot, data, plist, held, dt):
    from asr.sim import Sim

    make = lambda n: Sim(robot, n, params=held)  # noqa: E731
    probe = make(1)
    nj = probe.n_joints
    refs = _refs(data, nj)
    steps = refs.shape[0]
    measured = {
        "q": _per_joint(data, "q", steps, nj),
        "tau": _per_joint(data, "tau", steps, nj, required=False),
    }
    measured = {c: v for c, v in measured.items() if v is not None}
    q0 = _array(data, "q0", (nj,), required=False)
    _time_step(data, dt, steps, probe.dt)
    sims = _cached(lambda n: probe if n == 1 else make(n))
    record = tuple(_RECORD[c] for c in measured)

    def evaluate(P):
        n = P.shape[0]
        sim = sims(n)
        _set_params(sim.batch, plist, P)
        sim.reset(q0, refs[0])
        out = sim.rollout(
            steps, np.broadcast_to(refs, (n,) + refs.shape), record=record, on_error="flag"
        )
        return _mark_diverged({c: out[_RECORD[c]] for c in measured}, sim.batch)

    return evaluate, measured


# ---------------------------------------------------------------- the fit


def _sigmas(sigma, channels):
    """{channel: noise standard deviation} weighing each measured channel."""
    sigma = dict(sigma or {})
    stray = sorted(set(sigma) - set(channels))
    if stray:
        raise ValueError(f"sigma: {stray} are not channels of the data ({', '.join(channels)})")
    if len(channels) > 1 and set(sigma) != set(channels):
        raise ValueError(
            f"sigma: the data has channels {', '.join(channels)} in different "
            "units; give each channel's noise standard deviation, e.g. "
            + ", ".join(f"{c!r}: ... ({_UNITS[c]})" for c in channels)
        )
    return {c: V.positive_float(sigma.get(c, 1.0), f"sigma[{c!r}]") for c in channels}


def _covariance(jac, residual, p):
    """cov = s^2 (J^T J)^-1 with s^2 = SS / (m - p), by the SVD of J; inf where J is rank
    deficient (a combination of parameters the data does not determine)."""
    m = residual.size
    s2 = float(residual @ residual) / (m - p)
    _, sv, vt = np.linalg.svd(jac, full_matrices=False)
    tol = sv.max(initial=0.0) * max(jac.shape) * np.finfo(float).eps
    if np.sum(sv > tol) < p:
        return np.full((p, p), np.inf), False
    return s2 * (vt.T / sv**2) @ vt, True


def identify(
    model,
    data,
    params,
    *,
    robot=None,
    variant=None,
    joint=0,
    kind=None,
    mode=None,
    dt=None,
    x0=None,
    bounds=None,
    fixed=None,
    sigma=None,
    diff_step=1e-6,
    max_nfev=200,
    progress=False,
):
    """Fit parameters of `model` to `data` by nonlinear least squares
    (scipy.optimize.least_squares, trust-region reflective within the valid ranges).

    model: the compliance model name; with `robot`, None or the model of joint `joint`.
    data: a dict of arrays, an .npz, a .csv with a header row or a ROS bag (see load_data).
        static: q, theta1, theta2 (M,) rad (awas2 theta2: pivot, m), tau (M,) N m, optional
        qd, theta1_d, theta2_d (M,) rad/s. bench: refs (steps, 2) (or ref1, ref2 (steps,)),
        q (steps,) rad, optional qd (steps,) rad/s (default: the central difference of q),
        tau (steps,) N m, and dt / t. robot: refs (steps, J, 2), q (steps, J) rad after each
        step, optional tau (steps, J) N m, q0 (J,) rad start (default the robot's), t / dt.
    params: names to fit: "k1" (joint `joint`) or, on a robot, "<joint name>.k1".
    robot: an asr.Robot or robot name (variant: its variant) for kind "robot".
    kind: "static", "bench" or "robot"; None: robot if `robot`, bench if data has references,
        else static. mode: the bench joint's operation mode (default as asr.Batch).
    x0: {name: start} (default: the robot's value, else the model's default).
    bounds: {name: (lo, hi)} in SI units (default and limit: the parameter's valid range).
    fixed: {name: value} parameters held at given values (static and bench: on top of the
        defaults; robot: on top of robot.toml).
    sigma: {channel: noise standard deviation} ("q" rad, "tau" N m), required to weigh two
        channels; one channel needs none (s^2 is estimated from the residuals).
    diff_step: finite-difference step in the search variable (log of a positive parameter:
        a relative step). max_nfev: most residual evaluations. progress: a tqdm bar.
    Returns an Identification.
    """
    need("scipy", "identify", "asr.identify")
    from scipy.optimize import least_squares
    from scipy.stats import t as student_t
    from tqdm.auto import tqdm

    source = _source(model, robot, variant, joint)
    kind, data = _kind(kind, robot, load_data(data))
    evaluate, measured, plist, u0, u_lo, u_hi, x_start = _problem(
        kind, source, data, params, joint, mode, dt, x0, bounds, fixed
    )
    weights = _sigmas(sigma, list(measured))
    h = V.positive_float(diff_step, "diff_step")
    max_nfev = V.positive_int(max_nfev, "max_nfev")
    m = sum(v.size for v in measured.values())
    p = len(plist)
    if m <= p:
        raise ValueError(f"data: {m} measured values for {p} parameters; need more than {p}")
    bar = tqdm(total=max_nfev, desc="identify", unit="eval", disable=not progress)

    def values(U):
        return np.column_stack([par.from_u(U[:, k]) for k, par in enumerate(plist)])

    def residuals(U):
        sim = evaluate(values(U))
        r = np.concatenate(
            [((sim[c] - measured[c][None]) / weights[c]).reshape(len(U), -1) for c in measured],
            axis=1,
        )
        # a diverged trial: residuals far above any fit, so the step is refused and shortened
        r[~np.isfinite(r)] = _PENALTY
        return r

    def fun(u):
        bar.update(1)
        return residuals(u[None])[0]

    def jac(u):
        step = np.where(u + h <= u_hi, h, -h)  # step back from an upper bound
        R = residuals(np.vstack([u, u + np.diag(step)]))
        return ((R[1:] - R[0]) / step[:, None]).T

    try:
        res = least_squares(
            fun, u0, jac=jac, bounds=(u_lo, u_hi), method="trf", max_nfev=max_nfev, x_scale="jac"
        )
    finally:
        bar.close()
    est = values(res.x[None])[0]
    jac_value = res.jac / np.array([par.dvalue_du(v) for par, v in zip(plist, est)])
    cov, identifiable = _covariance(jac_value, res.fun, p)
    se = np.sqrt(np.diag(cov))
    tq = float(student_t.ppf(0.975, m - p))
    raw = residuals(res.x[None])[0]
    offsets = np.cumsum([0] + [measured[c].size for c in measured])
    rms = {
        c: float(np.sqrt(np.mean((raw[a:b] * weights[c]) ** 2)))
        for c, a, b in zip(measured, offsets[:-1], offsets[1:])
    }
    names = tuple(par.key for par in plist)
    message = (
        res.message
        if identifiable
        else (
            res.message + "; the Jacobian is rank deficient: the data do not determine every "
            "parameter (stderr inf)"
        )
    )
    return Identification(
        names=names,
        estimates=dict(zip(names, map(float, est))),
        stderr=dict(zip(names, map(float, se))),
        ci95={n: (float(e - tq * s), float(e + tq * s)) for n, e, s in zip(names, est, se)},
        covariance=cov,
        initial=dict(zip(names, map(float, x_start))),
        residual_rms=rms,
        cost=float(res.cost),
        m=m,
        dof=m - p,
        nfev=int(res.nfev),
        njev=int(res.njev or 0),
        success=bool(res.success),
        message=message,
        kind=kind,
        source=source if isinstance(source, str) else f"{source.name}/{source.variant}",
    )


def _source(model, robot, variant, joint):
    """The model name, or the asr.Robot (its joint `joint` of model `model` if given)."""
    from asr.robot import Robot, load_robot

    if robot is None:
        get_model(model)
        return model
    robot = robot if isinstance(robot, Robot) else load_robot(robot, variant)
    joint = V.positive_int(joint, "joint", lo=0, hi=len(robot.joints) - 1)
    if model is not None and model != robot.joints[joint].model:
        raise ValueError(
            f"model: got {model!r}, joint {joint} ({robot.joints[joint].name}) of "
            f"robot {robot.name!r} has model {robot.joints[joint].model!r}"
        )
    return robot


def _kind(kind, robot, data):
    if kind is None:
        kind = (
            "robot"
            if robot is not None
            else "bench"
            if ("refs" in data or "ref1" in data)
            else "static"
        )
    if kind not in KINDS:
        raise ValueError(f"kind: got {kind!r}, valid: {', '.join(KINDS)}")
    if (kind == "robot") != (robot is not None):
        raise ValueError(
            f"kind: {kind!r} "
            + ("needs robot=" if robot is None else "takes no robot (use kind 'robot')")
        )
    return kind, data


def _problem(kind, source, data, params, joint, mode, dt, x0, bounds, fixed):
    """(evaluate, measured, fitted params, u0, u bounds, start values) of one problem."""
    if kind == "robot":
        specs = [get_model(j.model).spec for j in source.joints]
        names = list(source.joint_names)
        start = lambda j, spec: source.joints[j].params.get(spec.name, spec.default)  # noqa
    else:
        specs, names = [get_model(source).spec], None
        joint = V.positive_int(joint, "joint", lo=0, hi=0)
        start = lambda j, spec: spec.default  # noqa: E731
    own = kind == "static"
    plist, x_start, limits = _fitted(params, x0, bounds, specs, joint, names, start, own)
    held = _fixed(fixed, plist, specs, joint, names, own)
    if kind == "static":
        evaluate, measured = _static_model(source, data, plist, held.get(0, {}))
    elif kind == "bench":
        evaluate, measured = _bench_model(source, data, plist, held, mode, dt)
    else:
        evaluate, measured = _robot_model(source, data, plist, held, dt)
    u0 = np.array([p.to_u(v) for p, v in zip(plist, x_start)])
    ub = np.array([p.u_bounds(lo, hi) for p, (lo, hi) in zip(plist, limits)]).reshape(-1, 2)
    u0 = np.clip(u0, ub[:, 0], ub[:, 1])
    return evaluate, measured, plist, u0, ub[:, 0], ub[:, 1], x_start


__all__ = ["identify", "Identification", "load_data", "KINDS", "FORMAT"]
