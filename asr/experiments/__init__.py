"""Reproductions of the source papers' published experiments (docs/references.md), one module per paper:
seedNNN.py, each with run() and main(out_dir), runnable as python -m asr.experiments.seedNNN."""


def write_html(figures, path, title):
    """Plotly figures into one self-contained HTML file (plotly.js embedded once: works
    offline)."""
    body = "".join(fig.to_html(full_html=False, include_plotlyjs=k == 0)
                   for k, fig in enumerate(figures))
    with open(path, "w") as f:
        f.write(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
                f"</head><body>{body}</body></html>")
