"""GET /api/plots (dashboard/plot_specs.py, PROTOCOL.md "Plots"): the one plot specification the
server's figure and the page's plots are built from; it passes the access checks of every route."""

import pytest

from tests.conftest import require

require("fastapi")
require("httpx")
from asr_dashboard import figure as fig  # noqa: E402
from asr_dashboard import plot_specs  # noqa: E402
from tests.support.dashboard_server import app_client  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with app_client() as c:
        yield c


def test_plots_endpoint_serves_the_specification(client):
    r = client.get("/api/plots")
    assert r.status_code == 200, r.text
    spec = r.json()
    assert spec == plot_specs.spec()
    assert [p["div"] for p in spec["plots"]] == [
        "plot-q",
        "plot-defl",
        "plot-tau",
        "plot-stiffness",
        "plot-motors",
    ]
    assert {p["plot"]: p["unit"] for p in spec["plots"]}["stiffness"] == "N m/rad"
    series = {s["field"]: s for s in spec["series"]}
    assert [s["field"] for s in spec["series"]] == list(fig.FRAME_FIELDS)  # trace order
    assert series["eq"]["dash"] == "dash" and series["th2"]["dash"] == "dot"
    assert series["q"]["dash"] == "solid" and series["th1"]["plot"] == "motors"
    plots = {p["plot"] for p in spec["plots"]}
    assert all(s["plot"] in plots for s in spec["series"])


def test_figure_traces_follow_the_specification(client):
    """The `figure` message's traces (and the exported figure's axes) use the served styles."""
    series = {s["field"]: s for s in client.get("/api/plots").json()["series"]}
    units = {p["div"]: p["unit"] for p in client.get("/api/plots").json()["plots"]}
    with client.websocket_connect("ws://127.0.0.1/ws/stream") as ws:
        msg = ws.receive_json()
        while msg["type"] != "figure":
            msg = ws.receive_json()
    for trace in msg["figure"]["data"]:
        s = series[trace["meta"]["field"]]
        assert trace["line"]["dash"] == s["dash"]
        assert trace["meta"]["plot"] == plot_specs.div(s["plot"])
        assert trace["meta"]["unit"] == units[trace["meta"]["plot"]]
        assert trace["name"].endswith(s["name"])


def test_plots_endpoint_keeps_the_access_checks(client):
    r = client.get("/api/plots", headers={"host": "evil.example:8000"})
    assert r.status_code == 403 and "Host header" in r.text
    assert client.post("/api/plots").status_code == 405  # a read only


def test_the_page_has_a_place_for_every_specified_plot():
    """index.html lays the plots out (the 3-D view sits between them); the specification says
    which there are: each specified div is in the page, once, and the page has no other
    live-stream plot."""
    import re
    from pathlib import Path

    import asr_dashboard

    html = (Path(asr_dashboard.__file__).parent / "static" / "index.html").read_text(
        encoding="utf-8"
    )
    divs = [p["div"] for p in plot_specs.spec()["plots"]]
    assert all(html.count(f'id="{d}"') == 1 for d in divs), divs
    # the plain plot divs (the panels' plots, ILC, RL, datasheet, ..., carry more attributes)
    assert re.findall(r'<div id="(plot-[a-z]+)" class="plot"></div>', html) == divs
