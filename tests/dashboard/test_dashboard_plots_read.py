"""The page's plots read as TensorBoard / Foxglove users expect (PROTOCOL.md "Plots", "RL"), in
Debian's Chromium against a real server: the view paused, the scrub slider moves every live plot
back to any window of the whole run (here 1 s into a 20 s run, long past the 10 s record) and
draws the samples of that window; zooming one plot zooms all; the stiffness plots have log y
axes; at 8 instances of a 3-joint robot (48 traces on a plot) the legends lie outside the plot
areas. Two short real RL runs (trained meanwhile, in their own processes): the runs table shows
each one's hyperparameters, a ticked past run is overlaid in its own colour, the smoothing
slider changes the drawn curve (the raw curve kept). Waits are in simulated time, on the trainer
or on the page, with generous deadlines."""

import pytest

from tests.conftest import require

require("fastapi")
from tests.support.dashboard_server import SIM_DEADLINE_S, chromium_page, page_api, wait_for  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PLOTS = ("plot-q", "plot-defl", "plot-tau", "plot-stiffness", "plot-motors")
# per live plot: its x range as drawn and the span of its line traces' samples
RANGES = """(plots) => plots.map((id) => {
    const gd = document.getElementById(id);
    const xs = gd.data.filter((t) => t.mode !== 'markers').flatMap((t) => Array.from(t.x || []));
    return {id, range: (gd.layout.xaxis.range || []).slice(), lo: Math.min(...xs),
            hi: Math.max(...xs), n: xs.length};
})"""
# per live plot: the (HTML) legend's and the plot area's boxes (px) and the legend's entries
LEGENDS = """(plots) => plots.map((id) => {
    const gd = document.getElementById(id);
    const box = (el) => { const r = el.getBoundingClientRect();
                          return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
    return {id, legend: box(gd.querySelector('.plot-legend')),
            area: box(gd.querySelector('.nsewdrag')),
            entries: gd.querySelectorAll('.plot-legend .entry').length, traces: gd.data.length};
})"""


def ok(pg, method, path, body=None):
    code, out = page_api(pg, method, path, body)
    assert code == 200, (path, code, out)
    return out


def ranges(pg):
    return {r["id"]: r for r in pg.evaluate(RANGES, list(PLOTS))}


def wait_ranges(pg, cond, what, timeout=30.0):
    last = []

    def check():
        last[:] = [ranges(pg)]
        return last[0] if cond(last[0]) else None

    try:
        return wait_for(check, timeout, what, 0.2)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {last}") from None


def set_slider(pg, selector, value):
    pg.eval_on_selector(
        selector,
        "(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input')); }",
        value,
    )


def drag_zoom(pg, div, a, b):
    """A user's zoom: a horizontal drag over #div's plot area from fraction a to b of its width."""
    box = pg.locator(f"#{div} .nsewdrag").bounding_box()
    y = box["y"] + box["height"] / 2
    pg.mouse.move(box["x"] + a * box["width"], y)
    pg.mouse.down()
    pg.mouse.move(box["x"] + (a + b) / 2 * box["width"], y + 2, steps=4)
    pg.mouse.move(box["x"] + b * box["width"], y + 2, steps=4)
    pg.mouse.up()


RUN = {"num_envs": 2, "total_steps": 512, "n_steps": 64, "batch_size": 64}  # 4 rows; a Reach
# episode ends after 100 env-steps: 3 returns


def start_run(pg, lr, gamma):
    """Start a short real Reach2DOF training (its own process); the body asked for."""
    body = {"task": "asr/Reach2DOF-v0", **RUN, "learning_rate": lr, "gamma": gamma}
    ok(pg, "POST", "/api/rl/start", body)
    return body


def wait_run_ended(pg, run):
    """Wait until run `run` has finished (the server says) and the page shows it."""

    def ended():
        st = ok(pg, "GET", "/api/rl/status")
        return st["run"] == run and not st["running"] and st

    st = wait_for(ended, 240, f"run {run} to end", 0.5)
    assert st["message"] == "finished", st
    pg.wait_for_function(
        f"document.getElementById('rl-status').textContent.startsWith('run {run}: finished')",
        timeout=30000,
    )


