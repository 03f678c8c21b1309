"""A robot of robots/ as one MJCF file driven by asr's MuJoCo plugin (asr.mujoco.plugin): plain
MuJoCo (mj_step, the viewer, mujoco.rollout) then runs the robot with its asr actuators::

    asr.export_mjcf("qbmove_arm_2dof", "vertical", "arm.xml")
    asr.mujoco.plugin.load()
    m = mujoco.MjModel.from_xml_path("arm.xml")

The robot's own MJCF is edited as XML (xml.etree), so every number of it is written back as the
same text: a round trip through MjSpec would round some of them. Added to it:

- <extension><plugin plugin="asr.actuator">: one <instance name="<joint>"> per actuated joint
  (robot.joints order), configured with the joint's model, mode and robot.toml parameters; with
  export_mjcf(..., compact=True) one instance per set of joints with the same configuration,
  named after its first joint, its key "joints" listing them (docs/mujoco_plugin.md, "The
  compact form");
- <actuator>: "<joint>_ref1" and "<joint>_ref2" per joint, in joint order, after any actuators
  the MJCF has, so that d.ctrl[-2 J:] = refs.reshape(-1) for asr's (J, 2) references (the whole
  ctrl when the MJCF has no actuators, as every robot of robots/); ctrlrange where asr defines a
  range (see _ctrl_ranges); the first of each joint with actdim="4": MuJoCo's act holds the
  joint's motor angles and velocities (asr.mujoco.plugin.act_fields()), after the act of any
  stateful actuators the MJCF has, so that mjd_transitionFD sees the motors;
- <sensor>: "<joint>_asr" per joint (compact: "<instance>_asr" per instance, a row per joint of
  it), in joint order, after any sensors the MJCF has: the
  plugin's sensor of the joint's instance (asr.mujoco.plugin.sensor_layout(): deflections,
  stiffness, elastic and joint torques, motor angles, status, as committed), unless
  export_mjcf(..., sensors=False);
- <keyframe><key name="asr_initial">: the variant's initial link angles and references (act
  zero: the first step after a reset places the motors as asr.Sim.reset does and writes act);
  the MJCF's own keys get the new actuators' ctrl and act at 0.

Robot MJCF files that name other files (<include>, file= attributes) are refused: the exported
file stands alone and never holds a path of the machine it was written on. So are joints with a
user model (asr.register_model): the file would compile only where the same model is registered.
"""

import os
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import Any

from asr.common.files import atomic_write
from asr.common.version import __version__
from asr.core.model_registry import BUILTIN_MODELS, get_model
from asr.robots.robot import Robot, load_robot

KEY_NAME = "asr_initial"  # the keyframe with the variant's initial state
# modes whose first reference is a link angle (1) or an equilibrium angle (3, 6): the joint's range
FIRST_REF_IS_ANGLE = (1, 3, 6)
# modes whose second reference is the stiffness preset (for models whose preset kind is "ref")
SECOND_REF_IS_PRESET = (3, 6)
# act values of each joint's first actuator: th1, th2, th1d, th2d (asr.mujoco.plugin.act_fields)
ACTDIM = 4

MjModel = Any  # a mujoco.MjModel (mujoco has no type stubs)


def _number(x: float) -> str:
    """Exact text of a float: repr round-trips every double; inf as "inf" (read by strtod)."""
    return repr(float(x))


def _numbers(values: Iterable[float]) -> str:
    return " ".join(_number(v) for v in values)


def _robot(robot: Robot | str | os.PathLike[str], variant: str | None) -> Robot:
    if isinstance(robot, Robot):
        if variant is not None and variant != robot.variant:
            raise ValueError(
                f"variant: got {variant!r} with an asr.Robot of variant {robot.variant!r}; "
                "pass the robot's name to choose another variant"
            )
    else:
        robot = load_robot(robot, variant)
    for j in robot.joints:
        if j.model not in BUILTIN_MODELS:
            raise ValueError(
                f"robot {robot.name!r} ({robot.variant}): joint {j.name!r} uses the user model "
                f"{j.model!r}; export_mjcf writes built-in models only ({', '.join(BUILTIN_MODELS)}"
                "): a C user model goes in an instance by hand (asr.mujoco.plugin.register_model)"
            )
    return robot


