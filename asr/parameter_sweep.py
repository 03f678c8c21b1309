"""Batched parameter sweeps over a robot: grid or random samples run as asr.Sim rollouts.

>>> res = sweep("pendulum_1dof", {"joint.k1": [0.001, 0.002], "mujoco.body_mass.link": (0.1, 0.4)},
...             method="random", samples=1000, steps=2000, refs=[[0.8, 0.3]],
...             metrics=("final_q_error", "max_tau"), batch_size=250, results="sweep.npz")
>>> res.metrics["final_q_error"].shape, res.rows()[0]

Naming scheme of `space` keys (each maps to a list of values for method="grid", or to a range
(lo, hi) sampled uniformly for method="random"):

    "<joint>.<param>"              asr actuator parameter of an actuated joint (names of
                                   robot.toml; parameters of asr.models()[model].all_params),
                                   e.g. "joint1.kp", "joint.k1"
    "mujoco.<field>.<object>"      MuJoCo model field of a named object, field one of
                                   asr.sim.MUJOCO_FIELDS: body_mass.<body>, dof_damping.<joint>,
                                   dof_frictionloss.<joint>, geom_friction.<geom> (the sliding
                                   coefficient; torsional and rolling keep the model's values)
    "refs.equilibrium.<joint>"     column 0 of the joint's reference (held over the rollout,
    "refs.preset.<joint>"          replacing that column of `refs` at every step); in modes 3
                                   and 6 the equilibrium and the preset, in other modes ref1/ref2

Samples: grid = the Cartesian product in the order of the keys of `space`, the last key varying
fastest (like itertools.product / C order); random = `samples` rows of
numpy.random.default_rng(seed).random((samples, len(space))) scaled to each range (so a larger
`samples` with the same seed extends, not changes, the first rows). Sample i is row i of
SweepResult.params. Samples are cut into batches of `batch_size` consecutive samples (the last one
smaller); each batch is one asr.Sim of that many instances and ONE sim.rollout call, started from
the robot's initial state. asr guarantees a batch of N equals N single-instance runs, so results
do not depend on batch_size, threads or the executor.

Metrics: a callable metrics(out, sim) -> {name: (n,) array}, where out is sim.rollout's
{field: (n, steps, J)} for the fields in `record` (default asr.sim.DEFAULT_RECORD plus what the
built-ins need) and sim the batch's asr.Sim (n = sim.n_instances); or built-in names (over all
joints of a sample):

    final_q_error    max_j |q(T) - eq_j(T)|, rad          (eq: column 0 of the references;
    rms_q_error      sqrt(mean_{t,j} (q - eq_j)^2), rad    joints in modes 1, 3, 5 or 6 only)
    max_tau          max_{t,j} |tau_joint|, N m
    max_deflection   max_{t,j} max(|defl1|, |defl2|), rad (spring deflection after clamping)

or a sequence mixing both. Metric values are stored as float64.

Results: SweepResult.params (S, D), .metrics {name: (S,)} (NaN where a batch has not run),
.done (S,) bool, .rows() (a tidy table: one dict per completed sample), .to_pandas(),
.save(path) / SweepResult.load(path): an .npz with the arrays and the metadata as a JSON string
(key "meta"), plus the same metadata in a human-readable <path stem>.json next to it.

Resuming: with results="path.npz" the file is rewritten after every completed batch, atomically
(a temporary file in the same folder, fsync, rename): a KeyboardInterrupt, any error or even a
SIGKILL leaves the completed batches in it, and a file is never half-written. Calling sweep again
with the same path continues from the completed batches and ends with exactly the results of an
uninterrupted run; the robot, space, method, samples, seed, batch_size, steps, references and
record must be the same, else ValueError. A truncated, corrupted or inconsistent results file
raises ValueError saying so; it is never merged or silently started over.

Distributed: executor= a dask.distributed.Client (or any concurrent.futures.Executor). Each batch
is one task; the task gets the robot description (an asr.Robot, a small frozen dataclass with
absolute paths), the batch's parameter arrays, references and the metrics spec and builds its own
asr.Sim in the worker (Sim objects hold MuJoCo and C pointers and are not picklable). Results are
gathered as they complete and stored by batch index, so they equal the local ones bit for bit.
Custom metrics callables must then be picklable (dask uses cloudpickle). The robot files must be
readable at the same paths on the workers (one machine, or a shared file system).

Why Dask rather than Ray: dask + distributed are pure-Python wheels from PyPI (Ray ships large
platform wheels with a C++ core and runs its own raylet / GCS daemons and object store);
distributed.LocalCluster gives process workers on one machine with nothing else to start, and the
same Client API then talks to a multi-machine cluster (dask-scheduler / dask-worker, SSH, HPC
job queues, Kubernetes) without changing this code; its futures API (submit / as_completed /
cancel) is all a sweep of independent batches needs, and it pickles closures with cloudpickle.
"""

