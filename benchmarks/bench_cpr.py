"""CPR inverse-problem speed: Till's continuum Stewart-Gough benchmark (docs/cpr.md), asr's C
solver against a plain SciPy/NumPy solver of the same equations (benchmarks/cpr_scipy.py),
measured side by side in this process (`make bench`).

Protocol (Till): solve the IGM at plate position (0, 0, 0.4), orientation identity, from a
cold start; then at (0, 0.02, 0.48) warm-started; then 200 warm-started solves moving the plate
by +1 mm in y and z for 100 solves and back by -1 mm for 100 (each solve starts from the
previous solution). N = 40 RK4 grid points per rod.

Figures:
- cold_solve_ms: asr's cold solve of the first pose (best of `reps`).
- igm_solves_per_s_t1 / _t2: asr's warm-started solves per second over the 200-step sequence,
  one `solve_igm_batch(poses, guess=pose 1's solution, warm=True, threads=t)` call: Till's
  protocol run in C (each pose starts from the previous solution, whose Jacobian, inverse and
  rod tip states come along). A warm chain is sequential: its threads can only share the rod
  integrations of each solve, which at N = 40 are too short to be worth a thread (see
  csrc/cpr/cpr_legs.c, tasks_run), so t2 ~ t1.
- igm_loop_solves_per_s_t1 / _t2: the same sequence as a Python loop of
  `solve_igm(..., guess=previous CPRSolution)` (what a control loop in Python sees).
- igm_independent_solves_per_s_t1 / _t2: the same 200 poses with warm=False, every pose from
  pose 1's solution (up to 10 cm away, so more iterations each): independent solves, which the
  threads share pose by pose (the thread scaling figure).
- scipy_solves_per_s: the SciPy reference over the first `scipy_steps` warm steps of the same
  sequence (it is a per-solve cost; the full 200 would take minutes), scipy_cold_solve_ms.
- ratio_vs_scipy = igm_solves_per_s_t1 / scipy_solves_per_s (warm against warm);
  ratio_cold_vs_scipy likewise for the cold solve.
- igm_max_length_diff_vs_scipy_m: the largest rod-length difference of the two solvers at the
  first two poses (a sanity figure; tests/cpr/test_cpr_reference.py asserts the agreement).

Published anchors (other machines, not measured here): Till's C++ about 4200 solves/s on one
thread with a hand-unrolled RK4 and a structured Jacobian; a recent pure-Python SciPy solver
about 3.8 s per inverse solve.

Without asr.cpr (while it is being written) the asr figures are left out and only the SciPy
figures are written; tests/cpr/test_cpr_reference.py requires asr.cpr. Benchmarks report; they do
not assert. Wall-clock figures on a shared machine are noisy.
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

import cpr_scipy  # noqa: E402
from results_file import report_and_write  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "results", "cpr.json")
ANCHOR_TILL_CPP_SOLVES_PER_S = 4200.0
ANCHOR_PURE_PYTHON_S_PER_SOLVE = 3.8


def _load_asr():
    global NotConverged
    try:
        from asr.cpr import NotConverged, load_cpr
    except ImportError:
        return None
    return load_cpr


NotConverged = RuntimeError


def _time_asr(load_cpr, positions, rotations, reps, say):
    """asr's figures; returns (fig, lengths at poses 0 and 1)."""
    fig = {}
    robot = load_cpr("stewart_till")
    n_seq = len(positions) - 2
    # cold solve of pose 0, best of reps
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        s0 = robot.solve_igm(positions[0], rotations[0])
        best = min(best, time.perf_counter() - t0)
    fig["cold_solve_ms"] = best * 1e3
    fig["cold_converged"] = int(bool(s0.converged))
    s1 = robot.solve_igm(positions[1], rotations[1], guess=s0.unknowns)
    lengths = (np.array(s0.q, dtype=float), np.array(s1.q, dtype=float))

    def loop(threads):
        best, fails = math.inf, 0
        for _ in range(reps):
            g = s1
            fails = 0
            t0 = time.perf_counter()
            for k in range(2, len(positions)):
                # the previous CPRSolution: its unknowns, Jacobian, inverse and rod tips
                g = robot.solve_igm(positions[k], rotations[k], guess=g, threads=threads)
                fails += not g.converged
            best = min(best, time.perf_counter() - t0)
        return n_seq / best, fails

    def batch(threads, warm):
        best, fails = math.inf, 0
        for _ in range(reps):
            t0 = time.perf_counter()
            try:  # warm: pose 2 from pose 1's solution, each next from the previous one
                robot.solve_igm_batch(
                    positions[2:], rotations[2:], guess=s1, threads=threads, warm=warm
                )
                fails = 0
            except NotConverged:
                fails = 1
            best = min(best, time.perf_counter() - t0)
        return n_seq / best, fails

    for th in (1, 2):
        fig[f"igm_solves_per_s_t{th}"], fig[f"igm_not_converged_t{th}"] = batch(th, True)
        rate, fails = loop(th)
        fig[f"igm_loop_solves_per_s_t{th}"], fig[f"igm_loop_not_converged_t{th}"] = rate, fails
        rate, fails = batch(th, False)
        fig[f"igm_independent_solves_per_s_t{th}"] = rate
        fig[f"igm_independent_not_converged_t{th}"] = fails
    return fig, lengths