def _check_path(path: str | os.PathLike[str]) -> str:
    """The output path as a str: a file in an existing folder (not a folder itself)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            f"path: expected a file path (str or os.PathLike), got {type(path).__name__}"
        )
    path = os.fspath(path)
    if not path:
        raise ValueError("path: got '', expected the MJCF file to write")
    if os.path.isdir(path):
        raise IsADirectoryError(f"path: {path!r} is a folder; expected the MJCF file to write")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"path: {path!r}: the folder {folder!r} does not exist")
    return path


def _refuse_files(robot: Robot, root: ET.Element) -> None:
    """ValueError if the MJCF names other files: the export would not stand alone."""
    where = f"robot {robot.name!r} ({robot.variant}): {os.path.basename(robot.mjcf)}"
    for el in root.iter():
        if el.tag == "include" or "file" in el.attrib:
            what = "<include>" if el.tag == "include" else f"<{el.tag} file=...>"
            raise ValueError(
                f"{where}: {what} names another file; export_mjcf writes stand-alone MJCF "
                "files only (robots with meshes, textures or includes cannot be exported)"
            )


def _ctrl_ranges(robot: Robot, model: MjModel) -> list[tuple[float, float] | None]:
    """(lo, hi) or None (unlimited) per ctrl of the plugin actuators, 2 per joint. The first
    reference of modes 1, 3 and 6 is a link / equilibrium angle: the joint's range where the
    MJCF limits the joint. The second of modes 3 and 6 is the stiffness preset: the model's
    preset range where its preset kind is "ref". Elsewhere asr defines no range."""
    import mujoco

    out: list[tuple[float, float] | None] = []
    for j in robot.joints:
        k = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j.name)
        first = None
        if j.mode in FIRST_REF_IS_ANGLE and model.jnt_limited[k]:
            first = (float(model.jnt_range[k][0]), float(model.jnt_range[k][1]))
        preset = get_model(j.model).spec.preset
        second = None
        if j.mode in SECOND_REF_IS_PRESET and preset.kind == "ref":
            second = (float(preset.lo), float(preset.hi))
        out += [first, second]
    return out


def _sub(parent: ET.Element, tag: str, **attrib: str) -> ET.Element:
    return ET.SubElement(parent, tag, attrib)


def _section(root: ET.Element, tag: str) -> ET.Element:
    """The root's first <tag> element, appended when there is none."""
    found = root.find(tag)
    return found if found is not None else _sub(root, tag)


def _instances(robot: Robot, compact: bool) -> list[tuple[str, list[Any]]]:
    """The plugin instances to write: (name, joints) in order. Long form: one per joint, named
    after it. Compact form: one per set of joints with the same configuration (model, mode,
    every parameter and its value: what the instance's keys say), in the order of their first
    joints, named after that first joint (a set of one joint is the long form's instance)."""
    if not compact:
        return [(j.name, [j]) for j in robot.joints]
    sets: dict[tuple[Any, ...], list[Any]] = {}
    for j in robot.joints:
        key = (j.model, j.mode, tuple((n, _number(v)) for n, v in j.params.items()))
        sets.setdefault(key, []).append(j)
    return [(joints[0].name, joints) for joints in sets.values()]


def _add_extension(root: ET.Element, robot: Robot, compact: bool) -> None:
    ext = _section(root, "extension")
    plugin = _sub(ext, "plugin", plugin="asr.actuator")
    for inst_name, joints in _instances(robot, compact):
        j = joints[0]
        inst = _sub(plugin, "instance", name=inst_name)
        _sub(inst, "config", key="model", value=j.model)
        _sub(inst, "config", key="mode", value=str(j.mode))
        for name, value in j.params.items():
            _sub(inst, "config", key=name, value=_number(value))
        if compact and len(joints) > 1:  # a set of one joint: the long form's instance
            _sub(inst, "config", key="joints", value=" ".join(x.name for x in joints))


