"""Robot descriptions: a folder with an MJCF model and a robot.toml that gives, per variant, the
asr actuator of every actuated joint (model, operation mode, parameters), the equivalent of the
reference toolbox's URDF plugin tags and plugin-manager configuration. See robots/README.md.

load_robot() checks every entry of robot.toml (and that MuJoCo reads each variant's MJCF file)
before anything runs; a broken description raises RobotFileError (a ValueError) naming the robot,
the file, the entry and what is valid. The checks of robot.toml's values and its table schemas
live in asr.robots.robot_toml.
"""

import dataclasses
import importlib.resources
import os
import pathlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from asr.core.batch import Joint, check_mode
from asr.core.models import get_model
from asr.robots import robot_files as files
from asr.robots.robot_toml import (
    INITIAL_KEYS,
    INTERACTION_KEYS,
    JOINT_KEYS,
    TOP_KEYS,
    VARIANT_KEYS,
    checked_entries,
    shown,
)

ROBOTS_ENV = "ASR_ROBOTS"
PACKAGE_ROBOTS = "robots_data"  # asr/robots_data in wheels (setup.py's build_py)

# a mujoco.MjModel (mujoco has no type stubs)
MjModel = Any


def robots_dir() -> str:
    """Where robot names are looked up: $ASR_ROBOTS, else the robots/ folder of the source tree
    (checkouts and editable installs), else the robots shipped in the package, asr/robots_data
    (wheels and `pip install .`: setup.py's build_py copies robots/ there)."""
    env = os.environ.get(ROBOTS_ENV)
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # setup.py too: an installed asr's parent is site-packages, where a robots/ may be another
    # project's package
    if os.path.isdir(os.path.join(root, "robots")) and os.path.isfile(
        os.path.join(root, "setup.py")
    ):
        return os.path.join(root, "robots")
    shipped = importlib.resources.files("asr") / PACKAGE_ROBOTS
    # a folder on disk: asr is never imported from a zip file (its C extension cannot be), so
    # the package's resources are real paths
    if not isinstance(shipped, pathlib.Path):
        raise RuntimeError(f"asr's robots are not a folder on disk ({shipped!r})")
    return str(shipped)


@dataclasses.dataclass(frozen=True)
class RobotJoint:
    """An actuated joint: MJCF joint name and its asr actuator."""

    name: str
    model: str
    mode: int
    params: dict[str, float]

    def joint(self) -> Joint:
        """The asr.Joint of this actuator."""
        return Joint(self.model, self.mode, dict(self.params))


@dataclasses.dataclass(frozen=True)
class Robot:
    """One variant of a robot: its MJCF file and actuated joints (in order); `sdf` is the
    absolute path of its SDF file for Gazebo (robot.toml's optional `sdf` key), else None."""

    name: str
    variant: str
    description: str
    folder: str
    mjcf: str
    joints: tuple[RobotJoint, ...]
    initial_q: tuple[float, ...] | None = None
    initial_refs: tuple[tuple[float, float], ...] | None = None
    # robot.toml's [variants.<v>.initial] first_view: the equilibria (rad, one per joint) the
    # dashboard's first view swings about and starts at rest at, where the initial one does not
    # suit it (e.g. gravity pressing a spring on its clamp); None: the initial equilibria
    first_view_eq: tuple[float, ...] | None = None
    sdf: str | None = None  # absolute path of the variant's SDF file (Gazebo), or None
    # robot.toml's [variants.<v>.interaction]: MJCF names for interaction control
    # (asr.controllers.interaction)
    interaction: tuple[tuple[str, str], ...] | None = None

    @property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(j.name for j in self.joints)

    def mj_model(self) -> MjModel:
        """A fresh mujoco.MjModel of this variant, checked against the actuated joints."""
        import mujoco

        try:  # checked again: the folder may have changed since load_robot
            files.mjcf_files(self.folder, self.mjcf, os.path.basename(self.mjcf))
        except (files.BadFile, FileNotFoundError) as exc:
            raise RobotFileError(
                f"robot {self.name!r} ({self.variant})", "mjcf", str(exc)
            ) from None
        model = mujoco.MjModel.from_xml_path(self.mjcf)
        joint_addresses(
            model,
            self.joint_names,
            f"robot {self.name!r} ({self.variant}): {os.path.basename(self.mjcf)}",
        )
        return model


