"""The dashboard's ROS package exports in either ROS version (dashboard/PROTOCOL.md,
POST /api/export.ros.zip?ros=1|2 and /api/rl/policy.ros.zip?ros=1|2): ROS 2 (the default) comes
back as an ament_python package, ROS 1 as a catkin package, each download named after its
version; any other `ros` answers 422 naming the parameter, the value and the valid values, on
both routes and in the export child; the page offers the choice beside each export button.
The RL route's packages themselves are checked after a real training in test_dashboard_rl.py."""

import html.parser
import json
import os

import pytest

from tests.conftest import require
from tests.support.dashboard_exports import assert_ros_package  # noqa: E402
from tests.support.paths import ROOT  # noqa: E402

ROUTES = ("/api/export.ros.zip", "/api/rl/policy.ros.zip")
STATIC = os.path.join(str(ROOT), "dashboard", "static")


@pytest.fixture(scope="module")
def client():
    require("fastapi")
    require("httpx")
    from fastapi.testclient import TestClient

    from asr_dashboard.app import create_app
    from asr_dashboard.settings import Settings

    with TestClient(create_app(Settings()), base_url="http://127.0.0.1") as c:
        yield c


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("value", ["3", "0", "x", "", "2.0", " 2"])
def test_an_unknown_ros_version_is_refused(client, route, value):
    """422 before any work (the RL route too, with no checkpoint yet): the detail names the
    parameter (query.ros), the value sent and the valid values."""
    r = client.post(route, params={"ros": value})
    assert r.status_code == 422, r.text
    (err,) = r.json()["detail"]
    assert err["loc"] == ["query", "ros"], err
    assert err["input"] == value, err
    assert "'1' or '2'" in err["msg"], err


def test_the_rl_route_takes_either_version(client):
    """A valid version passes the check: without a checkpoint the RL route answers 404 (not
    422), for each version and the default."""
    for params in ({"ros": "1"}, {"ros": "2"}, {}):
        r = client.post(ROUTES[1], params=params)
        assert r.status_code == 404, (params, r.text)


def test_the_workspace_exports_as_either_version(client):
    hold = {"kind": "hold", "amplitude": 0.0, "offset": 0.0}
    ws = client.get("/api/workspace").json()
    refs = {j: hold for j in ws["reference"]}
    r = client.post("/api/control", json={"reference": refs})
    assert r.status_code == 200, r.text
    pkg = f"asr_{ws['robot']}_policy"
    for params, ros in (({"ros": "1"}, 1), ({"ros": "2"}, 2), ({}, 2)):
        r = client.post(ROUTES[0], params=params)
        assert r.status_code == 200, (params, r.text[:500])
        assert r.headers["content-type"] == "application/zip"
        want = f'attachment; filename="{pkg}_ros{ros}.zip"'
        assert r.headers["content-disposition"] == want
        assert_ros_package(r.content, pkg, ros)
    # a workspace the package cannot express is refused in both versions, naming the reason
    sine = {"kind": "sine", "amplitude": 0.1, "frequency": 1.0}
    client.post("/api/control", json={"reference": {next(iter(refs)): sine}})
    for ros in ("1", "2"):
        r = client.post(ROUTES[0], params={"ros": ros})
        assert r.status_code == 422 and "varies in time" in r.text, (ros, r.text)


def test_the_export_child_checks_the_version(tmp_path, capsys):
    """The child (python -m asr_dashboard.exports) refuses another version itself, before any
    work: one JSON line naming the parameter, exit 1, nothing written."""
    from asr_dashboard import exports

    out = tmp_path / "out.zip"
    assert exports.main(["ros-zip", str(out), str(tmp_path), "qbmove_arm_2dof", "", "3"]) == 1
    answer = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert answer["status"] == 422 and answer["detail"] == "ros: got '3', valid: 1 or 2"
    assert not out.exists()


class _Controls(html.parser.HTMLParser):
    """The ids of the page's elements and, per <select>, its options' values (selected
    ones marked with a leading '*')."""

    def __init__(self):
        super().__init__()
        self.ids, self.options, self._select = [], {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "select":
            self._select = a.get("id")
            self.options[self._select] = []
        elif tag == "option" and self._select:
            self.options[self._select].append(("*" if "selected" in a else "") + a["value"])

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None


@pytest.mark.parametrize(
    "button, select, script, route",
    [
        ("btn-export-ros", "export-ros-version", "workspace.js", ROUTES[0]),
        ("btn-rl-ros", "rl-ros-version", "rl.js", ROUTES[1]),
    ],
)
def test_the_page_offers_the_version_beside_each_button(button, select, script, route):
    """Each ROS export button has a select right after it: ROS 2 (selected) and ROS 1, whose
    value the button's script sends as ?ros=."""
    page = _Controls()
    with open(os.path.join(STATIC, "index.html")) as f:
        page.feed(f.read())
    assert page.ids[page.ids.index(button) + 1] == select, page.ids
    assert page.options[select] == ["*2", "1"]
    with open(os.path.join(STATIC, script)) as f:
        js = f.read()
    assert f'postDownload(`{route}?ros=${{$("{select}").value}}`' in js
