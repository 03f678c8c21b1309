"""The README's picture of the learned throws (docs/images/throw_ppo.png): the committed
benchmark results (benchmarks/results/throw_ppo/summary.json, written by bench_throw.py), each
strategy's best throw replayed from its actions, drawn with Plotly and photographed by Debian's
Chromium (driven by Playwright).

    .venv/bin/python benchmarks/render_throw.py [--out PNG]
"""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

RESULTS = os.path.join(HERE, "results", "throw_ppo", "summary.json")
DEFAULT_OUT = os.path.join(ROOT, "docs", "images", "throw_ppo.png")


def comparison(path=RESULTS):
    """The summary with each best throw replayed (asr.experiments.throw_ppo.replay_actions)."""
    from asr.experiments.throw_ppo import replay_actions

    with open(path) as f:
        res = json.load(f)
    for name, throw in res["throws"].items():
        kw = throw["env_kwargs"]
        replay = replay_actions(throw["actions"], kw.get("actuator", "qbmove"), kw.get("preset"))
        res["throws"][name] = dict(throw, **replay)
    return res


def main(out=DEFAULT_OUT):
    from dashboard_server import chromium_path
    from playwright.sync_api import sync_playwright

    from asr.experiments import write_html
    from asr.experiments.throw_ppo import overview_figure

    fig = overview_figure(comparison())
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        html = os.path.join(tmp, "throw.html")
        write_html([fig], html, "asr: the learned throws")
        browser = p.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1240, "height": 840})
        page.goto("file://" + html)
        page.wait_for_selector(".main-svg")
        page.locator(".js-plotly-plot").first.screenshot(path=out)
        browser.close()
    print(out)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    main(ap.parse_args().out)
