"""The compliant-actuator toolbox's plugin tags [Mengacci2021] <-> asr parameters, defined once.

The toolbox's Gazebo plugins (viactors_plugins: libqbmove_plugin.so, libsea_plugin.so,
libbavs_plugin.so, libawas_ii_plugin.so) read, besides joint / operation_mode / pub_eltau /
pub_state / sub_ext_tau, one tag per parameter, each with a default when the tag is missing
(InitParams of each plugin). The tables below are those facts: tag name, the asr parameter it
sets, the value the toolbox runs with when the tag is missing, and the unit. Every toolbox unit is
asr's (SI, radians), so no value is converted; tests/ros/test_ros_urdf_toolbox.py checks the units
against asr's parameter specs.

Two-motor plugins (qbmove, BAVS) read mot_1_* / mot_2_* and ctrl_1_* / ctrl_2_*; one-motor
plugins (SEA, AwAS-II) mot_* and ctrl_*. asr has one motor parameter set per joint for both
motors: it is written to both and read back only when both agree. In operation mode 1 (link PID)
the toolbox reads its first controller's tags as the link PID gains (defaults 0.8, 0, 0.2): they
are asr's link_kp / link_ki / link_kd there. asr parameters the toolbox has no tag for are written
as asr_<name>; models the toolbox lacks are written with asr_ tags only.
"""

import dataclasses
import math
import xml.etree.ElementTree as ET

from asr.core.models import get_model
from asr.robots.robot import RobotJoint

FLAG_TAGS = ("pub_eltau", "pub_state", "sub_ext_tau")
ASR_PREFIX = "asr_"
MODEL_TAG = "asr_model"
ASR_ONLY_FILE = "asr:"  # filename prefix of a block for a model the toolbox lacks: asr:<model>

# the toolbox plugin library of each asr model that has one. asr's rigid joint runs in modes 0/1
# only, where every toolbox plugin drives the link directly (spring and motors unused): the SEA
# plugin carries it (asr_model tells it from a SEA on import)
PLUGIN_FILES = {
    "qbmove_advanced": "libqbmove_plugin.so",
    "sea": "libsea_plugin.so",
    "bavs": "libbavs_plugin.so",
    "awas2": "libawas_ii_plugin.so",
    "rigid": "libsea_plugin.so",
}
# the asr model a toolbox plugin file imports as when the block has no asr_model
FILE_MODELS = {
    "libqbmove_plugin.so": "qbmove_advanced",
    "libsea_plugin.so": "sea",
    "libbavs_plugin.so": "bavs",
    "libawas_ii_plugin.so": "awas2",
}
_TWO_MOTORS = ("libqbmove_plugin.so", "libbavs_plugin.so")


@dataclasses.dataclass(frozen=True)
class Tag:
    """One tag a toolbox plugin reads: `param` the asr parameter it sets (None: the toolbox reads
    it and never uses it, asr ignores it), `default` what the toolbox runs with when it is
    missing, `unit` the toolbox's unit (asr's)."""

    tag: str
    param: str | None
    default: float
    unit: str


_INF = math.inf
# spring tags of each plugin (InitParams): (tag, asr parameter, default, unit)
_SPRINGS = {
    "libqbmove_plugin.so": (
        ("spring_a1", "a1", 8.9992, "1/rad"),
        ("spring_k1", "k1", 0.0019, "N m"),
        ("spring_a2", "a2", 8.9992, "1/rad"),
        ("spring_k2", "k2", 0.0019, "N m"),
        ("max_def", "max_def", 0.8, "rad"),
    ),
    "libsea_plugin.so": (("spring_k", "k", 10.0, "N m/rad"), ("max_def", "max_def", 0.8, "rad")),
    "libbavs_plugin.so": (
        ("spring_a", "a", 1.21e-6, ""),
        ("spring_b", "b", 2.38e-6, ""),
        ("spring_k", "k", 1.60e5, "N m"),
        ("spring_k_e", "ke", 8.71, "1/rad"),
        ("max_def", "max_def", 0.27, "rad"),
    ),
    "libawas_ii_plugin.so": (
        ("spring_Ks", "Ks", 10.0, "N m"),
        ("spring_l_0", None, 1.0, "m"),  # read, absent from the plugin's spring torque
        ("spring_L", "L", 0.05, "m"),
        ("spring_r_t", "r_t", 0.015, "m"),
        ("max_def", "max_def", 0.3, "rad"),
    ),
}
# motor tags (after mot_, mot_1_ or mot_2_). maxVel: the toolbox reads 6.0 rad/s by default but
# its motor (DCMotor::OnUpdate) never applies it, so a missing tag is asr's "no limit"
_MOTOR = (
    ("J", "motor_J", 0.0233, "kg m^2"),
    ("D", "motor_D", 0.2698, "N m s/rad"),
    ("tauMax", "tau_max", 6.0, "N m"),
    ("maxVel", "vel_max", _INF, "rad/s"),
    ("minPos", "pos_min", -_INF, "rad"),
    ("maxPos", "pos_max", _INF, "rad"),
    ("tauFric", "friction", 0.02, "N m"),
)
# controller tags (after ctrl_, ctrl_1_ or ctrl_2_): the motor PID, and in mode 1 the link PID
_MOTOR_PID = (
    ("P", "kp", 125.0, "N m/rad"),
    ("I", "ki", 0.0, "N m/(rad s)"),
    ("D", "kd", 4.5, "N m s/rad"),
)
_LINK_PID = (
    ("P", "link_kp", 0.8, "N m/rad"),
    ("I", "link_ki", 0.0, "N m/(rad s)"),
    ("D", "link_kd", 0.2, "N m s/rad"),
)
LINK_PID_MODE = 1


