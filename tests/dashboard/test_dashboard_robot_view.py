"""The dashboard's 3-D robot view (robot3d: dashboard/scene.py, dashboard/routes/scene.py,
static/robot3d.js with three.js) and its moving first view, in Debian's Chromium driven by
Playwright against a real server with the default settings (qbmove_arm_2dof, vertical): the
view draws something and the robot moves in it, the ghost (springs relaxed) is drawn, GET
/api/scene answers the robot's geoms behind the same access checks as the other reads, and the
first view's two instances (soft, stiff) move and differ within 3 s."""

import json
import struct
import urllib.request
import zlib

import mujoco
import numpy as np
import pytest
from fastapi.testclient import TestClient

import asr
from asr.engines import mujoco_scene
from asr_dashboard import scene
from asr_dashboard.app import create_app
from asr_dashboard.references import preset_spec
from asr_dashboard.settings import Settings
from tests.conftest import require

TOKEN = "robot3d-token-0123456789"


@pytest.fixture(scope="module")
def page():
    from tests.support.dashboard_server import chromium_page

    # software WebGL (SwiftShader) for the three.js canvas in a headless browser
    with chromium_page(("--use-angle=swiftshader", "--enable-unsafe-swiftshader")) as pg:
        yield pg


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def wait_drawn(pg, frames, timeout_ms=60000):
    pg.wait_for_function(
        f"() => +(document.getElementById('robot3d').dataset.frames || 0) >= {frames}",
        timeout=timeout_ms,
    )


def pixels(pg):
    """The 3-D view's pixels (H, W, 3) uint8, from a screenshot of its element."""
    return decode_png(pg.locator("#robot3d").screenshot())


