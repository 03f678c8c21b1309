"""asr's actuators inside MuJoCo: the engine plugin "asr.actuator" (docs/mujoco_plugin.md).

The plugin library (asr/_asr_mujoco*.so, built from csrc/mujoco with the same actuator core as
asr.Sim) registers "asr.actuator" with MuJoCo when it is loaded. Load it once per process, then
any MJCF naming the plugin compiles and runs in plain MuJoCo: mj_step, the viewer,
mujoco.rollout, mujoco.batch, dm_control, Gymnasium's MuJoCo environments::

    import mujoco, asr.mujoco.plugin
    asr.mujoco.plugin.load()
    m = mujoco.MjModel.from_xml_path("arm_asr.xml")   # e.g. written by asr.export_mjcf

Each instance drives one joint, or the joints its key "joints" lists (the compact form); a
joint's actuators take its two references from ctrl, in joint order, so that
``d.ctrl[:] = refs.reshape(-1)`` for asr's (J, 2) references. The plugin state of an instance
(d.plugin_state[m.plugin_stateadr[k]:][:m.plugin_statenum[k]]) is, per joint it drives, the
header FIELDS[:NHEADER] then the joint's asr state record (asr.FIELDS order); states() reads it
by name. An instance whose first actuator declares actdim="4" also keeps its motors' state in
MuJoCo's act (d.act[m.actuator_actadr[a]:][:4], the fields act_fields() names), which
mjd_transitionFD then differentiates (docs/mujoco_plugin.md, "Derivatives and act"). The
instance's sensors (MJCF <sensor><plugin instance="..."/>, written by asr.export_mjcf) put the
committed values of sensor_layout() into d.sensordata, where MuJoCo's recorders, mujoco.rollout
and the viewer see them; sensordata() reads them as an array.
"""

import ctypes
import glob
import os
import re
import threading
from typing import Any

from asr.core.batch import FIELDS
from asr.core.errors import raise_for_status, status_text
from asr.core.ffi import ffi
from asr.core.ffi import lib as core
from asr.core.model_registry import BUILTIN_MODELS, get_model

PLUGIN = "asr.actuator"  # the name MJCF uses: <plugin plugin="asr.actuator">

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}  # "lib", "path": the ctypes handle and its file once load() succeeded
_KEEP: list[Any] = []  # C model definitions handed to the plugin: they must outlive it


def path() -> str:
    """Absolute path of the plugin library, for mujoco.mj_loadPluginLibrary or a C program's
    mj_loadPluginLibrary. FileNotFoundError if the package was built without it."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # asr/, beside _core
    found = sorted(glob.glob(os.path.join(here, "_asr_mujoco*.so")))
    if not found:
        raise FileNotFoundError(
            "asr's MuJoCo plugin library is not built (it needs the mujoco package at build "
            "time): run `make build`, or reinstall asr-sim with mujoco installed"
        )
    return found[-1]


# The rebuild against the running MuJoCo: a source checkout, or the installed package (built from
# its source with the MuJoCo installed here, not with a build environment's newest MuJoCo).
REBUILD = (
    "`make build` in a source checkout, or `pip install --force-reinstall --no-deps "
    "--no-build-isolation --no-binary asr-sim asr-sim` for an installed asr-sim"
)
_STAMP = re.compile(rb"ASR_MUJOCO_BUILT_FOR=([0-9]+)\0")  # asr_mujoco_stamp in csrc/mujoco


def _version_text(version: int) -> str:
    """mjVERSION_HEADER as MuJoCo writes it: 4000001 is 4.0.1, MuJoCo 3's 327 is 3.2.7."""
    if version >= 1000000:  # MuJoCo 4 on: major * 10^6 + minor * 10^3 + patch
        major, rest = divmod(version, 1000000)
        minor, patch = divmod(rest, 1000)
    else:  # MuJoCo 3: major * 100 + minor * 10 + patch
        major, rest = divmod(version, 100)
        minor, patch = divmod(rest, 10)
    return f"{major}.{minor}.{patch}"


