"""Robots as URDF: export an asr robot (MJCF links + asr actuators) for ROS and Gazebo, and read
the actuators back.

export_robot() writes, from MuJoCo's compiled model of the robot's MJCF file:

- `<robot>.urdf`: one link per MuJoCo body, with its mass, centre of mass and full inertia tensor
  in the link frame (MuJoCo's principal inertia `body_inertia` rotated by `body_iquat`; no
  roll-pitch-yaw for inertias, which would hit gimbal lock), joints with origin, axis, limits and
  dynamics (damping, frictionloss -> friction), simple collision / visual shapes, and per actuated
  joint a `<gazebo><plugin>` block with the tags of the compliant-actuator toolbox of
  [Mengacci2021] (joint, operation_mode, pub_eltau, pub_state, sub_ext_tau, spring_*, max_def,
  mot_*, ctrl_*) plus every other asr parameter of the joint as `asr_<name>` and the asr model
  as `asr_model`;
- `<robot>.urdf.xacro`: the same robot, each actuator's block in a xacro macro;
- `<robot>_plugin_manager.yaml`: the toolbox's Plugin Manager configuration (joints_number,
  joints_name, ref1_topic_name, ref2_topic_name, T_sample = the MJCF time step).

import_robot() reads the plugin blocks of such a URDF back into asr.RobotJoint entries (model,
mode and every parameter, floats written with repr so they come back bit for bit).

What URDF cannot express is refused with a ValueError naming the body and the reason: free and
ball joints (a floating base, a free object), bodies with more than one joint, and closed chains
(MJCF equality constraints). See docs/ros.md, "Robots as URDF".
"""

import math
import os
import xml.etree.ElementTree as ET

import numpy as np

from asr.models import get_model
from asr.robot import Robot, RobotJoint, load_robot

PLUGIN_FILE = "libCompliantActuatorPlugin.so"
ROOT_LINK = "world"
_FLAG_TAGS = ("pub_eltau", "pub_state", "sub_ext_tau")


# ---------------------------------------------------------------- parameter <-> tag names


def param_tags(model):
    """{asr parameter name: plugin tag} of every parameter of `model` (an asr model name): the
    model's own spring parameters as spring_<name> (max_def as max_def), the motor group as
    mot_<name> (motor_J -> mot_J), the controller group as ctrl_<name>, every other parameter
    as asr_<name>."""
    spec = get_model(model).spec
    tags = {}
    own = {p.name for p in spec.params}
    for p in spec.all_params:
        if p.name == "max_def":
            tag = "max_def"
        elif p.name in own:
            tag = "spring_" + p.name
        elif p.group == "motor":
            tag = "mot_" + p.name.removeprefix("motor_")
        elif p.group == "controller":
            tag = "ctrl_" + p.name
        else:
            tag = "asr_" + p.name
        tags[p.name] = tag
    if len(set(tags.values())) != len(tags):  # a user model whose names collide
        tags = {name: "asr_" + name for name in tags}
    return tags


def joint_params(joint):
    """{name: value} of every asr parameter of a RobotJoint: the model's defaults overridden by
    the joint's params."""
    spec = get_model(joint.model).spec
    values = spec.defaults()
    values.update(joint.params)
    return {name: float(v) for name, v in values.items()}


