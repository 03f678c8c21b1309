"""asr.export_mjcf (asr/mujoco/export.py) and `asr export-mjcf`: every variant of every robot of
robots/ exports as one MJCF with asr's MuJoCo plugin actuators that compiles, keeps the robot's
own XML (numbers as text, exactly), and, stepped by plain mujoco.mj_step from its key
asr_initial, moves its links exactly as asr.Sim does on the original robot. Bad input raises a
clear error naming the argument and leaves an existing file as it was."""

import os
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import asr
from asr.cli import main
from asr.mujoco.export import KEY_NAME, export_mjcf
from asr.robots.robot import joint_addresses, load_robot, robot_names, robots_dir, variant_names
from tests.conftest import require

mujoco = require("mujoco")
from asr.mujoco import plugin as mujoco_plugin  # noqa: E402

CASES = [(name, v) for name in robot_names() for v in variant_names(name)]
IDS = [f"{n}-{v}" for n, v in CASES]
SIM_SECONDS, MAX_STEPS = 0.5, 2000  # each physics run: 0.5 s or 2000 steps, the shorter
STEP_REF1 = 0.1  # rad: the step the first references take a quarter into a run


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{(robot, variant): (path written, asr.Robot, compiled MjModel)} for every case."""
    mujoco_plugin.load()
    folder = tmp_path_factory.mktemp("export")
    out = {}
    for name, v in CASES:
        path = export_mjcf(name, v, folder / f"{name}_{v}.xml")
        out[name, v] = path, load_robot(name, v), mujoco.MjModel.from_xml_path(path)
    return out


def parse(path):
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    return ET.parse(path, parser=parser).getroot()


def expected_ranges(robot, model):
    """(lo, hi) or None per reference, from the joint ranges and the models' preset specs."""
    out = []
    for j in robot.joints:
        k = model.joint(j.name).id
        angle = j.mode in (1, 3, 6) and bool(model.jnt_limited[k])
        out.append(tuple(model.jnt_range[k]) if angle else None)
        pre = asr.models()[j.model].preset
        out.append((pre.lo, pre.hi) if j.mode in (3, 6) and pre.kind == "ref" else None)
    return out


def initial_state(robot, model0):
    """(qpos, ctrl) the key asr_initial must hold, from the original compiled MJCF."""
    qpos = model0.qpos0.copy()
    if robot.initial_q is not None:
        qpos[joint_addresses(model0, robot.joint_names)[0]] = robot.initial_q
    refs = np.zeros((len(robot.joints), 2))
    if robot.initial_refs is not None:
        refs[:] = robot.initial_refs
    return qpos, refs


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_variant_exports_and_compiles(exported, case):
    path, robot, m = exported[case]
    model0 = robot.mj_model()
    nj = len(robot.joints)
    assert m.nu == 2 * nj and m.nplugin == nj
    names = [m.actuator(a).name for a in range(m.nu)]
    assert names == [f"{j}_ref{r}" for j in robot.joint_names for r in (1, 2)]
    for a in range(m.nu):  # each actuator drives its joint through the instance of that name
        joint = robot.joint_names[a // 2]
        assert m.actuator_trnid[a, 0] == m.joint(joint).id
        inst = int(m.actuator_plugin[a])
        assert mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_PLUGIN, inst) == joint
    for a, lims in enumerate(expected_ranges(robot, model0)):
        assert bool(m.actuator_ctrllimited[a]) == (lims is not None), names[a]
        if lims is not None:
            assert tuple(m.actuator_ctrlrange[a]) == lims, names[a]
    qpos, refs = initial_state(robot, model0)
    key = m.key(KEY_NAME)
    np.testing.assert_array_equal(key.qpos, qpos)
    np.testing.assert_array_equal(key.ctrl, refs.reshape(-1))
    # MuJoCo would clamp an initial reference outside its range: none is
    limited = m.actuator_ctrllimited.astype(bool)
    lo, hi = m.actuator_ctrlrange[limited].T
    assert np.all((lo <= key.ctrl[limited]) & (key.ctrl[limited] <= hi))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_config_and_original_numbers_are_exact(exported, case):
    path, robot, _ = exported[case]
    root, original = parse(path), parse(robot.mjcf)
    # the original elements come first in document order, attributes and comments as written
    for mine, theirs in zip(root.iter(), original.iter()):
        assert (mine.tag, mine.attrib) == (theirs.tag, theirs.attrib)
        if mine.tag is ET.Comment:
            assert mine.text == theirs.text
    instances = root.findall("extension/plugin[@plugin='asr.actuator']/instance")
    assert [i.get("name") for i in instances] == list(robot.joint_names)
    for inst, j in zip(instances, robot.joints):
        config = {c.get("key"): c.get("value") for c in inst.findall("config")}
        assert config.pop("model") == j.model and int(config.pop("mode")) == j.mode
        assert {k: float(v) for k, v in config.items()} == j.params  # bit-exact round trip
    with open(path, encoding="utf-8") as f:
        text = f.read()
    first = text.split("-->")[0]
    assert first.startswith("<!-- Generated by asr ")
    for word in (asr.__version__, repr(robot.name), repr(robot.variant)):
        assert word in first
    assert robots_dir() not in text and os.path.dirname(robot.mjcf) not in text