def _time_scipy(positions, rotations, scipy_steps):
    fig = {}
    t0 = time.perf_counter()
    L0, x, r0, nfev0 = cpr_scipy.solve_igm(positions[0], rotations[0])
    fig["scipy_cold_solve_ms"] = (time.perf_counter() - t0) * 1e3
    fig["scipy_cold_residual_evals"] = nfev0
    L1, x, r1, _ = cpr_scipy.solve_igm(positions[1], rotations[1], guess=x)
    evals = 0
    worst = max(r0, r1)
    t0 = time.perf_counter()
    for k in range(2, 2 + scipy_steps):
        _, x, r, nfev = cpr_scipy.solve_igm(positions[k], rotations[k], guess=x)
        evals += nfev
        worst = max(worst, r)
    dt = time.perf_counter() - t0
    fig["scipy_solves_per_s"] = scipy_steps / dt
    fig["scipy_steps_timed"] = scipy_steps
    fig["scipy_residual_evals_per_solve"] = evals / scipy_steps
    fig["scipy_worst_residual_norm"] = worst
    return fig, (L0, L1)


def main(
    quick=False,
    write=True,
    out=DEFAULT_OUT,
    scipy_steps=None,
    reps=None,
    quiet=False,
    require_asr=False,
):
    """Run the benchmark; returns the flat {figure_name: number} dict (also written to `out`
    when `write`). `quick`: 1 SciPy warm step and one repetition of asr's timings."""
    t_start = time.perf_counter()
    say = (lambda *a: None) if quiet else print
    if scipy_steps is None:
        scipy_steps = 1 if quick else 10
    if reps is None:
        reps = 1 if quick else 3
    positions, rotations = cpr_scipy.till_sequence()
    fig = {}
    load_cpr = _load_asr()
    if load_cpr is None and require_asr:
        raise ImportError("asr.cpr is missing")
    asr_lengths = None
    if load_cpr is not None:
        f, asr_lengths = _time_asr(load_cpr, positions, rotations, reps, say)
        fig.update(f)
    f, sp_lengths = _time_scipy(positions, rotations, scipy_steps)
    fig.update(f)
    if "igm_solves_per_s_t1" in fig:
        fig["ratio_vs_scipy"] = fig["igm_solves_per_s_t1"] / fig["scipy_solves_per_s"]
        fig["ratio_cold_vs_scipy"] = fig["scipy_cold_solve_ms"] / fig["cold_solve_ms"]
        fig["igm_max_length_diff_vs_scipy_m"] = float(
            max(np.abs(a - b).max() for a, b in zip(asr_lengths, sp_lengths))
        )
        if "igm_solves_per_s_t2" in fig:
            fig["thread_speedup"] = fig["igm_solves_per_s_t2"] / fig["igm_solves_per_s_t1"]
        fig["ratio_vs_till_cpp_anchor"] = fig["igm_solves_per_s_t1"] / ANCHOR_TILL_CPP_SOLVES_PER_S
    fig["anchor_till_cpp_solves_per_s_t1"] = ANCHOR_TILL_CPP_SOLVES_PER_S
    fig["anchor_pure_python_solves_per_s"] = 1.0 / ANCHOR_PURE_PYTHON_S_PER_SOLVE
    fig["n_grid"] = cpr_scipy.N_GRID
    fig["cpu_count"] = os.cpu_count() or 0
    fig["bench_wall_s"] = time.perf_counter() - t_start

    say(
        "Till's continuum Stewart-Gough IGM, N = 40 RK4 points per rod, warm-started sequence "
        "of 200 poses (+/- 1 mm in y and z)"
    )
    say(f"{'solver':<44} {'cold ms':>10} {'warm solves/s':>14} {'vs SciPy':>9}")

    def row(name, cold, rate, ratio=None):
        c = f"{cold:10.2f}" if cold is not None else f"{'-':>10}"
        r = f"{rate:14.1f}" if rate is not None else f"{'-':>14}"
        q = f"{ratio:9.0f}" if ratio is not None else f"{'':>9}"
        say(f"{name:<44} {c} {r} {q}")

    sp = fig["scipy_solves_per_s"]
    if "igm_solves_per_s_t1" in fig:
        say(
            "headline (igm_solves_per_s_t*): solve_igm_batch(warm=True), the whole sequence "
            "in one C call"
        )
        for th in (1, 2):
            row(
                f"asr solve_igm_batch(warm), {th} thread(s)",
                fig["cold_solve_ms"] if th == 1 else None,
                fig[f"igm_solves_per_s_t{th}"],
                fig[f"igm_solves_per_s_t{th}"] / sp,
            )
        for th in (1, 2):
            k = f"igm_loop_solves_per_s_t{th}"
            row(f"asr solve_igm loop, {th} thread(s)", None, fig[k], fig[k] / sp)
        for th in (1, 2):
            k = f"igm_independent_solves_per_s_t{th}"
            row(f"asr solve_igm_batch(warm=False), {th} thread(s)", None, fig[k], fig[k] / sp)
    else:
        say("(asr.cpr not importable: asr figures left out)")
    row(
        f"SciPy reference (least_squares lm, {scipy_steps} steps)",
        fig["scipy_cold_solve_ms"],
        sp,
        1.0,
    )
    row("anchor: Till's C++, 1 thread (author's desktop)", None, ANCHOR_TILL_CPP_SOLVES_PER_S)
    row(
        "anchor: pure-Python SciPy solver (published)",
        ANCHOR_PURE_PYTHON_S_PER_SOLVE * 1e3,
        1.0 / ANCHOR_PURE_PYTHON_S_PER_SOLVE,
    )
    if "igm_max_length_diff_vs_scipy_m" in fig:
        say(
            f"rod lengths asr vs SciPy at the first two poses: max |diff| = "
            f"{fig['igm_max_length_diff_vs_scipy_m']:.2e} m"
        )
    say(
        f"SciPy: {fig['scipy_residual_evals_per_solve']:.0f} residual evaluations (6 rods each) "
        f"per warm solve; worst residual {fig['scipy_worst_residual_norm']:.1e}"
    )
    report_and_write(fig, out, say, write)
    return fig


def _cli(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--scipy-steps", type=int, default=None)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    main(quick=a.quick, write=not a.no_write, out=a.out, scipy_steps=a.scipy_steps, reps=a.reps)


if __name__ == "__main__":
    _cli()
