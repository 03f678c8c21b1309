"""asr.ros.urdf: robots exported as URDF (+ xacro, toolbox Plugin Manager YAML) and read back.

Independent readers: Debian's check_urdf (urdfdom) parses every exported file; MuJoCo's own URDF
importer loads it and its compiled masses, world-frame inertias, joint axes, anchors, ranges and
dynamics are compared with the original MJCF model's; the parameters read back are compared with
what an asr.Batch built from the robot holds (get_param)."""

import copy
import math
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest

import asr
from asr.robots.robot import robot_names
from asr.ros.environment import tool_env
from asr.ros.node_core import DEFAULT_NAMESPACE
from asr.ros.urdf import export_robot, import_robot, mat_rpy, rpy_mat
from asr.ros.urdf_tags import joint_params, param_tags, plugin_file
from tests.conftest import IN_CI, require_ros1
from tests.support.urdf import ALL_VARIANTS, EXPORTABLE, NOT_URDF, variants_of  # noqa: E402

pytestmark = pytest.mark.ros


def _check_urdf():
    exe = shutil.which("check_urdf", path="/usr/bin:/bin")
    if exe is None:
        if IN_CI:
            pytest.fail("check_urdf (Debian liburdfdom-tools) is missing in CI (make ros)")
        pytest.skip("check_urdf not installed (apt-get install liburdfdom-tools)")
    return exe


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{(robot, variant): (asr.Robot, paths)} of every exportable robot variant."""
    out = {}
    for name, variant in ALL_VARIANTS:
        robot = asr.load_robot(name, variant)
        out[name, variant] = (
            robot,
            export_robot(robot, out_dir=tmp_path_factory.mktemp(f"{name}_{variant}")),
        )
    return out


def test_the_expected_robots_are_exportable():
    assert set(EXPORTABLE) >= {"pendulum_1dof", "qbmove_3r", "qbmove_arm_2dof", "rrbot_sea"}
    assert set(NOT_URDF) <= set(robot_names())


@pytest.mark.parametrize("name,variant", ALL_VARIANTS)
def test_check_urdf_accepts_every_exportable_robot(exported, name, variant):
    robot, paths = exported[name, variant]
    r = subprocess.run(
        [_check_urdf(), paths["urdf"]], capture_output=True, text=True, env=tool_env(), timeout=30
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"robot name is: {name}" in r.stdout
    model = robot.mj_model()
    assert "Successfully Parsed XML" in r.stdout
    # one URDF link per MuJoCo body (the world included)
    assert r.stdout.count("child(") >= 1
    assert len(ET.parse(paths["urdf"]).getroot().findall("link")) == model.nbody


def _compare_with_mujoco(robot, urdf):
    """Largest differences between the MJCF model and MuJoCo's reading of the exported URDF:
    masses (relative), world-frame inertia tensors and centres of mass, joint axes and anchors,
    ranges, damping and frictionloss."""
    a = robot.mj_model()
    b = mujoco.MjModel.from_xml_path(urdf)
    da, db = mujoco.MjData(a), mujoco.MjData(b)
    mujoco.mj_forward(a, da)
    mujoco.mj_forward(b, db)
    assert b.nbody == a.nbody and b.njnt == a.njnt
    worst = dict(mass=0.0, inertia=0.0, com=0.0, axis=0.0, anchor=0.0)
    for k in range(1, a.nbody):
        kb = mujoco.mj_name2id(b, mujoco.mjtObj.mjOBJ_BODY, a.body(k).name)
        assert kb > 0, a.body(k).name
        worst["mass"] = max(worst["mass"], abs(b.body_mass[kb] / a.body_mass[k] - 1))
        Ia = da.ximat[k].reshape(3, 3) @ np.diag(a.body_inertia[k]) @ da.ximat[k].reshape(3, 3).T
        Ib = db.ximat[kb].reshape(3, 3) @ np.diag(b.body_inertia[kb]) @ db.ximat[kb].reshape(3, 3).T
        worst["inertia"] = max(worst["inertia"], np.abs(Ia - Ib).max())
        worst["com"] = max(worst["com"], np.abs(da.xipos[k] - db.xipos[kb]).max())
    for j in range(a.njnt):
        jb = mujoco.mj_name2id(b, mujoco.mjtObj.mjOBJ_JOINT, a.joint(j).name)
        assert jb >= 0, a.joint(j).name
        assert b.jnt_type[jb] == a.jnt_type[j]
        assert bool(b.jnt_limited[jb]) == bool(a.jnt_limited[j])
        if a.jnt_limited[j]:
            np.testing.assert_array_equal(b.jnt_range[jb], a.jnt_range[j])
        worst["axis"] = max(worst["axis"], np.abs(da.xaxis[j] - db.xaxis[jb]).max())
        worst["anchor"] = max(worst["anchor"], np.abs(da.xanchor[j] - db.xanchor[jb]).max())
        assert b.dof_damping[b.jnt_dofadr[jb]] == a.dof_damping[a.jnt_dofadr[j]]
        assert b.dof_frictionloss[b.jnt_dofadr[jb]] == a.dof_frictionloss[a.jnt_dofadr[j]]
    assert worst["mass"] <= 1e-12, worst
    assert worst["inertia"] <= 1e-9, worst
    assert worst["com"] <= 1e-12 and worst["axis"] <= 1e-12 and worst["anchor"] <= 1e-12, worst
    return worst


@pytest.mark.parametrize("name,variant", ALL_VARIANTS)
def test_mujoco_reads_the_same_mass_properties_and_joints(exported, name, variant):
    robot, paths = exported[name, variant]
    _compare_with_mujoco(robot, paths["urdf"])


@pytest.mark.parametrize("name,variant", ALL_VARIANTS)
def test_every_parameter_round_trips_exactly(exported, name, variant):
    robot, paths = exported[name, variant]
    back = import_robot(paths["urdf"])
    assert [(j.name, j.model, j.mode) for j in back] == [
        (j.name, j.model, j.mode) for j in robot.joints
    ]
    batch = asr.Batch([rj.joint() for rj in robot.joints], 1)
    for k, (orig, got) in enumerate(zip(robot.joints, back)):
        spec = asr.models()[orig.model]
        assert set(got.params) == {p.name for p in spec.all_params}
        for pname, value in got.params.items():
            assert value == batch.get_param(k, pname)[0], pname  # bit for bit, inf included
        for pname, value in orig.params.items():
            assert got.params[pname] == value
    # the plugin file of the model; the spring's values under the toolbox's tag names
    plugin = ET.parse(paths["urdf"]).getroot().find("gazebo/plugin")
    first = robot.joints[0]
    assert plugin.get("filename") == plugin_file(first.model)
    tags = {c.tag: c.text for c in plugin if isinstance(c.tag, str)}
    assert tags["joint"] == first.name and int(tags["operation_mode"]) == first.mode
    assert tags["pub_eltau"] == tags["pub_state"] == tags["sub_ext_tau"] == "true"
    assert tags["asr_model"] == first.model
    for pname, ptags in param_tags(first.model, first.mode).items():
        for tag in ptags:
            assert float(tags[tag]) == batch.get_param(0, pname)[0], (pname, tag)


def test_tags_follow_the_toolbox():
    tags = param_tags("qbmove_advanced", 6)
    assert tags["k1"] == ("spring_k1",) and tags["max_def"] == ("max_def",)
    assert tags["motor_J"] == ("mot_1_J", "mot_2_J") and tags["tau_max"][0] == "mot_1_tauMax"
    assert tags["kp"] == ("ctrl_1_P", "ctrl_2_P") and tags["kd"] == ("ctrl_1_D", "ctrl_2_D")
    assert tags["link_kp"] == ("asr_link_kp",) and tags["kc"] == ("asr_kc",)
    assert tags["friction"] == ("mot_1_tauFric", "mot_2_tauFric")
    # mode 1: the first controller is the link PID
    link_pid = param_tags("qbmove_advanced", 1)
    assert link_pid["link_kp"] == ("ctrl_1_P",) and link_pid["kp"] == ("ctrl_2_P",)
    sea = param_tags("sea", 1)
    assert sea["link_kd"] == ("ctrl_D",) and sea["kd"] == ("asr_kd",)
    assert param_tags("sea_damped", 5)["Kt"] == ("asr_Kt",)
    for model in asr.models():
        for mode in (1, 5):
            t = [tag for tags in param_tags(model, mode).values() for tag in tags]
            assert len(set(t)) == len(t) >= len(asr.models()[model].all_params)


def _expand_xacro(path):
    """The xacro file with each `<xacro:NAME/>` call replaced by its macro's body (this is all
    the xacro asr writes: parameterless macros, each called once)."""
    ns = "{http://www.ros.org/wiki/xacro}"
    root = ET.parse(path).getroot()
    macros = {m.get("name"): list(m) for m in root.findall(ns + "macro")}
    out = ET.Element(root.tag, root.attrib)
    calls = 0
    for child in root:
        if child.tag == ns + "macro":
            assert child.get("params") == ""
            continue
        if child.tag.startswith(ns):
            calls += 1
            out.extend(copy.deepcopy(macros[child.tag[len(ns) :]]))
        else:
            out.append(child)
    assert calls == len(macros)
    return out


def _canonical(el):
    return ET.tostring(el, encoding="unicode").replace("\n", "").replace(" ", "")


@pytest.mark.parametrize("name", ["qbmove_3r", "rrbot_sea"])
def test_xacro_expands_to_the_urdf_and_yaml_is_the_toolbox_plugin_manager(exported, name):
    variant = variants_of(name)[0]
    robot, paths = exported[name, variant]
    xacro = ET.parse(paths["xacro"]).getroot()
    assert len(xacro.findall("{http://www.ros.org/wiki/xacro}macro")) == len(robot.joints)
    assert _canonical(_expand_xacro(paths["xacro"])) == _canonical(
        ET.parse(paths["urdf"]).getroot()
    )
    yaml = require_ros1("yaml")
    with open(paths["yaml"]) as f:
        cfg = yaml.safe_load(f)
    # the Plugin Manager's keys (template_description/config/*.yaml)
    assert set(cfg) == {
        "namespace",
        "T_sample",
        "joints_number",
        "joints_name",
        "ref1_topic_name",
        "ref2_topic_name",
    }
    assert cfg["namespace"] == DEFAULT_NAMESPACE  # `asr ros`' default
    assert cfg["joints_number"] == len(robot.joints)
    # per joint, the command topics of its plugin in its mode (mode 5: reference_1/2, mode 6:
    # equilibrium_position / stiffness_preset)
    first = {5: ("/reference_1", "/reference_2"), 6: ("/equilibrium_position", "/stiffness_preset")}
    assert (cfg["ref1_topic_name"][0], cfg["ref2_topic_name"][0]) == first[robot.joints[0].mode]
    assert len(cfg["ref1_topic_name"]) == len(cfg["ref2_topic_name"]) == len(robot.joints)
    assert cfg["joints_name"] == list(robot.joint_names)
    assert cfg["T_sample"] == robot.mj_model().opt.timestep


def test_yaml_namespace_and_topics_can_be_set(tmp_path):
    yaml = require_ros1("yaml")
    paths = export_robot(
        "rrbot_sea", out_dir=tmp_path, namespace="arm/a", ref_topics=("eq", "preset")
    )
    with open(paths["yaml"]) as f:
        cfg = yaml.safe_load(f)
    assert cfg["namespace"] == "arm/a"
    assert set(cfg["ref1_topic_name"]) == {"/eq"} and set(cfg["ref2_topic_name"]) == {"/preset"}
    with pytest.raises(ValueError, match="namespace: got '/bad ns'"):
        export_robot("rrbot_sea", out_dir=tmp_path, namespace="/bad ns")


# ---------------------------------------------------------------- rotated bodies, gimbal lock

_ROTATED = """<mujoco model="rotated">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.002" integrator="Euler"/>
  <worldbody>
    <body name="base" pos="0.1 0 0.5" euler="0 1.5707963267948966 0">
      <joint name="joint1" axis="0 0 1" pos="0.02 0 0" damping="0.1" range="-1 1.5"/>
      <inertial pos="0.1 0.02 -0.03" mass="0.7" fullinertia="0.02 0.03 0.04 0.001 -0.002 0.003"/>
      <geom type="box" size="0.1 0.02 0.02" contype="0" conaffinity="0" mass="0"/>
      <body name="tip" pos="0.2 0 0" euler="0 1.5707963267948966 0">
        <joint name="joint2" axis="1 0 0"/>
        <inertial pos="0 0 0.05" mass="0.3" quat="0.7071067811865476 0 0.7071067811865476 0"
                  diaginertia="0.004 0.003 0.002"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""

