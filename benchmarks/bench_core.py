"""Core throughput: actuator-steps per second of the C core against a NumPy version of the same
equations, measured side by side in this process (`make bench`).

Workload: qbmove_advanced joints in mode 6 (equilibrium/preset references -> map -> PID per
motor -> motor dynamics with Dahl friction), toolbox defaults, preset 0.4 rad, a time-varying
equilibrium reference eq_i(t) = 0.5 sin(2 pi t + 2 pi i / N) rad, the link held at q = 0,
dt = 1 ms (one motor sub-step per step). N instances x 1 joint, N = 64, 1000, 100000.

C: one `asr.Batch.rollout(steps, dt, refs=(N, steps, 1, 2), record=())` call per timing (the
time includes rollout's Python-side checks of the inputs), threads 1 and 2, steps chosen so a
timing takes about `target_s`. NumPy: benchmarks/numpy_reference.py, a Python loop over steps,
NumPy over all joints (tests/test_numpy_reference.py checks it agrees with the core to 1e-12).
Every timing starts from the same reset state; each figure is the best of `reps` repetitions
(time.perf_counter), the repetitions of NumPy and of each thread count interleaved so that they
see the same background load. Inputs are deterministic.

Prints a table and writes benchmarks/results/core.json, one flat {figure_name: number} object.
Benchmarks report; they do not assert. Wall-clock figures on a shared machine are noisy.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import asr  # noqa: E402
from numpy_reference import QbmoveAdvancedMode6  # noqa: E402
from results_file import report_and_write  # noqa: E402

DT = 1e-3
PRESET = 0.4
EQ_AMPLITUDE = 0.5      # rad
EQ_FREQUENCY = 1.0      # Hz
MAX_REFS_VALUES = 16_000_000   # cap on the (N, steps, 1, 2) reference array: 128 MB of float64
DEFAULT_OUT = os.path.join(HERE, "results", "core.json")

# Targets of the issue (reported, not asserted).
TARGET_PER_CORE_N100000 = 10e6
TARGET_RATIO_N64 = 20.0
TARGET_RATIO_N100000 = 3.0
TARGET_THREAD_SPEEDUP = 1.8


def make_refs(steps, n):
    """(n, steps, 1, 2) references: equilibrium 0.5 sin(2 pi f t + 2 pi i/n), preset 0.4."""
    t = np.arange(steps) * DT
    phase = 2.0 * np.pi * np.arange(n) / n
    refs = np.empty((n, steps, 1, 2))
    refs[:, :, 0, 0] = EQ_AMPLITUDE * np.sin(2.0 * np.pi * EQ_FREQUENCY * t + phase[:, None])
    refs[:, :, 0, 1] = PRESET
    return refs


def _steps_for(rate, n, target_s, cap):
    return int(min(cap, max(2, round(target_s * rate / n))))


class _Timing:
    """One configuration: run(refs) -> seconds for refs.shape[1] steps over n joints."""

    def __init__(self, n, run, pilot):
        self.n, self.run, self.pilot = n, run, pilot
        self.best = math.inf

    def calibrate(self, target_s):
        """Time a short pilot, then size the timed run to about target_s (refs capped)."""
        n = self.n
        cap = max(2, MAX_REFS_VALUES // (2 * n))
        pilot = min(cap, max(2, self.pilot))
        refs = make_refs(pilot, n)
        self.run(refs)  # warm-up (first touch of the state)
        rate = n * pilot / min(self.run(refs), self.run(refs))
        self.steps = _steps_for(rate, n, target_s, cap)
        self.refs = make_refs(self.steps, n)

    def once(self):
        self.best = min(self.best, self.run(self.refs))

    @property
    def rate(self):
        """Best actuator-steps per second so far."""
        return self.n * self.steps / self.best


def c_timing(n, threads):
    """One Batch.rollout of the whole run over n joints with `threads` threads."""
    b = asr.Batch([asr.Joint("qbmove_advanced", mode=6)], n, threads=threads)

    def run(refs):
        b.reset(0.0, refs[:, 0])
        t0 = time.perf_counter()
        b.rollout(refs.shape[1], DT, refs, record=())
        return time.perf_counter() - t0

    return _Timing(n, run, 20_000 // n)


def numpy_timing(n):
    """The NumPy reference, a Python loop over the steps."""
    ref = QbmoveAdvancedMode6(n)

    def run(refs):
        r2 = np.ascontiguousarray(refs[:, :, 0, :].transpose(1, 0, 2))  # its (steps, n, 2)
        ref.reset(0.0, r2[0])
        t0 = time.perf_counter()
        for t in range(r2.shape[0]):
            ref.step(0.0, 0.0, r2[t], DT)
        return time.perf_counter() - t0

    return _Timing(n, run, 2_000 // n)


def _fmt_rate(x):
    return f"{x / 1e6:10.2f} M"


def main(sizes=(64, 1000, 100000), threads=(1, 2), target_s=0.5, numpy_target_s=0.3, reps=5,
         out=DEFAULT_OUT, write=True, quiet=False):
    """Run the benchmark; returns the flat {figure_name: number} dict (also written to `out`
    when `write`)."""
    t_start = time.perf_counter()
    say = (lambda *a: None) if quiet else print
    fig = {}
    rows = []
    for n in sizes:
        # Repetitions interleaved (NumPy, C t1, C t2, NumPy, ...) so that every configuration
        # sees the same background load; each figure is its best repetition.
        np_t = numpy_timing(n)
        np_t.calibrate(numpy_target_s)
        c_t = {th: c_timing(n, th) for th in threads}
        for tm in c_t.values():
            tm.calibrate(target_s)
        for _ in range(reps):
            np_t.once()
            for tm in c_t.values():
                tm.once()
        np_rate = np_t.rate
        fig[f"numpy_steps_per_s_n{n}"] = np_rate
        fig[f"rollout_steps_numpy_n{n}"] = np_t.steps
        for th in threads:
            rate = c_t[th].rate
            fig[f"actuator_steps_per_s_n{n}_t{th}"] = rate
            fig[f"rollout_steps_c_n{n}_t{th}"] = c_t[th].steps
            ratio = rate / np_rate
            fig[f"ratio_vs_numpy_n{n}" + ("" if th == 1 else f"_t{th}")] = ratio
            speedup = rate / c_t[threads[0]].rate if th != threads[0] else None
            if speedup is not None:
                fig[f"thread_speedup_n{n}" + ("" if th == 2 else f"_t{th}")] = speedup
            rows.append((n, th, rate, np_rate, ratio, speedup))
        del np_t, c_t

    def met(key, target):
        if key in fig:
            fig["target_met_" + key] = int(fig[key] >= target)
            fig["target_" + key] = target

    met("actuator_steps_per_s_n100000_t1", TARGET_PER_CORE_N100000)
    met("ratio_vs_numpy_n64", TARGET_RATIO_N64)
    met("ratio_vs_numpy_n100000", TARGET_RATIO_N100000)
    met("thread_speedup_n100000", TARGET_THREAD_SPEEDUP)
    fig["cpu_count"] = os.cpu_count() or 0
    fig["dt_s"] = DT
    fig["bench_wall_s"] = time.perf_counter() - t_start

    say("asr core: qbmove_advanced, mode 6 (PID + motor dynamics + friction), preset 0.4, "
        f"time-varying equilibrium, dt = {DT:g} s; best of {reps}; actuator-steps/s")
    say(f"{'N':>7} {'threads':>7} {'C':>14} {'NumPy':>14} {'C / NumPy':>10} {'thread x':>9}")
    for n, th, rate, np_rate, ratio, speedup in rows:
        sp = f"{speedup:9.2f}" if speedup is not None else f"{'':>9}"
        say(f"{n:>7} {th:>7} {_fmt_rate(rate):>14} {_fmt_rate(np_rate):>14} {ratio:10.1f} {sp}")
    targets = [
        ("actuator_steps_per_s_n100000_t1", ">= 10 M actuator-steps/s on one core at N = 100000",
         lambda v: f"{v / 1e6:.2f} M"),
        ("ratio_vs_numpy_n64", ">= 20x NumPy at N = 64", lambda v: f"{v:.1f}x"),
        ("ratio_vs_numpy_n100000", ">= 3x NumPy at N = 100000", lambda v: f"{v:.1f}x"),
        ("thread_speedup_n100000", ">= 1.8x from the second thread at N = 100000",
         lambda v: f"{v:.2f}x"),
    ]
    report_and_write(fig, out, say, write, targets)
    return fig


def _cli(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 1000, 100000])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--target-s", type=float, default=0.5, help="seconds per C timing")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    main(sizes=tuple(a.sizes), threads=tuple(a.threads), target_s=a.target_s, reps=a.reps,
         out=a.out)


if __name__ == "__main__":
    _cli()
