"""asr.sweep's results: SweepResult, its .npz file (checksummed, written atomically) and the
check that a results file holds the same sweep before resuming from it."""

import json
import os
import zipfile
import zlib

import numpy as np

from asr.common.files import atomic_write, check_sha256, sha256_arrays

FORMAT = "asr.sweep/2"  # the "asr.<what>/<integer>" tag of asr.ilc and the dashboard's workspace
# files saved before the tag took that style, or before the checksums (/2), load too
_READ_FORMATS = (FORMAT, "asr.sweep/1", "asr-sweep-1")


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
        itself, checked on load) atomically (asr.common.files.atomic_write: a kill leaves the
        previous
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


def _resume(path, meta, names, pts):
    """The results file at `path` to continue from; ValueError unless it holds this sweep."""
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
