"""Every live plot of the page shows the same time window, the clamp bands' included: a user's
session (horizontal arm, stiff preset, a 1.5 rad step and a push put spring 1 on its deflection
clamp, then hold 0) used to leave the old clamp markers (bands since) on #plot-defl, whose time
axis then spanned them (13-38 s) while the other plots showed the last window_s (28-38 s).
A plot off screen (#plot-motors, below the 1280x900 viewport) is not redrawn (its redraw count
and newest sample stand while #plot-q moves on) and, scrolled into view, is brought up to date
in one redraw: its newest sample the on-screen plots' (within one frame), the same window.
Waits are measured in simulated time (plotted samples), with generous deadlines; nothing is
paced by the wall clock."""

import json
import time
import urllib.request

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WINDOW_S = 3.0  # the server's plotted window, s: short, so that old clamp bands leave it soon
PLOTS = ("plot-q", "plot-defl", "plot-tau", "plot-stiffness", "plot-motors")
# per plot: its x range as drawn, its newest sample, the clamp bands' frame ends on the clamp
# (their points at y 1; null while none) and every point of the bands (#plot-defl)
SHOWN = """(plots) => plots.map((id) => {
    const gd = document.getElementById(id);
    const lines = gd.data.filter((tr) => tr.mode !== 'markers');
    const bands = gd.data.filter((tr) => tr.meta && tr.meta.field === 'clamped');
    const on = bands.flatMap((tr) => Array.from(tr.x).filter((x, k) => tr.y[k] === 1));
    return {id, range: gd._fullLayout.xaxis.range.slice(),
            newest: Math.max(...lines.map((tr) => tr.x.length ? tr.x[tr.x.length - 1] : -1)),
            marks: on.length ? on : null, band: bands.flatMap((tr) => Array.from(tr.x))};
})"""


FRAME_S = 1 / 30  # one stream frame, s of simulated time (the runner's 30 Hz at real time)
# #plot-motors's redraws, newest sample and top (px in the viewport), the page's off-screen counts
OFFSCREEN = """() => {
    const newest = (id) => Math.max(-1, ...document.getElementById(id).data
        .map((tr) => tr.x.length ? tr.x[tr.x.length - 1] : -1));
    const rects = {};
    for (const id of ['plot-q', 'plot-defl', 'plot-tau', 'plot-stiffness', 'plot-motors'])
        rects[id] = Math.round(document.getElementById(id).getBoundingClientRect().top);
    return {draws: asrStats.plotDraws['plot-motors'] || 0, newest: newest('plot-motors'),
            q: newest('plot-q'), skipped: asrStats.skipped, offscreen: asrStats.offscreen,
            caughtUp: asrStats.caughtUp, rects};
}"""
NEWEST = """() => Object.fromEntries([['q', 'plot-q'], ['motors', 'plot-motors']].map(([k, id]) =>
    [k, Math.max(...document.getElementById(id).data
        .map((tr) => tr.x.length ? tr.x[tr.x.length - 1] : -1))]))"""


def post(url, body=None):
    req = urllib.request.Request(
        url,
        method="POST",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def shown(pg):
    return {p["id"]: p for p in pg.evaluate(SHOWN, list(PLOTS))}


def wait_shown(pg, ok, what, timeout):
    """The first shown(pg) for which ok(...) holds, polled; a failure after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        s = shown(pg)
        if ok(s):
            return s
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {s}"
        pg.wait_for_timeout(200)


def test_every_live_plot_shows_the_same_window():
    from tests.support.dashboard_server import SIM_DEADLINE_S, chromium_page, wait_plotted

    with chromium_page(robot="qbmove_arm_2dof", variant="horizontal", window_s=WINDOW_S) as pg:
        url = pg.base_url
        pg.wait_for_selector("#status.live", timeout=60000)
        post(url + "/api/stiffness/stiff")  # one instance at the stiff preset
        step = {"kind": "step", "amplitude": 1.5, "offset": 0.0}
        post(url + "/api/control", {"reference": {"joint1": step, "joint2": step}})
        post(url + "/api/push", {"joint": "joint1", "torque": 2.0, "duration": 0.1})
        marked = wait_shown(pg, lambda s: s["plot-defl"]["marks"], "clamp bands", SIM_DEADLINE_S)[
            "plot-defl"
        ]["marks"]
        hold = {"kind": "hold", "amplitude": 0.0, "offset": 0.0}
        post(url + "/api/control", {"reference": {"joint1": hold, "joint2": hold}})
        # off the clamp after the swing back; then a window and a half more of simulated time
        wait_plotted(pg, 2.0, "plot-defl")
        pg.wait_for_function(
            "document.getElementById('status').dataset.clamped === ''",
            timeout=SIM_DEADLINE_S * 1000,
        )
        last_mark = max(shown(pg)["plot-defl"]["marks"] or marked)
        # #plot-motors, below the 1280x900 viewport, drawn once in view, then scrolled out of it:
        # it takes samples but is not redrawn
        pg.evaluate("document.getElementById('plot-motors').scrollIntoView({block: 'end'})")
        pg.wait_for_function(
            "() => asrStats.plotDraws['plot-motors'] > 0", timeout=SIM_DEADLINE_S * 1000
        )
        pg.evaluate("window.scrollTo(0, 0)")
        pg.wait_for_function("() => asrStats.offscreen === 2", timeout=SIM_DEADLINE_S * 1000)
        before = pg.evaluate(OFFSCREEN)
        wait_plotted(pg, 1.5 * WINDOW_S, "plot-defl")
        after = pg.evaluate(OFFSCREEN)
        # scrolled into view (the page's end: every live plot on screen), it catches up at once
        pg.evaluate("document.getElementById('plot-motors').scrollIntoView({block: 'end'})")
        pg.wait_for_function(
            "n => (asrStats.plotDraws['plot-motors'] || 0) > n && asrStats.offscreen === 0",
            arg=after["draws"],
            timeout=SIM_DEADLINE_S * 1000,
        )
        caught = pg.evaluate(NEWEST)
        s = wait_shown(
            pg,
            lambda s: all(p["newest"] > last_mark + 1.2 * WINDOW_S for p in s.values()),
            "the bands' time to leave the window",
            SIM_DEADLINE_S,
        )

    print(f"off screen: {before} -> {after}; newest on coming into view: {caught}")
    # off screen: #plot-motors not redrawn, its newest sample standing, its redraws skipped
    assert before["rects"]["plot-motors"] >= 900 and before["draws"] > 0, before
    assert after["draws"] == before["draws"] and after["newest"] == before["newest"], after
    assert after["skipped"] > before["skipped"] and after["q"] > before["q"] + WINDOW_S, after
    # brought up to date in one redraw: the newest sample of the on-screen plots' window
    assert caught["motors"] == pytest.approx(caught["q"], abs=FRAME_S), caught
    newest = s["plot-q"]["newest"]
    print(
        f"on the clamp at {marked[0]:.2f}..{last_mark:.2f} s; ranges at newest {newest:.2f} s: "
        + ", ".join(f"{k} {v['range'][0]:.3f}..{v['range'][1]:.3f}" for k, v in s.items())
    )
    assert marked, "the step and push put no spring on its clamp"
    for p in s.values():
        lo, hi = p["range"]
        # the same window on every plot: window_s ending at the newest sample
        assert hi == pytest.approx(newest, abs=0.05), p
        assert lo == pytest.approx(newest - WINDOW_S, abs=0.05), p
    # band points older than the window are dropped (the interval's closing point too)
    assert all(x >= newest - WINDOW_S - 0.05 for x in s["plot-defl"]["band"])
    assert not pg.js_errors, pg.js_errors
