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