class RobotFileError(ValueError):
    """A robot description that cannot be used. `file` names the robot and its robot.toml
    ("robot '<name>' (robot.toml)" for robots loaded by name, the path given otherwise), `entry`
    the TOML entry (e.g. '[variants.vertical] mjcf', '' for the file as a whole) and `problem`
    what is wrong and what is valid (an MJCF file MuJoCo cannot read is named there, relative to
    the robot's folder). str(): '<file>: <entry>: <problem>'."""

    def __init__(self, file: str, entry: str, problem: str) -> None:
        self.file, self.entry, self.problem = file, entry, problem
        super().__init__(f"{file}: {entry}: {problem}" if entry else f"{file}: {problem}")

    def __reduce__(self) -> tuple[type["RobotFileError"], tuple[str, str, str]]:
        return RobotFileError, (self.file, self.entry, self.problem)


class _File:
    """Names one file of a robot in errors and raises RobotFileError about it."""

    def __init__(self, label: Callable[[str], str], file: str) -> None:
        self.label, self.file = label, file

    def fail(self, entry: str, problem: str) -> NoReturn:
        raise RobotFileError(self.label(self.file), entry, problem) from None


def _joint(toml: _File, where: str, table: Mapping[str, Any]) -> RobotJoint:
    """A RobotJoint from one [[variants.<v>.joints]] table: mode and parameters valid for its
    model (asr's ParamSpec ranges)."""
    e = checked_entries(table, JOINT_KEYS, toml, where)
    spec = get_model(e["model"]).spec
    try:
        mode = check_mode(e["mode"], spec, "")
    except ValueError as exc:
        toml.fail(f"{where} mode", str(exc).removeprefix("mode: "))
    params = e.get("params", {})
    for pname, value in params.items():
        try:
            spec.param(pname).check(value)
        except ValueError as exc:
            toml.fail(f"{where} params", str(exc))
    return RobotJoint(e["name"], e["model"], mode, params)


def _file_in(folder: str, toml: _File, entry: str, file: str) -> str:
    """folder/file, a robot file (asr.robots.robot_files.check: inside the folder, links followed, a
    regular file)."""
    path = os.path.join(folder, file)
    try:
        files.check(folder, path, file)
    except (files.BadFile, FileNotFoundError) as exc:
        toml.fail(entry, str(exc))
    return path


def _mjcf_model(folder: str, toml: _File, entry: str, file: str) -> tuple[str, MjModel]:
    """(absolute path, mujoco.MjModel) of a variant's MJCF file: it and every file it names are
    robot files (asr.robots.robot_files.mjcf_files, checked before MuJoCo opens any), MuJoCo reads
    it
    (its errors without the folder's path) and its options are ones asr can step."""
    import mujoco

    path = _file_in(folder, toml, entry, file)
    try:
        files.mjcf_files(folder, path, file)
        model = mujoco.MjModel.from_xml_path(path)
    except (files.BadFile, FileNotFoundError) as exc:
        toml.fail(entry, str(exc))
    except (ValueError, RuntimeError, OSError) as exc:
        text = " ".join(str(exc).split())
        for prefix in {os.path.realpath(folder), os.path.abspath(folder), folder}:
            text = text.replace(prefix + os.sep, "")
        toml.fail(entry, f"MuJoCo cannot load {file!r}: {text}")
    _check_options(model, toml, entry, file)
    return path, model


# MuJoCo <option> values asr steps with: (attribute, valid range, why); timestep: the step of
# every rollout, at most 1 s (far above any stable coupled step)
_OPTIONS = (("timestep", 0.0, 1.0, "s, the length of one step"),)


def _check_options(model: MjModel, toml: _File, entry: str, file: str) -> None:
    for name, lo, hi, what in _OPTIONS:
        value = float(getattr(model.opt, name))
        if not lo < value <= hi:
            toml.fail(
                entry, f"{file!r}: option {name} = {value!r} ({what}); valid range ({lo:g}, {hi:g}]"
            )