def _add_actuators(root: ET.Element, robot: Robot, model: MjModel, compact: bool) -> None:
    actuator = _section(root, "actuator")
    ranges = iter(_ctrl_ranges(robot, model))
    owner = {j.name: name for name, joints in _instances(robot, compact) for j in joints}
    for j in robot.joints:
        for ref in ("ref1", "ref2"):
            attrib = dict(name=f"{j.name}_{ref}", joint=j.name, instance=owner[j.name])
            if ref == "ref1":
                attrib["actdim"] = str(ACTDIM)
            limits = next(ranges)
            if limits is not None:
                attrib.update(ctrllimited="true", ctrlrange=_numbers(limits))
            _sub(actuator, "plugin", **attrib)


def _add_sensors(root: ET.Element, robot: Robot, compact: bool) -> None:
    sensor = _section(root, "sensor")
    for name, _ in _instances(robot, compact):
        _sub(sensor, "plugin", name=f"{name}_asr", instance=name)


def _initial(robot: Robot, model: MjModel) -> tuple[list[float], list[float]]:
    """(qpos, ctrl) of the key asr_initial: the model's qpos0 with the actuated joints at the
    variant's initial q; ctrl zero for the MJCF's own actuators, then the initial references
    (zero without)."""
    from asr.robots.robot import joint_addresses

    qpos = [float(x) for x in model.qpos0]
    if robot.initial_q is not None:
        adr, _ = joint_addresses(model, robot.joint_names)
        for a, q in zip(adr, robot.initial_q):
            qpos[a] = float(q)
    refs = robot.initial_refs or [(0.0, 0.0)] * len(robot.joints)
    ctrl = [0.0] * int(model.nu) + [float(r) for pair in refs for r in pair]
    return qpos, ctrl


def _add_keyframe(root: ET.Element, robot: Robot, model: MjModel) -> None:
    keyframe = _section(root, "keyframe")
    pad = " ".join(["0"] * 2 * len(robot.joints))
    act_pad = " ".join(["0"] * ACTDIM * len(robot.joints))
    for key in keyframe.findall("key"):  # the MJCF's own keys: the new actuators' ctrl, act at 0
        if key.get("ctrl", "").strip():
            key.set("ctrl", f"{key.get('ctrl', '').strip()} {pad}")
        if key.get("act", "").strip():
            key.set("act", f"{key.get('act', '').strip()} {act_pad}")
    qpos, ctrl = _initial(robot, model)
    _sub(keyframe, "key", name=KEY_NAME, qpos=_numbers(qpos), ctrl=_numbers(ctrl))


def _indent(root: ET.Element, added: list[ET.Element]) -> None:
    """Indent what was added like the robots' files (2 spaces), leaving the rest as it was."""
    for el in added:
        ET.indent(el, space="  ", level=1)
    children = list(root)
    for prev, el in zip(children, children[1:]):
        if el in added and not (prev.tail or "").strip():
            prev.tail = "\n\n  "
    if children:
        children[-1].tail = "\n"


def _comment_text(text: str) -> str:
    """text made safe inside an XML comment (no "--")."""
    while "--" in text:
        text = text.replace("--", "- -")
    return text


def _header(robot: Robot) -> str:
    text = _comment_text(
        f"Generated by asr {__version__} (asr.export_mjcf) from robot {robot.name!r} variant "
        f"{robot.variant!r}. The plugin actuators asr.actuator (load them with "
        "asr.mujoco.plugin.load() before compiling) apply asr's actuator torques; comments "
        "below that speak of qfrc_applied or of no MuJoCo actuator describe asr.Sim's coupling "
        f"of the original file. ctrl: <joint>_ref1, <joint>_ref2 per joint; key {KEY_NAME!r}: "
        "the variant's initial state."
    )
    lines = textwrap.wrap(text, 96, subsequent_indent="     ")
    return "<!-- " + "\n".join(lines) + " -->\n"