def _num(x):
    """repr of a float: the shortest text that reads back to the same double ('inf' too)."""
    return repr(float(x) + 0.0)  # + 0.0: no '-0.0'


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
    e = ET.SubElement(parent, "origin", xyz=" ".join(_num(v) for v in xyz))
    e.set("rpy", " ".join(_num(v) for v in (mat_rpy(rot) if rot is not None else (0, 0, 0))))
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
        shape = ("box", {"size": " ".join(_num(2 * s) for s in size)})
    elif t == T.mjGEOM_SPHERE:
        shape = ("sphere", {"radius": _num(size[0])})
    elif t in (T.mjGEOM_CYLINDER, T.mjGEOM_CAPSULE):
        length = 2 * size[1] + (2 * size[0] if t == T.mjGEOM_CAPSULE else 0.0)
        shape = ("cylinder", {"radius": _num(size[0]), "length": _num(length)})
    else:
        return None
    e = ET.SubElement(link, kind)
    _origin(e, model.geom_pos[g] - off, _quat_mat(model.geom_quat[g]))
    ET.SubElement(ET.SubElement(e, "geometry"), shape[0], shape[1])
    if kind == "visual":
        mat = ET.SubElement(e, "material", name=f"rgba_{g}")
        ET.SubElement(mat, "color", rgba=" ".join(f"{c:.7g}" for c in model.geom_rgba[g]))
    return e


