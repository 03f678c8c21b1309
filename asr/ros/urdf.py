"""Robots as URDF: export an asr robot (MJCF links + asr actuators) for ROS and Gazebo, and read
the actuators back.

export_robot() writes, from MuJoCo's compiled model of the robot's MJCF file:

- `<robot>.urdf`: one link per MuJoCo body, with its mass, centre of mass and full inertia tensor
  in the link frame (MuJoCo's principal inertia `body_inertia` rotated by `body_iquat`; no
  roll-pitch-yaw for inertias, which would hit gimbal lock), joints with origin, axis, limits and
  dynamics (damping, frictionloss -> friction), simple collision / visual shapes, and per actuated
  joint a `<gazebo><plugin>` block of the compliant-actuator toolbox of [Mengacci2021]: the
  toolbox's plugin file for the asr model (libqbmove_plugin.so, libsea_plugin.so, ...) and every
  tag that plugin reads (asr.ros.urdf_tags), with asr's values, plus asr_model and asr_<name> for
  the asr parameters the toolbox has no tag for;
- `<robot>.urdf.xacro`: the same robot, each actuator's block in a xacro macro;
- `<robot>_plugin_manager.yaml`: the toolbox's Plugin Manager configuration (namespace, T_sample =
  the MJCF time step, joints_number, joints_name, ref1_topic_name, ref2_topic_name).

import_robot() reads the plugin blocks of such a URDF, or of one written for the toolbox, into
asr.RobotJoint entries (floats written with repr come back bit for bit; missing tags take the
toolbox's defaults); robot_from_urdf() makes an asr.Robot of a URDF that asr.Sim runs.

What URDF cannot express is refused with a ValueError naming the body and the reason: free and
ball joints (a floating base, a free object), bodies with more than one joint, and closed chains
(MJCF equality constraints). See docs/ros.md, "Robots as URDF".
"""

import json
import math
import os
import re
import xml.etree.ElementTree as ET

import numpy as np

from asr.robots.robot import Robot, load_robot
from asr.ros.node_core import DEFAULT_NAMESPACE, MODE_COMMANDS
from asr.ros.urdf_tags import (
    ASR_ONLY_FILE,
    FILE_MODELS,
    MODEL_TAG,
    joint_params,
    num,
    plugin_block,
    read_block,
)

ROOT_LINK = "world"
# URDF limits are numbers: an unlimited slide, effort or velocity is written as this
_UNLIMITED = 1e10


# ---------------------------------------------------------------- rotations


