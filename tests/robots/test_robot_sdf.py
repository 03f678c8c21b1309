"""The SDF files of the robots (robots/README.md, "SDF files for Gazebo") against MuJoCo's
compiled MJCF model: masses, world-frame centres of mass and inertia tensors, joint axes and
anchors at q = 0, limits, damping, friction, gravity and time step. Two independent readers of the
SDF: plain XML (xml.etree, the world-frame poses computed here from SDF's pose rules) and
libsdformat 12 (a small C++ program, compiled here, that loads each file with sdf::Root, reports
its errors and prints libsdformat's own resolved values). Also the loader's checks of the
`sdf` key of robot.toml."""

import math
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from asr.robots.robot import RobotFileError, load_robot, robot_names, robots_dir
from tests.conftest import IN_CI, require

ROBOTS = robots_dir()


def sdf_variants():
    """(robot, variant) of every variant that has an sdf key, one per distinct SDF file."""
    out, seen = [], set()
    for name in robot_names():
        from asr.robots.robot import tomllib

        with open(os.path.join(ROBOTS, name, "robot.toml"), "rb") as f:
            toml = tomllib.load(f)
        for v, table in toml["variants"].items():
            if "sdf" in table and (name, table["sdf"]) not in seen:
                seen.add((name, table["sdf"]))
                out.append((name, v))
    return out


VARIANTS = sdf_variants()


def test_the_four_robots_have_sdf_files():
    robots = {r for r, _ in VARIANTS}
    assert robots == {"pendulum_1dof", "rrbot_sea", "qbmove_arm_2dof", "qbmove_3r"}
    assert len(VARIANTS) == 6  # pendulum, rrbot, arm 2dof x2, 3r x2


# ---------------------------------------------------------------- MuJoCo's compiled reference


def mujoco_reference(mjcf):
    """{link: (mass, world com, world inertia about com)}, {joint: (world axis, world anchor,
    limits, damping, friction)}, gravity, time step of the compiled MJCF at q = 0."""
    mujoco = require("mujoco")
    m = mujoco.MjModel.from_xml_path(mjcf)
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)  # qpos = qpos0
    links, joints = {}, {}
    for b in range(1, m.nbody):
        rot = d.ximat[b].reshape(3, 3)  # the principal axes in the world (body_iquat applied)
        links[m.body(b).name] = (
            float(m.body_mass[b]),
            d.xipos[b].copy(),
            rot @ np.diag(m.body_inertia[b]) @ rot.T,
        )
    for j in range(m.njnt):
        dof = m.jnt_dofadr[j]
        lim = tuple(m.jnt_range[j]) if m.jnt_limited[j] else (-1e16, 1e16)
        joints[m.joint(j).name] = (
            d.xaxis[j].copy(),
            d.xanchor[j].copy(),
            lim,
            float(m.dof_damping[dof]),
            float(m.dof_frictionloss[dof]),
        )
    return links, joints, np.array(m.opt.gravity), float(m.opt.timestep)


# ---------------------------------------------------------------- reader 1: plain XML


def rpy_mat(r, p, y):
    cr, sr, cp, sp, cy, sy = (
        math.cos(r),
        math.sin(r),
        math.cos(p),
        math.sin(p),
        math.cos(y),
        math.sin(y),
    )
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def pose_of(el):
    """(R, p) of an element's <pose> (identity when absent); only rpy, relative_to checked."""
    pose = el.find("pose")
    if pose is None:
        return np.eye(3), np.zeros(3)
    v = [float(x) for x in pose.text.split()]
    assert pose.get("rotation_format", "euler_rpy") == "euler_rpy"
    return rpy_mat(*v[3:]), np.array(v[:3])


