"""The 3-D view on the timeline and honest labels, in Debian's Chromium against a real server
(dashboard/PROTOCOL.md "Plots", "Robot view", "Page"): compare's label switches when the first
frame of the new compare run is drawn, not when its state arrives; pausing the plots and
hovering a past time draws the cursor on every live plot, the hover on the others, and the
robot at its pose at that time (the server's GET /api/plots/pose, from the link angles the run
kept), back to the live poses when the view unfreezes; the 3-D panel's caption names the
simulation it shows (the main one, or the interaction session's ur10); the F/T readout says its
source and age and is marked stale when its messages stop coming, and when they are of another
session than the scene drawn (a new session's messages before its scene is in).

One page session for all of it (module-scoped), in the order the tests are written."""

import contextlib

import pytest

from tests.conftest import require

require("fastapi")
from tests.support.dashboard_server import chromium_page, page_api, wait_for  # noqa: E402

DEADLINE_S = 60.0  # every poll: generous, the machine may be busy
PRESETS = [0.3, 0.5, 0.7]  # the compare run the tests look at (three instances)

# records, in the page, each change of #compare-note with what plot-q shows at that moment:
# the figure's run and the instances with samples drawn
RECORD_NOTE = """() => {
  const rec = window.asrNoteLog = [];
  const note = document.getElementById('compare-note');
  new MutationObserver(() => {
    const gd = document.getElementById('plot-q');
    const drawn = new Set((gd.data || []).filter((t) => t.meta && t.x && t.x.length)
                                      .map((t) => t.meta.instance));
    rec.push({ text: note.textContent, run: window.asrDebug.runId, drawn: [...drawn],
               n: (gd.data || []).length });
  }).observe(note, { childList: true, characterData: true, subtree: true });
}"""

# the solid meshes of instance `i` of the main model drawn now: [[geom index, x, y, z]]
# (the translation of each shown mesh's matrix: column-major elements 12-14)
DRAWN = """(i) => {
  const m = window.asrView3d.models.main;
  return m.instances[i].sets.solid.map((mesh, k) => mesh.visible
    ? [m.drawn[k], mesh.matrix.elements[12], mesh.matrix.elements[13], mesh.matrix.elements[14]]
    : null).filter(Boolean);
}"""

# every live plot's cursor line (x0) or null, and the time each shows a hover at (or null)
PLOTS = ["plot-q", "plot-defl", "plot-tau", "plot-stiffness", "plot-motors"]
CURSORS = """(ids) => ids.map((id) => {
  const gd = document.getElementById(id);
  const sh = ((gd.layout || {}).shapes || []).find((s) => s.name === 'cursor');
  const hv = gd._hoverdata && gd._hoverdata.length ? gd._hoverdata[0].x : null;
  return { id, hidden: gd.hidden, cursor: sh ? sh.x0 : null, hover: hv };
})"""


# the page coordinates of time t (s) on plot div `id`, half-way up its plot area
AT_TIME = """([id, t]) => {
  const gd = document.getElementById(id), fl = gd._fullLayout, r = gd.getBoundingClientRect();
  return [r.left + fl.xaxis._offset + fl.xaxis.l2p(t), r.top + fl._size.t + fl._size.h / 2];
}"""


def shown_range(pg, plot):
    """The x range plot div `plot` is drawn with (s)."""
    return pg.evaluate("(id) => document.getElementById(id)._fullLayout.xaxis.range", plot)


def diag(pg):
    """The cursor and the 3-D view's time, for a failure's message."""
    return {
        "cursor": attr(pg, "#view-time", "data-cursor"),
        "3d time": attr(pg, "#robot3d", "data-time"),
        "replay": attr(pg, "#robot3d", "data-replay"),
        "range": shown_range(pg, "plot-q"),
    }


def ok(pg, method, path, body=None):
    status, out = page_api(pg, method, path, body)
    assert status == 200, (method, path, status, out)
    return out


def attr(pg, selector, name):
    return pg.get_attribute(selector, name)


@pytest.fixture(scope="module")
def page():
    with chromium_page() as pg:
        pg.wait_for_selector("#status.live", timeout=DEADLINE_S * 1000)
        pg.wait_for_function(
            "window.asrView3d && window.asrView3d.models.main", timeout=DEADLINE_S * 1000
        )
        yield pg
        assert not pg.js_errors, pg.js_errors