def _quat_mat(q):
    w, x, y, z = (float(v) for v in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def mat_rpy(m):
    """URDF roll, pitch, yaw of a rotation matrix (m = Rz(yaw) Ry(pitch) Rx(roll)); at gimbal
    lock (pitch = +-pi/2) roll is 0 and yaw takes the whole rotation about z, so the matrix is
    still reproduced."""
    m = np.asarray(m, dtype=float)
    sp = -m[2, 0]
    if abs(sp) < 1.0 - 1e-12:
        pitch = math.asin(max(-1.0, min(1.0, sp)))
        roll = math.atan2(m[2, 1], m[2, 2])
        yaw = math.atan2(m[1, 0], m[0, 0])
    else:
        pitch = math.copysign(math.pi / 2, sp)
        roll = 0.0
        yaw = math.atan2(-m[0, 1], m[1, 1])
    return roll, pitch, yaw


def rpy_mat(roll, pitch, yaw):
    """Rz(yaw) Ry(pitch) Rx(roll), URDF's convention."""
    cr, sr, cp, sp, cy, sy = (
        math.cos(roll),
        math.sin(roll),
        math.cos(pitch),
        math.sin(pitch),
        math.cos(yaw),
        math.sin(yaw),
    )
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def _origin(parent, xyz, rot=None):
    e = ET.SubElement(parent, "origin", xyz=" ".join(num(v) for v in xyz))
    e.set("rpy", " ".join(num(v) for v in (mat_rpy(rot) if rot is not None else (0, 0, 0))))
    return e


# ---------------------------------------------------------------- the robot


def _resolve(robot, variant):
    if isinstance(robot, Robot):
        if variant is not None and variant != robot.variant:
            raise ValueError(
                f"variant: got {variant!r} for a Robot already loaded in variant "
                f"{robot.variant!r}; pass the robot's name to choose a variant"
            )
        return robot
    if not isinstance(robot, (str, os.PathLike)):
        raise TypeError(
            f"robot: expected a robot name, a robot folder or an asr.Robot, got "
            f"{type(robot).__name__}"
        )
    return load_robot(robot, variant)


def _body_names(model):
    names = []
    for b in range(model.nbody):
        name = model.body(b).name or f"body{b}"
        names.append(ROOT_LINK if b == 0 else name)
    if len(set(names)) != len(names):
        raise ValueError(
            "robot: MuJoCo body names are not unique (a body named "
            f"{ROOT_LINK!r} or 'body<k>' clashes); URDF link names must be"
        )
    return names


def check_exportable(robot, model=None):
    """ValueError naming the body and the reason when the robot's MJCF model cannot be written
    as a fixed-base URDF tree (free or ball joints, more than one joint in a body, equality
    constraints closing a chain); None otherwise."""
    import mujoco

    model = model if model is not None else robot.mj_model()
    where = f"robot {robot.name!r} ({robot.variant})"
    kinds = {int(mujoco.mjtJoint.mjJNT_FREE): "free", int(mujoco.mjtJoint.mjJNT_BALL): "ball"}
    for j in range(model.njnt):
        kind = kinds.get(int(model.jnt_type[j]))
        if kind:
            body = model.body(int(model.jnt_bodyid[j])).name
            raise ValueError(
                f"{where}: body {body!r} has a {kind} joint "
                f"{model.joint(j).name!r}; URDF describes a fixed-base tree of "
                "hinge and slide joints only (no floating base, no free objects)"
            )
    for b in range(1, model.nbody):
        if model.body_jntnum[b] > 1:
            raise ValueError(
                f"{where}: body {model.body(b).name!r} has "
                f"{int(model.body_jntnum[b])} joints; a URDF link has one parent "
                "joint"
            )
    if model.neq:
        raise ValueError(
            f"{where}: the MJCF model has {model.neq} equality constraint(s), "
            "e.g. a closed chain; URDF describes trees only"
        )


def _geom(link, model, g, off, kind):
    """A <visual> or <collision> of geom g (box, sphere, cylinder, capsule as a cylinder); None
    for other types (planes, meshes, ...)."""
    import mujoco

    t = int(model.geom_type[g])
    size = model.geom_size[g]
    T = mujoco.mjtGeom
    if t == T.mjGEOM_BOX:
        shape = ("box", {"size": " ".join(num(2 * s) for s in size)})
    elif t == T.mjGEOM_SPHERE:
        shape = ("sphere", {"radius": num(size[0])})
    elif t in (T.mjGEOM_CYLINDER, T.mjGEOM_CAPSULE):
        length = 2 * size[1] + (2 * size[0] if t == T.mjGEOM_CAPSULE else 0.0)
        shape = ("cylinder", {"radius": num(size[0]), "length": num(length)})
    else:
        return None
    e = ET.SubElement(link, kind)
    _origin(e, model.geom_pos[g] - off, _quat_mat(model.geom_quat[g]))
    ET.SubElement(ET.SubElement(e, "geometry"), shape[0], shape[1])
    if kind == "visual":
        mat = ET.SubElement(e, "material", name=f"rgba_{g}")
        ET.SubElement(mat, "color", rgba=" ".join(f"{c:.7g}" for c in model.geom_rgba[g]))
    return e


def _limits(rj, model, j):
    """<limit> effort (N m) and velocity (rad/s) of MuJoCo joint j, driven by asr joint rj (None:
    a passive joint, 0 and 0). Modes 0 and 1 drive the link directly: effort is the link torque
    limit link_tau_max, velocity link_vel_max; the other modes drive a motor: effort tau_max,
    velocity vel_max (link_vel_max when unlimited). An unlimited effort is the MJCF joint's
    actuatorfrcrange when it declares one; what stays unlimited is written as 1e10."""
    if rj is None:
        return {"effort": num(0.0), "velocity": num(0.0)}
    params = joint_params(rj)
    direct = rj.mode in (0, 1)
    effort = params["link_tau_max"] if direct else params["tau_max"]
    if not math.isfinite(effort) and model.jnt_actfrclimited[j]:
        effort = float(np.abs(model.jnt_actfrcrange[j]).max())
    velocity = params["link_vel_max"] if direct else params["vel_max"]
    if not math.isfinite(velocity):
        velocity = params["link_vel_max"]
    return {
        "effort": num(effort if math.isfinite(effort) else _UNLIMITED),
        "velocity": num(velocity if math.isfinite(velocity) else _UNLIMITED),
    }


def _urdf_tree(robot, model):
    """(ElementTree root of the URDF, list of (joint name, plugin element))."""
    import mujoco

    check_exportable(robot, model)
    names = _body_names(model)
    root = ET.Element("robot", name=robot.name)
    # MuJoCo's own URDF reader: keep every link a body (no merging of fixed links) and take the
    # inertias as written
    ET.SubElement(root, "mujoco").append(
        ET.Element(
            "compiler",
            fusestatic="false",
            discardvisual="true",
            balanceinertia="false",
            inertiafromgeom="false",
            strippath="false",
        )
    )
    off = np.zeros((model.nbody, 3))  # link frame = body frame moved to the joint's anchor
    for b in range(1, model.nbody):
        if model.body_jntnum[b] == 1:
            off[b] = model.jnt_pos[int(model.body_jntadr[b])]
    actuated = {rj.name: rj for rj in robot.joints}
    plugins = []
    for b in range(model.nbody):
        link = ET.SubElement(root, "link", name=names[b])
        if b > 0 and model.body_mass[b] > 0:
            inertial = ET.SubElement(link, "inertial")
            _origin(inertial, model.body_ipos[b] - off[b])
            ET.SubElement(inertial, "mass", value=num(model.body_mass[b]))
            R = _quat_mat(model.body_iquat[b])
            I = R @ np.diag(model.body_inertia[b]) @ R.T
            ET.SubElement(
                inertial,
                "inertia",
                ixx=num(I[0, 0]),
                ixy=num(I[0, 1]),
                ixz=num(I[0, 2]),
                iyy=num(I[1, 1]),
                iyz=num(I[1, 2]),
                izz=num(I[2, 2]),
            )
        for g in range(model.ngeom):
            if int(model.geom_bodyid[g]) == b:
                _geom(link, model, g, off[b], "visual")
                if model.geom_contype[g] or model.geom_conaffinity[g]:
                    _geom(link, model, g, off[b], "collision")
    for b in range(1, model.nbody):
        p = int(model.body_parentid[b])
        R = _quat_mat(model.body_quat[b])
        xyz = model.body_pos[b] + R @ off[b] - off[p]
        if model.body_jntnum[b] == 0:
            j = None
            joint = ET.SubElement(root, "joint", name=f"{names[b]}_fixed", type="fixed")
        else:
            j = int(model.body_jntadr[b])
            jname = model.joint(j).name or f"joint{j}"
            slide = int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_SLIDE)
            limited = bool(model.jnt_limited[j])
            kind = "prismatic" if slide else "revolute" if limited else "continuous"
            joint = ET.SubElement(root, "joint", name=jname, type=kind)
        _origin(joint, xyz, R)
        ET.SubElement(joint, "parent", link=names[p])
        ET.SubElement(joint, "child", link=names[b])
        if j is None:
            continue
        ET.SubElement(joint, "axis", xyz=" ".join(num(v) for v in model.jnt_axis[j]))
        rj = actuated.get(jname)
        attrs = _limits(rj, model, j)
        if kind != "continuous":
            lo, hi = model.jnt_range[j] if limited else (-math.inf, math.inf)
            if not limited:  # an unlimited slide: URDF needs numbers
                lo, hi = -_UNLIMITED, _UNLIMITED
            attrs.update(lower=num(lo), upper=num(hi))
        ET.SubElement(joint, "limit", attrs)
        dof = int(model.jnt_dofadr[j])
        ET.SubElement(
            joint,
            "dynamics",
            damping=num(model.dof_damping[dof]),
            friction=num(model.dof_frictionloss[dof]),
        )
        if rj:
            plugins.append((jname, plugin_block(root, rj)))
    return root, plugins