def built_for(where: str) -> int | None:
    """The MuJoCo version (mjVERSION_HEADER) the plugin library at `where` was built for, read
    from the file without loading it; None for a library without the stamp (an older asr's)."""
    with open(where, "rb") as f:
        found = _STAMP.search(f.read())
    return int(found.group(1)) if found else None


def _check_version(where: str, mujoco: Any) -> None:
    """ImportError unless the library at `where` was built for the running MuJoCo: checked
    before loading it, since a library built for another MuJoCo needs that MuJoCo's
    libmujoco.so.<version> and would fail in the loader with a bare OSError."""
    built, running = built_for(where), int(mujoco.mj_version())
    if built is None:
        raise ImportError(
            f"asr's MuJoCo plugin library {where} does not say which MuJoCo it was built for "
            f"(an older asr built it); MuJoCo {_version_text(running)} ({running}) is running: "
            f"rebuild it: {REBUILD}"
        )
    if built != running:
        raise ImportError(
            f"asr's MuJoCo plugin library {where} was built for MuJoCo {_version_text(built)} "
            f"({built}) but MuJoCo {_version_text(running)} ({running}) is running: rebuild it "
            f"against this MuJoCo: {REBUILD}"
        )


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def _library_at(address: int) -> str | None:
    """Path of the loaded library holding code address `address` (dladdr), None if unknown."""
    info = _DlInfo()
    try:
        found = address and ctypes.CDLL(None).dladdr(ctypes.c_void_p(address), ctypes.byref(info))
    except AttributeError:  # a C library without dladdr
        return None
    return os.path.realpath(os.fsdecode(info.dli_fname)) if found and info.dli_fname else None


def _open(where: str, mujoco: Any) -> Any:
    """Load the library at `where` (its init registers the plugin: what
    mujoco.mj_loadPluginLibrary does, a dlopen) and check that it did."""
    _check_version(where, mujoco)
    lib = ctypes.CDLL(where)
    lib.asr_mujoco_header_name.restype = ctypes.c_char_p
    lib.asr_mujoco_key_name.restype = ctypes.c_char_p
    lib.asr_mujoco_act_name.restype = ctypes.c_char_p
    lib.asr_mujoco_act_unit.restype = ctypes.c_char_p
    lib.asr_mujoco_sensor_name.restype = ctypes.c_char_p
    lib.asr_mujoco_sensor_unit.restype = ctypes.c_char_p
    lib.asr_mujoco_registered_code.restype = ctypes.c_ulonglong
    state = lib.asr_mujoco_registered()
    if state == -1:
        owner = _library_at(lib.asr_mujoco_registered_code()) or "another library"
        raise ImportError(
            f"asr's MuJoCo plugin library {where} cannot register {PLUGIN!r}: another copy of "
            f"it, {owner}, registered it first in this process (loaded with "
            "mj_loadPluginLibrary or ctypes, not by asr.mujoco.plugin.load). Two copies (an "
            "installed wheel's and a build tree's, say) cannot both register it: load one, "
            "asr.mujoco.plugin.path()"
        )
    if state != 1:
        raise ImportError(f"asr's MuJoCo plugin library {where} did not register {PLUGIN!r}")
    return lib


def load() -> str:
    """Load the plugin library into MuJoCo once per process (later calls do nothing) and
    return its path. ImportError if it was built for another MuJoCo version than the running
    one (checked before the library is loaded; the message says how to rebuild) or if another
    copy of it, loaded by other means, registered "asr.actuator" first (the message names
    both files)."""
    import mujoco

    with _LOCK:
        if "lib" not in _LOADED:
            where = path()
            _LOADED["lib"] = _open(where, mujoco)
            _LOADED["path"] = where
        return str(_LOADED["path"])


def _lib() -> Any:
    load()
    return _LOADED["lib"]


def header() -> tuple[str, ...]:
    """Names of the header values at the start of an instance's plugin state."""
    lib = _lib()
    return tuple(
        lib.asr_mujoco_header_name(k).decode() for k in range(lib.asr_mujoco_header_count())
    )