_ROTATED_TOML = """name = "rotated"
[variants.one]
mjcf = "rotated.xml"
[[variants.one.joints]]
name = "joint1"
model = "sea"
mode = 5
params = { k = 123.456789, kp = 0.1 }
[[variants.one.joints]]
name = "joint2"
model = "qbmove_advanced"
mode = 6
params = { k1 = 0.01038, a1 = 6.257, pos_min = -2.5, pos_max = 2.5, vel_max = 3.3 }
"""


def _robot_folder(tmp_path, xml, toml, name="rotated"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "rotated.xml").write_text(xml)
    (folder / "robot.toml").write_text(toml)
    return folder


def test_rpy_survives_gimbal_lock():
    for rpy in [
        (0.3, math.pi / 2, -0.4),
        (0.0, -math.pi / 2, 1.0),
        (1.0, 0.2, -3.0),
        (0.0, math.pi / 2, 0.0),
    ]:
        m = rpy_mat(*rpy)
        np.testing.assert_allclose(rpy_mat(*mat_rpy(m)), m, atol=1e-15)


def test_a_body_rotated_90_degrees_about_y_keeps_its_inertia(tmp_path):
    robot = asr.load_robot(_robot_folder(tmp_path, _ROTATED, _ROTATED_TOML))
    paths = export_robot(robot, out_dir=tmp_path / "out")
    worst = _compare_with_mujoco(robot, paths["urdf"])
    assert worst["inertia"] <= 1e-9
    model = robot.mj_model()
    assert not np.allclose(model.body_iquat[1], [1, 0, 0, 0])  # a full tensor, rotated
    # the inertia is written as the full tensor in the link frame, not as rpy of body_iquat
    inertia = ET.parse(paths["urdf"]).getroot().find("link[@name='base']/inertial")
    assert inertia.find("origin").get("rpy") == "0.0 0.0 0.0"
    assert float(inertia.find("inertia").get("ixy")) == pytest.approx(0.001, abs=1e-15)
    # the joint anchored 0.02 m off the body origin: the link frame sits on the axis
    r = subprocess.run(
        [_check_urdf(), paths["urdf"]], capture_output=True, text=True, env=tool_env(), timeout=30
    )
    assert r.returncode == 0, r.stdout + r.stderr
    back = import_robot(paths["urdf"])
    assert [joint_params(j) for j in back] == [joint_params(j) for j in robot.joints]
    assert back[1].params["pos_min"] == -2.5 and back[0].params["k"] == 123.456789


