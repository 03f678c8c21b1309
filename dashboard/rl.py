"""Reinforcement learning from the dashboard: the training-process manager (PROTOCOL.md "RL";
the tasks in dashboard/rl_tasks.py, the policy watch in dashboard/policy_watch.py).

Training runs in its own process, `python -m asr.cli train --task T ... --out <run folder>`
(asr/rl: Stable-Baselines3 PPO on asr's batched envs), so the simulation thread, the 30 Hz
stream and the controls stay live whatever the training costs. The run folder is chosen here,
never by a client: `run-<n>` inside one temporary folder per server (removed at shutdown). The
process gets its own session (process group): pause = SIGSTOP to the group, resume = SIGCONT
(the process keeps its memory and its place; nothing is written while stopped), stop = SIGTERM
then SIGKILL after `Settings.rl_stop_s`. One training at a time (Busy otherwise); the process is
killed when the server stops.

A watcher thread polls the folder's curve.json (rows {steps, wall_s, return, length, metric},
rewritten atomically after every PPO update) and the process, and publishes an `rl` message to
every client when either changed; the curve sent is decimated to at most
`Settings.rl_curve_points` rows and the file read is bounded (MAX_CURVE_BYTES).

A run has something to watch once its folder holds a model after at least one PPO update and
the run has not failed (can_watch in the status; NothingToWatch, 422, otherwise).
"""

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from asr.rl import MODEL_FILES

from .errors import public_message
from .rl_tasks import RLInputError, metric_info

ALGOS = ("PPO",)
TRAIN_COMMAND = (sys.executable, "-m", "asr.cli", "train")
MAX_CURVE_BYTES = 16 << 20  # curve.json read at most (larger: the tail rows are lost)
MAX_LOG_BYTES = 4096  # tail of the trainer's output kept for a failure message
POLL_S = 0.25  # how often the watcher looks at the folder and process
CURVE_KEYS = ("steps", "wall_s", "return", "length", "metric")
HYPERPARAMETERS = ("learning_rate", "n_steps", "batch_size", "gamma")
# held-out evaluation of the task's metric: small, so the curve's updates stay frequent
FIXED_SETTINGS = {"eval_episodes": 8, "final_eval_episodes": 32}
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TrainingBusy(RuntimeError):
    """A training process is already running (-> 409)."""


class NoCheckpoint(LookupError):
    """No training folder with a model yet (-> 404)."""


class NothingToWatch(ValueError):
    """The latest run has no policy to watch: it failed, or no PPO update has finished yet
    (-> 422, saying which)."""


def _finite(x):
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _has_model(folder):
    """Whether a training folder holds a model of either backend (its first checkpoint)."""
    return any(os.path.isfile(os.path.join(folder, f)) for f in MODEL_FILES.values())


def read_curve(path, max_bytes=MAX_CURVE_BYTES):
    """The rows of a curve.json as columns {key: [float | None]}; empty when missing or not
    (yet) valid. At most max_bytes are read."""
    cols = {k: [] for k in CURVE_KEYS}
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            return cols
        rows = json.loads(data)
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested too deeply
        return cols
    if isinstance(rows, dict):  # tolerate {"rows": [...]}
        rows = rows.get("rows", [])
    if not isinstance(rows, list):
        return cols
    for row in rows:
        if isinstance(row, dict):
            for k in CURVE_KEYS:
                cols[k].append(_finite(row.get(k)))
    return cols


def decimate(cols, points):
    """At most `points` rows, evenly spaced, the first and the last kept."""
    n = len(cols["steps"])
    if n <= points:
        return cols
    idx = np.unique(np.linspace(0, n - 1, points).round().astype(int))
    return {k: [v[i] for i in idx] for k, v in cols.items()}


