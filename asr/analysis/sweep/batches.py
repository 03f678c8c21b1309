"""One batch of asr.sweep, run locally or in a worker: the batch's inputs, ONE asr.Sim rollout
and its metrics (built-in or callables)."""

import numpy as np

from asr.sim.simulation import Sim

# built-in metric: the recorded fields it needs
BUILTIN_METRICS = {
    "final_q_error": ("q",),
    "rms_q_error": ("q",),
    "max_tau": ("tau_joint",),
    "max_deflection": ("defl1", "defl2"),
}
DEFAULT_METRICS = ("final_q_error", "rms_q_error", "max_tau", "max_deflection")


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