def _sdf_joints(
    folder: str, toml: _File, entry: str, file: str
) -> tuple[str, dict[str, str | None]]:
    """(absolute path, {joint name: type}) of a variant's SDF file: a robot file naming only
    robot files (asr.robots.robot_files.sdf_files), well-formed XML with an <sdf> root holding
    exactly
    one <world> with exactly one <model> (robots/README.md, "SDF files for Gazebo"); the types
    of that model's own <joint>s."""
    path = _file_in(folder, toml, entry, file)
    try:
        root = files.sdf_files(folder, path, file)
    except (files.BadFile, FileNotFoundError) as exc:
        toml.fail(entry, str(exc))
    if root.tag != "sdf":
        toml.fail(entry, f"{file!r}: the root element is <{root.tag}>, expected <sdf>")
    worlds, models = root.findall("world"), root.findall("model")
    if len(worlds) != 1 or models:
        toml.fail(
            entry,
            f"{file!r}: expected <sdf> to hold exactly one <world> (with gravity) and "
            f"no top-level <model>, got {len(worlds)} <world> and {len(models)} "
            "<model>",
        )
    models = worlds[0].findall("model")
    if len(models) != 1:
        toml.fail(
            entry, f"{file!r}: expected exactly one <model> in its <world>, got {len(models)}"
        )
    # an unnamed joint (SDFormat refuses it) is none of the actuated joints
    joints = models[0].findall("joint")
    return path, {n: j.get("type") for j in joints if (n := j.get("name")) is not None}


def _one_dof_joints(model: MjModel) -> list[str]:
    """Names of the hinge and slide joints of a mujoco.MjModel."""
    import mujoco

    one_dof = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    return [model.joint(k).name for k in range(model.njnt) if int(model.jnt_type[k]) in one_dof]


def _variant(
    folder: str, toml: _File, name: str, table: object, models: dict[object, tuple[str, Any]]
) -> dict[str, Any]:
    """(Robot fields) of one [variants.<name>] table, checked in full; `models` caches the
    parsed MJCF files by name."""
    section = f"[variants.{name}]"
    if not isinstance(table, dict):
        toml.fail(f"[variants] {name}", f"expected a table ([variants.{name}]), got {shown(table)}")
    e = checked_entries(table, VARIANT_KEYS, toml, section)
    if e["mjcf"] not in models:
        models[e["mjcf"]] = _mjcf_model(folder, toml, f"{section} mjcf", e["mjcf"])
    mjcf, model = models[e["mjcf"]]
    hinges = _one_dof_joints(model)
    joints: list[RobotJoint] = []
    for k, entry in enumerate(e["joints"]):
        where = f"[[variants.{name}.joints]] #{k + 1}"
        joint = _joint(toml, where, entry)
        if joint.name in (j.name for j in joints):
            toml.fail(f"{where} name", f"joint {joint.name!r} is listed twice")
        if joint.name not in hinges:
            toml.fail(
                f"{where} name",
                f"{joint.name!r} is not a hinge or slide joint of "
                f"{e['mjcf']}; its 1-dof joints are: "
                f"{', '.join(hinges) or 'none'}",
            )
        joints.append(joint)
    sdf = None
    if "sdf" in e:
        sdf_key = ("sdf", e["sdf"])
        if sdf_key not in models:
            models[sdf_key] = _sdf_joints(folder, toml, f"{section} sdf", e["sdf"])
        sdf, sdf_joints = models[sdf_key]
        sdf_types = {"hinge": "revolute", "slide": "prismatic"}
        for k, joint in enumerate(joints):
            jtype = sdf_types[_joint_type(model, joint.name)]
            if sdf_joints.get(joint.name) != jtype:
                have = [n for n, t in sdf_joints.items() if t in sdf_types.values()]
                found = (
                    f"is a {sdf_joints[joint.name]!r} joint there"
                    if joint.name in sdf_joints
                    else "is missing"
                )
                toml.fail(
                    f"{section} sdf",
                    f"{e['sdf']!r}: joint {joint.name!r} ([[variants."
                    f"{name}.joints]] #{k + 1}) {found}; expected <joint "
                    f"name={joint.name!r} type={jtype!r}> in its model; "
                    f"its revolute / prismatic joints are: "
                    f"{', '.join(have) or 'none'}",
                )
    initial = checked_entries(
        e.get("initial", {}), INITIAL_KEYS, toml, f"[variants.{name}.initial]"
    )
    for key, value in initial.items():
        if len(value) != len(joints):
            toml.fail(
                f"[variants.{name}.initial] {key}",
                f"expected one entry per joint ({len(joints)}), got {len(value)}",
            )
    interaction: tuple[tuple[str, str], ...] | None = None
    if "interaction" in e:
        where = f"[variants.{name}.interaction]"
        names = checked_entries(e["interaction"], INTERACTION_KEYS, toml, where)
        _check_interaction_names(model, toml, where, names)
        interaction = tuple(sorted(names.items()))
    return dict(
        mjcf=mjcf,
        joints=tuple(joints),
        initial_q=initial.get("q"),
        initial_refs=initial.get("refs"),
        first_view_eq=initial.get("first_view"),
        sdf=os.path.abspath(sdf) if sdf else None,
        interaction=interaction,
    )


