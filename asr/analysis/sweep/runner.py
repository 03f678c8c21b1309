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
import math
import os

import numpy as np

from asr.analysis.sweep.batches import BUILTIN_METRICS, DEFAULT_METRICS, _metric_items, _run_batch
from asr.analysis.sweep.results import FORMAT, SweepResult, _resume
from asr.analysis.sweep.space import sample_space
from asr.common.executors import completed
from asr.robots.robot import Robot, load_robot
from asr.sim.simulation import DEFAULT_RECORD

_EQ_MODES = (1, 3, 5, 6)  # modes whose first reference is a link-position target


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
    dims, pts, desc = sample_space(robot, space, method, samples, seed, max_samples)
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


__all__ = ["sweep", "SweepResult", "BUILTIN_METRICS", "DEFAULT_METRICS"]