def test_compare_label_switches_when_the_new_run_is_drawn(page):
    pg = page
    pg.evaluate(RECORD_NOTE)
    pg.fill("#compare-presets", ", ".join(map(str, PRESETS)))
    pg.click("#btn-compare")
    want = " / ".join(map(str, PRESETS))
    wait_for(lambda: want in (pg.text_content("#compare-note") or ""), DEADLINE_S, "the new label")
    run = ok(pg, "GET", "/api/state")["run_id"]
    log = pg.evaluate("window.asrNoteLog")
    first = next(e for e in log if want in e["text"])
    # when the label changed, plot-q drew the new run's three instances already
    assert first["run"] == run and sorted(first["drawn"]) == [0, 1, 2], first


def test_the_3d_view_follows_the_paused_timeline(page):
    pg = page
    # the arm moves to another equilibrium from t1 > 0.6 s on: its pose before is not the live one
    t1 = wait_for(
        lambda: (t := ok(pg, "GET", "/api/state")["time"]) > 0.6 and t, DEADLINE_S, "0.6 s"
    )
    ok(pg, "POST", "/api/control", {"reference": {"joint1": {"offset": 0.6}}})
    wait_for(lambda: ok(pg, "GET", "/api/state")["time"] > t1 + 1, DEADLINE_S, "1 s more")
    live_before = pg.evaluate(DRAWN, 0)
    pg.check("#view-pause")
    pg.wait_for_selector("#view-scrub:not([disabled])", timeout=DEADLINE_S * 1000)
    assert pg.text_content("#robot3d-caption").startswith("main simulation: ")
    # scrub the window back to start 0.5 s before t1: the cursor at its end (or the run's),
    # the 3-D view there
    lo, hi = (float(pg.get_attribute("#view-scrub", k)) for k in ("min", "max"))
    t0 = min(hi, max(lo, t1 - 0.5))  # the slider's range (one window: min = max)
    windows = int(attr(pg, "#view-time", "data-windows") or 0)  # past windows drawn
    pg.eval_on_selector(
        "#view-scrub",
        "(e, v) => { e.value = String(v); e.dispatchEvent(new Event('input')); }",
        t0,
    )
    wait_for(
        lambda: int(attr(pg, "#view-time", "data-windows") or 0) > windows,
        DEADLINE_S,
        "the scrubbed window drawn",
    )
    assert abs(float(attr(pg, "#view-time", "data-t0")) - t0) < 1e-3
    wait_for(
        lambda: (t := attr(pg, "#robot3d", "data-time")) and float(t) > t1 + 0.9,
        DEADLINE_S,
        "the 3-D view at the window's end",
    )
    wait_for(lambda: abs(shown_range(pg, "plot-q")[0] - t0) < 1e-3, DEADLINE_S, "the range")
    # hover plot-q before t1: the cursor moves there on every plot and the 3-D view follows
    t_h = t1 - 0.3
    x, y = pg.evaluate(AT_TIME, ["plot-q", t_h])
    pg.mouse.move(x, y)
    try:
        t_c = wait_for(
            lambda: (
                (c := attr(pg, "#view-time", "data-cursor")) and abs(float(c) - t_h) < 0.1 and c
            ),
            DEADLINE_S,
            "the cursor at the hovered time",
        )
        t_c = float(t_c)
        drawn = wait_for(
            lambda: (t := attr(pg, "#robot3d", "data-time")) and abs(float(t) - t_c) < 0.05 and t,
            DEADLINE_S,
            "the 3-D view at the cursor's time",
        )
    except AssertionError as e:
        raise AssertionError(f"{e}; hovered {t_h} s; {diag(pg)}") from None
    plots = pg.evaluate(CURSORS, PLOTS)
    shown = [p for p in plots if not p["hidden"]]
    assert len(shown) >= 4 and all(abs(p["cursor"] - t_c) < 1e-6 for p in shown), plots
    # the hover at the same time on the plots not hovered (the nearest sample of each)
    assert all(p["hover"] is not None and abs(p["hover"] - t_c) < 0.05 for p in shown), plots
    assert f"t = {float(drawn):.3f} s (paused view)" in pg.text_content("#robot3d-caption")
    # what is drawn is the server's pose of instance 0 at that time, not the live one
    pose = ok(pg, "GET", f"/api/plots/pose?t={t_c}")
    assert abs(pose["t_sample"] - float(drawn)) < 1e-9 and len(pose["robot3d"]["poses"]) == 3
    past = pg.evaluate(DRAWN, 0)
    want = pose["robot3d"]["poses"][0]
    assert past and all(
        max(abs(x - want[gi][0]), abs(y - want[gi][1]), abs(z - want[gi][2])) < 1e-4
        for gi, x, y, z in past
    )
    moved = max(max(abs(a - b) for a, b in zip(p[1:], q[1:])) for p, q in zip(past, live_before))
    assert moved > 1e-3, "the past pose equals the live one: the test shows nothing"
    # live again: the cursor goes, the 3-D view draws the live poses
    pg.evaluate("Plotly.Fx.unhover(document.getElementById('plot-q'))")
    pg.uncheck("#view-pause")
    pg.wait_for_selector("#robot3d[data-replay='0']", timeout=DEADLINE_S * 1000)
    wait_for(lambda: all(p["cursor"] is None for p in pg.evaluate(CURSORS, PLOTS)), 10, "no cursor")
    wait_for(lambda: pg.evaluate(DRAWN, 0) != past, DEADLINE_S, "the live poses again")
    assert pg.text_content("#robot3d-caption").endswith(", live")