def plugin_file(model):
    """The toolbox plugin library of asr model `model`, or asr:<model> for a model it lacks."""
    return PLUGIN_FILES.get(model, ASR_ONLY_FILE + model)


def toolbox_tags(model, mode):
    """The Tags the toolbox's plugin for asr model `model` reads in operation mode `mode`, in
    the toolbox's order, limited to the model's parameters (asr's rigid joint carried by the SEA
    plugin has no spring tags); () for a model the toolbox lacks."""
    file = PLUGIN_FILES.get(model)
    if file is None:
        return ()
    names = {p.name for p in get_model(model).spec.all_params}
    prefixes = ("_1_", "_2_") if file in _TWO_MOTORS else ("_",)
    rows = list(_SPRINGS[file])
    rows += [("mot" + p + t, *rest) for p in prefixes for t, *rest in _MOTOR]
    for k, p in enumerate(prefixes):
        pid = _LINK_PID if mode == LINK_PID_MODE and k == 0 else _MOTOR_PID
        rows += [("ctrl" + p + t, *rest) for t, *rest in pid]
    return tuple(Tag(*row) for row in rows if row[1] is None or row[1] in names)


def param_tags(model, mode):
    """{asr parameter: tuple of its tags} of every parameter of `model` in `mode`: the toolbox's
    tags (two for a motor parameter of a two-motor plugin), else (asr_<name>,)."""
    tags = {p.name: () for p in get_model(model).spec.all_params}
    for t in toolbox_tags(model, mode):
        if t.param is not None:
            tags[t.param] += (t.tag,)
    return {name: found or (ASR_PREFIX + name,) for name, found in tags.items()}


def joint_params(joint):
    """{name: value} of every asr parameter of a RobotJoint: the model's defaults overridden by
    the joint's params."""
    values = get_model(joint.model).spec.defaults()
    values.update(joint.params)
    return {name: float(v) for name, v in values.items()}


def num(x):
    """repr of a float: the shortest text that reads back to the same double ('inf' too)."""
    return repr(float(x) + 0.0)  # + 0.0: no '-0.0'


# ---------------------------------------------------------------- export


def plugin_block(parent, rj):
    """Append the <gazebo><plugin> block of actuated joint rj (an asr.RobotJoint) to `parent`."""
    gz = ET.SubElement(parent, "gazebo")
    file = plugin_file(rj.model)
    pl = ET.SubElement(gz, "plugin", name=f"{rj.name}_compliant_actuator", filename=file)
    if rj.model not in FILE_MODELS.values():
        pl.append(ET.Comment(_foreign_note(rj.model, file)))
    ET.SubElement(pl, "joint").text = rj.name
    ET.SubElement(pl, "operation_mode").text = str(int(rj.mode))
    for tag in FLAG_TAGS:
        ET.SubElement(pl, tag).text = "true"
    ET.SubElement(pl, MODEL_TAG).text = rj.model
    values = joint_params(rj)
    for t in toolbox_tags(rj.model, rj.mode):
        if t.param is not None:
            ET.SubElement(pl, t.tag).text = num(values[t.param])
    for name, tags in param_tags(rj.model, rj.mode).items():
        if tags[0].startswith(ASR_PREFIX):
            ET.SubElement(pl, tags[0]).text = num(values[name])
    return gz


def _foreign_note(model, file):
    if model in PLUGIN_FILES:
        return (
            f" asr model {model!r} has no plugin of its own in the compliant-actuator toolbox; "
            f"in modes 0 and 1 {file} drives the link directly, as asr's {model} joint does "
        )
    return (
        f" asr model {model!r} has no plugin in the compliant-actuator toolbox: this block is "
        f"read by asr only (every parameter an asr_ tag); Gazebo cannot load {file!r} "
    )


