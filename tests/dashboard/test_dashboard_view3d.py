"""The dashboard's three.js robot view (static/robot3d.js, view3d_scene.js, view3d_model.js) in
Debian's Chromium (SwiftShader WebGL) against a real server: the canvas shows the robot large
in the panel, compare instances stand side by side without overlap and labelled with their
presets, the interaction panel's ur10 with its plate and an F/T arrow along the measured force,
the watched task's target as a second ghost at the target angles, and a clear message in the
panel when three.js is missing. The page's View3D is read through window.asrView3d."""

import json
import re
import urllib.request

import numpy as np
import pytest

import asr

pytestmark = [pytest.mark.browser, pytest.mark.slow]
DEADLINE_MS = 60000  # the page draws on requestAnimationFrame: slow on a busy CI host
SHARE = 0.4  # of the panel's width or height the robot's projected bounds must cover


@pytest.fixture(scope="module")
def page():
    from tests.support.dashboard_server import SHORT_TRAINING, chromium_page

    with chromium_page(("--use-angle=swiftshader", "--enable-unsafe-swiftshader")) as pg:
        # the short training whose policy the watch test watches runs meanwhile, in its own
        # process (the trainer's torch import and its updates take seconds): the live view the
        # other tests check is the server's Sim, which no training touches
        post(pg, "/api/rl/start", SHORT_TRAINING)
        yield pg