import dataclasses
import hashlib
import json
import math
import os
import zipfile
import zlib

import numpy as np

from asr._executors import completed
from asr._files import atomic_write, check_sha256, sha256_arrays
from asr.models import models as _models
from asr.robot import Robot, load_robot
from asr.sim import DEFAULT_RECORD, MUJOCO_FIELDS, Sim

BUILTIN_METRICS = {
    "final_q_error": ("q",),
    "rms_q_error": ("q",),
    "max_tau": ("tau_joint",),
    "max_deflection": ("defl1", "defl2"),
}
DEFAULT_METRICS = ("final_q_error", "rms_q_error", "max_tau", "max_deflection")
_EQ_MODES = (1, 3, 5, 6)  # modes whose first reference is a link-position target
_REF_COLUMNS = {"equilibrium": 0, "preset": 1}
FORMAT = "asr.sweep/2"  # the "asr.<what>/<integer>" tag of asr.ilc and the dashboard's workspace
# files saved before the tag took that style, or before the checksums (/2), load too
_READ_FORMATS = (FORMAT, "asr.sweep/1", "asr-sweep-1")


# ---------------------------------------------------------------- the space


@dataclasses.dataclass(frozen=True)
class _Dim:
    """One swept quantity: key, kind ('actuator', 'mujoco', 'refs') and where it goes."""

    key: str
    kind: str
    target: tuple  # actuator: (joint name, param); mujoco: (field, object); refs: (col, joint idx)


def _parse_key(key, robot, mj_model):
    import mujoco

    if not isinstance(key, str) or not key:
        raise ValueError(f"space: keys must be non-empty strings, got {key!r}")
    parts = key.split(".")
    joints = robot.joint_names
    if parts[0] == "mujoco":
        if len(parts) != 3:
            raise ValueError(
                f"space[{key!r}]: MuJoCo keys are 'mujoco.<field>.<object>' with "
                f"field one of {', '.join(MUJOCO_FIELDS)}"
            )
        field, obj = parts[1], parts[2]
        if field not in MUJOCO_FIELDS:
            raise ValueError(
                f"space[{key!r}]: unknown MuJoCo field {field!r}; valid: {', '.join(MUJOCO_FIELDS)}"
            )
        kind = MUJOCO_FIELDS[field]
        if mujoco.mj_name2id(mj_model, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), obj) < 0:
            raise ValueError(f"space[{key!r}]: no {kind} named {obj!r} in {robot.mjcf}")
        return _Dim(key, "mujoco", (field, obj))
    if parts[0] == "refs":
        if len(parts) != 3 or parts[1] not in _REF_COLUMNS:
            raise ValueError(
                f"space[{key!r}]: reference keys are 'refs.equilibrium.<joint>' or "
                "'refs.preset.<joint>'"
            )
        if parts[2] not in joints:
            raise ValueError(
                f"space[{key!r}]: unknown joint {parts[2]!r}; actuated joints: {', '.join(joints)}"
            )
        return _Dim(key, "refs", (_REF_COLUMNS[parts[1]], joints.index(parts[2])))
    if len(parts) != 2:
        raise ValueError(
            f"space[{key!r}]: expected '<joint>.<param>', "
            "'mujoco.<field>.<object>' or 'refs.<equilibrium|preset>.<joint>'"
        )
    joint, param = parts
    if joint not in joints:
        raise ValueError(
            f"space[{key!r}]: unknown joint {joint!r}; actuated joints: "
            f"{', '.join(joints)} (MuJoCo fields: 'mujoco.<field>.<object>')"
        )
    spec = _models()[robot.joints[joints.index(joint)].model]
    names = [p.name for p in spec.all_params]
    if param not in names:
        raise ValueError(
            f"space[{key!r}]: unknown parameter {param!r} of model {spec.name!r}; "
            f"valid: {', '.join(names)}"
        )
    return _Dim(key, "actuator", (joint, param))