def fields() -> tuple[str, ...]:
    """Names of an instance's plugin state values, in order: the header, then asr's state
    fields (asr.FIELDS)."""
    if _lib().asr_mujoco_field_count() != len(FIELDS):
        raise ImportError("asr's MuJoCo plugin library does not match this asr: rebuild it")
    return header() + tuple(FIELDS)


def act_fields() -> tuple[str, ...]:
    """Names of the asr state fields an instance keeps in MuJoCo's act when its first actuator
    declares actdim="4", in act order: th1, th2 (rad; adjuster models' th2 in their unit),
    th1d, th2d (rad/s), the motors' angles and velocities."""
    lib = _lib()
    names = tuple(lib.asr_mujoco_act_name(k).decode() for k in range(lib.asr_mujoco_act_count()))
    if any(lib.asr_mujoco_act_field(k) != FIELDS.index(n) for k, n in enumerate(names)):
        raise ImportError("asr's MuJoCo plugin library does not match this asr: rebuild it")
    return names


def sensor_layout() -> tuple[tuple[str, str], ...]:
    """The values of one asr sensor, in sensordata order: (name, SI unit) pairs, "" for a
    unitless value (status). The names are fields of states() (header or asr.FIELDS): defl1,
    defl2 (rad), stiffness (N m/rad), tau_el1, tau_el2, tau_joint (N m), th1 (rad), th2 ("rad or
    m": an adjuster model's th2 is its stiffness input, m for awas2), status."""
    lib = _lib()
    out = []
    for k in range(lib.asr_mujoco_sensor_count()):
        out.append((lib.asr_mujoco_sensor_name(k).decode(), lib.asr_mujoco_sensor_unit(k).decode()))
    return tuple(out)


def sensors(m: Any) -> list[int]:
    """Ids of m's asr sensors (MJCF <sensor><plugin instance="..."/> on an asr.actuator
    instance), in sensor order; asr.export_mjcf writes one per joint, in joint order, named
    "<joint>_asr"."""
    import mujoco

    ours = set(instances(m))
    plugin_type = int(mujoco.mjtSensor.mjSENS_PLUGIN)
    return [
        s
        for s in range(m.nsensor)
        if int(m.sensor_type[s]) == plugin_type and int(m.sensor_plugin[s]) in ours
    ]


def sensordata(m: Any, d: Any) -> Any:
    """m's asr sensors' values in d.sensordata as a numpy array of shape (S, V): one row per
    joint of each sensor of sensors(m), in sensor order (a sensor of an instance that drives n
    joints, the compact form's key "joints", gives n rows in that key's order; S rows in all:
    one per joint, in joint order, for asr.export_mjcf's long files), columns in sensor_layout()
    order (V values, SI units as it says). MuJoCo computes them at the start of each step (the
    position stage of its first forward pass), from the plugin state the previous step
    committed: after mj_step they are the states() read just before that step."""
    import numpy as np

    nvalue = len(sensor_layout())
    rows = []
    for s in sensors(m):
        adr, dim = int(m.sensor_adr[s]), int(m.sensor_dim[s])
        rows.append(np.asarray(d.sensordata[adr : adr + dim], dtype=float).reshape(-1, nvalue))
    return np.concatenate(rows) if rows else np.empty((0, nvalue))


def instances(m: Any) -> list[int]:
    """Indices of m's plugin instances that are asr actuators (by MuJoCo's plugin slot)."""
    slot = _lib().asr_mujoco_slot()
    return [k for k in range(m.nplugin) if int(m.plugin[k]) == slot]


def _instance_name(mujoco: Any, m: Any, k: int) -> str:
    name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_PLUGIN, k)
    if name:
        return str(name)
    first = next(i for i in range(m.nu) if int(m.actuator_plugin[i]) == k)
    return str(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, first) or f"actuator {first}")


