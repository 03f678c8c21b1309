"""The dashboard's ILC run ([Mengacci2021] sec. 4.3 with asr.ilc): its learning-gain schedule,
update filter, verdict and the early stop of a diverging run (pure functions; the runner's
worker thread applies them, PROTOCOL.md "ILC").

- Gain schedule: K(n) = gain exp(-n / gain_decay) for the update producing trial n + 1 (the
  paper's K_off(n) = 0.5 exp(-n/10): gain 0.5, gain_decay 10 iterations); gain_decay null
  keeps K constant (a constant 0.5 on the default arm falls for ~6 trials, then grows).
- Filter: lowpass_hz null (none) or the cut-off (Hz) of asr's zero-phase Butterworth filter
  (asr.iterative_learning.lowpass) applied to every update.
- Diverging: the max error grew in DIVERGE_GROWTHS trials in a row and the latest is more than
  DIVERGE_FACTOR times the smallest so far; the run then stops at that trial.
"""
import math

import numpy as np

DIVERGE_GROWTHS = 3     # trials in a row whose max error grew
DIVERGE_FACTOR = 2.0    # ... past this multiple of the smallest max error so far

# verdict -> the status text's words (the message of the final `ilc` event)
VERDICTS = {"converged": "converged", "diverging": "diverging, stopped early",
            "max_iterations": "stopped at max iterations", "stopped": "stopped by the user",
            "failed": "failed"}


def gain_schedule(gain, gain_decay):
    """schedule(n) -> K(n) = gain exp(-n / gain_decay) (1/1, rad per rad) for asr.ilc; a
    constant gain when gain_decay is None."""
    def schedule(n):
        return gain if gain_decay is None else gain * math.exp(-n / gain_decay)

    schedule.description = (f"K(n) = {gain:g}" if gain_decay is None
                            else f"K(n) = {gain:g} exp(-n/{gain_decay:g})")
    return schedule


def update_filter(lowpass_hz, dt):
    """None (no filter) or asr's zero-phase low-pass filter at lowpass_hz (Hz) for the Sim's
    time step dt (s); a cut-off at or above the Nyquist frequency raises ValueError naming
    lowpass_hz and the valid range."""
    if lowpass_hz is None:
        return None
    from asr.iterative_learning import lowpass

    return lowpass(lowpass_hz, dt)


def diverging(errors):
    """True when the max errors per trial, errors (n,) rad, grew DIVERGE_GROWTHS times in a row
    and the last one exceeds DIVERGE_FACTOR times their minimum."""
    e = np.asarray([np.inf if x is None else x for x in errors], dtype=float)
    if e.size <= DIVERGE_GROWTHS:
        return False
    grew = np.all(np.diff(e[-DIVERGE_GROWTHS - 1:]) > 0)
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