def decode_png(data):
    """(H, W, 3) uint8 of an 8-bit RGB / RGBA non-interlaced PNG (what Chromium writes): the
    chunks' zlib stream, each row unfiltered by its filter type (PNG spec sec. 9)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * bpp)
    out = np.zeros((h, w * bpp), np.int32)
    prev = np.zeros(w * bpp, np.int32)
    for r in range(h):
        kind, line = raw[r, 0], raw[r, 1:].astype(np.int32)
        if kind in (0, 2):
            row = (line + (prev if kind == 2 else 0)) & 255
        else:  # sub, average, Paeth: left to right
            row = np.zeros_like(line)
            for x in range(w * bpp):
                a = row[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + b) // 2
                else:
                    p_ = a + b - c
                    pa, pb, pc = abs(p_ - a), abs(p_ - b), abs(p_ - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                row[x] = (line[x] + pred) & 255
        out[r], prev = row, row
    return out.reshape(h, w, bpp)[..., :3].astype(np.uint8)


@pytest.mark.slow
@pytest.mark.browser
def test_first_view_moves_and_its_two_instances_differ(page):
    """Within 3 s (of simulated time, however long a busy host takes) of opening the page the
    plotted link angles of both instances vary (a sine reference, not a held one) and the soft
    instance's differ from the stiff one's."""
    from tests.support.dashboard_server import wait_plotted

    state = get_json(page.base_url + "/api/state")
    spec = preset_spec(state["joints"][0]["model"])
    assert state["compare"] == [spec["soft"], spec["stiff"]] and state["n_instances"] == 2
    assert {r["kind"] for r in state["reference"].values()} == {"sine"}
    wait_plotted(page, 3.0, "plot-q")
    traces = page.evaluate("""() => document.getElementById('plot-q').data
        .filter(t => t.meta && t.meta.field === 'q')
        .map(t => ({i: t.meta.instance, j: t.meta.joint, y: Array.from(t.y || [])}))""")
    by = {(t["i"], t["j"]): np.array([v for v in t["y"] if v is not None]) for t in traces}
    assert {i for i, _ in by} == {0, 1}
    for key, y in by.items():
        assert y.size > 20, key
        assert np.ptp(y) > 0.05, (key, np.ptp(y))  # rad: moving, not a flat line
    for j in {j for _, j in by}:
        n = min(by[0, j].size, by[1, j].size)
        assert np.max(np.abs(by[0, j][-n:] - by[1, j][-n:])) > 1e-3, j
    assert not page.js_errors, page.js_errors


@pytest.mark.slow
@pytest.mark.browser
def test_the_3d_view_draws_the_robot_and_it_moves(page):
    """The three.js view (window.asrView3d): a solid and a ghost mesh per drawn geom and
    instance, the ghosts semi-transparent, one canvas; its pixels are not blank and change as
    the robot moves."""
    wait_drawn(page, 5)
    info = page.evaluate("""() => {
        const m = window.asrView3d.model, el = document.getElementById('robot3d');
        const meshes = (kind) => m.instances.flatMap((i) => i.sets[kind]).filter((x) => x.visible);
        return {solid: meshes('solid').length,
                ghosts: meshes('ghost').map((x) => x.material.opacity),
                canvas: el.querySelectorAll('canvas').length}; }""")
    geoms = get_json(page.base_url + "/api/scene")["geoms"]
    drawn = [g for g in geoms if not g["ground"]]
    moving = [g for g in drawn if g["body"] != 0]  # a world-fixed geom has no ghost
    assert info["solid"] == 2 * len(drawn) and info["canvas"] == 1
    assert len(info["ghosts"]) == 2 * len(moving) > 0 and set(info["ghosts"]) == {0.25}
    first = pixels(page)
    page.wait_for_timeout(1000)
    wait_drawn(page, int(page.get_attribute("#robot3d", "data-frames")) + 3)
    second = pixels(page)
    assert first.shape == second.shape
    colours = np.unique(first.reshape(-1, 3) // 16, axis=0)
    assert first.std() > 5 and len(colours) > 8, (first.std(), len(colours))  # not blank
    moved = np.any(np.abs(first.astype(int) - second.astype(int)) > 24, axis=2)
    print(
        f"3-D view: {first.shape[1]}x{first.shape[0]} px, {len(colours)} colours, "
        f"{moved.sum()} px changed in 1 s"
    )
    assert moved.sum() > 50
    assert not page.js_errors, page.js_errors


@pytest.mark.browser
def test_frames_carry_poses_that_match_mujoco(page):
    """A frame's robot3d: (instances, geoms, 12) poses whose rotations are rotations, a fixed
    geom where MuJoCo's forward kinematics puts it, and a ghost apart from the robot by the
    spring deflection (nonzero under gravity)."""
    websockets = require("websockets.sync.client")
    url = page.base_url.replace("http://", "ws://") + "/ws/stream"
    with websockets.connect(url, max_size=None) as ws:
        msg = None
        while msg is None or msg.get("type") != "extend" or "ghost" not in msg["robot3d"]:
            msg = json.loads(ws.recv(timeout=10))
    robot = asr.load_robot("qbmove_arm_2dof")
    m = robot.mj_model()
    d = mujoco.MjData(m)
    geoms = mujoco_scene.visible_geoms(m)
    poses = np.array(msg["robot3d"]["poses"])
    ghost = np.array(msg["robot3d"]["ghost"])
    assert poses.shape == ghost.shape == (2, len(geoms), 12)
    for R in poses[..., 3:].reshape(-1, 3, 3):
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-4)  # rotations, rounded 1e-5
    mujoco.mj_forward(m, d)
    stand = names_of(m, geoms).index("stand")  # welded to the world: same in every pose
    np.testing.assert_allclose(
        poses[:, stand, :3], np.broadcast_to(d.geom_xpos[geoms[stand]], (2, 3)), atol=2e-5
    )
    assert np.max(np.abs(ghost - poses)) > 1e-4


def names_of(m, geoms):
    return [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in geoms]


@pytest.mark.slow
def test_scene_route_answers_the_robots_geoms_behind_the_access_checks():
    robot = asr.load_robot("qbmove_arm_5dof")
    m = robot.mj_model()
    names = names_of(m, mujoco_scene.visible_geoms(m))
    settings = Settings(robot="qbmove_arm_5dof", token=TOKEN)
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8000") as c:
        assert c.get("/api/scene").status_code == 401  # no token
        assert (
            c.get(
                "/api/scene",
                headers={"host": "evil.example:8000", "authorization": f"token {TOKEN}"},
            ).status_code
            == 403
        )
        auth = {"authorization": f"token {TOKEN}"}
        s = c.get("/api/scene", headers=auth).json()
        assert s["names"] == names and "pusher" in names  # the contact box is a geom
        assert s["n_instances"] == 2 and len(s["geoms"]) == len(names)
        assert len(s["labels"]) == 2 and all(x.startswith("preset ") for x in s["labels"])
        assert [g["name"] for g in s["geoms"] if g["ground"]] == ["floor"]
        assert c.post("/api/scene", headers=auth).status_code == 405  # a read only
        # a robot switch: a new scene id, the new robot's geoms
        c.post("/api/robot", json={"robot": "pendulum_1dof"}, headers=auth)
        s2 = c.get("/api/scene", headers=auth).json()
        assert s2["scene_id"] != s["scene_id"] and "pusher" not in s2["names"]


def test_the_ghost_is_where_the_springs_hold_no_torque():
    """SceneStream's ghost angles zero the spring torque (asr.compliance) of each instance."""
    sim = asr.Sim(asr.load_robot("qbmove_arm_2dof"), 2)
    refs = np.zeros((2, 200, 2, 2))
    refs[..., 0] = 0.3
    refs[0, ..., 1], refs[1, ..., 1] = 0.2, 0.6
    sim.rollout(200, refs, record=())
    stream = scene.SceneStream(sim, 8, 7)
    frame = stream.frame()
    assert frame["scene_id"] == 7 and len(frame["robot3d"]["ghost"]) == 2
    assert "ghost" not in stream.frame()["robot3d"]  # every 3rd frame only
    b = sim.batch
    for i in range(2):
        q = scene.relaxed_angles(sim, i)
        for j in range(2):
            params = {p.name: float(b.get_param(j, p.name)[i]) for p in b.specs[j].params}
            c = asr.compliance(
                "qbmove_advanced", q[j], b.field("th1")[i, j], b.field("th2")[i, j], **params
            )
            assert abs(float(c.tau_link)) < 1e-8