def _key_index(name: str) -> int:
    """Index of configuration key `name` among an instance's values: MuJoCo stores them
    NUL-terminated in the order the plugin declared its keys (the library says which)."""
    lib = _lib()
    names = [lib.asr_mujoco_key_name(k).decode() for k in range(lib.asr_mujoco_key_count())]
    return names.index(name)


def joint_list(m: Any, k: int) -> list[str]:
    """The joint names instance k's key "joints" lists (the compact form: the instance drives
    them, in this order, its plugin state one record per joint); [] for the one-joint form."""
    raw = bytes(m.plugin_attr[int(m.plugin_attradr[k]) :].astype("uint8"))
    values, at = raw.split(b"\0"), _key_index("joints")
    return values[at].decode().split() if len(values) > at else []


def states(m: Any, d: Any) -> dict[str, dict[str, float]]:
    """Every asr actuator's plugin state in MjData d of MjModel m, one entry per joint: by
    instance name for the one-joint form (an unnamed instance by its first actuator's name),
    "<instance>/<joint>" for each joint of an instance of the compact form (key "joints", in
    its order): {field: value} in fields() order (SI units, see asr.FIELDS), plus
    "status_text" when the actuator stopped."""
    import mujoco

    names = fields()
    out: dict[str, dict[str, Any]] = {}
    for k in instances(m):
        adr = int(m.plugin_stateadr[k])
        name = _instance_name(mujoco, m, k)
        joints = joint_list(m, k)
        keys = [f"{name}/{j}" for j in joints] if joints else [name]
        for u, key in enumerate(keys):
            values = d.plugin_state[adr + u * len(names) : adr + (u + 1) * len(names)]
            state: dict[str, Any] = {n: float(v) for n, v in zip(names, values)}
            if state["status"]:
                state["status_text"] = _status_text(state["status"])
            out[key] = state
    return out


def _status_text(status: float) -> str:
    """The meaning of a plugin state's status value; one that is not a status code (NaN, 0.5,
    1e300: a state a step did not write) is said to be one, as the plugin's next step stops the
    actuator with status 2 for it."""
    if status.is_integer() and 0 < status <= 255:
        return str(status_text(int(status)))
    return (
        f"not a status code: {status!r} (valid: an integer in [0, 255]); the plugin state was not "
        "written by a step, and the next step stops the actuator with status 2"
    )


def register_model(name: str) -> None:
    """Make the user model `name` (asr.register_model with C function pointers) available to
    the plugin as model="<name>"; its parameters without a key of their own go in one key,
    params="a=1 b=2". Python-callable models are refused: MuJoCo's threads would call into
    Python for every step."""
    if name in BUILTIN_MODELS:
        raise ValueError(f"name: {name!r} is a built-in model: the plugin knows it already")
    model = get_model(name)
    if model.python is not None:
        raise ValueError(
            f"model {name!r} is a Python callable; the MuJoCo plugin runs C models only "
            "(register it with C function pointers)"
        )
    lib = _lib()
    rc = lib.asr_mujoco_register_model(ctypes.c_void_p(int(ffi.cast("uintptr_t", model.cdef))))
    if rc == core.ASR_ERR_MODEL:
        raise ValueError(
            f"name: {name!r} is registered with the MuJoCo plugin as another model (an earlier "
            "definition of that name, which the plugin keeps for the models compiled with it); "
            "valid: a name the plugin does not know yet, or the definition it registered"
        )
    if rc == core.ASR_ERR_NOMEM:
        most = lib.asr_mujoco_max_user_models()
        raise ValueError(
            f"name: {name!r} cannot be registered: the MuJoCo plugin holds {most} user models "
            f"already (registered models stay for the process); valid: at most {most} user "
            "models per process"
        )
    raise_for_status(rc, f"registering {name!r} with the MuJoCo plugin")
    _KEEP.append(model)


__all__ = [
    "PLUGIN",
    "act_fields",
    "fields",
    "header",
    "instances",
    "joint_list",
    "load",
    "path",
    "register_model",
    "sensor_layout",
    "sensordata",
    "sensors",
    "states",
]
