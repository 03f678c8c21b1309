"""asr's URDF plugin blocks read the way the compliant-actuator toolbox [Mengacci2021] reads them,
and URDFs written for the toolbox run in asr.

The toolbox's C++ facts are listed here, apart from asr.ros.urdf_tags (which the tests check
against them): the tags each plugin's InitParams reads, with the value it runs with when a tag is
missing. toolbox_read() reads a <plugin> block as the plugin would (the tag's text, else the
default); its values must be asr's, for every actuated joint of every exportable robot."""

import dataclasses
import math
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import asr
from asr.ros.environment import tool_env
from asr.ros.urdf import export_robot, import_robot, robot_from_urdf
from asr.ros.urdf_tags import PLUGIN_FILES, joint_params, toolbox_tags
from tests.conftest import IN_CI
from tests.support.paths import TESTS  # noqa: E402

pytestmark = pytest.mark.ros

INF = math.inf
DATA = os.path.join(str(TESTS), "data", "toolbox_urdf")

# ---- facts from the toolbox's sources (viactors_plugins/src/*_plugin.cpp, InitParams)
# spring tags of each plugin library -> default
SPRING_READS = {
    "libqbmove_plugin.so": {
        "spring_a1": 8.9992,
        "spring_k1": 0.0019,
        "spring_a2": 8.9992,
        "spring_k2": 0.0019,
        "max_def": 0.8,
    },
    "libsea_plugin.so": {"spring_k": 10.0, "max_def": 0.8},
    "libbavs_plugin.so": {
        "spring_a": 1.21e-6,
        "spring_b": 2.38e-6,
        "spring_k": 1.60e5,
        "spring_k_e": 8.71,
        "max_def": 0.27,
    },
    "libawas_ii_plugin.so": {
        "spring_Ks": 10.0,
        "spring_l_0": 1.0,
        "spring_L": 0.05,
        "spring_r_t": 0.015,
        "max_def": 0.3,
    },
}
# motor fields (mot_<f> for one-motor plugins, mot_1_<f> and mot_2_<f> for two) -> default
MOTOR_READS = {
    "J": 0.0233,
    "D": 0.2698,
    "tauMax": 6.0,
    "maxVel": 6.0,
    "minPos": -INF,
    "maxPos": INF,
    "tauFric": 0.02,
}
PID_READS = {"P": 125.0, "I": 0.0, "D": 4.5}  # ctrl_<f> / ctrl_1_<f>, ctrl_2_<f>
LINK_PID_READS = {"P": 0.8, "I": 0.0, "D": 0.2}  # the first controller in mode 1 (LinkPID)
TWO_MOTORS = {"libqbmove_plugin.so", "libbavs_plugin.so"}

# ---- what each toolbox variable is in asr (the physics: same formulas, same SI units)
SPRING_MEANING = {
    "spring_a1": "a1",
    "spring_k1": "k1",
    "spring_a2": "a2",
    "spring_k2": "k2",
    "spring_k": "k",
    "spring_a": "a",
    "spring_b": "b",
    "spring_k_e": "ke",
    "spring_Ks": "Ks",
    "spring_L": "L",
    "spring_r_t": "r_t",
    "max_def": "max_def",
    "spring_l_0": None,  # read by the AwAS-II plugin, absent from its spring torque
}
MOTOR_MEANING = {
    "J": "motor_J",
    "D": "motor_D",
    "tauMax": "tau_max",
    "maxVel": "vel_max",
    "minPos": "pos_min",
    "maxPos": "pos_max",
    "tauFric": "friction",
}
PID_MEANING = {"P": "kp", "I": "ki", "D": "kd"}
LINK_PID_MEANING = {"P": "link_kp", "I": "link_ki", "D": "link_kd"}


