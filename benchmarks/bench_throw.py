"""Throw benchmark, the superseded PPO comparison (docs/learning.md; no longer in `make bench`:
benchmarks/bench_stiffness.py is the fair one): variable stiffness learned closed-loop (PPO)
against the best fixed preset and the rigid arm, the same motors for all
(asr.experiments.throw_ppo).

Runs the comparison (every strategy: THROW_PPO, the same budget, seeds 0-2; the presets swept
with seed 0) on two worker processes, then writes:

- into benchmarks/results/rl.json (the figures of the other keys there are kept): throw_* keys,
  among them throw_vsa_vs_best_fixed and throw_vsa_vs_rigid (ratios of the mean distances),
  the mean and spread per strategy, the best preset, and the energy account of each strategy's
  best throw (throw_energy_<strategy>_<item>, J);
- benchmarks/results/throw_ppo/: summary.json (the figures, each best throw's actions) and the
  three best policies as ONNX (variable.onnx, best_fixed.onnx, rigid.onnx), which
  notebooks/throw_ppo.ipynb replays.

The goals it once reported (variable / best fixed >= 1.10, variable / rigid >= 1.30) belonged
to a claim withdrawn after an outside check (issue 45): no target is reported."""

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import shutil
import tempfile
import time

from results_file import is_throw_figure, merged_into, report_and_write

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "results", "rl.json")
DEFAULT_FOLDER = os.path.join(HERE, "results", "throw_ppo")


def throw_figures(res):
    """The comparison's flat figures (throw_* keys)."""
    fig = {
        "throw_vsa_vs_best_fixed": res["vsa_vs_best_fixed"],
        "throw_vsa_vs_rigid": res["vsa_vs_rigid"],
        "throw_best_preset_rad": res["best_preset"],
        "throw_total_steps_per_run": res["total_steps"],
        "throw_seeds": len(res["seeds"]),
        "throw_wall_s": res["wall_s"],
    }
    for name in ("variable", "best fixed", "rigid"):
        key = name.replace(" ", "_")
        fig[f"throw_distance_mean_m_{key}"] = res["mean"][name]
        fig[f"throw_distance_std_m_{key}"] = res["std"][name]
        for item, value in res["throws"][name]["account"].items():
            if isinstance(value, float):
                fig[f"throw_energy_{key}_{item}"] = value
    for preset, d in res["sweep"].items():
        fig[f"throw_sweep_distance_m_preset_{preset:g}"] = d
    return fig


def main(out=DEFAULT_OUT, folder=DEFAULT_FOLDER, write=True, quiet=False, **run_kwargs):
    from asr.experiments import throw_ppo

    say = (lambda *a: None) if quiet else print
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
            res = throw_ppo.run(executor=pool, out_dir=os.path.join(tmp, "runs"), **run_kwargs)
        say(throw_ppo.summary(res))
        if write:
            shutil.rmtree(folder, ignore_errors=True)
            throw_ppo.export_policies(res, folder)
            with open(os.path.join(folder, "summary.json"), "w") as f:
                json.dump(throw_ppo.summary_data(res), f, indent=1)
                f.write("\n")
    fig = throw_figures(res)
    fig.update(cpu_count=os.cpu_count() or 0, bench_wall_s=time.perf_counter() - t0)
    report_and_write(
        merged_into(out, fig, is_throw_figure) if write else fig,
        out,
        say,
        write,
        note=f"load average {load:.2f} before the run; ",
    )
    return fig


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--folder", default=DEFAULT_FOLDER)
    ap.add_argument("--total-steps", type=int, default=None, help="env steps per run")
    args = ap.parse_args()
    kw = {} if args.total_steps is None else {"total_steps": args.total_steps}
    main(out=args.out, folder=args.folder, **kw)