# [the interaction scene drawn, the scene id of the F/T reading shown] (null where none)
SCENE_IDS = """() => {
  const m = window.asrView3d.models.interaction, ft = window.asrRobot3d.state.ft;
  return [m ? m.sceneId : null, ft ? ft.sceneId : null];
}"""


# the page's stream handler wrapped: `interaction` messages dropped (a stream that stalls) or
# passed again
DROP_INTERACTION = """(drop) => {
  const ws = window.asrDebug.ws;
  if (!ws.asrHandler) ws.asrHandler = ws.onmessage;
  ws.onmessage = drop ? (ev) => { if (!ev.data.includes('"interaction"')) ws.asrHandler(ev); }
                      : ws.asrHandler;
}"""


def test_caption_names_the_simulation_and_a_stale_readout_says_so(page):
    pg = page
    robot = ok(pg, "GET", "/api/state")["robot"]
    assert pg.text_content("#robot3d-caption").startswith(f"main simulation: {robot}")
    ok(pg, "POST", "/api/interaction/start", {"variant": "rigid", "law": "direct_force"})
    try:
        pg.wait_for_function(
            """() => { const c = document.getElementById('robot3d-caption');
                return c.dataset.source === 'interaction'
                    && c.textContent.startsWith('interaction session: ur10'); }""",
            timeout=DEADLINE_S * 1000,
        )
        assert f"the plots show the main simulation ({robot}" in pg.text_content("#robot3d-caption")
        info = "#robot3d .view3d-info"
        pg.wait_for_selector(f"{info}[data-stale='0']", timeout=DEADLINE_S * 1000)
        text = pg.text_content(info)
        assert text.startswith("F/T: ") and "ur10 interaction session, t = " in text, text
        pg.evaluate(DROP_INTERACTION, True)  # the readout's messages stop coming
        pg.wait_for_selector(f"{info}.stale[data-stale='1']", timeout=DEADLINE_S * 1000)
        assert pg.text_content(info).startswith("stale, no reading for ")
    finally:
        pg.evaluate(DROP_INTERACTION, False)
        ok(pg, "POST", "/api/interaction/stop", {})
    pg.wait_for_function(
        "document.getElementById('robot3d-caption').textContent.startsWith('main simulation: ')",
        timeout=DEADLINE_S * 1000,
    )


def test_a_reading_of_another_session_than_the_scene_drawn_is_stale(page):
    # a new interaction session's messages come while the view still draws the scene of the
    # one before (its scene fetch held back here; on a busy machine it is merely slow): the
    # force it reads is not the drawn arm's, and the readout says so until the new scene is in
    pg = page
    held = []
    scene = "**/api/scene/interaction"
    pg.route(scene, lambda route: held.append(route))  # the scene's GET waits until continued
    info = "#robot3d .view3d-info"
    ok(pg, "POST", "/api/interaction/start", {"variant": "rigid", "law": "direct_force"})
    try:
        pg.wait_for_selector(f"{info}.stale[data-stale='1']", timeout=DEADLINE_S * 1000)
        text = pg.text_content(info)
        assert text.startswith("stale, another session's reading: F/T: "), text
        drawn, read = pg.evaluate(SCENE_IDS)
        assert held and read is not None and drawn != read, (held, drawn, read)
        for route in held:
            route.continue_()
        pg.unroute(scene)
        # the new session's scene drawn: its reading is current again
        pg.wait_for_selector(f"{info}[data-stale='0']", timeout=DEADLINE_S * 1000)
        assert pg.text_content(info).startswith("F/T: ")
        drawn, read = pg.evaluate(SCENE_IDS)
        assert drawn == read, (drawn, read)
    finally:
        pg.unroute(scene)
        for route in held:
            with contextlib.suppress(Exception):  # continued already
                route.continue_()
        ok(pg, "POST", "/api/interaction/stop", {})
    pg.wait_for_function(
        "document.getElementById('robot3d-caption').textContent.startsWith('main simulation: ')",
        timeout=DEADLINE_S * 1000,
    )