def toolbox_reads(file, mode):
    """{tag: (default, asr meaning)} of every tag plugin `file` reads in operation mode `mode`."""
    reads = {t: (d, SPRING_MEANING[t]) for t, d in SPRING_READS[file].items()}
    prefixes = ("_1_", "_2_") if file in TWO_MOTORS else ("_",)
    for p in prefixes:  # InitParams' order: the motors, then the controllers
        reads.update({f"mot{p}{f}": (d, MOTOR_MEANING[f]) for f, d in MOTOR_READS.items()})
    for k, p in enumerate(prefixes):
        link = mode == 1 and k == 0
        defaults, meaning = (LINK_PID_READS, LINK_PID_MEANING) if link else (PID_READS, PID_MEANING)
        reads.update({f"ctrl{p}{f}": (d, meaning[f]) for f, d in defaults.items()})
    return reads


def toolbox_read(plugin):
    """{tag: value} as the toolbox's plugin reads block `plugin`: every tag it reads, the tag's
    number when present (SDF Get<double>), else its default."""
    mode = int(plugin.find("operation_mode").text)
    out = {}
    for tag, (default, _) in toolbox_reads(plugin.get("filename"), mode).items():
        el = plugin.find(tag)
        out[tag] = _value(el.text) if el is not None else default
    return out


def _value(text):
    """A tag's number; x*pow(b,e), as the toolbox's BAVS example writes its constants, is
    the number it means, x * b**e."""
    m = re.fullmatch(r"\s*([-+.\de]+)\*pow\(([-+.\de]+),([-+.\de]+)\)\s*", text)
    return float(m[1]) * float(m[2]) ** float(m[3]) if m else float(text)


def _check_urdf(path):
    exe = shutil.which("check_urdf", path="/usr/bin:/bin")
    if exe is None:
        if IN_CI:
            pytest.fail("check_urdf (Debian liburdfdom-tools) is missing in CI (make ros)")
        pytest.skip("check_urdf not installed (apt-get install liburdfdom-tools)")
    r = subprocess.run([exe, path], capture_output=True, text=True, env=tool_env(), timeout=30)
    assert r.returncode == 0 and "Successfully Parsed XML" in r.stdout, r.stdout + r.stderr


# ---------------------------------------------------------------- asr -> toolbox


def _robots():
    from tests.support.urdf import ALL_VARIANTS

    return ALL_VARIANTS


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """{(robot, variant): number of toolbox tags checked} over every exportable robot variant."""
    counts = {}
    for name, variant in _robots():
        robot = asr.load_robot(name, variant)
        paths = export_robot(robot, out_dir=tmp_path_factory.mktemp(f"{name}_{variant}"))
        batch = asr.Batch([rj.joint() for rj in robot.joints], 1)
        plugins = ET.parse(paths["urdf"]).getroot().findall("gazebo/plugin")
        assert [p.find("joint").text for p in plugins] == list(robot.joint_names)
        n = 0
        for k, (rj, plugin) in enumerate(zip(robot.joints, plugins)):
            if plugin.get("filename") not in SPRING_READS:
                assert plugin.get("filename") == f"asr:{rj.model}"
                required = {"joint", "operation_mode", "pub_eltau", "pub_state", "sub_ext_tau"}
                tags = [c.tag for c in plugin if isinstance(c.tag, str)]
                assert all(t.startswith("asr_") for t in tags if t not in required), tags
                continue
            mode = rj.mode
            values = toolbox_read(plugin)
            for tag, (_, meaning) in toolbox_reads(plugin.get("filename"), mode).items():
                if meaning is None or meaning not in joint_params(rj):
                    continue  # l_0; the SEA plugin carrying a rigid joint has no spring
                assert plugin.find(tag) is not None, f"{name}: <{tag}> missing (toolbox default)"
                assert values[tag] == batch.get_param(k, meaning)[0], (name, rj.name, tag)
                n += 1
        counts[name, variant] = (n, paths)
    return counts


def test_every_toolbox_tag_carries_asrs_value(checked):
    total = sum(n for n, _ in checked.values())
    # qbmove_advanced: 5 spring + 14 motor + 6 controller tags per joint
    assert checked["qbmove_arm_2dof", "vertical"][0] == 2 * 25
    assert total > 500