def _write(root, path):
    ET.indent(root, "  ")
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _xacro(root, plugins, robot):
    """The URDF with each actuator's <gazebo> block in a xacro macro called once."""
    ns = "http://www.ros.org/wiki/xacro"
    ET.register_namespace("xacro", ns)
    out = ET.Element("robot", name=robot.name)
    blocks = {id(el): jname for jname, el in plugins}
    for jname, el in plugins:
        macro = ET.SubElement(out, f"{{{ns}}}macro", name=f"{jname}_actuator", params="")
        macro.append(el)
    for child in root:
        if id(child) in blocks:
            ET.SubElement(out, f"{{{ns}}}{blocks[id(child)]}_actuator")
        else:
            out.append(child)
    return out


def _plugin_topic(mode, targets):
    """The toolbox plugin's command topic (CompliantActuatorPlugin::topicNames) of the first of
    `targets` in `mode`, or "disabled", its name for a reference the mode does not use."""
    for topic, target in MODE_COMMANDS[mode].items():
        if target in targets:
            return topic
    return "disabled"


# the toolbox plugin's command topics <ns>/<joint>/<topic> of reference 1 and 2 by operation mode:
# the Plugin Manager's ref1_topic_name / ref2_topic_name
MODE_TOPICS = {
    mode: (_plugin_topic(mode, ("ref1",)), _plugin_topic(mode, ("ref2", "preset")))
    for mode in MODE_COMMANDS
}
_ROS_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*")


