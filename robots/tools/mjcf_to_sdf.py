"""Write the SDF twin of a robot's MJCF files from MuJoCo's compiled model (robots/README.md,
"SDF files for Gazebo").

    .venv/bin/python robots/tools/mjcf_to_sdf.py robots/qbmove_3r [more robot folders]
    .venv/bin/python robots/tools/mjcf_to_sdf.py --check robots/qbmove_3r   # exit 1 if stale

For every MJCF file named by a variant of <folder>/robot.toml this writes <stem>.sdf next to it
(SDFormat 1.9, what libsdformat 12 reads): an <sdf> root holding one <world> (gravity, time step)
with one <model>. The numbers are MuJoCo's compiled values (mujoco.MjModel.from_xml_path), so
inertias that MuJoCo infers from geoms are written out in full:

- links: one per MJCF body (same name), <pose> = the body's world pose at qpos0 (the model
  frame is the world frame); <inertial><pose> = body_ipos (no rotation) and ixx..izz = the full
  inertia tensor about the centre of mass in the link frame, R(body_iquat) diag(body_inertia) R^T.
- bodies' geoms -> <visual> (<collision> only for geoms with contype or conaffinity set); the
  world body's geoms go on a link "base" fixed to the world (joint "base_joint").
- joints: hinge -> revolute, slide -> prismatic; <pose> = jnt_pos in the child link's frame,
  <axis><xyz> = jnt_axis in that frame; <limit> = jnt_range or +-1e16 (SDF's "no limit");
  <dynamics>: damping = dof_damping, friction = dof_frictionloss, spring = jnt_stiffness about
  qpos_spring. Bodies without a joint are fixed to their parent.
- sites -> <frame>s attached to their link.

Deterministic: the same MuJoCo build and MJCF give byte-identical files.
"""

import argparse
import math
import os
import sys

import numpy as np

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

SDF_VERSION = "1.9"
BASE = "base"
BASE_JOINT = "base_joint"


def num(x):
    """Shortest round-trip text of a float; -0 and |x| < 1e-300 as 0."""
    x = float(x)
    if x == 0.0 or abs(x) < 1e-300:
        return "0"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def nums(values):
    return " ".join(num(v) for v in values)