def test_the_toolbox_plugin_files_and_asr_only_blocks(checked):
    files = {}
    for name, variant in _robots():
        root = ET.parse(checked[name, variant][1]["urdf"]).getroot()
        for plugin in root.findall("gazebo/plugin"):
            files.setdefault(plugin.find("asr_model").text, set()).add(plugin.get("filename"))
    assert files["qbmove_advanced"] == {"libqbmove_plugin.so"}
    assert files["sea"] == files["rigid"] == {"libsea_plugin.so"}
    assert files["bavs"] == {"libbavs_plugin.so"}
    assert files["awas2"] == {"libawas_ii_plugin.so"}
    assert files["qbmove"] == {"asr:qbmove"} and files["sea_damped"] == {"asr:sea_damped"}
    text = open(
        checked["qbmove_3r", asr.robots.robot.variant_names("qbmove_3r")[0]][1]["urdf"]
    ).read()
    assert "'qbmove' has no plugin in the compliant-actuator toolbox" in text


def test_units_are_asrs():
    for model, spec in asr.models().items():
        for mode in range(7):
            for t in toolbox_tags(model, mode):
                if t.param is not None:
                    assert t.unit == spec.param(t.param).unit, (model, t.tag)


def test_module_defaults_are_the_toolbox_facts():
    for model in ("qbmove_advanced", "sea", "bavs", "awas2"):
        for mode in (1, 5):
            tags = toolbox_tags(model, mode)
            file = PLUGIN_FILES[model]
            reads = toolbox_reads(file, mode)
            assert [t.tag for t in tags] == list(reads)
            for t in tags:
                default, meaning = reads[t.tag]
                assert t.param == meaning
                # maxVel: read (6.0) but never applied by the toolbox's motor: asr's no limit
                assert t.default == (INF if t.tag.endswith("maxVel") else default), t.tag


def test_ur10_rigid_effort_is_the_link_torque_limit(checked):
    urdf = checked["ur10", "rigid"][1]["urdf"]
    robot = asr.load_robot("ur10", "rigid")
    root = ET.parse(urdf).getroot()
    for rj in robot.joints:
        effort = float(root.find(f"joint[@name='{rj.name}']/limit").get("effort"))
        assert effort == rj.params["link_tau_max"] != 6.0
    vsa = ET.parse(checked["ur10", "vsa_soft"][1]["urdf"]).getroot()
    soft = asr.load_robot("ur10", "vsa_soft").joints[0]
    assert (
        float(vsa.find(f"joint[@name='{soft.name}']/limit").get("effort"))
        == joint_params(soft)["tau_max"]
    )


# ---------------------------------------------------------------- toolbox -> asr

# per data file: the reference that moves it (None: gravity alone) and the asr values expected
TOOLBOX_FILES = {
    "template_qbmove.urdf": (None, {"motor_D": 0.2698, "friction": 0.02, "k1": 0.0019}),
    "sea_all_tags.urdf": ((0.5, 0.0), {"k": 12.5, "motor_D": 0.25, "vel_max": 8.0, "kd": 4.0}),
    "bavs_pow.urdf": ((0.5, 0.3), {"a": 1.5e-6, "k": 1.2e5, "motor_J": 0.03, "motor_D": 0.2698}),
    "awas_ii_link_pid.urdf": ((0.4, 0.0), {"Ks": 12.0, "link_kp": 6.0, "link_ki": 0.0}),
}