def _param_spec(robot, dim):
    joint, param = dim.target
    return _models()[robot.joints[robot.joint_names.index(joint)].model].param(param)


def _check_values(robot, dim, values, what):
    """ValueError unless `values` (1-D float array) are valid for dim."""
    if not np.all(np.isfinite(values)):
        bad = values[~np.isfinite(values)][0]
        raise ValueError(f"space[{dim.key!r}]: {what} {bad} is not finite")
    if dim.kind == "actuator":
        _param_spec(robot, dim).check(values, f"space[{dim.key!r}]: ")
    elif dim.kind == "mujoco" and np.any(values < 0):
        raise ValueError(
            f"space[{dim.key!r}]: {what} {values.min():g} is negative; valid range [0, inf)"
        )


def _as_values(dim, spec, method):
    """The space entry as a float64 array: grid values, or (lo, hi) for random."""
    if isinstance(spec, (str, bytes, dict)) or np.ndim(spec) != 1:
        want = "a list of values" if method == "grid" else "a range (lo, hi)"
        raise ValueError(f"space[{dim.key!r}]: expected {want}, got {spec!r}")
    try:
        arr = np.array(spec, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"space[{dim.key!r}]: values must be numbers, got {spec!r}") from None
    return arr


def _check_size(S, D, max_samples, what):
    """Refuse, before allocating anything, a sweep larger than max_samples; say its size."""
    if S > max_samples:
        mb = S * (D + len(BUILTIN_METRICS) + 1) * 8 / 1e6
        raise ValueError(
            f"{what}: {S:,} samples (about {mb:,.0f} MB for the parameters and "
            f"metrics alone, each sample one simulated robot), more than "
            f"max_samples = {max_samples:,}; use fewer values, method='random' "
            "with fewer samples, or raise max_samples"
        )


def _space(robot, space, method, samples, seed, max_samples):
    """(dims, (S, D) sample matrix, JSON-able description of the space)."""
    if not isinstance(space, dict):
        raise TypeError(f"space: expected a dict {{name: values}}, got {type(space).__name__}")
    if not space:
        raise ValueError(
            "space: empty; give at least one '<joint>.<param>', "
            "'mujoco.<field>.<object>' or 'refs.<equilibrium|preset>.<joint>'"
        )
    mj_model = robot.mj_model()
    dims = [_parse_key(k, robot, mj_model) for k in space]
    entries = [_as_values(d, space[d.key], method) for d in dims]
    if method == "grid":
        if samples is not None:
            raise ValueError(
                "samples: only for method='random' (a grid has one sample per "
                "combination of values)"
            )
        for d, v in zip(dims, entries):
            if v.size == 0:
                raise ValueError(f"space[{d.key!r}]: no values")
            _check_values(robot, d, v, "value")
        _check_size(math.prod(v.size for v in entries), len(dims), max_samples, "space (grid)")
        # the last key varies fastest, like itertools.product
        grid = np.stack(np.meshgrid(*entries, indexing="ij"), axis=-1)
        desc = {d.key: v.tolist() for d, v in zip(dims, entries)}
        return dims, grid.reshape(-1, len(dims)).astype(np.float64), desc
    if method != "random":
        raise ValueError(f"method: got {method!r}, valid: 'grid', 'random'")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples: method='random' needs a positive integer, got {samples!r}")
    _check_size(int(samples), len(dims), max_samples, "samples")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
    for d, v in zip(dims, entries):
        if v.shape != (2,):
            raise ValueError(
                f"space[{d.key!r}]: method='random' needs a range (lo, hi), got {space[d.key]!r}"
            )
        if not v[0] < v[1]:
            raise ValueError(f"space[{d.key!r}]: bad range ({v[0]:g}, {v[1]:g}): needs lo < hi")
        if d.kind == "actuator" and _param_spec(robot, d).integer:
            raise ValueError(f"space[{d.key!r}]: integer parameter; sweep it with method='grid'")
        _check_values(robot, d, v, "bound")
    lo, hi = np.array([v[0] for v in entries]), np.array([v[1] for v in entries])
    u = np.random.default_rng(int(seed)).random((int(samples), len(dims)))
    pts = lo + (hi - lo) * u
    desc = {d.key: v.tolist() for d, v in zip(dims, entries)}
    return dims, pts, desc


