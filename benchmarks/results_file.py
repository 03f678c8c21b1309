"""Writing a benchmark's figures: one flat {figure_name: number} JSON object per benchmark in
benchmarks/results/ (see README.md, Benchmarks), so results can be compared across commits."""

import json
import os


def write_results(fig, out, say=print):
    """Write the figures to `out` (folders created) and say where."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(fig, f, indent=1, sort_keys=True)
        f.write("\n")
    say(f"wrote {out}")


def report_and_write(fig, out, say, write, targets=(), note=""):
    """The closing block of a benchmark: each target of `targets` ((figure name, text, format
    function)) that was measured with met / NOT met, the machine line (`note` first) and, if
    `write`, the figures written to `out`."""
    for key, text, show in targets:
        if key in fig:
            say(
                f"target {text}: {show(fig[key])} -> "
                f"{'met' if fig['target_met_' + key] else 'NOT met'}"
            )
    say(
        f"({note}{fig['cpu_count']} CPUs; wall-clock figures, noisy on a shared machine; "
        f"benchmark took {fig['bench_wall_s']:.1f} s)"
    )
    if write:
        write_results(fig, out, say)


def is_throw_figure(key):
    """rl.json is shared: bench_throw.py writes the throw_* figures (and their target_met_*
    flags), bench_rl.py every other one."""
    return key.startswith(("throw_", "target_met_throw_"))


def merged_into(out, fig, mine):
    """fig plus the figures already in the file `out` that another benchmark wrote there (the
    keys for which mine(key) is false), so that each benchmark rewrites only its own."""
    old = {}
    if os.path.exists(out):
        with open(out) as f:
            old = {k: v for k, v in json.load(f).items() if not mine(k)}
    return {**old, **fig}