def _yaml(robot, namespace, ref_topics):
    """The Plugin Manager's configuration (its keys: namespace, T_sample, joints_number,
    joints_name, ref1_topic_name, ref2_topic_name). The manager subscribes to
    /<namespace>/reference_1 and /reference_2 (std_msgs/Float64MultiArray, one value per joint)
    and publishes joint k's values on /<namespace>/<joint k><ref1_topic_name[k]> (and ref2): the
    command topics of each joint's plugin in its operation mode, or `ref_topics` for all."""
    topics = [ref_topics or MODE_TOPICS[rj.mode] for rj in robot.joints]

    def seq(items):
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    return (
        f"# Plugin Manager of the compliant-actuator toolbox [Mengacci2021] for {robot.name} "
        f"({robot.variant}), written by asr\n"
        f"namespace: {json.dumps(namespace)}\n"
        f"T_sample: {num(robot.mj_model().opt.timestep)}\n"
        f"joints_number: {len(robot.joints)}\n"
        f"joints_name: {seq(rj.name for rj in robot.joints)}\n"
        f"ref1_topic_name: {seq('/' + t[0] for t in topics)}\n"
        f"ref2_topic_name: {seq('/' + t[1] for t in topics)}\n"
    )


def _check_topics(namespace, ref_topics):
    if namespace not in (None, "") and (
        not isinstance(namespace, str) or not _ROS_NAME.fullmatch(namespace)
    ):
        raise ValueError(
            f"namespace: got {namespace!r}, valid: '' (the root) or a ROS name like 'robot1' "
            "(letters, digits, _, parts joined by /)"
        )
    if ref_topics is not None and (
        not isinstance(ref_topics, (tuple, list))
        or len(ref_topics) != 2
        or not all(isinstance(t, str) and _ROS_NAME.fullmatch(t) for t in ref_topics)
    ):
        raise ValueError(
            f"ref_topics: expected None or two topic names like 'reference_1', got {ref_topics!r}"
        )