def _xml(robot: Robot, model: MjModel, sensors: bool = True, compact: bool = False) -> str:
    """The exported MJCF text of a robot variant (with the plugin's sensors if `sensors`; one
    instance per set of joints alike if `compact`)."""
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    try:
        root = ET.parse(robot.mjcf, parser=parser).getroot()
    except ET.ParseError as exc:  # MuJoCo read it; ElementTree is stricter about nothing else
        raise ValueError(f"robot {robot.name!r} ({robot.variant}): MJCF: {exc}") from None
    _refuse_files(robot, root)
    before = list(root)
    _add_extension(root, robot, compact)
    _add_actuators(root, robot, model, compact)
    if sensors:
        _add_sensors(root, robot, compact)
    _add_keyframe(root, robot, model)
    _indent(root, [el for el in root if el not in before])
    return _header(robot) + ET.tostring(root, encoding="unicode") + "\n"


def _compile(robot: Robot, text: str) -> MjModel:
    """The exported text compiled by MuJoCo with the plugin loaded; ValueError naming the robot
    if MuJoCo refuses it, ImportError if the plugin library is missing or does not match."""
    import mujoco

    from asr.mujoco import plugin as mujoco_plugin

    try:
        mujoco_plugin.load()
    except FileNotFoundError as exc:  # not built: a missing dependency, not a bad argument
        raise ImportError(str(exc)) from None
    try:
        return mujoco.MjModel.from_xml_string(text)
    except ValueError as exc:
        raise ValueError(
            f"robot {robot.name!r} ({robot.variant}): the exported MJCF does not compile: {exc}"
        ) from None


def export_mjcf(
    robot: Robot | str | os.PathLike[str],
    variant: str | None = None,
    path: str | os.PathLike[str] | None = None,
    *,
    sensors: bool = True,
    compact: bool = False,
) -> str:
    """Write robot `robot` (a name or folder as for asr.load_robot, or an asr.Robot) in
    `variant` (None: its default; with an asr.Robot, None or its own variant) as one MJCF file
    at `path` with asr's MuJoCo plugin actuators (module docstring: the layout). The file is
    compiled by MuJoCo before it is written (atomically: a reader never sees half of it).
    Returns the path written. Errors name the argument and the value: an unknown robot or
    variant (load_robot's errors), a path that is a folder or in a folder that does not exist,
    a robot MJCF that names other files. sensors (keyword): True (default) adds the plugin's
    sensor "<joint>_asr" per joint (asr.mujoco.plugin.sensordata reads them, shape (J, V)); False
    writes none, as asr before them did. compact (keyword): False (default) writes one plugin
    instance per joint (the long form every asr before it wrote and read); True one instance per
    set of joints with the same model, mode and parameters, named after its first joint, with
    the key joints="<its joints>" (a set of one joint: the long form's instance) and one sensor
    "<instance>_asr" (a row per joint of it): the same actuators, ctrl, act and keyframe, and the
    same steps bit for bit."""
    if path is None:
        raise TypeError("path: required (the MJCF file to write)")
    if not isinstance(sensors, bool):
        raise TypeError(f"sensors: expected True or False, got {sensors!r}")
    if not isinstance(compact, bool):
        raise TypeError(f"compact: expected True or False, got {compact!r}")
    out = _check_path(path)
    loaded = _robot(robot, variant)
    model = loaded.mj_model()
    text = _xml(loaded, model, sensors, compact)
    _compile(loaded, text)
    with atomic_write(out, "w") as f:
        f.write(text)
    return out


__all__ = ["KEY_NAME", "export_mjcf"]
