"""asr's actuators inside MuJoCo: the engine plugin "asr.actuator" (docs/mujoco_plugin.md).

The plugin library (asr/_asr_mujoco*.so, built from csrc/mujoco with the same actuator core as
asr.Sim) registers "asr.actuator" with MuJoCo when it is loaded. Load it once per process, then
any MJCF naming the plugin compiles and runs in plain MuJoCo: mj_step, the viewer,
mujoco.rollout, mujoco.batch, dm_control, Gymnasium's MuJoCo environments::

    import mujoco, asr.mujoco_plugin
    asr.mujoco_plugin.load()
    m = mujoco.MjModel.from_xml_path("arm_asr.xml")   # e.g. written by asr.export_mjcf

Each instance drives one joint; its actuators take the joint's two references from ctrl, in
joint order, so that ``d.ctrl[:] = refs.reshape(-1)`` for asr's (J, 2) references. The plugin
state of an instance (d.plugin_state[m.plugin_stateadr[k]:][:m.plugin_statenum[k]]) is the
header FIELDS[:NHEADER] then the joint's asr state record (asr.FIELDS order); states() reads it
by name.
"""

import ctypes
import glob
import os
import threading
from typing import Any

from asr._ffi import ffi
from asr._model_registry import BUILTIN_MODELS, get_model
from asr.batch import FIELDS
from asr.errors import status_text

PLUGIN = "asr.actuator"  # the name MJCF uses: <plugin plugin="asr.actuator">

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}  # "lib": the ctypes handle once load() succeeded
_KEEP: list[Any] = []  # C model definitions handed to the plugin: they must outlive it


def path() -> str:
    """Absolute path of the plugin library, for mujoco.mj_loadPluginLibrary or a C program's
    mj_loadPluginLibrary. FileNotFoundError if the package was built without it."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "_asr_mujoco*.so")))
    if not found:
        raise FileNotFoundError(
            "asr's MuJoCo plugin library is not built (it needs the mujoco package at build "
            "time): run `make build`, or reinstall asr-sim with mujoco installed"
        )
    return found[-1]


def _check_version(lib: Any, mujoco: Any) -> None:
    built, running = lib.asr_mujoco_built_for(), int(mujoco.mj_version())
    if built != running:
        raise ImportError(
            f"asr's MuJoCo plugin was built for MuJoCo {built} but MuJoCo {running} is "
            "running: rebuild asr (make build, or reinstall asr-sim) against this MuJoCo"
        )


def load() -> str:
    """Load the plugin library into MuJoCo once per process (later calls do nothing) and
    return its path. ImportError if it does not match the running MuJoCo."""
    import mujoco

    with _LOCK:
        if "lib" not in _LOADED:
            where = path()
            lib = ctypes.CDLL(where)
            lib.asr_mujoco_header_name.restype = ctypes.c_char_p
            _check_version(lib, mujoco)
            mujoco.mj_loadPluginLibrary(where)
            if not lib.asr_mujoco_registered():
                raise ImportError(f"asr's MuJoCo plugin did not register {PLUGIN!r}")
            _LOADED["lib"] = lib
        return path()


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


def states(m: Any, d: Any) -> dict[str, dict[str, float]]:
    """Every asr actuator's plugin state in MjData d of MjModel m, by instance name (an unnamed
    instance by its first actuator's name): {field: value} in fields() order (SI units, see
    asr.FIELDS), plus "status_text" when the actuator stopped."""
    import mujoco

    names = fields()
    out: dict[str, dict[str, Any]] = {}
    for k in instances(m):
        adr = int(m.plugin_stateadr[k])
        values = d.plugin_state[adr : adr + len(names)]
        state: dict[str, Any] = {n: float(v) for n, v in zip(names, values)}
        if state["status"]:
            state["status_text"] = status_text(int(state["status"]))
        out[_instance_name(mujoco, m, k)] = state
    return out


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
    address = int(ffi.cast("uintptr_t", model.cdef))
    rc = _lib().asr_mujoco_register_model(ctypes.c_void_p(address))
    if rc:
        raise ValueError(
            f"name: {name!r} is registered with the MuJoCo plugin as another model, or the "
            f"plugin holds its maximum of user models (status {rc})"
        )
    _KEEP.append(model)


__all__ = ["PLUGIN", "fields", "header", "instances", "load", "path", "register_model", "states"]