def _plugin(parent, rj):
    """The toolbox's <gazebo><plugin> block of actuated joint rj."""
    gz = ET.SubElement(parent, "gazebo")
    pl = ET.SubElement(gz, "plugin", name=f"{rj.name}_compliant_actuator", filename=PLUGIN_FILE)
    ET.SubElement(pl, "joint").text = rj.name
    ET.SubElement(pl, "operation_mode").text = str(int(rj.mode))
    for tag in _FLAG_TAGS:
        ET.SubElement(pl, tag).text = "true"
    ET.SubElement(pl, "asr_model").text = rj.model
    tags = param_tags(rj.model)
    for name, value in joint_params(rj).items():
        ET.SubElement(pl, tags[name]).text = _num(value)
    return gz


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
            ET.SubElement(inertial, "mass", value=_num(model.body_mass[b]))
            R = _quat_mat(model.body_iquat[b])
            I = R @ np.diag(model.body_inertia[b]) @ R.T
            ET.SubElement(
                inertial,
                "inertia",
                ixx=_num(I[0, 0]),
                ixy=_num(I[0, 1]),
                ixz=_num(I[0, 2]),
                iyy=_num(I[1, 1]),
                iyz=_num(I[1, 2]),
                izz=_num(I[2, 2]),
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
        ET.SubElement(joint, "axis", xyz=" ".join(_num(v) for v in model.jnt_axis[j]))
        rj = actuated.get(jname)
        params = joint_params(rj) if rj else {}
        effort = params.get("tau_max", 0.0)
        velocity = params.get("vel_max", math.inf)
        if not math.isfinite(velocity):
            velocity = params.get("link_vel_max", 0.0)
        velocity = velocity if math.isfinite(velocity) else 0.0
        attrs = {"effort": _num(effort), "velocity": _num(velocity)}
        if kind != "continuous":
            lo, hi = model.jnt_range[j] if limited else (-math.inf, math.inf)
            if not limited:  # an unlimited slide: URDF needs numbers
                lo, hi = -1e10, 1e10
            attrs.update(lower=_num(lo), upper=_num(hi))
        ET.SubElement(joint, "limit", attrs)
        dof = int(model.jnt_dofadr[j])
        ET.SubElement(
            joint,
            "dynamics",
            damping=_num(model.dof_damping[dof]),
            friction=_num(model.dof_frictionloss[dof]),
        )
        if rj:
            plugins.append((jname, _plugin(root, rj)))
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


def _yaml(robot, ref_topics):
    names = ", ".join(rj.name for rj in robot.joints)
    return (
        f"# Plugin Manager of the compliant-actuator toolbox [Mengacci2021] for {robot.name} "
        f"({robot.variant}), written by asr\n"
        f"joints_number: {len(robot.joints)}\n"
        f"joints_name: [{names}]\n"
        f"ref1_topic_name: {ref_topics[0]}\n"
        f"ref2_topic_name: {ref_topics[1]}\n"
        f"T_sample: {_num(robot.mj_model().opt.timestep)}\n"
    )


def export_robot(robot, variant=None, out_dir=None, *, ref_topics=("reference_1", "reference_2")):
    """Write `<name>.urdf`, `<name>.urdf.xacro` and `<name>_plugin_manager.yaml` of `robot` (a
    robot name, a robot folder or an asr.Robot; `variant` for names and folders) into `out_dir`
    (created if missing). Returns {"urdf": path, "xacro": path, "yaml": path}.

    `ref_topics`: the Plugin Manager's ref1_topic_name / ref2_topic_name, the robot-level
    reference topics (one value per joint) that asr.ros.export's nodes publish.
    Joint limits are the MJCF ranges (revolute; an unlimited hinge is continuous); asr's
    pos_min / pos_max limit the motors, not the link (the link moves past them by the spring's
    deflection), so they go into the plugin block as mot_pos_min / mot_pos_max only. <limit>
    effort is the motor torque limit tau_max, velocity vel_max (link_vel_max when unlimited).

    ValueError when the robot is not a fixed-base tree (free or ball joints, several joints in
    one body, equality constraints), naming the body; FileNotFoundError for an unknown robot;
    NotADirectoryError when out_dir is a file."""
    if out_dir is None:
        raise TypeError("out_dir: required, the folder to write the URDF files into")
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir: expected a folder path, got {type(out_dir).__name__}")
    if (
        not isinstance(ref_topics, (tuple, list))
        or len(ref_topics) != 2
        or not all(isinstance(t, str) and t and not any(c.isspace() for c in t) for t in ref_topics)
    ):
        raise ValueError(f"ref_topics: expected two topic names without spaces, got {ref_topics!r}")
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
        f.write(_yaml(robot, ref_topics))
    return paths


# ---------------------------------------------------------------- back


def import_robot(urdf_path):
    """The actuated joints of a URDF written by export_robot: a tuple of asr.RobotJoint (name,
    model, mode, every parameter) in the file's order. ValueError naming the plugin block and
    tag for a block asr cannot read (no asr_model, unknown model or tag, a value out of range)."""
    if not isinstance(urdf_path, (str, os.PathLike)):
        raise TypeError(f"urdf_path: expected a file path, got {type(urdf_path).__name__}")
    try:
        root = ET.parse(urdf_path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"urdf_path: {os.fspath(urdf_path)!r} is not XML: {exc}") from None
    if root.tag != "robot":
        raise ValueError(f"urdf_path: root element <{root.tag}>, expected <robot>")
    joints = []
    for pl in root.iterfind("gazebo/plugin"):
        if pl.get("filename") != PLUGIN_FILE:
            continue
        where = f"plugin {pl.get('name')!r}"
        fields = {c.tag: (c.text or "").strip() for c in pl}
        for tag in ("joint", "operation_mode", "asr_model"):
            if tag not in fields:
                raise ValueError(f"{where}: missing <{tag}> (not written by asr.ros.export_robot)")
        model = fields["asr_model"]
        get_model(model)
        tags = {tag: name for name, tag in param_tags(model).items()}
        spec = get_model(model).spec
        params = {}
        for tag, text in fields.items():
            if tag in ("joint", "operation_mode", "asr_model") + _FLAG_TAGS:
                continue
            if tag not in tags:
                raise ValueError(
                    f"{where}: unknown tag <{tag}> for model {model!r}; valid: {', '.join(tags)}"
                )
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{where}: <{tag}>: expected a number, got {text!r}") from None
            spec.param(tags[tag]).check(value, f"{where}: ")
            params[tags[tag]] = value
        try:
            mode = int(fields["operation_mode"])
        except ValueError:
            raise ValueError(
                f"{where}: <operation_mode>: expected 0-6, got {fields['operation_mode']!r}"
            ) from None
        if not 0 <= mode <= 6:
            raise ValueError(f"{where}: <operation_mode>: got {mode}, valid modes 0-6")
        joints.append(RobotJoint(fields["joint"], model, mode, params))
    return tuple(joints)


__all__ = [
    "export_robot",
    "import_robot",
    "check_exportable",
    "param_tags",
    "joint_params",
    "mat_rpy",
    "rpy_mat",
]
