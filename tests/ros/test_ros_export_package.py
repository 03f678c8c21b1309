"""asr.ros.export: policies (ILC time tables, CEM linear policies, dashboard workspaces) exported as
catkin ROS 1 packages whose rospy node speaks the toolbox interface [Mengacci2021]. The package
is checked with catkin_pkg (Debian's python3-catkin-pkg, the parser catkin itself uses); the
node is run with the system's /usr/bin/python3 (as a ROS user runs it, no asr on its path) on a
real roscore, and its commands are compared with the policy's outputs computed by asr.

This file: the exported package and the dashboard's export route."""

import ast
import io
import os
import zipfile

import numpy as np
import pytest

from asr.ros.export import FORMAT, export_policy, export_zip, policy_data
from tests.conftest import require, require_ros1
from tests.support.ros_export import fake_ilc, linear_W, workspace

pytestmark = pytest.mark.ros

NODE_IMPORTS = {"json", "math", "os", "rospy", "sensor_msgs.msg", "std_msgs.msg"}


CASES = {
    "table": lambda: (fake_ilc(), "qbmove_arm_2dof", {}),
    "linear": lambda: ({"mean": linear_W(), "curve": [0.0]}, "pendulum_1dof", {"target": [0.3]}),
    "constant": lambda: (workspace(), "qbmove_arm_2dof", {}),
}


# ---------------------------------------------------------------- the package


@pytest.mark.parametrize("kind", sorted(CASES))
def test_package_validates(tmp_path, kind):
    parse_package = require_ros1("catkin_pkg.package").parse_package
    obj, robot, kw = CASES[kind]()
    old_umask = os.umask(0o077)  # a strict umask: the package is world-readable all the same
    try:
        path = export_policy(obj, robot, tmp_path, namespace="arm", **kw)
    finally:
        os.umask(old_umask)
    assert package_modes(path) == {
        ".": 0o755,
        "CMakeLists.txt": 0o644,
        "README.md": 0o644,
        "launch": 0o755,
        "launch/policy_node.launch": 0o644,
        "package.xml": 0o644,
        "scripts": 0o755,
        "scripts/policy_node.json": 0o644,
        "scripts/policy_node.py": 0o755,
    }
    assert os.path.basename(path) == f"asr_{robot}_policy"
    pkg = parse_package(os.path.join(path, "package.xml"))  # raises on format violations
    pkg.validate()
    assert pkg.package_format == 2 and pkg.name == f"asr_{robot}_policy"
    # a Python-only node: catkin alone builds it; rospy and the messages are needed to run it
    assert [d.name for d in pkg.buildtool_depends] == ["catkin"] and pkg.build_depends == []
    assert [d.name for d in pkg.exec_depends] == ["rospy", "std_msgs", "sensor_msgs"]
    cmake = open(os.path.join(path, "CMakeLists.txt")).read()
    assert cmake.startswith("cmake_minimum_required(VERSION 3.5)\n")  # CMake 4 refuses < 3.5
    assert "find_package(catkin REQUIRED)\n" in cmake
    assert "catkin_install_python(PROGRAMS scripts/policy_node.py" in cmake
    import xml.etree.ElementTree as ET

    launch = ET.parse(os.path.join(path, "launch", "policy_node.launch")).getroot()
    args = {a.get("name"): a.get("default") for a in launch.findall("arg")}
    assert args == {"node_name": "policy_node", "ns": "arm"}
    node = launch.find("node")
    assert (node.get("pkg"), node.get("type")) == (pkg.name, "policy_node.py")
    assert (node.get("name"), node.get("ns")) == ("$(arg node_name)", "$(arg ns)")
    script = os.path.join(path, "scripts", "policy_node.py")
    assert os.access(script, os.X_OK)
    src = open(script).read()
    assert src.startswith("#!/usr/bin/env python3\n")
    imported = set()
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, ast.Import):
            imported |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            imported.add(n.module)
    assert imported <= NODE_IMPORTS, imported - NODE_IMPORTS
    import json

    data = json.load(open(os.path.join(path, "scripts", "policy_node.json")))
    assert data["format"] == FORMAT and data["kind"] == kind and data["namespace"] == "arm"