def xml_values(sdf):
    """The same quantities as mujoco_reference, read with xml.etree and SDF 1.9's frame rules:
    link poses relative to the model frame, <inertial><pose> to the link, joint poses to the
    child link, axis xyz in the joint frame."""
    root = ET.parse(sdf).getroot()
    assert root.tag == "sdf" and root.get("version") == "1.9"
    (world,) = root.findall("world")
    (model,) = world.findall("model")
    R0, p0 = pose_of(model)
    links, joints, frames = {}, {}, {}
    for link in model.findall("link"):
        assert link.find("pose") is None or link.find("pose").get("relative_to") is None
        R, p = pose_of(link)
        R, p = R0 @ R, R0 @ p + p0
        frames[link.get("name")] = (R, p)
        inertial = link.find("inertial")
        if inertial is None:
            continue
        Ri, pi = pose_of(inertial)
        e = {
            k: float(inertial.find(f"inertia/{k}").text)
            for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        }
        tensor = np.array(
            [
                [e["ixx"], e["ixy"], e["ixz"]],
                [e["ixy"], e["iyy"], e["iyz"]],
                [e["ixz"], e["iyz"], e["izz"]],
            ]
        )
        Rw = R @ Ri
        links[link.get("name")] = (
            float(inertial.find("mass").text),
            R @ pi + p,
            Rw @ tensor @ Rw.T,
        )
    for joint in model.findall("joint"):
        if joint.get("type") == "fixed":
            continue
        assert joint.find("pose") is None or joint.find("pose").get("relative_to") is None
        Rc, pc = frames[joint.find("child").text]
        Rj, pj = pose_of(joint)
        axis = joint.find("axis")
        assert axis.find("xyz").get("expressed_in") is None
        xyz = np.array([float(x) for x in axis.find("xyz").text.split()])
        dyn = axis.find("dynamics")
        joints[joint.get("name")] = (
            Rc @ Rj @ xyz,
            Rc @ pj + pc,
            (float(axis.find("limit/lower").text), float(axis.find("limit/upper").text)),
            float(dyn.find("damping").text),
            float(dyn.find("friction").text),
        )
    gravity = np.array([float(x) for x in world.find("gravity").text.split()])
    step = float(world.find("physics/max_step_size").text)
    return links, joints, gravity, step


# ---------------------------------------------------------------- reader 2: libsdformat 12

SDF_PROBE = r"""
#include <sdf/sdf.hh>
#include <cstdio>
#include <iostream>
// Loads an SDF file with libsdformat; prints its errors (exit 1) or the resolved values:
// link <name> <mass> <com xyz in world> <inertia 3x3 in world, row-major>
// joint <name> <axis xyz in world> <anchor xyz in world> <lower> <upper> <damping> <friction>
// gravity <xyz>  /  step <max_step_size>
int main(int argc, char **argv) {
  sdf::Root root;
  sdf::Errors errors = root.Load(argv[1]);
  for (auto &e : errors) std::cerr << e << "\n";
  if (!errors.empty() || root.WorldCount() != 1) return 1;
  const sdf::World *w = root.WorldByIndex(0);
  if (w->ModelCount() != 1) return 1;
  const sdf::Model *m = w->ModelByIndex(0);
  ignition::math::Pose3d X_WM = m->RawPose();
  for (uint64_t i = 0; i < m->LinkCount(); ++i) {
    const sdf::Link *l = m->LinkByIndex(i);
    ignition::math::Pose3d X_ML;
    sdf::Errors e = l->SemanticPose().Resolve(X_ML);
    if (!e.empty()) { for (auto &x : e) std::cerr << x << "\n"; return 1; }
    ignition::math::Pose3d X_WL = X_WM * X_ML;
    const ignition::math::Inertiald &in = l->Inertial();
    ignition::math::Pose3d X_WC = X_WL * in.Pose();   // inertial pose relative to the link
    ignition::math::Matrix3d R(X_WC.Rot());
    ignition::math::Matrix3d I = R * in.MassMatrix().Moi() * R.Transposed();
    std::printf("link %s %.17g %.17g %.17g %.17g", l->Name().c_str(), in.MassMatrix().Mass(),
                X_WC.Pos().X(), X_WC.Pos().Y(), X_WC.Pos().Z());
    for (int r = 0; r < 3; ++r) for (int c = 0; c < 3; ++c) std::printf(" %.17g", I(r, c));
    std::printf("\n");
  }
  for (uint64_t i = 0; i < m->JointCount(); ++i) {
    const sdf::Joint *j = m->JointByIndex(i);
    if (j->Type() != sdf::JointType::REVOLUTE && j->Type() != sdf::JointType::PRISMATIC) continue;
    ignition::math::Pose3d X_MJ;
    ignition::math::Vector3d axis;
    sdf::Errors e = j->SemanticPose().Resolve(X_MJ, "__model__");
    sdf::Errors e2 = j->Axis(0)->ResolveXyz(axis, "__model__");
    if (!e.empty() || !e2.empty()) return 1;
    ignition::math::Pose3d X_WJ = X_WM * X_MJ;
    axis = X_WM.Rot().RotateVector(axis);
    const sdf::JointAxis *a = j->Axis(0);
    std::printf("joint %s %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n",
                j->Name().c_str(), axis.X(), axis.Y(), axis.Z(), X_WJ.Pos().X(), X_WJ.Pos().Y(),
                X_WJ.Pos().Z(), a->Lower(), a->Upper(), a->Damping(), a->Friction());
  }
  ignition::math::Vector3d g = w->Gravity();
  std::printf("gravity %.17g %.17g %.17g\n", g.X(), g.Y(), g.Z());
  const sdf::Physics *p = w->PhysicsByIndex(0);
  std::printf("step %.17g\n", p ? p->MaxStepSize() : -1.0);
  return 0;
}
"""


