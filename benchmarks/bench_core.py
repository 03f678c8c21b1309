"""Core throughput: actuator-steps per second of the C core against NumPy and Numba versions of
the same equations, measured side by side in this process (`make bench`).

Workload: qbmove_advanced joints in mode 6 (equilibrium/preset references -> map -> PID per
motor -> motor dynamics with Dahl friction), toolbox defaults, preset 0.4 rad, a time-varying
equilibrium reference eq_i(t) = 0.5 sin(2 pi t + 2 pi i / N) rad, the link held at q = 0,
dt = 1 ms (one motor sub-step per step). N instances x 1 joint, N = 64, 1000, 100000.

C: one `asr.Batch.rollout(steps, dt, refs=(N, steps, 1, 2), record=())` call per timing (the time
includes rollout's Python-side checks of the inputs), threads 1 and 2, steps chosen so a timing
takes about `target_s`. NumPy: benchmarks/numpy_reference.py, a Python loop over steps, NumPy over
all joints (tests/core/test_numpy_reference.py checks it agrees with the core to 1e-12). Numba:
benchmarks/numba_reference.py, one jitted call per rollout looping over instances and steps, one
thread (njit) and parallel over the instances (prange, numba.set_num_threads(max of `threads`));
compiled before any timing; it reads the same (N, steps, 1, 2) reference array as C
(tests/core/test_numba_reference.py checks both variants against the core to 1e-12). Left out, with
a note, when numba is not installed. Every timing starts from the same reset state; each figure is
the best of `reps` repetitions (time.perf_counter), the repetitions of NumPy, Numba and of each
thread count interleaved so that they see the same background load. Inputs are deterministic.

Figures (N in sizes, T in threads): actuator_steps_per_s_n{N}_t{T} (C), numpy_steps_per_s_n{N},
numba_steps_per_s_n{N}, numba_parallel_steps_per_s_n{N}, ratio_vs_numpy_n{N}[_t{T}] and
ratio_vs_numba_n{N} (C one thread / Numba one thread), ratio_vs_numba_parallel_n{N} (C / Numba
parallel, same thread count), thread_speedup_n{N}; targets as target_{figure} and
target_met_{figure} (1 or 0).

Other models: the C core alone, one thread, modes 3 (reference map -> motor positions) and 6 for
sea (preset unused: 0), bavs (preset 0.1 rad) and awas2 (preset = pivot position 0.02 m, within
[0, L), L = 0.05 m), N = 64 and 100000, the same equilibrium reference, about 0.3 s per timing,
best of min(reps, 3): c_steps_per_s_{model}_mode{m}_n{N}.

Instruction sets: the C step runs the kernel built for the widest vector unit here (asr.Batch.simd:
avx512, avx2 or baseline; simd_{name} = 1 in the figures), NumPy its own widest loops, Numba code
for this CPU. The issue that set the targets measured on an AVX2 machine without AVX-512; where
this machine has AVX-512, the benchmark also runs itself in a child process with all three capped
at AVX2 (ASR_SIMD=avx2, NPY_DISABLE_CPU_FEATURES naming NumPy's AVX-512 targets,
NUMBA_CPU_NAME=haswell), N = 64 and 100000, one thread, and reports those figures with the prefix
avx2_ (C, NumPy and Numba side by side in that process); --no-avx2-run leaves it out.

Prints a table and writes benchmarks/results/core.json, one flat {figure_name: number} object.
Benchmarks report; they do not assert. Wall-clock figures on a shared machine are noisy.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from numpy_reference import QbmoveAdvancedMode6  # noqa: E402
from results_file import report_and_write  # noqa: E402

import asr  # noqa: E402

try:
    import numba
    import numba_reference
except ImportError:  # the Numba baseline is optional (it is in the `test` extra)
    numba = numba_reference = None

DT = 1e-3
PRESET = 0.4
EQ_AMPLITUDE = 0.5  # rad
EQ_FREQUENCY = 1.0  # Hz
MAX_REFS_VALUES = 16_000_000  # cap on the (N, steps, 1, 2) reference array: 128 MB of float64
DEFAULT_OUT = os.path.join(HERE, "results", "core.json")

# Targets of the issue (reported, not asserted); the ratios are C one thread / NumPy.
TARGET_PER_CORE_N100000 = 40e6
TARGET_PER_CORE_N64 = 30e6
TARGET_RATIO_N64 = 30.0
TARGET_RATIO_N100000 = 5.0
TARGET_THREAD_SPEEDUP = 1.8

# Other models reported (C only) in modes 3 and 6, with their preset reference (ref2): sea does
# not use it; bavs: preset angle, rad; awas2: pivot position, m, within [0, L) (L = 0.05 m).
OTHER_MODELS = {"sea": 0.0, "bavs": 0.1, "awas2": 0.02}
OTHER_MODES = (3, 6)
OTHER_SIZES = (64, 100000)
OTHER_TARGET_S = 0.3

# The child run capped at AVX2: environment, and the figures it reports (prefixed avx2_).
AVX2_ENV = {
    "ASR_SIMD": "avx2",
    "NUMBA_CPU_NAME": "haswell",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
}
AVX2_SIZES = (64, 100000)
AVX2_FIGURES = (
    "actuator_steps_per_s_n{n}_t1",
    "numpy_steps_per_s_n{n}",
    "numba_steps_per_s_n{n}",
    "ratio_vs_numpy_n{n}",
    "ratio_vs_numba_n{n}",
)


def make_refs(steps, n, preset=PRESET):
    """(n, steps, 1, 2) references: equilibrium 0.5 sin(2 pi f t + 2 pi i/n) rad, `preset` (rad
    for qbmove_advanced, the model's unit otherwise)."""
    t = np.arange(steps) * DT
    phase = 2.0 * np.pi * np.arange(n) / n
    refs = np.empty((n, steps, 1, 2))
    refs[:, :, 0, 0] = EQ_AMPLITUDE * np.sin(2.0 * np.pi * EQ_FREQUENCY * t + phase[:, None])
    refs[:, :, 0, 1] = preset
    return refs


def _steps_for(rate, n, target_s, cap):
    return int(min(cap, max(2, round(target_s * rate / n))))


class _Timing:
    """One configuration: run(refs) -> seconds for refs.shape[1] steps over n joints."""

    def __init__(self, n, run, pilot, preset=PRESET):
        self.n, self.run, self.pilot, self.preset = n, run, pilot, preset
        self.best = math.inf

    def calibrate(self, target_s):
        """Time a short pilot, then size the timed run to about target_s (refs capped)."""
        n = self.n
        cap = max(2, MAX_REFS_VALUES // (2 * n))
        pilot = min(cap, max(2, self.pilot))
        refs = make_refs(pilot, n, self.preset)
        self.run(refs)  # warm-up (first touch of the state)
        rate = n * pilot / min(self.run(refs), self.run(refs))
        self.steps = _steps_for(rate, n, target_s, cap)
        self.refs = make_refs(self.steps, n, self.preset)

    def once(self):
        self.best = min(self.best, self.run(self.refs))

    @property
    def rate(self):
        """Best actuator-steps per second so far."""
        return self.n * self.steps / self.best


def c_timing(n, threads, model="qbmove_advanced", mode=6, preset=PRESET):
    """One Batch.rollout of the whole run over n joints with `threads` threads."""
    b = asr.Batch([asr.Joint(model, mode=mode)], n, threads=threads)

    def run(refs):
        b.reset(0.0, refs[:, 0])
        t0 = time.perf_counter()
        b.rollout(refs.shape[1], DT, refs, record=())
        return time.perf_counter() - t0

    return _Timing(n, run, 20_000 // n, preset)


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


def numba_timing(n, parallel):
    """One jitted rollout of the Numba reference, compiled here, outside any timing."""
    ref = numba_reference.QbmoveAdvancedMode6(n, parallel=parallel)

    def run(refs):
        # its (steps, n, 2) as a view of the (n, steps, 1, 2) array C reads: the same memory
        r2 = refs[:, :, 0, :].transpose(1, 0, 2)
        ref.reset(0.0, r2[0])
        t0 = time.perf_counter()
        ref.rollout(r2.shape[0], DT, r2)
        return time.perf_counter() - t0

    run(make_refs(2, n))  # Numba compiles on the first call for these argument types
    return _Timing(n, run, 20_000 // n)


def _fmt_rate(x):
    return f"{x / 1e6:10.2f} M"


def _fmt_opt(x, fmt):
    return format(x, fmt) if x is not None else "-".rjust(len(format(1.0, fmt)))


def _numba_threads(threads):
    """Threads of the parallel Numba variant: the most C is timed with, within Numba's pool."""
    k = max(1, min(max(threads), numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(k)
    return k


def _numba_figures(fig, n, nb, c_t, nb_threads):
    """Numba figures of size n from its timings nb {False: njit, True: parallel}."""
    fig[f"numba_steps_per_s_n{n}"] = nb[False].rate
    fig[f"numba_parallel_steps_per_s_n{n}"] = nb[True].rate
    fig[f"rollout_steps_numba_n{n}"] = nb[False].steps
    fig[f"rollout_steps_numba_parallel_n{n}"] = nb[True].steps
    if 1 in c_t:
        fig[f"ratio_vs_numba_n{n}"] = c_t[1].rate / nb[False].rate
    if nb_threads in c_t:
        fig[f"ratio_vs_numba_parallel_n{n}"] = c_t[nb_threads].rate / nb[True].rate


def other_models(fig, sizes, target_s, reps):
    """C alone, one thread, modes 3 and 6 of the OTHER_MODELS: c_steps_per_s_{model}_mode{m}_n{N}.
    Each figure is the best of `reps` timings of about target_s."""
    for model, preset in OTHER_MODELS.items():
        for mode in OTHER_MODES:
            for n in sizes:
                tm = c_timing(n, 1, model, mode, preset)
                tm.calibrate(target_s)
                for _ in range(reps):
                    tm.once()
                fig[f"c_steps_per_s_{model}_mode{mode}_n{n}"] = tm.rate


def _say_other_models(fig, sizes, reps, say):
    say(f"other models (C, one thread, preset {OTHER_MODELS}), best of {reps}; actuator-steps/s")
    say(f"{'model':>7} {'mode':>4} " + " ".join(f"{'N = ' + str(n):>13}" for n in sizes))
    for model in OTHER_MODELS:
        for mode in OTHER_MODES:
            cells = [
                f"{_fmt_rate(fig[f'c_steps_per_s_{model}_mode{mode}_n{n}']):>13}" for n in sizes
            ]
            say(f"{model:>7} {mode:>4} " + " ".join(cells))


def simd_kernel():
    """The instruction set the C step runs on here (asr.Batch.simd)."""
    return asr.Batch("sea", 1).simd


def numpy_has_avx512():
    """Whether NumPy dispatches to AVX-512 loops in this process."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__ as features
    return bool(features.get("AVX512F") and features.get("AVX512_SKX"))


def avx2_run(fig, reps, target_s):
    """This benchmark in a child process with C, NumPy and Numba capped at AVX2 (AVX2_ENV):
    its AVX2_FIGURES at AVX2_SIZES, prefixed avx2_, into fig; returns its table's lines."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "core_avx2.json")
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--sizes",
            *map(str, AVX2_SIZES),
            "--threads",
            "1",
            "--no-models",
            "--no-avx2-run",
            "--reps",
            str(reps),
            "--target-s",
            str(target_s),
            "--out",
            out,
        ]
        proc = subprocess.run(
            cmd, env=dict(os.environ, **AVX2_ENV), capture_output=True, text=True, timeout=1800
        )
        if proc.returncode != 0:
            raise RuntimeError(f"the AVX2 run failed:\n{proc.stdout}\n{proc.stderr}")
        with open(out) as f:
            child = json.load(f)
    if child.get("simd_avx2") != 1 or child.get("numpy_avx512") != 0:
        raise RuntimeError("the AVX2 run did not run C and NumPy without AVX-512")
    for n in AVX2_SIZES:
        for name in AVX2_FIGURES:
            key = name.format(n=n)
            if key in child:
                fig["avx2_" + key] = child[key]
    table = [line for line in proc.stdout.splitlines() if line.startswith(" ")]
    return [
        "capped at AVX2 (child process: ASR_SIMD=avx2, NumPy without its AVX-512 loops, "
        "Numba for haswell):",
        *table,
    ]


def main(
    sizes=(64, 1000, 100000),
    threads=(1, 2),
    target_s=0.5,
    numpy_target_s=0.3,
    reps=5,
    out=DEFAULT_OUT,
    write=True,
    quiet=False,
    models=True,
    models_target_s=None,
    avx2=True,
):
    """Run the benchmark; returns the flat {figure_name: number} dict (also written to `out`
    when `write`). models: also time OTHER_MODELS (C only), about models_target_s per timing
    (default min(OTHER_TARGET_S, target_s)). avx2: also the child run capped at AVX2 when the
    C step runs AVX-512 here."""
    t_start = time.perf_counter()
    say = (lambda *a: None) if quiet else print
    fig = {}
    rows = []
    nb_threads = _numba_threads(threads) if numba_reference is not None else None
    if nb_threads is None:
        say("numba is not installed: the Numba columns are left out (pip install numba)")
    for n in sizes:
        # Repetitions interleaved (NumPy, Numba, Numba parallel, C t1, C t2, NumPy, ...) so that
        # every configuration sees the same background load; each figure is its best repetition.
        np_t = numpy_timing(n)
        np_t.calibrate(numpy_target_s)
        nb = {}
        if nb_threads is not None:
            nb = {par: numba_timing(n, par) for par in (False, True)}
        c_t = {th: c_timing(n, th) for th in threads}
        for tm in (*nb.values(), *c_t.values()):
            tm.calibrate(target_s)
        for _ in range(reps):
            np_t.once()
            for tm in (*nb.values(), *c_t.values()):
                tm.once()
        np_rate = np_t.rate
        if nb:
            _numba_figures(fig, n, nb, c_t, nb_threads)
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
            nb_rate = None
            if nb and th in (1, nb_threads):
                nb_rate = nb[th != 1].rate
            rows.append((n, th, rate, np_rate, nb_rate, ratio, speedup))
        del np_t, c_t, nb
    if models:
        other_models(
            fig,
            OTHER_SIZES,
            min(OTHER_TARGET_S, target_s) if models_target_s is None else models_target_s,
            min(reps, 3),
        )
    kernel = simd_kernel()
    fig[f"simd_{kernel}"] = 1
    fig["numpy_avx512"] = int(numpy_has_avx512())

    def met(key, target):
        if key in fig:
            fig["target_met_" + key] = int(fig[key] >= target)
            fig["target_" + key] = target

    met("actuator_steps_per_s_n100000_t1", TARGET_PER_CORE_N100000)
    met("actuator_steps_per_s_n64_t1", TARGET_PER_CORE_N64)
    met("ratio_vs_numpy_n64", TARGET_RATIO_N64)
    met("ratio_vs_numpy_n100000", TARGET_RATIO_N100000)
    met("thread_speedup_n100000", TARGET_THREAD_SPEEDUP)
    avx2_table = []
    if avx2 and kernel == "avx512":
        avx2_table = avx2_run(fig, reps, target_s)
        met("avx2_actuator_steps_per_s_n100000_t1", TARGET_PER_CORE_N100000)
        met("avx2_actuator_steps_per_s_n64_t1", TARGET_PER_CORE_N64)
        met("avx2_ratio_vs_numpy_n64", TARGET_RATIO_N64)
        met("avx2_ratio_vs_numpy_n100000", TARGET_RATIO_N100000)
    fig["cpu_count"] = os.cpu_count() or 0
    if nb_threads is not None:
        fig["numba_threads"] = nb_threads
    fig["dt_s"] = DT
    fig["bench_wall_s"] = time.perf_counter() - t_start

    say(
        "asr core: qbmove_advanced, mode 6 (PID + motor dynamics + friction), preset 0.4, "
        f"time-varying equilibrium, dt = {DT:g} s; best of {reps}; actuator-steps/s; C step "
        f"built for {kernel}, NumPy {'with' if fig['numpy_avx512'] else 'without'} AVX-512"
    )
    say("(Numba: njit on the 1-thread rows, parallel with as many threads on the others)")
    say(
        f"{'N':>7} {'threads':>7} {'C':>14} {'NumPy':>14} {'Numba':>14} {'C / NumPy':>10} "
        f"{'C / Numba':>10} {'thread x':>9}"
    )
    for n, th, rate, np_rate, nb_rate, ratio, speedup in rows:
        nb_cell = _fmt_rate(nb_rate) if nb_rate is not None else "-"
        nb_ratio = rate / nb_rate if nb_rate is not None else None
        say(
            f"{n:>7} {th:>7} {_fmt_rate(rate):>14} {_fmt_rate(np_rate):>14} {nb_cell:>14} "
            f"{ratio:10.1f} {_fmt_opt(nb_ratio, '10.2f')} {_fmt_opt(speedup, '9.2f')}"
        )
    for line in avx2_table:
        say(line)
    if models:
        _say_other_models(fig, OTHER_SIZES, min(reps, 3), say)
    targets = [
        (
            "actuator_steps_per_s_n100000_t1",
            f">= {TARGET_PER_CORE_N100000 / 1e6:g} M actuator-steps/s on one core at N = 100000",
            lambda v: f"{v / 1e6:.2f} M",
        ),
        (
            "actuator_steps_per_s_n64_t1",
            f">= {TARGET_PER_CORE_N64 / 1e6:g} M actuator-steps/s on one core at N = 64",
            lambda v: f"{v / 1e6:.2f} M",
        ),
        ("ratio_vs_numpy_n64", f">= {TARGET_RATIO_N64:g}x NumPy at N = 64", lambda v: f"{v:.1f}x"),
        (
            "ratio_vs_numpy_n100000",
            f">= {TARGET_RATIO_N100000:g}x NumPy at N = 100000",
            lambda v: f"{v:.1f}x",
        ),
        (
            "thread_speedup_n100000",
            f">= {TARGET_THREAD_SPEEDUP:g}x from the second thread at N = 100000",
            lambda v: f"{v:.2f}x",
        ),
    ]
    targets += [
        ("avx2_" + key, text + " (capped at AVX2)", show) for key, text, show in targets[:4]
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
    ap.add_argument(
        "--no-models",
        action="store_true",
        help="skip the other models (sea, bavs, awas2 in modes 3 and 6)",
    )
    ap.add_argument(
        "--no-avx2-run",
        action="store_true",
        help="skip the child run capped at AVX2 (on an AVX-512 machine)",
    )
    a = ap.parse_args(argv)
    main(
        sizes=tuple(a.sizes),
        threads=tuple(a.threads),
        target_s=a.target_s,
        reps=a.reps,
        out=a.out,
        models=not a.no_models,
        avx2=not a.no_avx2_run,
    )


if __name__ == "__main__":
    _cli()