def test_plots_read_as_tensorboard_and_foxglove():
    require("stable_baselines3")
    with chromium_page() as pg:
        pg.wait_for_selector("#status.live", timeout=60000)
        # the first RL run trains meanwhile (its own process; the sim runs on)
        first = start_run(pg, 3e-4, 0.9)
        window = ok(pg, "GET", "/api/state")["window_s"]
        ok(pg, "POST", "/api/control", {"speed": "max"})
        wait_for(
            lambda: ok(pg, "GET", "/api/state")["time"] > 20.0,
            SIM_DEADLINE_S * 4,
            "20 s of simulated time",
        )
        ok(pg, "POST", "/api/control", {"paused": True})
        # the view paused (the page's toggle: its state does not wait for the stream): the
        # slider opens over the whole run, at its newest window
        pg.check("#view-pause")
        pg.wait_for_selector("#view-scrub:not([disabled])", timeout=10000)
        lo = float(pg.get_attribute("#view-scrub", "min"))
        assert lo < 0.1 and float(pg.get_attribute("#view-scrub", "max")) > 10.0
        set_slider(pg, "#view-scrub", 1.0)
        back = wait_ranges(
            pg,
            lambda r: all(
                abs(p["range"][0] - 1.0) < 1e-6 if p["range"] else False for p in r.values()
            ),
            "every plot at the window from 1 s",
        )
        for p in back.values():
            assert p["range"] == pytest.approx([1.0, 1.0 + window]), p
            # the samples drawn are that window's (the record holds only the last 10 s)
            assert p["n"] > 100 and p["lo"] >= 1.0 - 1e-6 and p["hi"] <= 1.0 + window + 1e-6, p
            assert p["lo"] < 1.2 and p["hi"] > window + 0.8, p
        assert pg.get_attribute("#view-time", "data-t0") == "1"

        # a user's zoom on one plot: every live plot follows
        drag_zoom(pg, "plot-tau", 0.3, 0.6)
        zoomed = wait_ranges(
            pg,
            lambda r: (
                len({tuple(round(v, 6) for v in p["range"]) for p in r.values()}) == 1
                and r["plot-q"]["range"][1] - r["plot-q"]["range"][0] < 0.5 * window
            ),
            "the zoom on every plot",
        )
        a, b = zoomed["plot-q"]["range"]
        assert 1.0 + 0.25 * window < a < b < 1.0 + 0.65 * window, zoomed

        # log y on the stiffness plots: the live one and the datasheet's stiffness panels
        for box in ("#log-stiffness", "#log-datasheet"):
            if not pg.is_checked(box):
                pg.click(box)
        pg.wait_for_function(
            "document.getElementById('plot-stiffness').layout.yaxis.type === 'log'", timeout=10000
        )
        pg.wait_for_function("+document.getElementById('plot-datasheet').dataset.curves > 0")
        pg.wait_for_function(
            "(() => { const l = document.getElementById('plot-datasheet').layout;"
            " return l.yaxis2.type === 'log' && l.yaxis3.type === 'log'; })()",
            timeout=10000,
        )

        wait_run_ended(pg, 1)
        second = start_run(pg, 1e-3, 0.99)

        # 8 instances of a 3-joint robot: 48 traces on #plot-q, legends beside the plot areas
        ok(pg, "POST", "/api/robot", {"robot": "qbmove_3r"})
        ok(pg, "POST", "/api/compare", {"presets": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]})
        ok(pg, "POST", "/api/control", {"paused": False})
        pg.uncheck("#view-pause")
        pg.wait_for_function(
            "document.getElementById('plot-q').data.length === 48", timeout=SIM_DEADLINE_S * 1000
        )
        pg.wait_for_function(  # the HTML legends (static/legend.js), built with the figure
            "(plots) => plots.every((id) => document.querySelectorAll("
            "`#${id} .plot-legend .entry`).length >= 16)",
            arg=list(PLOTS),
            timeout=SIM_DEADLINE_S * 1000,
        )
        legends = pg.evaluate(LEGENDS, list(PLOTS))
        rl = check_rl_page(pg)
        assert not pg.js_errors, pg.js_errors
    check_rl(rl, first, second)
    for p in legends:
        assert p["traces"] >= 16 and p["entries"] >= 16, p
        # outside the plot area, right of it: no trace is covered
        assert p["legend"]["left"] >= p["area"]["right"] - 1, p


def check_rl_page(pg):
    """The runs table, the plot with run 1 ticked, the return with no smoothing: as read."""
    wait_run_ended(pg, 2)
    pg.wait_for_selector("#rl-runs tbody tr[data-run='2']", timeout=20000)
    rows = pg.eval_on_selector_all(
        "#rl-runs tbody tr", "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    runs = ok(pg, "GET", "/api/rl/runs")["runs"]
    # the current run alone at first (a new run starts the plot clean)
    alone = pg.evaluate("document.getElementById('plot-rl').data.map(t => t.meta.run)")
    pg.check("#rl-runs tr[data-run='1'] input")
    pg.wait_for_function(
        "document.getElementById('plot-rl').data.some(t => t.meta.run === 1)", timeout=10000
    )
    drawn = pg.evaluate(
        """() => document.getElementById('plot-rl').data.map(t => ({run: t.meta.run,
            series: t.meta.series, colour: t.line.color, axis: t.yaxis || 'y',
            y: Array.from(t.y), name: t.name}))"""
    )
    set_slider(pg, "#rl-smoothing", 0)
    pg.wait_for_function("document.getElementById('plot-rl').dataset.smoothing === '0'")
    unsmoothed = pg.evaluate(
        "document.getElementById('plot-rl').data.filter(t => t.meta.series === 'return')"
        ".map(t => Array.from(t.y))"
    )
    return rows, runs, alone, drawn, unsmoothed


def check_rl(rl, first, second):
    rows, runs, alone, drawn, unsmoothed = rl
    assert [r["run"] for r in runs] == [1, 2]
    for row, asked in zip(rows, (first, second)):
        lr, gamma = str(asked["learning_rate"]), str(asked["gamma"])
        assert row[1:] == ["Reach2DOF-v0", "PPO", "2", "512", lr, "64", "64", gamma], row
    assert set(alone) == {2}
    by = {(t["run"], t["series"]): t for t in drawn}
    assert {r for r, _ in by} == {1, 2}
    assert by[(1, "return")]["colour"] != by[(2, "return")]["colour"]  # a colour per run
    metric = runs[1]["metric"]
    assert by[(2, "metric")]["axis"] == "y2"  # the task metric on its own axis
    assert by[(2, "metric")]["name"] == f"{metric['name']} ({metric['unit']})"
    for run in (1, 2):
        raw, smoothed = by[(run, "raw")]["y"], by[(run, "return")]["y"]
        assert raw == runs[run - 1]["curve"]["return"]
        pairs = [(r, s) for r, s in zip(raw, smoothed) if r is not None]
        assert len(pairs) >= 2 and pairs[0][1] == pytest.approx(pairs[0][0]), (raw, smoothed)
        # the default smoothing (0.6) moves the curve off the raw one; 0 puts it back on it
        assert [s for _, s in pairs] != pytest.approx([r for r, _ in pairs])
        assert [u for u, r in zip(unsmoothed[run - 1], raw) if r is not None] == pytest.approx(
            [r for r, _ in pairs]
        )