# ---------------------------------------------------------------- import


def _number(text, where, tag):
    """A tag's value: a float ('inf' and '-inf' too) or the toolbox templates' x*pow(b,e)."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    head, sep, rest = text.replace(" ", "").partition("*pow(")
    if sep and rest.endswith(")") and rest.count(",") == 1:
        try:
            base, exp = (float(v) for v in rest[:-1].split(","))
            return float(head) * base**exp
        except (ValueError, OverflowError):
            pass
    raise ValueError(f"{where}: <{tag}>: expected a number, got {text!r}")


def _model_of(pl, fields, where):
    file = pl.get("filename", "")
    model = fields.get(MODEL_TAG) or FILE_MODELS.get(file)
    if model is None and file.startswith(ASR_ONLY_FILE):
        model = file[len(ASR_ONLY_FILE) :]
    if not model:
        raise ValueError(f"{where}: plugin file {file!r} is none of the toolbox's actuators")
    get_model(model)  # ValueError naming the known models
    if plugin_file(model) != file:
        raise ValueError(
            f"{where}: <{MODEL_TAG}> {model!r} is written with filename {plugin_file(model)!r}, "
            f"got {file!r}"
        )
    return model


def _mode(fields, where):
    text = fields.get("operation_mode")
    if text is None:
        raise ValueError(f"{where}: missing <operation_mode> (0-6), which the toolbox requires")
    try:
        mode = int(text)
    except ValueError:
        raise ValueError(f"{where}: <operation_mode>: expected 0-6, got {text!r}") from None
    if not 0 <= mode <= 6:
        raise ValueError(f"{where}: <operation_mode>: got {mode}, valid modes 0-6")
    return mode


def _fields(pl, where):
    fields = {}
    for c in pl:
        if not isinstance(c.tag, str):  # a comment
            continue
        if c.tag in fields:
            raise ValueError(f"{where}: <{c.tag}> is given twice")
        fields[c.tag] = (c.text or "").strip()
    if not fields.get("joint"):
        raise ValueError(f"{where}: missing <joint>, the name of the joint it drives")
    for tag in FLAG_TAGS:
        if fields.get(tag, "true") not in ("true", "false", "1", "0"):
            raise ValueError(f"{where}: <{tag}>: expected true or false, got {fields[tag]!r}")
    return fields


def read_block(pl):
    """The asr.RobotJoint of one toolbox <plugin> element. Parameters missing from the block take
    the toolbox's defaults where it reads a tag, asr's defaults for asr-only ones. ValueError
    naming the block and tag for what asr cannot read (unknown tag, a value out of range, the two
    motors of a two-motor plugin given different values)."""
    where = f"plugin {pl.get('name')!r}"
    fields = _fields(pl, where)
    model = _model_of(pl, fields, where)
    mode = _mode(fields, where)
    spec = get_model(model).spec
    params, source = {}, {}
    known = {"joint", "operation_mode", MODEL_TAG, *FLAG_TAGS}
    for t in toolbox_tags(model, mode):
        known.add(t.tag)
        value = _number(fields[t.tag], where, t.tag) if t.tag in fields else t.default
        if t.param is None:
            continue
        if t.param in params and params[t.param] != value:
            raise ValueError(
                f"{where}: <{source[t.param]}> = {params[t.param]!r} but <{t.tag}> = {value!r} "
                "(missing tags take the toolbox's default); asr's model has one motor and "
                "controller parameter set for both motors: give both the same value"
            )
        params[t.param], source[t.param] = value, t.tag
    for name, tags in param_tags(model, mode).items():
        if tags[0].startswith(ASR_PREFIX):
            known.add(tags[0])
            text = fields.get(tags[0])
            params[name] = (
                spec.param(name).default if text is None else _number(text, where, tags[0])
            )
    unknown = [tag for tag in fields if tag not in known]
    if unknown:
        raise ValueError(
            f"{where}: unknown tag <{unknown[0]}> for model {model!r} in mode {mode}; valid: "
            f"{', '.join(sorted(known))}"
        )
    for name, value in params.items():
        spec.param(name).check(value, f"{where}: ")
    return RobotJoint(fields["joint"], model, mode, params)


__all__ = [
    "PLUGIN_FILES",
    "FILE_MODELS",
    "FLAG_TAGS",
    "Tag",
    "plugin_file",
    "toolbox_tags",
    "param_tags",
    "joint_params",
    "plugin_block",
    "read_block",
]