def quat_to_mat(q):
    w, x, y, z = (float(v) for v in q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def mat_to_rpy(r):
    """SDF's roll, pitch, yaw of rotation matrix r = Rz(yaw) Ry(pitch) Rx(roll)."""
    pitch = -math.asin(max(-1.0, min(1.0, r[2, 0])))
    if abs(r[2, 0]) < 1 - 1e-12:
        roll = math.atan2(r[2, 1], r[2, 2])
        yaw = math.atan2(r[1, 0], r[0, 0])
    else:  # gimbal lock: put everything in yaw
        roll = 0.0
        yaw = math.atan2(-r[0, 1], r[1, 1])
    return roll, pitch, yaw


def pose(pos, quat):
    return nums(list(pos) + list(mat_to_rpy(quat_to_mat(quat))))


def _clean(a, scale):
    """Entries below 1e-12 * scale (round-off of MuJoCo's eigen-decomposition) as exact zeros."""
    a = np.array(a, dtype=float)
    a[np.abs(a) < 1e-12 * scale] = 0.0
    return a


def geometry(mujoco, m, g, ind):
    t, size = int(m.geom_type[g]), m.geom_size[g]
    T = mujoco.mjtGeom
    if t == T.mjGEOM_BOX:
        return [f"{ind}<box><size>{nums(2 * size)}</size></box>"]
    if t == T.mjGEOM_SPHERE:
        return [f"{ind}<sphere><radius>{num(size[0])}</radius></sphere>"]
    if t == T.mjGEOM_CYLINDER:
        return [
            f"{ind}<cylinder><radius>{num(size[0])}</radius>"
            f"<length>{num(2 * size[1])}</length></cylinder>"
        ]
    if t == T.mjGEOM_CAPSULE:
        return [
            f"{ind}<capsule><radius>{num(size[0])}</radius>"
            f"<length>{num(2 * size[1])}</length></capsule>"
        ]
    if t == T.mjGEOM_ELLIPSOID:
        return [f"{ind}<ellipsoid><radii>{nums(size)}</radii></ellipsoid>"]
    if t == T.mjGEOM_PLANE:
        return [f"{ind}<plane><normal>0 0 1</normal><size>{nums(2 * size[:2])}</size></plane>"]
    raise NotImplementedError(f"geom {m.geom(g).name!r}: type {t} has no SDF twin here")


def geoms(mujoco, m, body, ind):
    lines = []
    for g in range(m.ngeom):
        if int(m.geom_bodyid[g]) != body:
            continue
        name = m.geom(g).name or f"geom{g}"
        kinds = ["visual"]
        if m.geom_contype[g] or m.geom_conaffinity[g]:
            kinds.append("collision")
        for kind in kinds:
            lines.append(f'{ind}<{kind} name="{name}">')
            lines.append(f"{ind}  <pose>{pose(m.geom_pos[g], m.geom_quat[g])}</pose>")
            lines.append(f"{ind}  <geometry>")
            lines += geometry(mujoco, m, g, ind + "    ")
            lines.append(f"{ind}  </geometry>")
            if kind == "visual":
                rgba = " ".join(num(str(np.float32(c))) for c in m.geom_rgba[g])
                lines.append(
                    f"{ind}  <material><ambient>{rgba}</ambient>"
                    f"<diffuse>{rgba}</diffuse></material>"
                )
            lines.append(f"{ind}</{kind}>")
    return lines


def sdf_text(mjcf_path):
    """The SDF file (text) of one MJCF file."""
    import mujoco

    m = mujoco.MjModel.from_xml_path(mjcf_path)
    d = mujoco.MjData(m)
    d.qpos[:] = m.qpos0
    mujoco.mj_kinematics(m, d)
    name = (
        m.names[: m.names.index(b"\0")].decode() or os.path.splitext(os.path.basename(mjcf_path))[0]
    )
    world_geoms = any(int(b) == 0 for b in m.geom_bodyid)
    body_name = {0: BASE if world_geoms else "world"}
    for b in range(1, m.nbody):
        body_name[b] = m.body(b).name
        if not body_name[b] or body_name[b] in (BASE, "world"):
            raise ValueError(f"{mjcf_path}: body {b} needs a name other than 'base' / 'world'")
    hinge, slide = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
    if m.opt.integrator not in (
        int(mujoco.mjtIntegrator.mjINT_EULER),
        int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST),
    ):
        raise ValueError(f"{mjcf_path}: integrator {m.opt.integrator} (asr uses Euler)")

    rel = os.path.basename(mjcf_path)
    L = [
        '<?xml version="1.0"?>',
        f"<!-- Generated by robots/tools/mjcf_to_sdf.py from {rel} (MuJoCo's compiled model):",
        "     do not edit; change the MJCF file and run the tool again. SI units, radians.",
        "     One world (gravity, MJCF time step) holding one model; the model frame is the",
        "     world frame, link poses are the bodies' world poses at q = 0. -->",
        f'<sdf version="{SDF_VERSION}">',
        f'  <world name="{name}_world">',
        f"    <gravity>{nums(m.opt.gravity)}</gravity>",
        '    <physics name="asr" type="dart">',
        f"      <max_step_size>{num(m.opt.timestep)}</max_step_size>",
        "    </physics>",
        f'    <model name="{name}">',
        "      <pose>0 0 0 0 0 0</pose>",
    ]
    if world_geoms:
        L += [
            f'      <link name="{BASE}">',
            "        <!-- the MJCF world body's geoms; fixed to the world, "
            "its inertia is unused -->",
            "        <pose>0 0 0 0 0 0</pose>",
        ]
        L += geoms(mujoco, m, 0, "        ")
        L += [
            "      </link>",
            f'      <joint name="{BASE_JOINT}" type="fixed">',
            "        <parent>world</parent>",
            f"        <child>{BASE}</child>",
            "      </joint>",
        ]
    for b in range(1, m.nbody):
        bname = body_name[b]
        L.append(f'      <link name="{bname}">')
        L.append(f"        <pose>{pose(d.xpos[b], d.xquat[b])}</pose>")
        r = quat_to_mat(m.body_iquat[b])
        inertia = _clean(r @ np.diag(m.body_inertia[b]) @ r.T, float(np.max(m.body_inertia[b])))
        L += [
            "        <inertial>",
            f"          <pose>{nums(m.body_ipos[b])} 0 0 0</pose>",
            f"          <mass>{num(m.body_mass[b])}</mass>",
            "          <inertia>",
            f"            <ixx>{num(inertia[0, 0])}</ixx><ixy>{num(inertia[0, 1])}</ixy>"
            f"<ixz>{num(inertia[0, 2])}</ixz>",
            f"            <iyy>{num(inertia[1, 1])}</iyy><iyz>{num(inertia[1, 2])}</iyz>",
            f"            <izz>{num(inertia[2, 2])}</izz>",
            "          </inertia>",
            "        </inertial>",
        ]
        L += geoms(mujoco, m, b, "        ")
        L.append("      </link>")
        joints = [j for j in range(m.njnt) if int(m.jnt_bodyid[j]) == b]
        parent = body_name[int(m.body_parentid[b])]
        if not joints:
            L += [
                f'      <joint name="{bname}_fixed" type="fixed">',
                f"        <parent>{parent}</parent>",
                f"        <child>{bname}</child>",
                "      </joint>",
            ]
            continue
        if len(joints) > 1 or int(m.jnt_type[joints[0]]) not in (hinge, slide):
            raise NotImplementedError(
                f"{mjcf_path}: body {bname!r}: only one hinge or slide "
                "joint per body has an SDF twin here"
            )
        j = joints[0]
        dof = int(m.jnt_dofadr[j])
        if m.dof_armature[dof] != 0:
            raise NotImplementedError(
                f"{mjcf_path}: joint {m.joint(j).name!r}: armature has no SDF twin"
            )
        kind = "revolute" if int(m.jnt_type[j]) == hinge else "prismatic"
        lower, upper = m.jnt_range[j] if m.jnt_limited[j] else (-1e16, 1e16)
        q0 = float(m.qpos0[m.jnt_qposadr[j]])
        if q0 != 0.0:
            raise NotImplementedError(f"{mjcf_path}: joint {m.joint(j).name!r}: ref != 0")
        L += [
            f'      <joint name="{m.joint(j).name}" type="{kind}">',
            f"        <parent>{parent}</parent>",
            f"        <child>{bname}</child>",
            f"        <pose>{nums(m.jnt_pos[j])} 0 0 0</pose>",
            "        <axis>",
            f"          <xyz>{nums(m.jnt_axis[j])}</xyz>",
            "          <limit>",
            f"            <lower>{num(lower)}</lower><upper>{num(upper)}</upper>",
            "          </limit>",
            "          <dynamics>",
            f"            <damping>{num(m.dof_damping[dof])}</damping>",
            f"            <friction>{num(m.dof_frictionloss[dof])}</friction>",
            f"            <spring_reference>{num(m.qpos_spring[m.jnt_qposadr[j]])}"
            "</spring_reference>",
            f"            <spring_stiffness>{num(m.jnt_stiffness[j])}</spring_stiffness>",
            "          </dynamics>",
            "        </axis>",
            "      </joint>",
        ]
    for s in range(m.nsite):
        b = int(m.site_bodyid[s])
        L += [
            f'      <frame name="{m.site(s).name or f"site{s}"}" attached_to="{body_name[b]}">',
            f'        <pose relative_to="{body_name[b]}">'
            f"{pose(m.site_pos[s], m.site_quat[s])}</pose>",
            "      </frame>",
        ]
    L += ["    </model>", "  </world>", "</sdf>", ""]
    return "\n".join(L)


def mjcf_files(folder):
    """The MJCF files named by the variants of folder/robot.toml, in order, once each."""
    with open(os.path.join(folder, "robot.toml"), "rb") as f:
        toml = tomllib.load(f)
    files = []
    for variant in toml["variants"].values():
        if variant["mjcf"] not in files:
            files.append(variant["mjcf"])
    return files


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", help="robot folders (each with a robot.toml)")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a committed .sdf differs"
    )
    args = parser.parse_args(argv)
    stale = 0
    for folder in args.folders:
        for mjcf in mjcf_files(folder):
            out = os.path.join(folder, os.path.splitext(mjcf)[0] + ".sdf")
            text = sdf_text(os.path.join(folder, mjcf))
            if args.check:
                old = open(out, encoding="utf-8").read() if os.path.isfile(out) else None
                if old != text:
                    print(f"stale: {out}")
                    stale += 1
            else:
                with open(out, "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)
                print(f"wrote {out}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