def _check_interaction_names(
    model: MjModel, toml: _File, where: str, names: Mapping[str, str]
) -> None:
    """Each name of the interaction block is a site / sensor of the MJCF model."""
    import mujoco

    kinds = {
        "site": mujoco.mjtObj.mjOBJ_SITE,
        "sensor_site": mujoco.mjtObj.mjOBJ_SITE,
        "base": mujoco.mjtObj.mjOBJ_SITE,
        "force_sensor": mujoco.mjtObj.mjOBJ_SENSOR,
        "torque_sensor": mujoco.mjtObj.mjOBJ_SENSOR,
    }
    for key, value in names.items():
        if mujoco.mj_name2id(model, kinds[key], value) < 0:
            kind = "sensor" if key.endswith("_sensor") else "site"
            toml.fail(f"{where} {key}", f"{value!r} is not a {kind} of the MJCF model")
    site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, names["sensor_site"])
    for key, kind in (("force_sensor", "force"), ("torque_sensor", "torque")):
        k = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, names[key])
        wanted = getattr(mujoco.mjtSensor, f"mjSENS_{kind.upper()}")
        if model.sensor_type[k] != wanted or model.sensor_objid[k] != site:
            toml.fail(
                f"{where} {key}",
                f"{names[key]!r} must be a <{kind}> sensor at site {names['sensor_site']!r}",
            )


def _joint_type(model: MjModel, name: str) -> str:
    """'hinge' or 'slide': the type of 1-dof joint `name` of a mujoco.MjModel."""
    import mujoco

    k = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    return "hinge" if int(model.jnt_type[k]) == int(mujoco.mjtJoint.mjJNT_HINGE) else "slide"


def _read_toml(folder: str, label: str) -> dict[str, Any]:
    """The parsed robot.toml of `folder` (a robot file: asr.robots.robot_files.read)."""
    try:
        data = files.read(folder, os.path.join(folder, "robot.toml"), "robot.toml")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{label}: robot description not found (a robot folder needs a "
            "robot.toml and its MJCF file; see robots/README.md)"
        ) from None
    except files.BadFile as exc:
        raise RobotFileError(label, "", str(exc)) from None
    try:
        parsed: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RobotFileError(label, "", f"malformed TOML: {exc}") from None
    except RecursionError:  # the parser recurses once per nesting level
        raise RobotFileError(label, "", "malformed TOML: nested too deeply") from None
    return parsed


def robot_names() -> list[str]:
    """The robot names under robots_dir(): its sub-folders that hold a robot.toml, sorted."""
    folder = robots_dir()
    if not os.path.isdir(folder):
        return []
    return sorted(
        d for d in os.listdir(folder) if os.path.isfile(os.path.join(folder, d, "robot.toml"))
    )


