"""Robot descriptions: a folder with an MJCF model and a robot.toml that gives, per variant, the
asr actuator of every actuated joint (model, operation mode, parameters), the equivalent of the
reference toolbox's URDF plugin tags and plugin-manager configuration. See robots/README.md.
"""
import dataclasses
import os
import sys
from typing import Dict, List, Optional, Tuple

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

from asr.batch import Joint, _check_mode
from asr.models import get_model

ROBOTS_ENV = "ASR_ROBOTS"


def robots_dir():
    """Where robot names are looked up: $ASR_ROBOTS, else the robots/ folder of the source tree
    (editable installs and checkouts), else <prefix>/share/asr/robots (pip install .)."""
    env = os.environ.get(ROBOTS_ENV)
    if env:
        return env
    tree = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "robots")
    if os.path.isdir(tree):
        return tree
    return os.path.join(sys.prefix, "share", "asr", "robots")


@dataclasses.dataclass(frozen=True)
class RobotJoint:
    """An actuated joint: MJCF joint name and its asr actuator."""

    name: str
    model: str
    mode: int
    params: Dict[str, float]

    def joint(self):
        """The asr.Joint of this actuator."""
        return Joint(self.model, self.mode, dict(self.params))


@dataclasses.dataclass(frozen=True)
class Robot:
    """One variant of a robot: its MJCF file and actuated joints (in order)."""

    name: str
    variant: str
    description: str
    folder: str
    mjcf: str
    joints: Tuple[RobotJoint, ...]
    initial_q: Optional[Tuple[float, ...]] = None
    initial_refs: Optional[Tuple[Tuple[float, float], ...]] = None

    @property
    def joint_names(self):
        return tuple(j.name for j in self.joints)

    def mj_model(self):
        """A fresh mujoco.MjModel of this variant, checked against the actuated joints."""
        import mujoco

        model = mujoco.MjModel.from_xml_path(self.mjcf)
        joint_addresses(model, self.joint_names,
                        f"robot {self.name!r} ({self.variant}): {os.path.basename(self.mjcf)}")
        return model


def _fail(path, what):
    raise ValueError(f"{path}: {what}")


def _read_toml(file, label):
    if not os.path.isfile(file):
        raise FileNotFoundError(f"{label}: robot description not found (a robot folder needs a "
                                "robot.toml and its MJCF file; see robots/README.md)")
    with open(file, "rb") as f:
        try:
            return tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{label}: malformed TOML: {exc}") from None


def _joint_entry(path, variant, k, entry):
    where = f"variants.{variant}.joints[{k}]"
    if not isinstance(entry, dict):
        _fail(path, f"{where}: expected a table with name, model, mode and params")
    unknown = set(entry) - {"name", "model", "mode", "params"}
    if unknown:
        _fail(path, f"{where}: unknown keys {sorted(unknown)}; valid: name, model, mode, params")
    for key in ("name", "model", "mode"):
        if key not in entry:
            _fail(path, f"{where}: missing key {key!r}")
    try:
        spec = get_model(entry["model"]).spec
        mode = _check_mode(entry["mode"], spec, f"{where}.")
        params = dict(entry.get("params", {}))
        for pname, value in params.items():
            spec.param(pname).check(value, f"{where}.params.")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    return RobotJoint(str(entry["name"]), entry["model"], mode,
                      {k: float(v) for k, v in params.items()})


def robot_names():
    """The robot names under robots_dir(): its sub-folders that hold a robot.toml, sorted."""
    folder = robots_dir()
    if not os.path.isdir(folder):
        return []
    return sorted(d for d in os.listdir(folder)
                  if os.path.isfile(os.path.join(folder, d, "robot.toml")))


def _robot_folder(name, allow_path):
    """(folder, label) of robot `name`. The label names the robot description in errors: the
    robot's name for names, the path as given for paths (never the robots folder's own path, so
    that servers do not reveal their file layout)."""
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"robot: expected a name or a folder path, got {type(name).__name__}")
    name = os.fspath(name)
    if allow_path and os.path.isdir(name):
        return name, os.path.join(name, "robot.toml")
    have = robot_names()
    if not allow_path and (name in (".", "..") or any(c in name for c in "/\\")):
        raise FileNotFoundError(f"robot: expected a robot name, not a path; available: "
                                f"{', '.join(have) or 'none'}")
    # a name is one entry of robot_names(): no separators, no '..', nothing outside the folder
    if name in have:
        return os.path.join(robots_dir(), name), f"robot {name!r} (robot.toml)"
    where = " in the robots folder" + ("" if not allow_path else " and no folder at that path")
    raise FileNotFoundError(f"robot {name!r}: no folder {name!r}{where}; available: "
                            f"{', '.join(have) or 'none'}")


