"""Dashboard soak benchmark: the server's resident memory over hours of every feature and robot
(issue 46: memory bounded by design).

    .venv/bin/python benchmarks/bench_dashboard_soak.py [--minutes 120] [--sample-s 5]
        [--no-write] [--no-picture]

A real server in its own process (`asr dashboard`, tests/support/dashboard_server.py), one short
RL training first (a policy to watch; the trainer is its own process), then soak cycles
(tests/support/dashboard_soak.py: every robot with compare of up to 8 and a reset, workspace save
and load, the history exports, a short ILC, an interaction session, watching the policy; the
policy exports every EXPORT_EVERY-th cycle) until `--minutes` have passed, while a WebSocket
client reads the live stream throughout and another connects, takes its first view and leaves at
every cycle (a page reload). The server's VmRSS is sampled every `--sample-s` seconds.

Writes benchmarks/results/dashboard_soak.json (flat figures: RSS at start, after the first cycle,
its maximum and at the end, the growth from the end of the first cycle to the end, cycles, span),
benchmarks/results/dashboard_soak_curve.json (the curve: t_s, rss_mb, the cycles' end times) and
the picture docs/images/dashboard_soak_rss.png (drawn with Plotly, photographed by Debian's
Chromium through Playwright, as the other pictures of docs/images/)."""

import argparse
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT]

from results_file import report_and_write, write_results  # noqa: E402

from tests.support import dashboard_soak as soak  # noqa: E402
from tests.support.dashboard_server import (  # noqa: E402
    SHORT_TRAINING,
    chromium_path,
    server_process,
)

DEFAULT_OUT = os.path.join(HERE, "results", "dashboard_soak.json")
DEFAULT_CURVE = os.path.join(HERE, "results", "dashboard_soak_curve.json")
DEFAULT_PICTURE = os.path.join(ROOT, "docs", "images", "dashboard_soak_rss.png")
BOUND_MB = 250.0  # the bound on the server's resident memory, MB
EXPORT_EVERY = 5  # cycles: the policy exports (children with torch, seconds of CPU) this often