@pytest.mark.parametrize("file", sorted(TOOLBOX_FILES))
def test_a_toolbox_urdf_imports_with_the_toolbox_defaults_and_runs(tmp_path, file):
    path = os.path.join(DATA, file)
    _check_urdf(path)
    ref, expected = TOOLBOX_FILES[file]
    robot = robot_from_urdf(path)
    (rj,) = robot.joints
    plugin = ET.parse(path).getroot().find("gazebo/plugin")
    # every tag the toolbox reads: asr's value is what the toolbox runs (given or default)
    for tag, value in toolbox_read(plugin).items():
        meaning = toolbox_reads(plugin.get("filename"), rj.mode)[tag][1]
        if meaning is None:
            continue
        if tag.endswith("maxVel") and plugin.find(tag) is None:
            assert rj.params[meaning] == INF  # read but never applied by the toolbox
            continue
        assert rj.params[meaning] == pytest.approx(value, rel=1e-15), tag
    for pname, value in expected.items():
        assert rj.params[pname] == pytest.approx(value, rel=1e-15), pname
    sim = asr.Sim(robot)
    sim.reset()
    steps = int(round(1.0 / sim.dt))
    refs = np.zeros((1, 2)) if ref is None else np.array([ref])
    q = sim.rollout(steps, refs=refs)["q"][0, :, 0]
    assert np.isfinite(q).all()
    if ref is None:  # the pendulum falls
        assert abs(q[-1]) > 0.3, q[-1]
    else:  # the link follows the command
        assert abs(q[-1] - ref[0]) < 0.25 * abs(ref[0]), q[-1]
    # and written back by asr, the toolbox's blocks give the same joint
    out = export_robot(robot, out_dir=tmp_path)
    _check_urdf(out["urdf"])
    assert import_robot(out["urdf"]) == robot.joints


def test_round_trip_of_changed_parameters_in_every_mode(tmp_path):
    src = ET.parse(os.path.join(DATA, "bavs_pow.urdf")).getroot()
    plugin = src.find("gazebo/plugin")
    for mode in range(7):
        plugin.find("operation_mode").text = str(mode)
        path = tmp_path / f"mode{mode}.urdf"
        ET.ElementTree(src).write(path)
        (rj,) = import_robot(path)
        changed = asr.robots.robot.RobotJoint(
            rj.name, rj.model, mode, {**rj.params, "kp": 77.5, "link_kd": 0.125, "ke": 9.5}
        )
        robot = robot_from_urdf(path)
        robot = dataclasses.replace(robot, joints=(changed,))
        out = export_robot(robot, out_dir=tmp_path / f"out{mode}")
        assert import_robot(out["urdf"]) == (changed,)


# ---------------------------------------------------------------- what asr refuses


def _with_tags(tmp_path, file, **tags):
    root = ET.parse(os.path.join(DATA, file)).getroot()
    plugin = root.find("gazebo/plugin")
    for tag, text in tags.items():
        el = plugin.find(tag)
        if el is None:
            el = ET.SubElement(plugin, tag)
        el.text = text
    path = tmp_path / file
    ET.ElementTree(root).write(path)
    return path


def test_import_refuses_what_the_toolbox_would_misread(tmp_path):
    cases = [
        ("bavs_pow.urdf", {"mot_2_J": "0.05"}, "<mot_1_J> = 0.03 but <mot_2_J> = 0.05"),
        ("template_qbmove.urdf", {"mot_1_D": "0.1"}, "<mot_1_D> = 0.1 but <mot_2_D> = 0.2698"),
        ("template_qbmove.urdf", {"mot_J": "0.1"}, "unknown tag <mot_J> .*mot_1_J"),
        ("sea_all_tags.urdf", {"ctrl_1_P": "3"}, "unknown tag <ctrl_1_P> for model 'sea'"),
        ("sea_all_tags.urdf", {"spring_k": "1.2*pow(10"}, r"<spring_k>: expected a number"),
        ("sea_all_tags.urdf", {"spring_k": "-3"}, "k: got -3.*valid range"),
        ("sea_all_tags.urdf", {"asr_model": "bavs"}, "written with filename 'libbavs_plugin.so'"),
        ("sea_all_tags.urdf", {"asr_model": "nope"}, "nope"),
        ("sea_all_tags.urdf", {"operation_mode": "9"}, "got 9, valid modes 0-6"),
        ("sea_all_tags.urdf", {"pub_state": "yes"}, "<pub_state>: expected true or false"),
    ]
    for file, tags, message in cases:
        with pytest.raises(ValueError, match=message):
            import_robot(_with_tags(tmp_path, file, **tags))
    # a joint the URDF lacks: named
    with pytest.raises(ValueError, match="no_such_joint"):
        robot_from_urdf(_with_tags(tmp_path, "sea_all_tags.urdf", joint="no_such_joint"))
