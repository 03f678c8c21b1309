"""Reproductions of the source papers' published experiments, one module per paper named by its
citation key (mengacci2021.py, kamedula2016.py, ...; docs/references.md), each with run() and
main(out_dir), runnable as python -m asr.experiments.<name>; and stiffness.py, the fair comparison
of stiffness strategies (rigid, fixed, variable) on the learning tasks under one optimiser and
budget (benchmarks/bench_stiffness.py)."""

import argparse
import os
import time


def write_html(figures, path, title):
    """Plotly figures into one self-contained HTML file (plotly.js embedded once: works
    offline)."""
    body = "".join(
        fig.to_html(full_html=False, include_plotlyjs=k == 0) for k, fig in enumerate(figures)
    )
    with open(path, "w") as f:
        f.write(
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
            f"</head><body>{body}</body></html>"
        )


def run_and_report(name, run, write_html, summary, out_dir, run_kwargs):
    """The main() of an experiment with one figure file: run(**run_kwargs), write
    out_dir/<name>.html, print the table and the file; returns run()'s dict with 'html' and
    'total_s' (wall time, writing included) added."""
    t0 = time.perf_counter()
    res = run(**run_kwargs)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.html")
    write_html(res, path)
    res["html"], res["total_s"] = path, time.perf_counter() - t0
    print(summary(res))
    print(f"figure: {path}  (total {res['total_s']:.1f} s)")
    return res


def command_line(name, description, main, argv=None, out_help="output folder"):
    """`python -m asr.experiments.<name> [--out DIR]`: main(DIR), DIR <name>_output by default."""
    ap = argparse.ArgumentParser(prog=f"python -m asr.experiments.{name}", description=description)
    ap.add_argument("--out", default=f"{name}_output", help=out_help)
    main(ap.parse_args(argv).out)
