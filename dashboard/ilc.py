"""The dashboard's ILC run ([Mengacci2021] sec. 4.3 with asr.ilc, PROTOCOL.md "ILC"): ILCRun,
the run on its own Sim in a worker thread (asr's C core releases the GIL), and the pure rules it
applies: its learning-gain schedule, update filter, verdict and the early stop of a diverging
run.

- Gain schedule: K(n) = gain exp(-n / gain_decay) for the update producing trial n + 1 (the
  paper's K_off(n) = 0.5 exp(-n/10): gain 0.5, gain_decay 10 iterations); gain_decay null
  keeps K constant (a constant 0.5 on the default arm falls for ~6 trials, then grows).
- Filter: lowpass_hz null (none) or the cut-off (Hz) of asr's zero-phase Butterworth filter
  (asr.learning.iterative_learning.lowpass) applied to every update.
- Diverging: the max error grew in DIVERGE_GROWTHS trials in a row and the latest is more than
  DIVERGE_FACTOR times the smallest so far; the run then stops at that trial.
- Result (POST /api/ilc/result.npz): the last run's learned feed-forward of every trial (the
  input eq(t) of trial n, recorded as asr.ilc builds it: the first trial's is the reference,
  each next one the last plus the filtered update), its errors per trial and its settings. The
  trials' inputs are bounded to MAX_INPUTS_BYTES: a longer run keeps evenly spaced trials, the
  first and the last always.
"""

import io
import json
import math
import threading

import numpy as np

import asr
from asr.references import min_jerk

from .errors import public_message
from .references import ControlError, preset_spec
from .session import num

DIVERGE_GROWTHS = 3  # trials in a row whose max error grew
DIVERGE_FACTOR = 2.0  # ... past this multiple of the smallest max error so far
MAX_INPUTS_BYTES = 32 << 20  # the trials' inputs kept for the download (float64), at most

# verdict -> the status text's words (the message of the final `ilc` event)
VERDICTS = {
    "converged": "converged",
    "diverging": "diverging, stopped early",
    "max_iterations": "stopped at max iterations",
    "stopped": "stopped by the user",
    "failed": "failed",
}


def gain_schedule(gain, gain_decay):
    """schedule(n) -> K(n) = gain exp(-n / gain_decay) (1/1, rad per rad) for asr.ilc; a
    constant gain when gain_decay is None."""

    def schedule(n):
        return gain if gain_decay is None else gain * math.exp(-n / gain_decay)

    schedule.description = (
        f"K(n) = {gain:g}" if gain_decay is None else f"K(n) = {gain:g} exp(-n/{gain_decay:g})"
    )
    return schedule


def update_filter(lowpass_hz, dt):
    """None (no filter) or asr's zero-phase low-pass filter at lowpass_hz (Hz) for the Sim's
    time step dt (s); a cut-off at or above the Nyquist frequency raises ValueError naming
    lowpass_hz and the valid range."""
    if lowpass_hz is None:
        return None
    from asr.learning.iterative_learning import lowpass

    return lowpass(lowpass_hz, dt)


def diverging(errors):
    """True when the max errors per trial, errors (n,) rad, grew DIVERGE_GROWTHS times in a row
    and the last one exceeds DIVERGE_FACTOR times their minimum."""
    e = np.asarray([np.inf if x is None else x for x in errors], dtype=float)
    if e.size <= DIVERGE_GROWTHS:
        return False
    grew = np.all(np.diff(e[-DIVERGE_GROWTHS - 1 :]) > 0)
    return bool(grew and e[-1] > DIVERGE_FACTOR * np.nanmin(e))


def verdict(converged, diverged, stopped, iterations, max_iter):
    """The run's verdict (a key of VERDICTS)."""
    if converged:
        return "converged"
    if diverged:
        return "diverging"
    if stopped and iterations < max_iter:
        return "stopped"
    return "max_iterations"


def final_message(kind, errors, tol):
    """The status text of a finished run: the verdict, its trial count and error, e.g.
    "converged: max |e| 0.0791 rad <= tol 0.08 rad at iteration 9"."""
    words = VERDICTS[kind]
    if not errors:
        return words
    n, last = len(errors), errors[-1]
    last_s = "nan" if last is None else f"{last:.3g}"
    if kind == "converged":
        return f"{words}: max |e| {last_s} rad <= tol {tol:g} rad at iteration {n}"
    best = min(x for x in errors if x is not None) if any(x is not None for x in errors) else None
    best_s = "nan" if best is None else f"{best:.3g}"
    return f"{words} at iteration {n}: max |e| {last_s} rad (best {best_s}, tol {tol:g} rad)"


