"""The dashboard in a real browser: Debian's Chromium driven by Playwright against a real server.
Loads the page, sees live data arrive, presses "stiff" and checks that the plotted deflection
shrinks, changes a gain, runs two ILC iterations and saves a screenshot. Latency from a control
change to the first plotted sample reflecting it and the frame rate are printed (measured, not
asserted)."""

import json
import time
import urllib.request

import numpy as np
import pytest

from tests.support.dashboard_server import wait_for

pytestmark = pytest.mark.browser

# How long a check waits for the server to answer or the page to draw what it answered: the CI
# host is shared and busy (load ~10 on 2 cores); a real stop still fails, after this
ANSWER_S = 60.0
SETTLE_S = 4.0  # s of simulated time the arm settles in after a preset change
MIN_WINDOW_SAMPLES = 5  # samples a compared window must hold, at least


@pytest.fixture(scope="module")
def page():
    from tests.support.dashboard_server import chromium_page

    # the 1-DOF qbmove Advanced rig: symmetric springs, so a stiffer preset visibly shrinks the
    # deflection under gravity (the 2-DOF arm's identified springs are asymmetric: its
    # deflection from eq includes a preset-dependent offset)
    with chromium_page(robot="pendulum_1dof", variant="qbmove_advanced") as pg:
        yield pg


def frames(pg):
    return int(pg.get_attribute("#status", "data-frames") or 0)


def wait_frames(pg, more, timeout=ANSWER_S):
    start, deadline = frames(pg), time.monotonic() + timeout
    while frames(pg) < start + more:
        assert time.monotonic() < deadline, "no live data"
        pg.wait_for_timeout(50)


def plotted_since(pg, t0):
    """|deflection| (rad) of the samples #plot-defl has plotted at simulated times t >= t0 (s),
    every trace."""
    return pg.evaluate(
        """(t0) => document.getElementById('plot-defl').data.flatMap(tr => {
            const x = Array.from(tr.x || []), y = Array.from(tr.y || []);
            return y.filter((v, i) => v !== null && x[i] >= t0).map(Math.abs);
        })""",
        t0,
    )


def switch_preset(pg, which):
    """Press the soft / stiff button and wait until the server applies it; the simulated time
    then (s): the switch happened at or before it (a busy host delays the command's arrival,
    so the time of the click says nothing about the time of the switch)."""
    pg.click(f"#btn-{which}")

    def applied():
        state = api(pg, "/api/state")
        j = state["joints"][0]
        return state["presets"][j["name"]] == j["presets"][which] and state["time"]

    return wait_for(applied, ANSWER_S, f"the {which} preset applied")


def settled_deflection(pg, which):
    """Mean |deflection| (rad) plotted from the last second of SETTLE_S s of simulated time after
    the `which` preset took effect on: samples chosen by their simulated time, waited for until
    MIN_WINDOW_SAMPLES of them are plotted (a starved page draws a second of simulated time late
    or in few points, decimated: more come as the simulation goes on, settled)."""
    from tests.support.dashboard_server import SIM_DEADLINE_S

    t0 = switch_preset(pg, which) + SETTLE_S - 1.0

    def enough():
        got = plotted_since(pg, t0)
        return got if len(got) >= MIN_WINDOW_SAMPLES else None

    tail = wait_for(
        enough,
        SIM_DEADLINE_S + 4 * SETTLE_S,
        f"{MIN_WINDOW_SAMPLES} samples plotted from {t0} s of simulated time on ({which})",
    )
    return float(np.mean(tail))


def api(pg, path):
    with urllib.request.urlopen(pg.base_url + path, timeout=10) as r:
        return json.loads(r.read())


def test_live_data_arrives(page):
    wait_frames(page, 10)
    assert page.inner_text("#status").strip().lower().startswith("live")
    assert not page.js_errors, page.js_errors


def test_stiff_shrinks_the_deflection(page):
    # the vertical arm sags and settles under gravity: SETTLE_S s of the simulation's time after
    # each preset took effect, plotted (a busy host takes longer to get there; the settling is
    # the same); the windows compared are chosen by simulated time, never by wall time
    soft = settled_deflection(page, "soft")
    clicked = time.monotonic()
    stiff = settled_deflection(page, "stiff")
    print(f"mean |deflection| soft {soft:.4f} rad, stiff {stiff:.4f} rad")
    assert stiff < 0.7 * soft
    stats = page.evaluate("() => window.asrStats || {}")
    print(
        f"browser: {stats.get('fps')} frames/s, control-to-plot latency "
        f"{stats.get('latencyMs')} ms (click at +{time.monotonic() - clicked:.1f} s)"
    )


def test_gain_change_reaches_the_simulation(page):
    # the rig runs in mode 3 (no PID: the gains are hidden); mode 6 uses the motor PID
    page.select_option("#mode", "6")
    page.wait_for_selector("#gain-kp", state="visible", timeout=ANSWER_S * 1000)
    page.fill("#gain-kp", "180")
    page.dispatch_event("#gain-kp", "change")
    deadline = time.monotonic() + ANSWER_S
    while True:
        state = api(page, "/api/state")
        kps = json.dumps(state)
        if "180" in kps:
            break
        assert time.monotonic() < deadline, "kp change not applied"
        page.wait_for_timeout(100)
    wait_frames(page, 5)  # and the stream stays live


def test_two_ilc_iterations(page):
    page.fill("#ilc-iterations", "2")
    page.click("#btn-ilc-start")
    deadline = time.monotonic() + 120
    while True:
        st = api(page, "/api/ilc")
        if not st.get("running") and len(st.get("errors", [])) >= 2:
            break
        assert time.monotonic() < deadline, f"ILC did not finish: {st}"
        page.wait_for_timeout(250)

    # the page draws the errors when its next poll sees them: wait for the drawn points
    def drawn():
        return page.evaluate(
            """() => ((document.getElementById('plot-ilc') || {}).data || [])
                     .reduce((n, t) => n + (t.y ? t.y.length : 0), 0)"""
        )

    points = wait_for(
        lambda: (n := drawn()) >= 2 and n, ANSWER_S, "the ILC errors drawn in #plot-ilc"
    )
    assert points >= 2
    assert page.inner_text("#ilc-status").strip()


def test_screenshot(page, tmp_path):
    out = tmp_path / "dashboard.png"
    page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 10000
    print(f"screenshot: {out}")
    assert not page.js_errors, page.js_errors