def test_exported_values(tmp_path):
    res = fake_ilc()
    d = policy_data(res, "qbmove_arm_2dof")
    assert np.array_equal(np.array(d["values_1"]), res.input[0])  # JSON floats exact
    assert d["ref_2"] == res.presets[0].tolist() and d["start_s"] == 0.05
    w = policy_data(workspace(), "qbmove_arm_2dof")
    assert w["ref_1"] == [0.25, 0.1 - 0.4] and w["ref_2"] == [0.35, 0.5]
    assert w["gains"] == {"joint1": {"kp": 150.0}}
    # a second export replaces the package whole
    export_policy(res, "qbmove_arm_2dof", tmp_path)
    path = export_policy(workspace(), "qbmove_arm_2dof", tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["asr_qbmove_arm_2dof_policy"]
    assert "constant" in open(os.path.join(path, "scripts", "policy_node.json")).read()


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (
            lambda p: export_policy(fake_ilc(), "qbmove_arm_2dof", p, package="Bad-Name"),
            ValueError,
            "package: got 'Bad-Name'",
        ),
        (
            lambda p: export_policy(fake_ilc(), "qbmove_arm_2dof", p, instance=1),
            ValueError,
            "instance: got 1, valid range [0, 0]",
        ),
        (lambda p: export_policy(fake_ilc(), "pendulum_1dof", p), ValueError, "learned on"),
        (
            lambda p: export_policy(np.zeros((2, 4)), "pendulum_1dof", p),
            ValueError,
            "expected (act_dim, obs_dim + 1) = (2, 5)",
        ),
        (
            lambda p: export_policy(
                {"mean": linear_W(), "curve": []}, "pendulum_1dof", p, target=[0.1, 0.2]
            ),
            ValueError,
            "target: expected 1 values",
        ),
        (lambda p: export_policy("policy.npz", "pendulum_1dof", p), TypeError, "obj: expected"),
        (
            lambda p: export_policy(
                dict(
                    workspace(),
                    reference={"joint1": {"kind": "sine", "offset": 0.0, "amplitude": 0.2}},
                ),
                "qbmove_arm_2dof",
                p,
            ),
            ValueError,
            "kind 'sine' varies in time",
        ),
        (
            lambda p: export_policy(dict(workspace(), mode={"joint1": 5}), "qbmove_arm_2dof", p),
            ValueError,
            "'joint1' in mode 5",
        ),
        (
            lambda p: export_policy(fake_ilc(), "qbmove_arm_2dof", p, namespace="a b"),
            ValueError,
            "namespace: got 'a b'",
        ),
        (lambda p: export_policy(fake_ilc(), "../etc", p), ValueError, "robot: got '../etc'"),
    ],
)
def test_bad_input(tmp_path, call, exc, words):
    with pytest.raises(exc) as err:
        call(tmp_path)
    assert words in str(err.value)
    assert not os.listdir(tmp_path)  # nothing half-written


# ---------------------------------------------------------------- the dashboard's export