def kept_trials(iterations, bytes_per_input, max_bytes=MAX_INPUTS_BYTES):
    """The trial numbers (1-based) whose inputs a run of at most `iterations` trials keeps: all
    of them when they fit in max_bytes, else evenly spaced ones, the first and the last."""
    most = max(2, int(max_bytes // max(1, bytes_per_input)))
    if iterations <= most:
        return set(range(1, iterations + 1))
    return {int(n) for n in np.linspace(1, iterations, most).round()}


class InputRecorder:
    """The `filter` given to asr.ilc: applies the run's own filter (or none) to every update and
    rebuilds the input of the next trial as asr.ilc does (the last input plus the update, the
    same float operations on one instance), keeping those of the trials in `keep`."""

    def __init__(self, first, inner, keep):
        self.inner = inner
        self.description = getattr(inner, "description", None) if inner else "none"
        self.input = np.array(first, dtype=float)  # (N, T, J) rad, the current trial's
        self.trial = 1
        self.keep = keep
        self.kept = {1: self.input.copy()} if 1 in keep else {}

    def __call__(self, update):
        out = np.asarray(update if self.inner is None else self.inner(update), dtype=float)
        self.input = self.input + out
        self.trial += 1
        if self.trial in self.keep:
            self.kept[self.trial] = self.input.copy()
        return out

    def trials(self, last_input, trials):
        """(numbers (K,), inputs (K, N, T, J) rad) of the kept trials of a run of `trials`
        trials whose last input is last_input (always kept)."""
        kept = {n: u for n, u in self.kept.items() if n <= trials}
        kept[trials] = np.asarray(last_input, dtype=float)
        numbers = sorted(kept)
        return np.array(numbers, dtype=np.int64), np.stack([kept[n] for n in numbers])


class Busy(RuntimeError):
    """The ILC is already running (-> 409)."""


class ILCRun:
    """The ILC run of the dashboard: its status (sent to every client as `ilc` messages through
    `publish(kind, msg)`), its worker thread and its result. `server_stopping()` is true once the
    server stops (the run then stops after its current trial)."""

    def __init__(self, settings, publish, server_stopping):
        self.settings = settings
        self.publish = publish
        self.server_stopping = server_stopping
        self._lock = threading.Lock()
        self._status = {
            "running": False,
            "stopping": False,
            "iteration": 0,
            "errors": [],
            "message": None,
            "verdict": None,
            "seq": 0,
            "run": 0,
            "config": None,
        }
        self._result = None
        self._thread = None
        self._stop = threading.Event()

    def status(self):
        """The run's status; `seq` grows with every change, so a client keeps the newest of the
        answers and events it gets (they may cross)."""
        with self._lock:
            s = dict(self._status, errors=list(self._status["errors"]))
            s["has_result"] = self._result is not None
        return s

    def start(self, session, cfg):
        """Start the ILC (min-jerk 0 -> target on every joint) on a separate Sim of the session's
        robot (runner thread). Raises Busy if one runs, ControlError for a bad configuration."""
        with self._lock:
            if self._status["running"]:
                raise Busy("an ILC run is already in progress; POST /api/ilc/stop first")
        robot, modes = session.robot, list(session.modes)
        bad = [n for n, m in zip(session.joint_names, modes) if m not in (3, 6)]
        if bad:
            raise ControlError(
                f"ilc: every joint must be in mode 3 or 6 (equilibrium, "
                f"preset); not: {', '.join(bad)}"
            )
        for name, model in zip(session.joint_names, session.models):
            if preset_spec(model)["kind"] == "ref":
                session.check_preset(name, cfg["preset"])
        update_filter(cfg.get("lowpass_hz"), session.sim.dt)  # a bad cut-off: 422
        overrides = {k: dict(v) for k, v in session.param_overrides.items()}
        with self._lock:
            self._status = {
                "running": True,
                "stopping": False,
                "iteration": 0,
                "errors": [],
                "message": "running",
                "verdict": None,
                "tol": cfg["tol"],
                "seq": self._status["seq"] + 1,
                "run": self._status["run"] + 1,
                "config": dict(cfg),
                "robot": robot.name,
                "variant": robot.variant,
            }
            self._result = None
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run,
                args=(robot, modes, overrides, dict(cfg)),
                name="asr-dashboard-ilc",
                daemon=True,
            )
            self._thread.start()
        return self.status()

    def stop(self):
        """Ask the run to stop after its current trial; its final event follows. The `stopping`
        event goes out before the worker can see the request, so a run that ends at once still
        tells its clients that it was asked to stop, in order (stopping, then final)."""
        self._event(stopping=True, message="stopping after the current iteration")
        self._stop.set()
        return self.status()

    def shutdown(self, timeout):
        """The server stops: stop the run and wait for its thread (at most timeout s)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _event(self, **kw):
        """Update the status and publish it. A finished run's status is final: nothing changes
        it until the next start."""
        with self._lock:
            if not self._status["running"]:
                return
            self._status.update(kw, seq=self._status["seq"] + 1)
        self.publish("ilc", dict(self.status(), type="ilc"))

    def _stopped(self):
        return self._stop.is_set() or self.server_stopping()

    def _run(self, robot, modes, overrides, cfg):
        from asr.learning.iterative_learning import ilc

        errors, diverged = [], [False]
        try:
            sim = asr.Sim(robot, 1, threads=self.settings.threads)
            for k, name in enumerate(robot.joint_names):
                if sim.batch.modes[k] != modes[k]:
                    sim.batch.set_mode(k, modes[k])
                for p, v in overrides.get(name, {}).items():
                    sim.batch.set_param(k, p, v)
            T = int(round(cfg["duration"] / sim.dt))
            t = (np.arange(T) + 1) * sim.dt
            q = min_jerk(t, 0.0, cfg["target"], cfg["duration"])
            ref = np.repeat(q[:, None], sim.n_joints, axis=1)

            inner = update_filter(cfg["lowpass_hz"], sim.dt)
            keep = kept_trials(cfg["iterations"], ref.nbytes)
            recorder = InputRecorder(ref[None], inner, keep)

            def callback(n, row, converged):
                errors.append(num(row[0]))
                diverged[0] = not converged[0] and diverging(errors)
                self._event(iteration=n, errors=list(errors))
                return diverged[0] or self._stopped()

            res = ilc(
                sim,
                ref,
                schedule=gain_schedule(cfg["gain"], cfg["gain_decay"]),
                filter=recorder,
                preset=cfg["preset"],
                tol=cfg["tol"],
                max_iter=cfg["iterations"],
                settle_s=cfg["settle_s"],
                callback=callback,
            )
            res.metadata["filter"] = None if inner is None else res.metadata["filter"]
            numbers, inputs = recorder.trials(res.input, len(errors))
            with self._lock:
                self._result = (res, numbers, inputs, dict(cfg))
            kind = verdict(
                bool(res.converged[0]), diverged[0], self._stopped(), len(errors), cfg["iterations"]
            )
            self._event(
                running=False,
                stopping=False,
                converged=bool(res.converged[0]),
                verdict=kind,
                message=final_message(kind, errors, cfg["tol"]),
            )
        except Exception as exc:  # noqa: BLE001 - reported to the clients
            self._event(
                running=False,
                stopping=False,
                verdict="failed",
                message=public_message(f"failed: {type(exc).__name__}: {exc}"),
            )

    def result_npz(self):
        """The last finished run's arrays as .npz bytes, or None: asr.ilc's result (input,
        reference, output (N, T, J) rad, errors (n, N), errors_joint (n, N, J) rad, presets,
        dt), `time` (T,) s, `trial_inputs` (K, N, T, J) rad the learned feed-forward of the
        trials `trials` (K,) (every trial up to MAX_INPUTS_BYTES), `trial_errors` (n,) rad the
        max |e| of every trial (the status' errors), and JSON `settings` (the run's start
        fields, verdict, message) and `metadata` (asr.ilc's)."""
        with self._lock:
            result = self._result
            status = dict(self._status)
        if result is None:
            return None
        res, numbers, inputs, cfg = result
        settings = dict(cfg, verdict=status.get("verdict"), message=status.get("message"))
        buf = io.BytesIO()
        np.savez_compressed(
            buf,
            input=res.input,
            reference=res.reference,
            output=res.output,
            errors=res.errors,
            errors_joint=res.errors_joint,
            presets=res.presets,
            dt=np.array(res.dt),
            time=res.time,
            trials=numbers,
            trial_inputs=inputs,
            trial_errors=res.errors[:, 0],
            settings=np.array(json.dumps(settings)),
            metadata=np.array(json.dumps(res.metadata)),
        )
        return buf.getvalue()