def export_robot(robot, variant=None, out_dir=None, *, namespace=None, ref_topics=None):
    """Write `<name>.urdf`, `<name>.urdf.xacro` and `<name>_plugin_manager.yaml` of `robot` (a
    robot name, a robot folder or an asr.Robot; `variant` for names and folders) into `out_dir`
    (created if missing). Returns {"urdf": path, "xacro": path, "yaml": path}.

    `namespace`: the Plugin Manager's namespace (default: asr.ros.node_core.DEFAULT_NAMESPACE,
    the one `asr ros` serves by default: none, the root); it reads the robot-level references on
    /<namespace>/reference_1 and /reference_2 (roscpp drops the empty part: /reference_1).
    `ref_topics`: the per-joint topics it forwards them to, (ref1, ref2) for every joint;
    default: each joint's toolbox command topics in its operation mode (MODE_TOPICS).
    Plugin blocks: see asr.ros.urdf_tags (the toolbox's plugin file and tags, asr_ tags for the
    rest). Joint limits are the MJCF ranges (revolute; an unlimited hinge is continuous); asr's
    pos_min / pos_max limit the motors, not the link (the link moves past them by the spring's
    deflection), so they go into the plugin block as mot_minPos / mot_maxPos only. <limit>: see
    _limits (modes 0 / 1: link_tau_max, else tau_max).

    ValueError when the robot is not a fixed-base tree (free or ball joints, several joints in
    one body, equality constraints), naming the body; FileNotFoundError for an unknown robot;
    NotADirectoryError when out_dir is a file."""
    if out_dir is None:
        raise TypeError("out_dir: required, the folder to write the URDF files into")
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir: expected a folder path, got {type(out_dir).__name__}")
    _check_topics(namespace, ref_topics)
    robot = _resolve(robot, variant)
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise NotADirectoryError(f"out_dir: {out_dir!r} exists and is not a folder")
    model = robot.mj_model()
    root, plugins = _urdf_tree(robot, model)
    os.makedirs(out_dir, exist_ok=True)
    paths = {
        "urdf": os.path.join(out_dir, f"{robot.name}.urdf"),
        "xacro": os.path.join(out_dir, f"{robot.name}.urdf.xacro"),
        "yaml": os.path.join(out_dir, f"{robot.name}_plugin_manager.yaml"),
    }
    _write(root, paths["urdf"])
    _write(_xacro(root, plugins, robot), paths["xacro"])
    with open(paths["yaml"], "w", encoding="utf-8") as f:
        f.write(_yaml(robot, DEFAULT_NAMESPACE if namespace is None else namespace, ref_topics))
    return paths


# ---------------------------------------------------------------- back


def _is_actuator(pl):
    file = pl.get("filename", "")
    return file in FILE_MODELS or file.startswith(ASR_ONLY_FILE) or pl.find(MODEL_TAG) is not None


def import_robot(urdf_path):
    """The actuated joints of a URDF: a tuple of asr.RobotJoint (name, model, mode, every
    parameter), one per <gazebo><plugin> block of a toolbox actuator (libqbmove_plugin.so,
    libsea_plugin.so, libbavs_plugin.so, libawas_ii_plugin.so) or of asr (asr_model), in the
    file's order; other plugins are skipped. Written by export_robot, every parameter comes back
    bit for bit; written for the toolbox, missing tags take the toolbox's defaults
    (asr.ros.urdf_tags). ValueError naming the plugin block and tag for a block asr cannot read."""
    if not isinstance(urdf_path, (str, os.PathLike)):
        raise TypeError(f"urdf_path: expected a file path, got {type(urdf_path).__name__}")
    try:
        root = ET.parse(urdf_path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"urdf_path: {os.fspath(urdf_path)!r} is not XML: {exc}") from None
    if root.tag != "robot":
        raise ValueError(f"urdf_path: root element <{root.tag}>, expected <robot>")
    joints = [read_block(pl) for pl in root.iterfind("gazebo/plugin") if _is_actuator(pl)]
    names = [j.name for j in joints]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"urdf_path: joint {name!r} has {names.count(name)} plugin blocks")
    return tuple(joints)


def robot_from_urdf(urdf_path):
    """An asr.Robot of a URDF file (variant "urdf"): MuJoCo reads its links and joints, its
    plugin blocks give the actuators (import_robot), so asr.Sim(robot_from_urdf(path)) runs it.
    The URDF's folder is the robot's folder (meshes must lie inside it). ValueError for a plugin
    block asr cannot read or a joint it names that is not a hinge or slide joint of the URDF."""
    joints = import_robot(urdf_path)
    path = os.path.abspath(os.fspath(urdf_path))
    root = ET.parse(path).getroot()
    robot = Robot(
        name=root.get("name") or os.path.splitext(os.path.basename(path))[0],
        variant="urdf",
        description=f"imported from {os.path.basename(path)}",
        folder=os.path.dirname(path),
        mjcf=path,
        joints=joints,
    )
    robot.mj_model()  # RobotFileError / ValueError now, naming a joint the URDF lacks
    return robot


__all__ = [
    "export_robot",
    "import_robot",
    "robot_from_urdf",
    "check_exportable",
    "MODE_TOPICS",
    "mat_rpy",
    "rpy_mat",
]