# ---------------------------------------------------------------- metrics


def _metric_items(metrics):
    if callable(metrics) or isinstance(metrics, str):
        metrics = (metrics,)
    items = tuple(metrics)
    if not items:
        raise ValueError(
            f"metrics: empty; give built-in names ({', '.join(BUILTIN_METRICS)}) or a callable"
        )
    for m in items:
        if not callable(m) and m not in BUILTIN_METRICS:
            raise ValueError(
                f"metrics: unknown built-in metric {m!r}; valid: "
                f"{', '.join(BUILTIN_METRICS)}, or a callable(out, sim) -> "
                "{name: (n,) array}"
            )
    return items


def _builtin(name, out, eq):
    """eq: (n, T, J) or (n, 1, J) first references."""
    if name == "final_q_error":
        return np.max(np.abs(out["q"][:, -1, :] - eq[:, -1, :]), axis=1)
    if name == "rms_q_error":
        return np.sqrt(np.mean((out["q"] - eq) ** 2, axis=(1, 2)))
    if name == "max_tau":
        return np.max(np.abs(out["tau_joint"]), axis=(1, 2))
    return np.max(np.maximum(np.abs(out["defl1"]), np.abs(out["defl2"])), axis=(1, 2))


def _evaluate(items, out, sim, eq):
    n = sim.n_instances
    res = {}
    for m in items:
        if not callable(m):
            res[m] = _builtin(m, out, eq)
            continue
        got = m(out, sim)
        if not isinstance(got, dict) or not got:
            raise TypeError(
                f"metrics callable {getattr(m, '__name__', m)!r} must return a "
                f"non-empty dict {{name: ({n},) array}}, got {type(got).__name__}"
            )
        for k, v in got.items():
            arr = np.asarray(v)
            if (
                not isinstance(k, str)
                or arr.shape != (n,)
                or not np.issubdtype(arr.dtype, np.number)
            ):
                raise ValueError(
                    f"metrics callable: {k!r} must be a numeric ({n},) array (one "
                    f"value per instance), got shape {arr.shape} dtype {arr.dtype}"
                )
            if k in res:
                raise ValueError(f"metrics: {k!r} is given twice")
            res[k] = arr
    return {k: np.asarray(v, dtype=np.float64) for k, v in res.items()}


# ---------------------------------------------------------------- one batch


def _batch_inputs(robot, dims, pts, refs):
    """Sim params, mujoco_params and (n, ..., J, 2) refs for the sample rows pts (n, D)."""
    n = pts.shape[0]
    params, mj = {}, {}
    r = np.array(np.broadcast_to(refs, (n,) + refs.shape), dtype=np.float64)
    base = None
    for k, d in enumerate(dims):
        col = np.ascontiguousarray(pts[:, k])
        if d.kind == "actuator":
            params.setdefault(d.target[0], {})[d.target[1]] = col
        elif d.kind == "refs":
            c, j = d.target
            r[..., j, c] = col[(slice(None),) + (None,) * (r.ndim - 3)]
        else:
            field, obj = d.target
            if field == "geom_friction":
                if base is None:
                    base = robot.mj_model()
                f = np.tile(np.asarray(base.geom(obj).friction, dtype=np.float64), (n, 1))
                f[:, 0] = col
                col = f
            mj.setdefault(field, {})[obj] = col
    return params, mj, r