class TrainingManager:
    """One training process at a time; see the module doc. `publish(msg)` sends an `rl`
    message to the clients (the runner's publish); `command` the trainer's command prefix;
    `watch_info()` what the runner watches (PolicyWatcher.info()) or None."""

    def __init__(self, settings, publish, command=None, watch_info=None):
        self.settings = settings
        self.publish = publish
        self.command = tuple(command or TRAIN_COMMAND)
        self._lock = threading.RLock()
        self._root = None
        self._runs = 0
        self._proc = None
        self._log = None
        self._run = None  # {"id", "dir", "config", "started", ...} of the latest run
        self._curve = decimate(read_curve(""), 1)
        self._curve_mtime = None
        self._paused = False
        self._message = None
        self._returncode = None
        self._exit_published = True
        self._closed = threading.Event()
        self._thread = None
        self.watch_info = watch_info or (lambda: None)  # the runner's watched policy, or None
        self._onnx = None  # (checkpoint key, ONNX bytes) of the last policy watched

    # ------------------------------------------------------------ status

    @property
    def runs_root(self):
        """The folder of this server's run folders (`run-<id>`, the server's own temporary
        folder), None before the first training; read-only."""
        return self._root

    def status(self):
        with self._lock:
            self._reap()
            proc = self._proc
            running = proc is not None and proc.poll() is None
            run = self._run
            return {
                "running": running,
                "paused": running and self._paused,
                "pid": proc.pid if running else None,
                "run": run["id"] if run else None,
                "config": dict(run["config"]) if run else None,
                "returncode": None if running else self._returncode,
                "message": self._message,
                "has_checkpoint": self.checkpoint_dir(quiet=True) is not None,
                "can_watch": self._watch_problem() is None,
                "metric": dict(run["metric"]) if run else None,
                "watching": self.watch_info(),
                "curve": {k: list(v) for k, v in self._curve.items()},
            }

    def message(self):
        return {"type": "rl", **self.status()}

    def checkpoint_dir(self, quiet=False):
        """The latest run's folder once it holds a model (a backend's MODEL_FILES), else None /
        NoCheckpoint."""
        with self._lock:
            run = self._run
        if run and _has_model(run["dir"]):
            return run["dir"]
        if quiet:
            return None
        raise NoCheckpoint(
            "no checkpoint yet: start a training (POST /api/rl/start) and wait "
            "for its first PPO update"
        )

    def _watch_problem(self):
        """Why the latest run has nothing to watch (a sentence), or None when it has: its model
        after at least one PPO update, and the run did not fail (a stopped run is watchable)."""
        with self._lock:
            run, curve, code, msg = self._run, self._curve, self._returncode, self._message
        if run is None:
            return "no training yet: start one (POST /api/rl/start)"
        failed = code not in (None, 0) and msg != "stopped"
        if failed:
            return (
                f"nothing to watch: run {run['id']} {msg}; start a new training "
                "(POST /api/rl/start)"
            )
        if not curve["steps"] or not _has_model(run["dir"]):
            then = (
                "wait for the first row of its curve"
                if code is None
                else "start a new training (POST /api/rl/start)"
            )
            return f"nothing to watch yet: run {run['id']} has no finished PPO update; {then}"
        return None

    def watch_dir(self):
        """The latest run's folder when its policy can be watched; NoCheckpoint (404) before
        any training's model, NothingToWatch (422, saying why) for a failed run or one without
        a finished PPO update."""
        with self._lock:
            if self._run is None:
                self.checkpoint_dir()  # NoCheckpoint: no training yet
            self._reap()
            problem = self._watch_problem()
            if problem is not None:
                raise NothingToWatch(problem)
            return self._run["dir"]

    def watch_target(self):
        """(folder, task, run id, seed) of the latest run when its policy can be watched (the
        errors of watch_dir)."""
        with self._lock:
            folder = self.watch_dir()
            run = self._run
            return folder, run["config"]["task"], run["id"], run["config"]["seed"]

    def checkpoint_key(self, folder):
        """The name of the folder's current checkpoint (the target of its `checkpoint` link; the
        folder itself for one without): an export of it is reused until the next update."""
        return os.path.realpath(os.path.join(folder, "checkpoint"))

    def cached_policy(self, key):
        """The ONNX bytes exported for checkpoint `key`, or None."""
        with self._lock:
            return self._onnx[1] if self._onnx and self._onnx[0] == key else None

    def keep_policy(self, key, data):
        """Keep the ONNX bytes of checkpoint `key` (one at a time: the latest)."""
        with self._lock:
            self._onnx = (key, data)

    # ------------------------------------------------------------ control

    def check(self, cfg):
        """Server limits beyond the request model's ranges (RLInputError naming the field)."""
        s = self.settings
        if cfg["num_envs"] > s.rl_num_envs_max:
            raise RLInputError(
                f"num_envs: got {cfg['num_envs']}, valid range [1, "
                f"{s.rl_num_envs_max}] (server setting rl_num_envs_max)"
            )
        if cfg["total_steps"] > s.rl_total_steps_max:
            raise RLInputError(
                f"total_steps: got {cfg['total_steps']}, valid range [1, "
                f"{s.rl_total_steps_max}] (server setting rl_total_steps_max)"
            )
        rollout = cfg["n_steps"] * cfg["num_envs"]
        if cfg["batch_size"] > rollout:
            raise RLInputError(
                f"batch_size: got {cfg['batch_size']}, valid range [2, n_steps * "
                f"num_envs = {rollout}] (a PPO minibatch comes from one rollout)"
            )

    def start(self, cfg):
        """Start `asr train` for cfg (RLStart fields) in a new run folder; TrainingBusy if one
        runs. Answers the status."""
        self.check(cfg)
        metric = metric_info(cfg["task"])
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                raise TrainingBusy("a training is already running; POST /api/rl/stop first")
            if self._closed.is_set():
                raise RuntimeError("the dashboard is stopping")
            self._close_log()
            if self._root is None:
                self._root = tempfile.mkdtemp(prefix="asr-dashboard-rl-")
            self._runs += 1
            out = os.path.join(self._root, f"run-{self._runs}")
            os.makedirs(out)
            argv = [
                *self.command,
                "--task",
                cfg["task"],
                "--total-steps",
                str(cfg["total_steps"]),
                "--num-envs",
                str(cfg["num_envs"]),
                "--seed",
                str(cfg["seed"]),
                "--out",
                out,
                "--no-progress",
            ]
            for key, value in [(k, cfg[k]) for k in HYPERPARAMETERS] + list(FIXED_SETTINGS.items()):
                argv += ["--set", f"{key}={value!r}"]
            env = dict(
                os.environ,
                PYTHONUNBUFFERED="1",
                OMP_NUM_THREADS="1",
                PYTHONPATH=os.pathsep.join(
                    p for p in (REPO_ROOT, os.environ.get("PYTHONPATH")) if p
                ),
            )
            self._log = open(os.path.join(out, "train.log"), "wb")
            try:
                self._proc = subprocess.Popen(
                    argv,
                    cwd=out,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=self._log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                self._close_log()
                raise RuntimeError(public_message(f"could not start the trainer: {exc}")) from None
            self._run = {
                "id": self._runs,
                "dir": out,
                "config": dict(cfg),
                "started": time.time(),
                "metric": metric,
            }
            self._curve = decimate(read_curve(""), 1)
            self._curve_mtime = None
            self._paused = False
            self._returncode = None
            self._exit_published = False
            self._message = "running"
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._watch_loop, name="asr-dashboard-rl", daemon=True
                )
                self._thread.start()
        self._publish()
        return self.status()

    def _signal(self, sig):
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return False
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def pause(self):
        """SIGSTOP the trainer (its process group)."""
        return self._set_paused(True)

    def resume(self):
        """SIGCONT the trainer."""
        return self._set_paused(False)

    def _set_paused(self, paused):
        with self._lock:
            if self._signal(signal.SIGSTOP if paused else signal.SIGCONT):
                self._paused = paused
                self._message = "paused" if paused else "running"
        self._publish()
        return self.status()

    def stop(self, timeout=None):
        """SIGTERM (and SIGCONT, so a paused trainer sees it), SIGKILL after `timeout`
        (Settings.rl_stop_s); waits for the process. Answers the status. The wait holds no
        lock: status, pause and watch requests, answered on the server's event loop, take the
        manager's lock, and the whole server would stand still until the trainer exits."""
        timeout = self.settings.rl_stop_s if timeout is None else timeout
        with self._lock:
            proc = self._proc
            live = proc is not None and proc.poll() is None
            if live:
                self._signal(signal.SIGTERM)
                self._signal(signal.SIGCONT)
                self._message = "stopped"
        if live:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with self._lock:
                    if self._proc is proc:
                        self._signal(signal.SIGKILL)
                proc.wait(10)
        with self._lock:
            if live and self._proc is proc:
                self._paused = False
            self._reap()
            self._exit_published = True
        self._publish()
        return self.status()

    def shutdown(self):
        """The server stops: kill the trainer (bounded), stop the watcher, remove the runs."""
        self._closed.set()
        self.stop(timeout=min(2.0, self.settings.rl_stop_s))
        if self._thread is not None:
            self._thread.join(5)
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)

    def _close_log(self):
        if self._log is not None:
            self._log.close()
            self._log = None

    # ------------------------------------------------------------ watcher thread

    def _refresh_curve(self):
        """Read curve.json again if it changed; True when it did."""
        run = self._run
        if run is None:
            return False
        path = os.path.join(run["dir"], "curve.json")
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            return False
        if mtime == self._curve_mtime:
            return False
        cols = read_curve(path)
        self._curve_mtime = mtime
        if not cols["steps"] and self._curve["steps"]:
            return False  # a half-written file from a non-atomic writer: keep the last curve
        self._curve = decimate(cols, self.settings.rl_curve_points)
        return True

    def _reap(self):
        """The process has ended (call under the lock): its exit code and message, once."""
        proc = self._proc
        if proc is None or self._returncode is not None or proc.poll() is None:
            return
        self._returncode = proc.returncode
        self._paused = False
        self._close_log()
        self._refresh_curve()
        if self._message != "stopped":
            self._message = "finished" if proc.returncode == 0 else self._failure(proc.returncode)

    def _failure(self, code):
        """The message of a failed run: "failed (exit n): <last line of its output>", a signal
        named (exit -9, SIGKILL)."""
        why = f"exit {code}"
        if code < 0:
            try:
                why += f", {signal.Signals(-code).name}"
            except ValueError:
                pass
        tail = self._log_tail()
        return public_message(f"failed ({why})" + (f": {tail}" if tail else ""), 300)

    def _log_tail(self):
        run = self._run
        try:
            with open(os.path.join(run["dir"], "train.log"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - MAX_LOG_BYTES))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line for line in text.strip().splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def _watch_loop(self):
        while not self._closed.wait(POLL_S):
            changed = False
            with self._lock:
                proc = self._proc
                if proc is None:
                    continue
                changed = self._refresh_curve()
                self._reap()
                if not self._exit_published and self._returncode is not None:
                    self._exit_published = changed = True
            if changed:
                self._publish()

    def publish_status(self):
        """Send the status to the clients now (after a watch change)."""
        self._publish()

    def _publish(self):
        try:
            self.publish(self.message())
        except Exception:  # noqa: BLE001 - a closed event loop: nobody to tell
            pass