def _robot_folder(
    name: str | os.PathLike[str], allow_path: bool
) -> tuple[str, Callable[[str], str]]:
    """(folder, label) of robot `name`; label(file) names one of its files in errors: the robot's
    name and the file for names, the path as given for paths (never the robots folder's own
    path, so that servers do not reveal their file layout)."""
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"robot: expected a name or a folder path, got {type(name).__name__}")
    name = os.fspath(name)
    if allow_path and os.path.isdir(name):
        return name, lambda file: os.path.join(name, file)
    have = robot_names()
    if not allow_path and (name in (".", "..") or any(c in name for c in "/\\")):
        raise FileNotFoundError(
            f"robot: expected a robot name, not a path; available: {', '.join(have) or 'none'}"
        )
    # a name is one entry of robot_names(): no separators, no '..', nothing outside the folder
    if name in have:
        return os.path.join(robots_dir(), name), lambda file: f"robot {name!r} ({file})"
    where = " in the robots folder" + ("" if not allow_path else " and no folder at that path")
    raise FileNotFoundError(
        f"robot {name!r}: no folder {name!r}{where}; available: {', '.join(have) or 'none'}"
    )


def load_robot(
    name: str | os.PathLike[str], variant: str | None = None, *, allow_path: bool = True
) -> Robot:
    """Load robot `name` (a folder under robots_dir(), or, unless allow_path=False, a path to a
    robot folder) in `variant` (default: its default_variant). Every entry of robot.toml and
    every variant is checked (robots/README.md lists what): a broken description raises
    RobotFileError (a ValueError) naming the robot (or the path given), the file and the entry;
    an unknown variant a ValueError. The variants' MJCF files must lie inside the robot's folder.
    Servers pass allow_path=False: then only the names of robot_names() load."""
    if variant is not None and not isinstance(variant, str):
        raise TypeError(f"variant: expected a variant name (str), got {type(variant).__name__}")
    folder, label = _robot_folder(name, allow_path)
    toml = _File(label, "robot.toml")
    top = checked_entries(_read_toml(folder, toml.label(toml.file)), TOP_KEYS, toml, "")
    if not top["variants"]:
        toml.fail("variants", "needs at least one [variants.<name>] table")
    models: dict[object, tuple[str, Any]] = {}
    variants = {v: _variant(folder, toml, v, table, models) for v, table in top["variants"].items()}
    default = top.get("default_variant", next(iter(variants)))
    if default not in variants:
        toml.fail("default_variant", f"no variant {default!r}; variants: {', '.join(variants)}")
    variant = variant or default
    if variant not in variants:
        raise ValueError(
            f"{toml.label(toml.file)}: unknown variant {variant!r}; valid: {', '.join(variants)}"
        )
    return Robot(
        top.get("name", os.path.basename(os.path.abspath(folder))),
        variant,
        top.get("description", ""),
        folder,
        **variants[variant],
    )


def variant_names(name: str | os.PathLike[str], *, allow_path: bool = True) -> tuple[str, ...]:
    """The variant names of robot `name` in robot.toml order, after load_robot(name) has checked
    the whole description (so every name listed is a variant that loads)."""
    folder = load_robot(name, allow_path=allow_path).folder
    return tuple(_read_toml(folder, "robot.toml")["variants"])


def joint_addresses(
    model: MjModel, names: Iterable[str], where: str = "model"
) -> tuple[list[int], list[int]]:
    """qpos and dof addresses of the named hinge or slide joints of a mujoco.MjModel."""
    import mujoco

    qpos_adr, dof_adr = [], []
    hinges = _one_dof_joints(model)
    for name in names:
        k = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if k < 0 or name not in hinges:
            raise ValueError(
                f"{where}: actuated joint {name!r} is not a hinge or slide joint of "
                f"the MJCF model; its 1-dof joints are: {', '.join(hinges) or 'none'}"
            )
        qpos_adr.append(int(model.jnt_qposadr[k]))
        dof_adr.append(int(model.jnt_dofadr[k]))
    return qpos_adr, dof_adr


__all__ = [
    "Robot",
    "RobotJoint",
    "RobotFileError",
    "load_robot",
    "robot_names",
    "robots_dir",
    "variant_names",
    "joint_addresses",
]