def _run_batch(robot, dims, pts, refs, steps, record, items, threads):
    """One batch: build a Sim of len(pts) instances, ONE rollout, the metrics. Runs in workers."""
    params, mj, r = _batch_inputs(robot, dims, pts, refs)
    sim = Sim(robot, pts.shape[0], params=params, mujoco_params=mj, threads=threads)
    out = sim.rollout(steps, r, record=record)
    eq = r[..., 0] if r.ndim == 4 else r[:, None, :, 0]
    return _evaluate(items, out, sim, eq)


# ---------------------------------------------------------------- results


class SweepResult:
    """Samples (params (S, D), names), metrics {name: (S,)}, done (S,) and the metadata."""

    def __init__(self, names, params, metrics, done, meta):
        self.names = tuple(names)
        self.params = params
        self.metrics = metrics
        self.done = done
        self.meta = meta

    def __len__(self):
        return self.params.shape[0]

    @property
    def complete(self):
        return bool(self.done.all())

    def param(self, name):
        """Column of sample values of `name`, (S,)."""
        if name not in self.names:
            raise KeyError(f"{name!r}; swept: {', '.join(self.names)}")
        return self.params[:, self.names.index(name)]

    def rows(self):
        """Tidy table: one dict per completed sample: sample index, swept values, metrics."""
        rows = []
        for i in np.flatnonzero(self.done):
            row = {"sample": int(i)}
            row.update({n: float(self.params[i, k]) for k, n in enumerate(self.names)})
            row.update({m: float(v[i]) for m, v in self.metrics.items()})
            rows.append(row)
        return rows

    def to_pandas(self):
        try:
            import pandas
        except ImportError:
            raise ImportError(
                "SweepResult.to_pandas needs pandas (pip install pandas); "
                "SweepResult.rows() gives the same table as a list of dicts, "
                ".params / .metrics as NumPy arrays"
            ) from None
        return pandas.DataFrame(self.rows(), columns=["sample", *self.names, *self.metrics])

    def save(self, path):
        """Write the .npz (arrays + JSON metadata holding the SHA-256 of every array and of
        itself, checked on load) atomically (asr._files.atomic_write: a kill leaves the previous
        file or the new one), then <stem>.json, a readable copy of the metadata (the .npz alone
        is the results file: a kill between the two leaves the copy one save behind)."""
        path = os.fspath(path)
        meta = dict(self.meta, format=FORMAT, names=list(self.names), metrics=list(self.metrics))
        meta.pop("sha256", None)
        arrays = {"params": self.params, "done": self.done}
        arrays.update({f"metric:{k}": v for k, v in self.metrics.items()})
        arrays["meta"] = np.array(json.dumps(meta, indent=1, sort_keys=True))
        meta["sha256"] = sha256_arrays(arrays)
        text = json.dumps(meta, indent=1, sort_keys=True)
        arrays["meta"] = np.array(text)
        with atomic_write(path) as f:
            np.savez(f, **arrays)
        with atomic_write(os.path.splitext(path)[0] + ".json", "w") as f:
            f.write(text + "\n")

    @classmethod
    def load(cls, path):
        """Read what save(path) wrote. A truncated, corrupted or inconsistent file raises
        ValueError saying so (every array is read: the zip's CRC-32 checks catch changed bytes)."""
        try:
            with np.load(os.fspath(path), allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            meta = json.loads(str(arrays["meta"]))
        except FileNotFoundError:
            raise
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise ValueError(
                f"{path}: truncated or corrupted asr sweep results file "
                f"({type(exc).__name__}: {exc}); delete it to start over"
            ) from None
        if not isinstance(meta, dict) or meta.get("format") not in _READ_FORMATS:
            raise ValueError(
                f"{path}: not an asr sweep file (format "
                f"{meta.get('format') if isinstance(meta, dict) else None!r})"
            )
        if meta["format"] == FORMAT:  # earlier formats had no checksums
            saved = meta.pop("sha256", None)
            arrays["meta"] = np.array(json.dumps(meta, indent=1, sort_keys=True))
            check_sha256(path, arrays, saved, "asr sweep results file")
        try:
            metrics = {k: arrays[f"metric:{k}"] for k in meta["metrics"]}
            res = cls(meta["names"], arrays["params"], metrics, arrays["done"], meta)
        except (KeyError, TypeError) as exc:
            raise ValueError(
                f"{path}: inconsistent asr sweep results file: missing {exc}; "
                "delete it to start over"
            ) from None
        res._check_consistent(path)
        return res

    def _check_consistent(self, path):
        """ValueError unless the arrays agree with each other and with the metadata."""
        S, D = self.meta.get("samples"), len(self.names)
        batch = self.meta.get("batch_size")
        problems = []
        if self.params.dtype != np.float64 or self.params.shape != (S, D):
            problems.append(f"params {self.params.dtype} {self.params.shape}, expected ({S}, {D})")
        if self.done.dtype != bool or self.done.shape != (S,):
            problems.append(f"done {self.done.dtype} {self.done.shape}, expected bool ({S},)")
        for k, v in self.metrics.items():
            if v.dtype != np.float64 or v.shape != (S,):
                problems.append(f"metric {k!r} {v.dtype} {v.shape}, expected ({S},)")
        if not problems and isinstance(batch, int) and batch > 0:
            # a batch is stored whole or not at all
            split = [self.done[s : s + batch] for s in range(0, S, batch)]
            if any(b.any() and not b.all() for b in split):
                problems.append("a batch is partly done")
        if problems:
            raise ValueError(
                f"{path}: inconsistent asr sweep results file: "
                f"{'; '.join(problems)}; delete it to start over"
            )

    def __repr__(self):
        return (
            f"SweepResult({len(self)} samples, {int(self.done.sum())} done, "
            f"space={list(self.names)}, metrics={list(self.metrics)})"
        )


# ---------------------------------------------------------------- the sweep


def _robot(robot, variant):
    if isinstance(robot, Robot):
        if variant is not None and variant != robot.variant:
            raise ValueError(
                f"variant: {variant!r} given with an asr.Robot of variant {robot.variant!r}"
            )
    else:
        robot = load_robot(robot, variant)
    # absolute paths: the description travels to workers that may run elsewhere
    return dataclasses.replace(
        robot, folder=os.path.abspath(robot.folder), mjcf=os.path.abspath(robot.mjcf)
    )


def _refs(robot, refs, steps):
    nj = len(robot.joints)
    if refs is None:
        if robot.initial_refs is None:
            raise ValueError(
                f"refs: robot {robot.name!r} ({robot.variant}) has no initial refs; "
                f"give ({nj}, 2) held or ({steps}, {nj}, 2) per-step references"
            )
        refs = robot.initial_refs
    try:
        r = np.array(refs, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"refs: expected numbers, got {refs!r}") from None
    if r.shape not in ((nj, 2), (steps, nj, 2)):
        raise ValueError(
            f"refs: expected shape ({nj}, 2) held or ({steps}, {nj}, 2) per step "
            f"(shared by all samples), got {r.shape}"
        )
    if not np.all(np.isfinite(r)):
        raise ValueError("refs: contains NaN or inf")
    return r


def _positive(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return int(value)


def sweep(
    robot,
    space,
    *,
    steps,
    refs,
    metrics=DEFAULT_METRICS,
    method="grid",
    samples=None,
    seed=0,
    batch_size=256,
    variant=None,
    threads=1,
    record=None,
    results=None,
    executor=None,
    progress=True,
    max_samples=10_000_000,
):
    """Run a parameter sweep of `robot` (name, folder or asr.Robot) over `space`; see the module
    docstring for the naming scheme, sampling, metrics, resuming and executors.

    steps: rollout length in MJCF time steps. refs: (J, 2) held or (steps, J, 2) per-step
    references shared by all samples (None: the robot's initial refs); 'refs.*' keys override a
    column per sample. record: fields passed to a metrics callable (default
    asr.sim.DEFAULT_RECORD). results: path of an .npz to save to and resume from. executor: a
    dask.distributed.Client or concurrent.futures.Executor. progress: tqdm bar. max_samples:
    the largest sweep accepted (a grid's size is the product of its value counts; larger ones
    raise ValueError with their size before anything is allocated).
    Returns a SweepResult.
    """
    robot = _robot(robot, variant)
    steps = _positive(steps, "steps")
    batch_size = _positive(batch_size, "batch_size")
    threads = _positive(threads, "threads")
    max_samples = _positive(max_samples, "max_samples")
    dims, pts, desc = _space(robot, space, method, samples, seed, max_samples)
    r = _refs(robot, refs, steps)
    items = _metric_items(metrics)
    if any(not callable(m) and m in ("final_q_error", "rms_q_error") for m in items):
        bad = [j.name for j in robot.joints if j.mode not in _EQ_MODES]
        if bad:
            raise ValueError(
                f"metrics: q errors compare q with the first reference, a link "
                f"position only in modes {_EQ_MODES}; joints {bad} are not"
            )
    rec = list(
        DEFAULT_RECORD if record is None else ((record,) if isinstance(record, str) else record)
    )
    for m in items:
        if not callable(m):
            rec += [f for f in BUILTIN_METRICS[m] if f not in rec]
    rec = tuple(rec)

    S = pts.shape[0]
    nb = math.ceil(S / batch_size)
    meta = {
        "format": FORMAT,
        "robot": robot.name,
        "variant": robot.variant,
        "space": desc,
        "method": method,
        "samples": S,
        "seed": int(seed) if method == "random" else None,
        "batch_size": batch_size,
        "steps": steps,
        "record": list(rec),
        "refs_sha256": hashlib.sha256(
            np.ascontiguousarray(r).tobytes() + str(r.shape).encode()
        ).hexdigest(),
        "actuators": [dataclasses.asdict(j) for j in robot.joints],
    }
    names = [d.key for d in dims]
    res = SweepResult(names, pts, {}, np.zeros(S, dtype=bool), meta)
    if results is not None and os.path.exists(results):
        res = _resume(results, meta, names, pts)
    bounds = [(b * batch_size, min(S, (b + 1) * batch_size)) for b in range(nb)]
    todo = [b for b, (s0, _) in enumerate(bounds) if not res.done[s0]]

    def store(b, got):
        s0, s1 = bounds[b]
        if not res.metrics:
            res.metrics.update({k: np.full(S, np.nan) for k in got})
        if set(got) != set(res.metrics):
            raise ValueError(
                f"metrics: batch {b} returned {sorted(got)}, earlier batches "
                f"{sorted(res.metrics)}; the names must not change"
            )
        for k, v in got.items():
            res.metrics[k][s0:s1] = v
        res.done[s0:s1] = True
        if results is not None:
            res.save(results)

    bar = _bar(progress, S, int(res.done.sum()))
    args = lambda b: (robot, dims, pts[bounds[b][0] : bounds[b][1]], r, steps, rec, items, threads)
    try:
        if executor is None:
            for b in todo:
                store(b, _run_batch(*args(b)))
                bar.update(bounds[b][1] - bounds[b][0])
        else:
            _distributed(executor, todo, args, store, bar, bounds)
    finally:
        bar.close()
    if results is not None and not todo:
        res.save(results)
    return res


def _bar(progress, total, initial):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="sample", desc="sweep", disable=not progress)


def _distributed(executor, todo, args, store, bar, bounds):
    todo = list(todo)
    for k, result in completed(executor, _run_batch, [args(b) for b in todo]):
        store(todo[k], result)
        bar.update(bounds[todo[k]][1] - bounds[todo[k]][0])


def _resume(path, meta, names, pts):
    try:
        old = SweepResult.load(path)
    except (OSError, ValueError) as exc:  # never started over silently: the user decides
        raise ValueError(f"results: cannot resume from {path}: {exc}") from None
    keys = [
        "robot",
        "variant",
        "space",
        "method",
        "samples",
        "seed",
        "batch_size",
        "steps",
        "record",
        "refs_sha256",
        "actuators",
    ]
    diff = [k for k in keys if json.loads(json.dumps(meta[k])) != old.meta.get(k)]
    if diff or list(old.names) != names or not np.array_equal(old.params, pts):
        raise ValueError(
            f"results: {path} holds a different sweep (differs in "
            f"{', '.join(diff) or 'samples'}); use another path or delete it"
        )
    old.meta = meta
    return old


__all__ = ["sweep", "SweepResult", "BUILTIN_METRICS", "DEFAULT_METRICS"]
