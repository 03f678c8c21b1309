"""The data of asr.identify: reading a dict, .npz, .csv or a format another room reads (a ROS bag:
asr.ros registers its reader here when imported), and checking the arrays' shapes and the sample
period (asr.analysis.identification re-exports load_data and register_reader)."""

import os
from collections.abc import Callable

import numpy as np

from asr.common import validate as V

# readers of data files in formats that other rooms of asr own: (suffixes, reads folders, reader).
# Identification imports none of them: asr.ros, when imported, registers the ROS bag reader.
_READERS: list[tuple[tuple[str, ...], bool, Callable]] = []


def register_reader(reader, suffixes, folders=False):
    """Read a data path ending in one of `suffixes` (and, folders=True, a folder) with
    reader(path) -> {key: array}; a later registration of a suffix overrides an earlier one.
    asr.ros registers the ROS bag reader (.bag, .mcap, a rosbag2 folder) when it is imported."""
    if not callable(reader):
        raise TypeError(f"reader: expected a callable reader(path), got {type(reader).__name__}")
    suffixes = (suffixes,) if isinstance(suffixes, str) else tuple(suffixes)
    if not all(isinstance(s, str) and s.startswith(".") for s in suffixes):
        raise ValueError(f"suffixes: expected file suffixes starting with '.', got {suffixes!r}")
    _READERS.insert(0, (suffixes, bool(folders), reader))


def _reader_for(path):
    """The registered reader of path, else None."""
    folder = os.path.isdir(path)
    for suffixes, folders, reader in _READERS:
        if (folder and folders) or (not folder and path.endswith(suffixes)):
            return reader
    return None


def load_data(data):
    """The data as {key: float64 array}: a dict of arrays, an .npz, a .csv with a header row
    naming the columns (a column "<key>_<j>" is joint j's column of <key>), or a path a
    registered reader reads (register_reader): a ROS bag (a .bag / .mcap file or a rosbag2
    folder) once asr.ros is imported (asr.ros.bags.identification_data: instance 0, its fields
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
    reader = _reader_for(path)
    if reader is not None:
        return reader(path)
    if path.endswith((".bag", ".mcap")) or os.path.isdir(path):
        raise ValueError(
            f"data: {path!r} is a ROS bag, read by asr.ros: `import asr.ros` registers its reader"
        )
    raise ValueError(
        f"data: got {path!r}; valid: a dict, .npz, .csv, or a path a registered reader reads "
        f"(register_reader; asr.ros registers .bag, .mcap and rosbag2 folders)"
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
