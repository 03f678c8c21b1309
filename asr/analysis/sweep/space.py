"""The swept space of asr.sweep: its keys parsed ("<joint>.<param>", "mujoco.<field>.<object>",
"refs.<equilibrium|preset>.<joint>"), its values checked, and the (S, D) samples of a grid or of
random draws (the naming scheme and sampling rules: asr.analysis.sweep's docstring)."""

import dataclasses
import math

import numpy as np

from asr.analysis.sweep.batches import BUILTIN_METRICS
from asr.core.models import models as _models
from asr.sim.simulation import MUJOCO_FIELDS

_REF_COLUMNS = {"equilibrium": 0, "preset": 1}


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


def sample_space(robot, space, method, samples, seed, max_samples):
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