@pytest.fixture(scope="module")
def sdformat_probe(tmp_path_factory):
    """Path of the compiled libsdformat probe; a failure in CI when libsdformat 12 (Debian's
    libsdformat-dev), g++ or pkg-config is missing, a skip elsewhere."""
    why = None
    if not (shutil.which("g++") and shutil.which("pkg-config")):
        why = "g++ / pkg-config not installed"
    else:
        flags = subprocess.run(
            ["pkg-config", "--cflags", "--libs", "sdformat12"], capture_output=True, text=True
        )
        if flags.returncode != 0:
            why = "libsdformat 12 not installed (apt-get install libsdformat-dev)"
    if why:
        if IN_CI:
            pytest.fail(f"{why}: required in CI")
        pytest.skip(why)
    folder = tmp_path_factory.mktemp("sdformat")
    (folder / "probe.cc").write_text(SDF_PROBE)
    build = subprocess.run(
        ["g++", "-O0", str(folder / "probe.cc"), "-o", str(folder / "probe")]
        + flags.stdout.split(),
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    return str(folder / "probe")


def sdformat_values(probe, sdf):
    run = subprocess.run([probe, sdf], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and not run.stderr, f"libsdformat rejects {sdf}: {run.stderr}"
    links, joints, gravity, step = {}, {}, None, None
    for line in run.stdout.splitlines():
        kind, *rest = line.split()
        if kind == "link":
            v = [float(x) for x in rest[1:]]
            links[rest[0]] = (v[0], np.array(v[1:4]), np.array(v[4:13]).reshape(3, 3))
        elif kind == "joint":
            v = [float(x) for x in rest[1:]]
            joints[rest[0]] = (np.array(v[0:3]), np.array(v[3:6]), (v[6], v[7]), v[8], v[9])
        elif kind == "gravity":
            gravity = np.array([float(x) for x in rest])
        else:
            step = float(rest[0])
    links.pop("base", None)  # the MJCF world body's geoms, fixed to the world
    return links, joints, gravity, step


# ---------------------------------------------------------------- the comparison

WORST = {}  # largest differences seen so far per reader (printed with -s after each robot)


def compare(values, ref, reader):
    links, joints, gravity, step = values
    rlinks, rjoints, rgravity, rstep = ref
    assert set(links) == set(rlinks), reader
    assert set(joints) == set(rjoints), reader
    worst = WORST.setdefault(
        reader, {"mass rel": 0.0, "com": 0.0, "inertia": 0.0, "axis": 0.0, "anchor": 0.0}
    )
    for name, (mass, com, inertia) in rlinks.items():
        m2, c2, i2 = links[name]
        worst["mass rel"] = max(worst["mass rel"], abs(m2 - mass) / mass)
        worst["com"] = max(worst["com"], float(np.max(np.abs(c2 - com))))
        worst["inertia"] = max(worst["inertia"], float(np.max(np.abs(i2 - inertia))))
        assert m2 == pytest.approx(mass, rel=1e-12, abs=0), (reader, name)
        np.testing.assert_allclose(c2, com, rtol=0, atol=1e-9, err_msg=f"{reader} {name} com")
        np.testing.assert_allclose(
            i2, inertia, rtol=0, atol=1e-9, err_msg=f"{reader} {name} inertia"
        )
    for name, (axis, anchor, limits, damping, friction) in rjoints.items():
        a2, p2, l2, d2, f2 = joints[name]
        worst["axis"] = max(worst["axis"], float(np.max(np.abs(a2 - axis))))
        worst["anchor"] = max(worst["anchor"], float(np.max(np.abs(p2 - anchor))))
        np.testing.assert_allclose(a2, axis, rtol=0, atol=1e-12, err_msg=f"{reader} {name} axis")
        np.testing.assert_allclose(p2, anchor, rtol=0, atol=1e-9, err_msg=f"{reader} {name} anchor")
        assert l2 == pytest.approx(limits, rel=1e-12), (reader, name)
        assert d2 == pytest.approx(damping, rel=1e-12), (reader, name)
        assert f2 == pytest.approx(friction, rel=1e-12), (reader, name)
    np.testing.assert_allclose(gravity, rgravity, rtol=1e-12, atol=0)
    assert step == pytest.approx(rstep, rel=1e-12)
    print(f"{reader}: " + ", ".join(f"max {k} {v:.3g}" for k, v in worst.items()))


@pytest.mark.parametrize("robot,variant", VARIANTS)
def test_sdf_matches_mujoco_xml_reader(robot, variant):
    r = load_robot(robot, variant)
    assert os.path.isabs(r.sdf) and os.path.isfile(r.sdf)
    compare(xml_values(r.sdf), mujoco_reference(r.mjcf), "xml.etree")


@pytest.mark.parametrize("robot,variant", VARIANTS)
@pytest.mark.slow
def test_sdf_matches_mujoco_libsdformat(robot, variant, sdformat_probe):
    r = load_robot(robot, variant)
    compare(sdformat_values(sdformat_probe, r.sdf), mujoco_reference(r.mjcf), "libsdformat")


def test_variants_sharing_an_mjcf_share_the_sdf():
    for name in ("pendulum_1dof", "rrbot_sea"):
        from asr.robots.robot import tomllib

        with open(os.path.join(ROBOTS, name, "robot.toml"), "rb") as f:
            variants = tomllib.load(f)["variants"]
        assert len({load_robot(name, v).sdf for v in variants}) == 1


# ---------------------------------------------------------------- the loader

PEND = "pendulum_1dof"


def robot_copy(tmp_path, robot=PEND, old=None, new=None, files=None):
    """A copy of robots/<robot> in tmp_path, robot.toml edited (every `old` -> `new`) and extra
    files written."""
    folder = tmp_path / robot
    shutil.copytree(os.path.join(ROBOTS, robot), folder)
    toml = folder / "robot.toml"
    if old is not None:
        text = toml.read_text()
        assert old in text
        toml.write_text(text.replace(old, new))
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    return folder


def load_error(folder):
    with pytest.raises(RobotFileError) as info:
        load_robot(str(folder))
    return info.value


def good_sdf():
    with open(os.path.join(ROBOTS, PEND, "pendulum.sdf")) as f:
        return f.read()


@pytest.mark.parametrize(
    "text,words",
    [
        ("<sdf version='1.9'><world name='w'><model name='m'>", "not well-formed XML"),
        ("not xml at all", "not well-formed XML"),
        ("<robot name='r'/>", "root element is <robot>, expected <sdf>"),
        ("<sdf version='1.9'><model name='m'/></sdf>", "exactly one <world>"),
        ("<sdf version='1.9'><world name='a'/><world name='b'/></sdf>", "exactly one <world>"),
        ("<sdf version='1.9'><world name='w'/></sdf>", "exactly one <model> in its <world>, got 0"),
    ],
)
def test_malformed_sdf_names_file_and_entry(tmp_path, text, words):
    folder = robot_copy(
        tmp_path, old='sdf = "pendulum.sdf"', new='sdf = "bad.sdf"', files={"bad.sdf": text}
    )
    err = load_error(folder)
    assert err.entry == "[variants.sea] sdf"
    assert "'bad.sdf'" in err.problem and words in err.problem, err.problem
    assert err.file == os.path.join(str(folder), "robot.toml")


def test_sdf_missing_a_joint_names_the_joint(tmp_path):
    folder = robot_copy(
        tmp_path,
        old='sdf = "pendulum.sdf"',
        new='sdf = "renamed.sdf"',
        files={"renamed.sdf": good_sdf().replace('name="joint"', 'name="hinge"')},
    )
    err = load_error(folder)
    assert err.entry == "[variants.sea] sdf"
    assert "'renamed.sdf': joint 'joint' ([[variants.sea.joints]] #1) is missing" in err.problem
    assert "revolute / prismatic joints are: hinge" in err.problem


def test_sdf_unnamed_joint_is_not_an_actuated_one(tmp_path):
    # an unnamed joint once broke the message (a TypeError instead of RobotFileError)
    text = good_sdf().replace('<joint name="joint" type="revolute">', '<joint type="revolute">')
    folder = robot_copy(
        tmp_path, old='sdf = "pendulum.sdf"', new='sdf = "anon.sdf"', files={"anon.sdf": text}
    )
    err = load_error(folder)
    assert "joint 'joint' ([[variants.sea.joints]] #1) is missing" in err.problem
    assert "revolute / prismatic joints are: none" in err.problem


def test_sdf_joint_of_the_wrong_type_is_named(tmp_path):
    text = good_sdf().replace(
        '<joint name="joint" type="revolute">', '<joint name="joint" type="prismatic">'
    )
    folder = robot_copy(
        tmp_path, old='sdf = "pendulum.sdf"', new='sdf = "slide.sdf"', files={"slide.sdf": text}
    )
    err = load_error(folder)
    assert "joint 'joint'" in err.problem and "is a 'prismatic' joint there" in err.problem
    assert "type='revolute'" in err.problem


@pytest.mark.parametrize(
    "value,words",
    [
        ('"../pendulum.sdf"', "outside the robot's folder"),
        ('"/etc/hostname"', "outside the robot's folder"),
        ('"missing.sdf"', "no file 'missing.sdf'"),
        ('"."', "'.' is a folder"),
        ("5", "expected a file name (string), got 5"),
        ('""', "expected a file name"),
    ],
)
def test_bad_sdf_paths(tmp_path, value, words):
    shutil.copy(os.path.join(ROBOTS, PEND, "pendulum.sdf"), tmp_path / "pendulum.sdf")
    folder = robot_copy(tmp_path, old='sdf = "pendulum.sdf"', new=f"sdf = {value}")
    err = load_error(folder)
    assert err.entry == "[variants.sea] sdf" and words in err.problem, str(err)


def test_sdf_link_escaping_the_folder(tmp_path):
    outside = tmp_path / "elsewhere.sdf"
    outside.write_text(good_sdf())
    folder = robot_copy(tmp_path, old='sdf = "pendulum.sdf"', new='sdf = "link.sdf"')
    os.symlink(outside, folder / "link.sdf")
    err = load_error(folder)
    assert err.entry == "[variants.sea] sdf" and "outside the robot's folder" in err.problem


def test_every_variant_is_checked_not_only_the_loaded_one(tmp_path):
    # the last variant (qbmove_advanced) is broken; the default variant is asked for
    folder = robot_copy(tmp_path, files={"bad.sdf": "<sdf/>"})
    toml = folder / "robot.toml"
    parts = toml.read_text().rsplit('sdf = "pendulum.sdf"', 1)
    toml.write_text('sdf = "bad.sdf"'.join(parts))
    err = load_error(folder)
    assert err.entry == "[variants.qbmove_advanced] sdf", str(err)


def test_robots_without_sdf_load_with_none(tmp_path):
    for name in robot_names():
        for r in (load_robot(name),):
            if name not in {r for r, _ in VARIANTS}:
                assert r.sdf is None
    folder = robot_copy(tmp_path, old='sdf = "pendulum.sdf"\n', new="")
    assert load_robot(str(folder)).sdf is None


def test_sdf_is_absolute_for_relative_folders(tmp_path, monkeypatch):
    robot_copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    r = load_robot(PEND, allow_path=False)
    assert r.sdf == os.path.join(ROBOTS, PEND, "pendulum.sdf") and os.path.isabs(r.sdf)
    r = load_robot("./" + PEND)
    assert os.path.isabs(r.sdf) and r.sdf == str(tmp_path / PEND / "pendulum.sdf")