def run_both(path, robot, moving):
    """Max |q difference| (rad) between mj_step on the exported file from key asr_initial and
    asr.Sim on the original robot, the same references held or stepped; and the largest link
    excursion (rad), to show that something moved."""
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    steps = min(MAX_STEPS, round(SIM_SECONDS / m.opt.timestep))
    _, refs0 = initial_state(robot, m)
    series = np.repeat(refs0[None], steps, axis=0)  # (steps, J, 2) rad (awas2 ref2: m)
    if moving:
        series[steps // 4 :, :, 0] += STEP_REF1
    mujoco.mj_resetDataKeyframe(m, d, m.key(KEY_NAME).id)
    adr = joint_addresses(m, robot.joint_names)[0]
    q_mj = np.empty((steps, len(adr)))
    for t in range(steps):
        d.ctrl[:] = series[t].reshape(-1)
        mujoco.mj_step(m, d)
        q_mj[t] = d.qpos[adr]
    sim = asr.Sim(robot, 1)
    sim.reset(q0=robot.initial_q, refs=refs0)
    q_sim = sim.rollout(steps, refs=series[None], record=("q",))["q"][0]
    return float(np.max(np.abs(q_mj - q_sim))), float(np.ptp(q_sim, axis=0).max())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_plugin_steps_match_asr_sim(exported, case):
    path, robot, _ = exported[case]
    held, _ = run_both(path, robot, moving=False)
    moved, excursion = run_both(path, robot, moving=True)
    assert held <= 1e-12 and moved <= 1e-12, (held, moved)
    assert excursion > 0.03  # the stepped references move the links


# ------------------------------------------------------------------------------- bad input


def test_bad_robot_variant_and_path(tmp_path):
    out = tmp_path / "out.xml"
    with pytest.raises(FileNotFoundError, match="robot 'no_such_robot': no folder"):
        export_mjcf("no_such_robot", None, out)
    with pytest.raises(ValueError, match="unknown variant 'nope'; valid: sea, awas2"):
        export_mjcf("pendulum_1dof", "nope", out)
    with pytest.raises(IsADirectoryError, match=f"path: {str(tmp_path)!r} is a folder"):
        export_mjcf("pendulum_1dof", None, tmp_path)
    missing = tmp_path / "missing" / "out.xml"
    with pytest.raises(FileNotFoundError, match="path: .*missing.* does not exist"):
        export_mjcf("pendulum_1dof", None, missing)
    with pytest.raises(TypeError, match="path: required"):
        export_mjcf("pendulum_1dof")
    with pytest.raises(TypeError, match="path: expected a file path .* got int"):
        export_mjcf("pendulum_1dof", None, 3)
    with pytest.raises(ValueError, match="variant: got 'sea' with an asr.Robot of variant 'bavs'"):
        export_mjcf(load_robot("pendulum_1dof", "bavs"), "sea", out)
    assert os.listdir(tmp_path) == []


def test_failure_leaves_the_old_file(tmp_path):
    out = tmp_path / "arm.xml"
    out.write_text("old")
    with pytest.raises(ValueError, match="unknown variant"):
        export_mjcf("qbmove_arm_2dof", "nope", out)
    assert out.read_text() == "old" and os.listdir(tmp_path) == ["arm.xml"]
    assert export_mjcf(load_robot("qbmove_arm_2dof"), path=out) == str(out)
    assert "asr.actuator" in out.read_text() and os.listdir(tmp_path) == ["arm.xml"]


def pendulum_copy(tmp_path, edit):
    """A copy of robots/pendulum_1dof whose pendulum.xml is edit(text); its folder."""
    folder = tmp_path / "pendulum"
    shutil.copytree(os.path.join(robots_dir(), "pendulum_1dof"), folder)
    xml = folder / "pendulum.xml"
    xml.write_text(edit(xml.read_text()))
    return folder


def test_mjcf_naming_other_files_is_refused(tmp_path):
    folder = pendulum_copy(
        tmp_path,
        lambda t: t.replace('<geom contype="0" conaffinity="0"/>', '<include file="d.xml"/>'),
    )
    (folder / "d.xml").write_text('<mujoco><geom contype="0" conaffinity="0"/></mujoco>')
    load_robot(folder)  # MuJoCo reads it
    with pytest.raises(ValueError, match=r"pendulum.xml: <include> names another file"):
        export_mjcf(folder, None, tmp_path / "out.xml")
    assert not (tmp_path / "out.xml").exists()


def test_user_model_is_refused(tmp_path):
    name = "export_test_linear"
    asr.register_model(
        name,
        lambda q, qd, th1, th2, th1d, th2d, k: {"tau1": -k * (q - th1), "stiffness": k},
        lambda eq, preset, k: (eq, preset),
        params=(asr.ParamSpec("k", 5.0, lo=0.0, hi=1e3, lo_open=True, unit="N m/rad"),),
        nmotor=1,
    )
    try:
        folder = pendulum_copy(tmp_path, lambda t: t)
        toml = folder / "robot.toml"
        toml.write_text(toml.read_text().replace('model = "sea"', f'model = "{name}"'))
        toml.write_text(toml.read_text().replace("k = 200.0, max_def = 0.8", "k = 200.0"))
        with pytest.raises(ValueError, match=f"joint 'joint' uses the user model '{name}'"):
            export_mjcf(folder, "sea", tmp_path / "out.xml")
    finally:
        asr.unregister_model(name)


def test_existing_actuators_and_keys_keep_their_ctrl(tmp_path):
    """An MJCF with its own actuator and keyframe: the plugin actuators come after it (ctrl[-2J:]
    are the references), its keys get zero ctrl for them."""
    own = (
        '<actuator><motor name="own" joint="joint" gear="1"/></actuator>'
        '<keyframe><key name="up" qpos="0.5" ctrl="0.25"/></keyframe></mujoco>'
    )
    folder = pendulum_copy(tmp_path, lambda t: t.replace("</mujoco>", own))
    m = mujoco.MjModel.from_xml_path(export_mjcf(folder, None, tmp_path / "out.xml"))
    assert [m.actuator(a).name for a in range(m.nu)] == ["own", "joint_ref1", "joint_ref2"]
    np.testing.assert_array_equal(m.key("up").ctrl, [0.25, 0.0, 0.0])
    np.testing.assert_array_equal(m.key("up").qpos, [0.5])
    np.testing.assert_array_equal(m.key(KEY_NAME).ctrl, [0.0, 0.0, 0.2])
    np.testing.assert_array_equal(m.key(KEY_NAME).qpos, [-0.28365])


# ------------------------------------------------------------------------------------- CLI


def test_cli_writes_the_file(tmp_path, capsys):
    out = tmp_path / "snake.xml"
    assert main(["export-mjcf", "qbmove_snake", "-o", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    m = mujoco.MjModel.from_xml_path(str(out))
    assert m.nu == 2 * len(load_robot("qbmove_snake").joints)
    assert main(["export-mjcf", "pendulum_1dof", "--variant", "nope", "-o", str(out)]) == 2
    assert "asr export-mjcf: " in (err := capsys.readouterr().err) and "'nope'" in err
    assert main(["export-mjcf", "pendulum_1dof", "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
