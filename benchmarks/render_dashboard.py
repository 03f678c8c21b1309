"""Screenshots of the dashboard in Debian's Chromium (driven by Playwright), for the docs and for
looking at what a user sees (docs/images/dashboard_<name>.png).

    .venv/bin/python benchmarks/render_dashboard.py [--out DIR] [--only NAME ...]

A real server (tests/support/dashboard_server.py's chromium_page) on the default robot, then:
- live: the default arm after 12 s of simulated time, the page as it opens (controls, live plots,
  3-D view);
- scrub: the view paused and scrubbed back to t = 1 s of a 20 s run (the plots' shared window),
  a plot hovered at t = 4 s: the time cursor on every plot, the hover synced across them, and the
  3-D view drawing the robot's pose at 4 s with its caption saying so;
- compare8: qbmove_3r with 8 presets compared: 48 traces, legends beside the plot areas, the 3-D
  row of 8 instances;
- rl_runs: two short trainings of two tasks, Reach2DOF and Throw, overlaid on the RL plot with
  the runs table: each metric on an axis of its own (needs the [rl] extra);
- watch: the latest policy watched, with the task's target drawn in the 3-D view.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT]

from tests.support.dashboard_server import chromium_page, page_api, wait_for  # noqa: E402

IMAGES = os.path.join(ROOT, "docs", "images")
DEADLINE_S = 240.0  # every wait: generous, the machine may be busy
RUN = {"task": "asr/Reach2DOF-v0", "num_envs": 2, "total_steps": 2048}
RUN.update(n_steps=64, batch_size=64)
THROW = dict(RUN, task="asr/Throw-v0")
SCRUB_T0_S = 1.0  # the scrubbed window's start
HOVER_T_S = 4.0  # the time hovered in it: the cursor and the 3-D view's pose


def ok(pg, method, path, body=None):
    status, out = page_api(pg, method, path, body)
    if status != 200:
        raise RuntimeError(f"{method} {path}: {status} {out}")
    return out


def sim_past(pg, t):
    wait_for(lambda: ok(pg, "GET", "/api/state")["time"] > t, DEADLINE_S, f"{t} s simulated")


def shoot(pg, out, name, selector=None):
    path = os.path.join(out, f"dashboard_{name}.png")
    # the whole page in the viewport: a plot off screen is not redrawn (PROTOCOL.md "Page"), so
    # the picture of the full page is taken with every plot on screen and up to date
    size = pg.viewport_size
    height = pg.evaluate("document.documentElement.scrollHeight")
    pg.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
    pg.wait_for_timeout(1500)  # let the page draw the newest frames (a picture, not a test)
    # from the page's top: the sticky header stays where it belongs, never over the picture
    pg.evaluate("window.scrollTo(0, 0)")
    clip = None
    if selector:  # the element's box on the page
        clip = pg.evaluate(
            "(s) => { const r = document.querySelector(s).getBoundingClientRect();"
            " return {x: r.left + scrollX, y: r.top + scrollY,"
            " width: r.width, height: r.height}; }",
            selector,
        )
    pg.screenshot(path=path, full_page=True, clip=clip)
    pg.set_viewport_size(size)
    print(path)


def hover_plot(pg, plot, t):
    """Move the mouse over plot div `plot` at time t (s), half-way up its plot area."""
    x, y = pg.evaluate(
        """([id, t]) => { const gd = document.getElementById(id), fl = gd._fullLayout;
            const r = gd.getBoundingClientRect();
            return [r.left + fl.xaxis._offset + fl.xaxis.l2p(t),
                    r.top + fl._size.t + fl._size.h / 2]; }""",
        [plot, t],
    )
    pg.mouse.move(x, y)


def rl_run_ended(pg, run):
    def ended():
        st = ok(pg, "GET", "/api/rl/status")
        return st["run"] == run and not st["running"] and st

    return wait_for(ended, DEADLINE_S, f"RL run {run}", 0.5)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=IMAGES)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    want = lambda name: args.only is None or name in args.only  # noqa: E731
    os.makedirs(args.out, exist_ok=True)
    with chromium_page() as pg:
        pg.set_viewport_size({"width": 1600, "height": 1100})
        pg.wait_for_selector("#status.live", timeout=DEADLINE_S * 1000)
        sim_past(pg, 12.0)
        if want("live"):
            shoot(pg, args.out, "live")
        if want("scrub"):
            ok(pg, "POST", "/api/control", {"speed": "max"})
            sim_past(pg, 20.0)
            pg.check("#view-pause")
            pg.wait_for_selector("#view-scrub:not([disabled])", timeout=30000)
            pg.eval_on_selector(
                "#view-scrub",
                f"(e) => {{ e.value = '{SCRUB_T0_S}';"
                " e.dispatchEvent(new Event('input', {bubbles: true}));"
                " e.dispatchEvent(new Event('change', {bubbles: true})); }",
            )
            pg.wait_for_function(
                "(t) => Math.abs(+document.getElementById('view-time').dataset.t0 - t) < 1e-6"
                " && Math.abs(document.getElementById('plot-q')._fullLayout.xaxis.range[0] - t)"
                " < 1e-6",
                arg=SCRUB_T0_S,
                timeout=DEADLINE_S * 1000,
            )
            hover_plot(pg, "plot-q", HOVER_T_S)
            pg.wait_for_function(
                "(t) => Math.abs(+document.getElementById('robot3d').dataset.time - t) < 0.05",
                arg=HOVER_T_S,
                timeout=DEADLINE_S * 1000,
            )
            shoot(pg, args.out, "scrub", "section.plots")
            pg.mouse.move(2, 2)
            pg.uncheck("#view-pause")
            ok(pg, "POST", "/api/control", {"speed": 1.0})
        if want("rl_runs") or want("watch"):
            ok(pg, "POST", "/api/rl/start", {**THROW, "learning_rate": 1e-3, "gamma": 0.99})
            rl_run_ended(pg, 1)
            ok(pg, "POST", "/api/rl/start", {**RUN, "learning_rate": 3e-4, "gamma": 0.95})
            rl_run_ended(pg, 2)
            pg.wait_for_selector("#rl-runs tbody tr[data-run='1']", timeout=30000)
            box = pg.locator("#rl-runs tbody tr[data-run='1'] input[type=checkbox]")
            if box.count() and not box.first.is_checked():
                box.first.check()
            if want("rl_runs"):
                shoot(pg, args.out, "rl_runs", "#rl-curves")
            if want("watch"):
                pg.click("#btn-rl-watch")
                pg.wait_for_selector("#btn-rl-manual:not([disabled])", timeout=DEADLINE_S * 1000)
                pg.wait_for_timeout(3000)
                shoot(pg, args.out, "watch", "#robot3d")
                pg.click("#btn-rl-manual")
        if want("compare8"):
            ok(pg, "POST", "/api/robot", {"robot": "qbmove_3r"})
            ok(pg, "POST", "/api/compare", {"presets": [round(0.1 * k, 1) for k in range(1, 9)]})
            pg.wait_for_function(
                "document.getElementById('plot-q').data.length === 48",
                timeout=DEADLINE_S * 1000,
            )
            pg.wait_for_timeout(8000)  # a few seconds of motion in the plots
            shoot(pg, args.out, "compare8")
        if pg.js_errors:
            print("errors thrown in the page:", pg.js_errors, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
