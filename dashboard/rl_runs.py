"""The RL runs of this server session, for the page's overlaid learning curves (GET
/api/rl/runs, PROTOCOL.md "RL"): each run's id, status, hyperparameters, metric and curve.

Read, not kept twice: a run's curve is the curve.json its trainer writes in its run folder
(dashboard/rl.py: `run-<id>` in the training manager's own folder; read bounded by
rl.read_curve and decimated to `rl_curve_points` rows), the latest run's from the manager's
status. Its hyperparameters are the ones it was started with, remembered here from the
manager's status (the latest run) and otherwise read from the config.json its trainer writes
with every checkpoint. At most MAX_RUNS runs are answered, the newest; runs are named by their
id, never by a path."""

import json
import os
import threading

from . import rl, rl_tasks

MAX_RUNS = 8
MAX_CONFIG_BYTES = 1 << 20  # config.json read at most
# the hyperparameters shown per run (RLStart's fields)
CONFIG_KEYS = (
    "task",
    "algo",
    "num_envs",
    "total_steps",
    "seed",
    "learning_rate",
    "n_steps",
    "batch_size",
    "gamma",
)
CURVE_KEYS = ("steps", "return", "metric")  # the columns the page draws


def config_from_disk(folder):
    """A run's hyperparameters from its trainer's config.json ({} when missing or invalid):
    the trainer nests the PPO ones under "hyperparameters"."""
    try:
        with open(os.path.join(folder, "config.json"), "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
        raw = json.loads(data) if len(data) <= MAX_CONFIG_BYTES else {}
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested too deeply
        return {}
    if not isinstance(raw, dict):
        return {}
    hp = raw.get("hyperparameters") if isinstance(raw.get("hyperparameters"), dict) else {}
    flat = {**hp, **raw}
    out = {k: flat[k] for k in CONFIG_KEYS if isinstance(flat.get(k), (str, int, float))}
    if "algo" in out:  # the trainer writes "ppo", the dashboard's choices are "PPO"
        out["algo"] = str(out["algo"]).upper()
    return out


def _metric(config):
    try:
        return rl_tasks.metric_info(config["task"])
    except Exception:  # noqa: BLE001 - an unknown or missing task: the runs table says "metric"
        return None


class RunsHistory:
    """The hyperparameters of the runs seen as the latest, by id (the newest MAX_RUNS)."""

    def __init__(self, max_runs=MAX_RUNS):
        self.max_runs = max_runs
        self._configs = {}
        self._lock = threading.Lock()

    def remember(self, run, config):
        with self._lock:
            self._configs[run] = {k: config[k] for k in CONFIG_KEYS if k in config}
            for old in sorted(self._configs)[: -self.max_runs]:
                del self._configs[old]

    def answer(self, manager, points):
        """{"runs": [...] oldest first, "max_runs"} of the training manager `manager`."""
        st = manager.status()
        latest = st["run"]
        if latest is None:
            return {"runs": [], "max_runs": self.max_runs}
        if st["config"]:
            self.remember(latest, st["config"])
        root = manager.runs_root
        runs = []
        for run in range(max(1, latest - self.max_runs + 1), latest + 1):
            folder = os.path.join(root, f"run-{run}") if root else ""
            runs.append(self._run(run, folder, st if run == latest else None, points))
        return {"runs": runs, "max_runs": self.max_runs}

    def _run(self, run, folder, st, points):
        with self._lock:
            config = dict(self._configs.get(run) or {})
        if not config and folder:
            config = config_from_disk(folder)
        if st is not None:
            curve = st["curve"]
            status = ("paused" if st["paused"] else "training") if st["running"] else st["message"]
        else:
            curve = rl.decimate(rl.read_curve(os.path.join(folder, "curve.json")), points)
            status = "ended"
        return {
            "run": run,
            "status": status or "ended",
            "config": config,
            "metric": _metric(config) if config.get("task") else None,
            "curve": {k: list(curve.get(k, [])) for k in CURVE_KEYS},
        }