def _inside(folder, path):
    """True when `path` resolves (links followed) inside `folder`."""
    folder, path = os.path.realpath(folder), os.path.realpath(path)
    return os.path.commonpath([folder, path]) == folder


def load_robot(name, variant=None, *, allow_path=True):
    """Load robot `name` (a folder under robots_dir(), or, unless allow_path=False, a path to a
    robot folder) in `variant` (default: its default_variant). Errors name the robot (or the
    path given) and the offending entry; the variant's MJCF file must lie inside the robot's
    folder. Servers pass allow_path=False: then only the names of robot_names() load."""
    folder, path = _robot_folder(name, allow_path)
    doc = _read_toml(os.path.join(folder, "robot.toml"), path)
    variants = doc.get("variants")
    if not isinstance(variants, dict) or not variants:
        _fail(path, "needs at least one [variants.<name>] table")
    variant = variant or doc.get("default_variant") or next(iter(variants))
    if variant not in variants:
        raise ValueError(f"{path}: unknown variant {variant!r}; valid: {', '.join(variants)}")
    v = variants[variant]
    if "mjcf" not in v:
        _fail(path, f"variants.{variant}: missing key 'mjcf'")
    if not isinstance(v["mjcf"], str) or not v["mjcf"]:
        _fail(path, f"variants.{variant}.mjcf: expected a file name, got {v['mjcf']!r}")
    mjcf = os.path.join(folder, v["mjcf"])
    if not _inside(folder, mjcf):
        _fail(path, f"variants.{variant}.mjcf: {v['mjcf']!r} is outside the robot's folder; the "
                    "MJCF file must lie in it")
    if not os.path.isfile(mjcf):
        raise FileNotFoundError(f"{path}: variants.{variant}.mjcf: no file {v['mjcf']!r} in the "
                                "robot's folder")
    entries = v.get("joints")
    if not isinstance(entries, list) or not entries:
        _fail(path, f"variants.{variant}: needs at least one [[variants.{variant}.joints]]")
    joints = tuple(_joint_entry(path, variant, k, e) for k, e in enumerate(entries))
    names = [j.name for j in joints]
    if len(set(names)) != len(names):
        _fail(path, f"variants.{variant}: a joint is listed twice: {names}")
    initial = v.get("initial", {})
    q0 = tuple(float(x) for x in initial["q"]) if "q" in initial else None
    refs0 = tuple((float(a), float(b)) for a, b in initial["refs"]) if "refs" in initial else None
    for what, value in (("q", q0), ("refs", refs0)):
        if value is not None and len(value) != len(joints):
            _fail(path, f"variants.{variant}.initial.{what}: {len(value)} entries for "
                        f"{len(joints)} joints")
    return Robot(doc.get("name", os.path.basename(folder)), variant,
                 doc.get("description", ""), folder, mjcf, joints, q0, refs0)


def joint_addresses(model, names, where="model") -> Tuple[List[int], List[int]]:
    """qpos and dof addresses of the named hinge or slide joints of a mujoco.MjModel."""
    import mujoco

    qpos_adr, dof_adr = [], []
    one_dof = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    hinges = [model.joint(k).name for k in range(model.njnt) if int(model.jnt_type[k]) in one_dof]
    for name in names:
        k = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if k < 0 or name not in hinges:
            raise ValueError(f"{where}: actuated joint {name!r} is not a hinge or slide joint of "
                             f"the MJCF model; its 1-dof joints are: {', '.join(hinges) or 'none'}")
        qpos_adr.append(int(model.jnt_qposadr[k]))
        dof_adr.append(int(model.jnt_dofadr[k]))
    return qpos_adr, dof_adr


__all__ = ["Robot", "RobotJoint", "load_robot", "robot_names", "robots_dir",
           "joint_addresses"]