class Sampler(threading.Thread):
    """VmRSS (MB) of process `pid` every `every` s: samples [(t s since t0, MB)]."""

    def __init__(self, pid, every, t0):
        super().__init__(daemon=True)
        self.pid, self.every, self.t0 = pid, every, t0
        self.samples, self.stop = [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.samples.append((time.monotonic() - self.t0, soak.rss_mb(self.pid)))
            except (OSError, RuntimeError):  # the server ended
                return
            self.stop.wait(self.every)


class StreamReader(threading.Thread):
    """A client reading the live stream until stopped (a page left open): `messages` counts."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url = url.replace("http://", "ws://") + "/ws/stream"
        self.messages, self.stop, self.error = 0, threading.Event(), None

    def run(self):
        from websockets.sync.client import connect

        try:
            with connect(self.url, max_size=None) as ws:
                while not self.stop.is_set():
                    try:
                        ws.recv(timeout=1.0)
                        self.messages += 1
                    except TimeoutError:
                        pass
        except Exception as exc:  # noqa: BLE001 - reported at the end
            self.error = exc


def page_reload(url):
    """A client that connects, takes its first view and two frames, and leaves."""
    from websockets.sync.client import connect

    with connect(url.replace("http://", "ws://") + "/ws/stream", max_size=None) as ws:
        kinds = [json.loads(ws.recv(timeout=60))["type"] for _ in range(3)]
    assert kinds[0] == "figure", kinds


def curve_of(samples, ends):
    """The curve file's object: samples [(t s, MB)], cycle ends [(t s, MB)]."""
    return {
        "t_s": [round(t, 1) for t, _ in samples],
        "rss_mb": [round(m, 1) for _, m in samples],
        "cycle_end_t_s": [round(t, 1) for t, _ in ends],
        "bound_mb": BOUND_MB,
    }


def soak_run(minutes, sample_s, say=print, partial=None):
    """(figures, curve) of a soak of `minutes` (the module doc); partial(curve) after every
    cycle (a soak cut short keeps its curve so far)."""
    t_start = time.monotonic()
    with server_process() as (url, proc):
        api = soak.Http(url)
        names = soak.robots(api)
        sampler = Sampler(proc.pid, sample_s, time.monotonic())
        sampler.start()
        reader = StreamReader(url)
        reader.start()
        rss_start = soak.rss_mb(proc.pid)
        soak.train(api, SHORT_TRAINING)
        say(f"robots {', '.join(n for n, _ in names)}; trained; RSS {soak.rss_mb(proc.pid):.0f} MB")
        t_end = sampler.t0 + 60.0 * minutes
        ends, k = [], 0
        while time.monotonic() < t_end:
            phases = soak.cycle(
                api, names, task=SHORT_TRAINING["task"], exports=k % EXPORT_EVERY == 0
            )
            page_reload(url)
            k += 1
            ends.append((time.monotonic() - sampler.t0, soak.rss_mb(proc.pid)))
            say(
                f"cycle {k}: t = {ends[-1][0] / 60:.1f} min, RSS {ends[-1][1]:.0f} MB "
                f"({', '.join(f'{p} {s:.1f} s' for p, s in phases.items())})"
            )
            if partial is not None:
                partial(curve_of(list(sampler.samples), ends))
        rss_end = soak.rss_mb(proc.pid)
        sampler.stop.set()
        reader.stop.set()
        sampler.join(sample_s + 5)
        reader.join(10)
    if reader.error is not None:
        raise RuntimeError(f"the stream reader failed: {reader.error!r}")
    rss = [m for _, m in sampler.samples]
    fig = {
        "dashboard_soak_minutes": round((time.monotonic() - t_start) / 60, 2),
        "dashboard_soak_cycles": k,
        "dashboard_soak_rss_start_mb": round(rss_start, 1),
        "dashboard_soak_rss_after_first_cycle_mb": round(ends[0][1], 1),
        "dashboard_soak_rss_max_mb": round(max(rss), 1),
        "dashboard_soak_rss_end_mb": round(rss_end, 1),
        "dashboard_soak_rss_growth_after_first_cycle_mb": round(rss_end - ends[0][1], 1),
        "dashboard_soak_stream_messages": reader.messages,
        "target_met_dashboard_soak_rss_max_mb": max(rss) < BOUND_MB,
        "cpu_count": os.cpu_count(),
        "bench_wall_s": round(time.monotonic() - t_start, 1),
    }
    return fig, curve_of(sampler.samples, ends)


def picture(curve, fig, out):
    """The RSS curve as a PNG: Plotly, photographed by Chromium."""
    import plotly.graph_objects as go
    from playwright.sync_api import sync_playwright

    minutes = [t / 60 for t in curve["t_s"]]
    f = go.Figure()
    f.add_trace(go.Scatter(x=minutes, y=curve["rss_mb"], mode="lines", name="server RSS"))
    ends = [t / 60 for t in curve["cycle_end_t_s"]]
    f.add_hline(
        y=curve["bound_mb"],
        line_dash="dash",
        line_color="firebrick",
        annotation_text=f"bound {curve['bound_mb']:.0f} MB",
    )
    for t in ends:
        f.add_vline(x=t, line_width=0.5, line_color="rgba(0,0,0,0.15)")
    f.update_layout(
        title=(
            f"dashboard server memory over a {fig['dashboard_soak_minutes']:.0f}-minute soak: "
            f"{fig['dashboard_soak_cycles']} cycles of every robot and feature (grey lines: "
            "cycle ends)"
        ),
        xaxis_title="time (min)",
        yaxis_title="resident memory, VmRSS (MB)",
        yaxis_range=[0, max(curve["bound_mb"], max(curve["rss_mb"])) * 1.1],
        width=1000,
        height=480,
        showlegend=False,
        margin={"l": 70, "r": 30, "t": 60, "b": 60},
    )
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    html = f.to_html(include_plotlyjs=True, full_html=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1040, "height": 520})
            page.set_content(html, wait_until="load")
            page.locator(".js-plotly-plot .main-svg").first.wait_for()
            page.locator(".js-plotly-plot").first.screenshot(path=out)
        finally:
            browser.close()
    print(f"wrote {out}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=120.0, help="soak length (default 2 h)")
    ap.add_argument("--sample-s", type=float, default=5.0, help="RSS sampling period, s")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--curve", default=DEFAULT_CURVE)
    ap.add_argument("--picture", default=DEFAULT_PICTURE)
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--no-picture", action="store_true")
    args = ap.parse_args(argv)
    if not args.minutes > 0:
        ap.error(f"--minutes: got {args.minutes:g}; must be > 0")
    if not args.sample_s > 0:
        ap.error(f"--sample-s: got {args.sample_s:g}; must be > 0")
    partial = None if args.no_write else (lambda c: write_results(c, args.curve, say=lambda _: 0))
    fig, curve = soak_run(args.minutes, args.sample_s, partial=partial)
    for key in sorted(fig):
        print(f"{key}: {fig[key]}")
    report_and_write(
        fig,
        args.out,
        print,
        not args.no_write,
        targets=[
            (
                "dashboard_soak_rss_max_mb",
                f"server RSS < {BOUND_MB:.0f} MB",
                lambda v: f"max {v:.0f} MB",
            )
        ],
    )
    if not args.no_write:
        write_results(curve, args.curve)
    if not args.no_picture:
        picture(curve, fig, args.picture)


if __name__ == "__main__":
    main()