# ---------------------------------------------------------------- bad input


def test_unknown_robot(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such_robot.*available"):
        export_robot("no_such_robot", out_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown variant 'nope'"):
        export_robot("rrbot_sea", "nope", out_dir=tmp_path)
    with pytest.raises(TypeError, match="robot: expected"):
        export_robot(42, out_dir=tmp_path)


def test_out_dir_must_be_a_folder(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(NotADirectoryError, match="out_dir: .* not a folder"):
        export_robot("rrbot_sea", out_dir=f)
    with pytest.raises(TypeError, match="out_dir: required"):
        export_robot("rrbot_sea")
    with pytest.raises(ValueError, match="ref_topics"):
        export_robot("rrbot_sea", out_dir=tmp_path, ref_topics=("a b", "c"))


@pytest.mark.parametrize("name,why", sorted(NOT_URDF.items()))
def test_robots_with_free_joints_are_refused(tmp_path, name, why):
    with pytest.raises(ValueError, match=f"{why}.*fixed-base tree"):
        export_robot(name, out_dir=tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written


def test_closed_chain_and_ball_joint_are_refused(tmp_path):
    closed = _ROTATED.replace(
        "</worldbody>",
        """</worldbody>
  <equality><connect body1="tip" body2="world" anchor="0 0 0.1"/></equality>""",
    )
    robot = asr.load_robot(_robot_folder(tmp_path, closed, _ROTATED_TOML, "closed"))
    with pytest.raises(ValueError, match="equality constraint.*trees only"):
        export_robot(robot, out_dir=tmp_path / "out")
    ball = _ROTATED.replace(
        '<joint name="joint2" axis="1 0 0"/>',
        '<joint name="joint2" axis="1 0 0"/><joint name="b" type="ball"/>',
    )
    robot = asr.load_robot(_robot_folder(tmp_path, ball, _ROTATED_TOML, "ball"))
    with pytest.raises(ValueError, match="ball joint 'b'"):
        export_robot(robot, out_dir=tmp_path / "out")


def test_import_refuses_what_it_cannot_read(tmp_path, exported):
    robot, paths = exported["rrbot_sea", variants_of("rrbot_sea")[0]]
    text = open(paths["urdf"]).read()
    bad = tmp_path / "bad.urdf"
    bad.write_text(text.replace("<asr_Kt>", "<asr_Kx>").replace("</asr_Kt>", "</asr_Kx>"))
    with pytest.raises(ValueError, match="unknown tag <asr_Kx>"):
        import_robot(bad)
    bad.write_text(re.sub("<asr_Kt>[^<]*<", "<asr_Kt>-1.0<", text))
    with pytest.raises(ValueError, match="Kt: got -1.*valid range"):
        import_robot(bad)
    bad.write_text("<robot")
    with pytest.raises(ValueError, match="not XML"):
        import_robot(bad)