def test_dashboard_export_route():
    require("fastapi")
    require("httpx")
    from fastapi.testclient import TestClient

    from asr_dashboard.app import create_app
    from asr_dashboard.settings import Settings

    with TestClient(create_app(Settings()), base_url="http://127.0.0.1") as c:
        # the first view swings every joint (a sine: a trajectory, refused by this export, which
        # says to export an ILC result instead); held references export as a constant policy
        r = c.post("/api/export.ros.zip")
        assert r.status_code == 422 and "varies in time" in r.json()["detail"]
        hold = {"kind": "hold", "amplitude": 0.0, "offset": 0.0}
        r = c.post("/api/control", json={"reference": {"joint1": hold, "joint2": hold}})
        assert r.status_code == 200, r.text
        ws = c.get("/api/workspace").json()
        pkg = f"asr_{ws['robot']}_policy"
        # ROS 2 (ament_python) by default, ROS 1 (catkin) on ?ros=1: each its own files
        for query, ros, data_file in (
            ("", 2, f"{pkg}/policy_node.json"),
            ("?ros=1", 1, "scripts/policy_node.json"),
        ):
            r = c.post(f"/api/export.ros.zip{query}")
            assert r.status_code == 200, r.text
            assert f'filename="{pkg}_ros{ros}.zip"' in r.headers["content-disposition"]
            z = zipfile.ZipFile(io.BytesIO(r.content))
            assert f"{pkg}/package.xml" in z.namelist()
            import json

            data = json.loads(z.read(f"{pkg}/{data_file}"))
            assert data["kind"] == "constant" and data["ref_2"] == [
                ws["preset"][j] for j in data["joints"]
            ]
            modes = {i.external_attr >> 16 & 0o777 for i in z.infolist()}
            assert modes == ({0o644, 0o755} if ros == 1 else {0o644})
        r = c.post("/api/export.ros.zip?ros=3")
        assert r.status_code == 422 and "ros" in r.text
        # refused (or answered) exactly as the other exports: a page under a foreign name
        # (DNS rebinding) or from a foreign Origin gets 403 (an export is a POST: work only the
        # dashboard's own page may start, dashboard/security.py)
        for headers in (
            {"host": "rebind.example:8000"},
            {"origin": "http://evil.example"},
            {"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:8000"},
        ):
            want = c.post("/api/export.npz", headers=headers).status_code
            got = c.post("/api/export.ros.zip", headers=headers)
            assert got.status_code == want, (headers, got.text)
        assert (
            c.post("/api/export.ros.zip", headers={"host": "rebind.example:8000"}).status_code
            == 403
        )
        # a workspace the interface cannot express answers 422 naming the reason
        c.post(
            "/api/control",
            json={"reference": {"joint1": {"kind": "sine", "amplitude": 0.1, "frequency": 1.0}}},
        )
        r = c.post("/api/export.ros.zip")
        assert r.status_code == 422 and "varies in time" in r.text


def package_modes(path):
    """{path relative to the package folder: permission bits} of every file and folder."""
    modes = {}
    for root, dirs, files in os.walk(path):
        for n in [".", *dirs, *files]:
            full = os.path.normpath(os.path.join(root, n))
            modes[os.path.relpath(full, path)] = os.stat(full).st_mode & 0o777
    return modes


@pytest.mark.parametrize("ros", [1, 2])
def test_export_zip_roundtrip(tmp_path, ros):
    old_umask = os.umask(0o077)
    try:
        data = export_zip(fake_ilc(), "qbmove_arm_2dof", package="my_policy", ros=ros)
    finally:
        os.umask(old_umask)
    z = zipfile.ZipFile(io.BytesIO(data))
    launch = "launch/policy_node.launch" + (".py" if ros == 2 else "")
    assert f"my_policy/{launch}" in z.namelist()
    # the modes the zip carries (what unzip applies) are the package's own: world-readable
    path = export_policy(fake_ilc(), "qbmove_arm_2dof", tmp_path, package="my_policy", ros=ros)
    want = {k: v for k, v in package_modes(path).items() if not os.path.isdir(f"{path}/{k}")}
    got = {i.filename[len("my_policy/") :]: i.external_attr >> 16 & 0o777 for i in z.infolist()}
    assert got == want and set(got.values()) <= {0o644, 0o755}
    assert (0o755 in got.values()) == (ros == 1)  # the ROS 1 script; ROS 2 installs its own
    with pytest.raises(ValueError, match="ros: got 3, valid: 1 .catkin. or 2 .ament_python."):
        export_zip(fake_ilc(), "qbmove_arm_2dof", ros=3)
