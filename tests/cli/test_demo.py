"""`make run` end to end, as a user runs it: the command succeeds, prints the fig. 7 summary and
writes the figures (their physics is checked in tests/experiments/test_mengacci2021.py)."""

import subprocess
import sys

import pytest

from tests.support.paths import ROOT  # noqa: E402


@pytest.mark.slow
def test_make_run_demo(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "asr.demo", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("fig7", "fig11", "fig12", "fig13", "fig14"):
        html = (out / f"{name}.html").read_text()
        assert "plotly" in html.lower() and len(html) > 10000, name
    assert "qbmove_advanced" in proc.stdout or "qbmove" in proc.stdout
