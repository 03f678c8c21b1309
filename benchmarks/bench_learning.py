"""Learning-loop benchmark (`make bench`): the ILC of Mengacci et al. 2021 sec. 4.3 (iterations
and wall time; the paper spent about 220 s of hardware time on its 11 iterations) and the
environment steps per second of asr's Gymnasium vector env at N = 1, 64, 1024, next to a
Gymnasium SyncVectorEnv of single-instance envs run in the same process. Writes
benchmarks/results/learning.json (one flat {figure: number} object)."""

import argparse
import os
import time

from results_file import write_results

from asr.envs import vecenv_steps_per_s
from asr.experiments import mengacci2021_ilc

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "learning.json")
ENV = "asr/EquilibriumTracking-v0"


def main(
    sizes=(1, 64, 1024),
    sync_sizes=(1, 64),
    steps=30,
    ilc=True,
    out=DEFAULT_OUT,
    write=True,
    quiet=False,
):
    say = (lambda *a: None) if quiet else print
    fig = {}
    if ilc:
        t0 = time.perf_counter()
        res = mengacci2021_ilc.run()
        fig["ilc_iterations"] = int(res.iterations[0])
        fig["ilc_wall_s"] = time.perf_counter() - t0
        fig["ilc_final_max_error_rad"] = float(res.errors[int(res.iterations[0]) - 1, 0])
        fig["ilc_paper_hardware_s"] = 220.0
        say(
            f"ILC (Mengacci et al. 2021 sec. 4.3): {fig['ilc_iterations']} iterations, "
            f"{fig['ilc_wall_s']:.2f} s wall, final max error "
            f"{fig['ilc_final_max_error_rad']:.4f} rad (paper: 11 iterations, ~220 s hardware)"
        )
    say(f"vector env {ENV}: env steps per second (one env step = 20 ms of simulation)")
    say(f"{'N':>6} {'asr VectorEnv':>15} {'SyncVectorEnv':>15} {'ratio':>7}")
    for n in sizes:
        rate = vecenv_steps_per_s(n, steps=max(5, steps if n < 1024 else steps // 3), env_id=ENV)
        fig[f"vecenv_steps_per_s_n{n}"] = rate
        sync = None
        if n in sync_sizes:
            sync = vecenv_steps_per_s(
                n, steps=max(5, steps // (1 + n // 16)), env_id=ENV, sync=True
            )
            fig[f"syncvecenv_steps_per_s_n{n}"] = sync
            fig[f"vecenv_ratio_vs_sync_n{n}"] = rate / sync
        say(
            f"{n:>6} {rate:>15.0f} {sync if sync else float('nan'):>15.0f} "
            f"{rate / sync if sync else float('nan'):>7.1f}"
        )
    if write:
        write_results(fig, out, say)
    return fig


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    main(out=ap.parse_args().out)