def post(pg, path, body):
    req = urllib.request.Request(
        pg.base_url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def get(pg, path):
    with urllib.request.urlopen(pg.base_url + path, timeout=30) as r:
        return json.loads(r.read())


def settle(pg, source="main", draws=3):
    """Wait until the view shows `source`'s laid-out model and has drawn `draws` more times."""
    pg.wait_for_function(
        f"""() => {{ const v = window.asrView3d;
            return v && v.source === '{source}' && v.model && v.model.laidOut; }}""",
        timeout=DEADLINE_MS,
    )
    d0 = pg.evaluate("() => window.asrView3d.draws")
    pg.wait_for_function(f"() => window.asrView3d.draws >= {d0 + draws}", timeout=DEADLINE_MS)


def view(pg):
    """What the view draws now: instances, labels, per-instance world bounds (m), meshes shown,
    the robot's projected share of the panel (width, height) and the arrow."""
    return pg.evaluate("""() => { const v = window.asrView3d, m = v.model;
        v.arrow.updateMatrixWorld(true);  // as the next draw places it
        return {n: m.n, axis: m.axis, source: v.source, share: v.projectedShare(),
                labels: v.labels.map((l) => l.textContent), drawn: m.drawn.length,
                names: m.scene.geoms.map((g) => g.name),
                boxes: Array.from({length: m.n}, (_, i) => {
                    const b = m.bounds(i); return [b.min.toArray(), b.max.toArray()]; }),
                solid: m.shown('solid'), ghost: m.shown('ghost'), target: m.shown('target'),
                arrow: v.arrow.visible, force: v.force && v.force.f,
                shaft: v.arrow.matrixWorld.elements.slice(4, 7),  // the arrow's drawn +y axis
                info: v.info.textContent}; }""")


def painted_share(pg):
    """Share of the canvas's pixels that differ from its background (read back from WebGL)."""
    return pg.evaluate("""() => { const r = window.asrView3d.renderer, gl = r.getContext();
        const w = gl.drawingBufferWidth, h = gl.drawingBufferHeight, px = new Uint8Array(4 * w * h);
        gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, px);
        const bg = r.getClearColor().toArray().map((c) => Math.round(255 * c));
        let n = 0;
        for (let k = 0; k < px.length; k += 4) {
          const d = [0, 1, 2].map((c) => Math.abs(px[k + c] - bg[c]));
          if (d[0] + d[1] + d[2] > 30) n++;
        }
        return n / (w * h); }""")


def test_the_robot_is_drawn_large_with_its_ghost(page):
    settle(page)
    v = view(page)
    scene = get(page, "/api/scene")
    drawn = [g for g in scene["geoms"] if not g["ground"]]
    moving = [g for g in drawn if g["body"] != 0]  # ghosts of world-fixed geoms: not drawn
    assert v["n"] == scene["n_instances"] == 2 and v["drawn"] == len(drawn)
    assert v["solid"] == 2 * len(drawn) and v["ghost"] == 2 * len(moving) > 0
    assert max(v["share"]) > SHARE, v["share"]
    painted = painted_share(page)
    print(f"3-D view: share of panel {v['share']}, {100 * painted:.1f} % of pixels painted")
    assert painted > 0.03
    assert not page.js_errors, page.js_errors


FOLLOW_JS = """async (dx) => { const v = window.asrView3d, m = v.model;
    const t0 = v.controls.target.toArray(), e0 = v.camera.position.toArray();
    const poses = m.instances.map((inst) => { const full = [];
        m.drawn.forEach((gi, j) => { const e = inst.sets.solid[j].matrix.elements;
            full[gi] = [e[12], e[13], e[14], e[0], e[4], e[8], e[1], e[5], e[9], e[2], e[6], e[10]];
        });
        return full; });
    for (let k = 1; k <= 40; k++) {  // the robot moves dx (m) along x over 40 frames
        const moved = poses.map((i) => i.map((p) => p && [p[0] + dx * k / 40, ...p.slice(1)]));
        v.poses('main', 'solid', moved);
        await new Promise((r) => requestAnimationFrame(r));
    }
    for (let k = 0; k < 60; k++) { v.dirty = true; v.frame(); }
    return {user: v.userCamera, t0, t1: v.controls.target.toArray(), e0,
            e1: v.camera.position.toArray()}; }"""


def test_a_turned_view_stays_and_follows_the_robot_until_reset(page):
    """The user turns the view (a mouse drag): it stays theirs, but when the robot moves 1 m
    away (poses moved in the page, the simulation paused) target and eye follow it by the same
    shift; "reset view" frames the robot again."""
    post(page, "/api/control", {"paused": True})
    try:
        box = page.locator("#robot3d canvas").bounding_box()
        page.mouse.move(box["x"] + 300, box["y"] + 150)
        page.mouse.down()
        page.mouse.move(box["x"] + 380, box["y"] + 130, steps=5)
        page.mouse.up()
        got = page.evaluate(FOLLOW_JS, 1.0)
        assert got["user"] is True
        shift = np.subtract(got["t1"], got["t0"])
        assert 0.6 < shift[0] <= 1.0 and abs(shift[1]) < 1e-9 and abs(shift[2]) < 1e-9, shift
        np.testing.assert_allclose(np.subtract(got["e1"], got["e0"]), shift, atol=1e-9)
        page.click("#robot3d-reset")
        page.wait_for_function("() => !window.asrView3d.userCamera", timeout=DEADLINE_MS)
        page.evaluate("() => { const v = window.asrView3d; v.dirty = true; v.frame(); }")
        assert max(view(page)["share"]) > SHARE
    finally:
        post(page, "/api/control", {"paused": False})


def test_compare_of_four_stands_side_by_side_labelled(page):
    presets = [0.1, 0.3, 0.5, 0.8]
    post(page, "/api/compare", {"presets": presets})
    page.wait_for_function(
        "() => window.asrView3d.model && window.asrView3d.model.n === 4", timeout=DEADLINE_MS
    )
    settle(page)
    v = view(page)
    assert v["labels"] == [f"preset {p:g}" for p in presets]
    lo, hi = np.array([b[0] for b in v["boxes"]]), np.array([b[1] for b in v["boxes"]])
    a = v["axis"]
    order = np.argsort(lo[:, a])
    assert list(order) == [0, 1, 2, 3]  # instance i at the i-th place along the layout axis
    gaps = lo[order[1:], a] - hi[order[:-1], a]
    assert np.all(gaps > 0), gaps  # world bounds disjoint along the layout axis
    assert max(v["share"]) > SHARE, v["share"]
    post(page, "/api/compare", {"presets": []})


def test_interaction_shows_the_ur10_and_the_measured_force(page):
    from tests.support.dashboard_server import wait_for

    post(page, "/api/interaction/start", {"variant": "rigid", "law": "direct_force"})
    try:
        settle(page, "interaction")
        v = view(page)
        assert {"plate", "link1", "tool"} <= set(v["names"]) and max(v["share"]) > SHARE
        wait_for(lambda: get(page, "/api/interaction/status")["fsm"] == "static", 30, "static")
        post(page, "/api/interaction/reference", {"force": [0, 0, 20]})
        # pressing: the measured force on the tool points up, out of the plate
        wait_for(
            lambda: (get(page, "/api/interaction/status")["f_e"] or [0, 0, 0])[2] > 10,
            30,
            "the tool pressing on the plate",
        )
        page.wait_for_function(
            """() => { const v = window.asrView3d, f = v.force && v.force.f;
                       return v.arrow.visible && f && f[2] > 10; }""",
            timeout=DEADLINE_MS,
        )
        v = view(page)
        f = np.array(v["force"], float)  # f_e of the interaction message drawn
        shaft = np.array(v["shaft"])
        assert np.dot(shaft, f) / np.linalg.norm(shaft) / np.linalg.norm(f) > 0.9999
        assert np.linalg.norm(shaft) == pytest.approx(min(0.5, 0.01 * np.linalg.norm(f)), 1e-3)
        # the readout's value, without its source and age (and a "stale, ..." mark on a host
        # busy enough to hold the messages back over a second)
        value = v["info"][v["info"].index("F/T: ") :].split(" (ur10 interaction session")[0]
        shown = [float(x) for x in re.findall(r"-?\d+\.\d", value)]  # |f|, fx, fy, fz
        assert value.startswith("F/T: |f| = ") and len(shown) == 4, v["info"]
        np.testing.assert_allclose(shown, [np.linalg.norm(f), *f], atol=0.051)
    finally:
        post(page, "/api/interaction/stop", {})
    settle(page)  # back to the main robot
    assert view(page)["arrow"] is False


def test_the_watched_tasks_target_is_drawn_at_the_target_angles(page):
    from tests.support.dashboard_server import wait_for

    # the training the page fixture started
    wait_for(lambda: get(page, "/api/rl/status").get("can_watch"), 120, "a policy to watch")
    post(page, "/api/rl/watch", {})
    page.wait_for_function(
        "() => window.asrView3d.model && window.asrView3d.model.shown('target') > 0",
        timeout=DEADLINE_MS,
    )
    settle(page)
    got = page.evaluate("""() => { const m = window.asrView3d.model;  // one message's target
        return {target: window.asrRobot3d.state.lastTarget,
                poses: m.instances[0].sets.target.map((x) => x.matrix.elements.slice())}; }""")
    state = get(page, "/api/state")
    sim = asr.Sim(state["robot"], 1, variant=state["variant"])
    expected = sim.geom_poses_at(np.array(got["target"]), 0)
    geoms = get(page, "/api/scene")["geoms"]
    drawn = [gi for gi, g in enumerate(geoms) if not g["ground"]]  # the page's meshes, in order
    checked = 0
    for k, gi in enumerate(drawn):
        if geoms[gi]["body"] == 0:  # fixed to the world: no target copy
            continue
        e = np.array(got["poses"][k]).reshape(4, 4).T  # three's elements are column-major
        np.testing.assert_allclose(e[:3, 3], expected[gi, :3], atol=2e-4)
        np.testing.assert_allclose(e[:3, :3].ravel(), expected[gi, 3:], atol=2e-4)
        checked += 1
    assert checked > 0
    post(page, "/api/rl/manual", {})


def test_without_threejs_the_panel_says_what_to_install(page):
    page.route("**/static/vendor/three/**", lambda route: route.fulfill(status=404, body="gone"))
    try:
        page.reload()
        page.wait_for_function(
            "() => (document.getElementById('robot3d').textContent || '').includes('libjs-three')",
            timeout=DEADLINE_MS,
        )
        text = page.text_content("#robot3d")
        assert "3-D view needs three.js: apt-get install libjs-three" in text
        # the rest of the page goes on: the stream's frames keep arriving
        n = int(page.get_attribute("#status", "data-frames") or 0)
        page.wait_for_function(
            f"() => +document.getElementById('status').dataset.frames > {n + 5}",
            timeout=DEADLINE_MS,
        )
    finally:
        page.unroute("**/static/vendor/three/**")
