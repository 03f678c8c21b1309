"""Loading asr's MuJoCo plugin library (asr.mujoco.plugin.load, docs/mujoco_plugin.md "Building
and loading"): what the library asks of the dynamic loader, the MuJoCo version check before it is
loaded, two copies of it in one process, and register_model's refusals.

A second copy registering "asr.actuator" is a process-wide change, so those cases run in fresh
Python processes (real MuJoCo, a real copy of the built library in a temporary folder); each must
exit normally: MuJoCo's own "already registered" error would end it.
"""

import ctypes
import json
import os
import shutil
import subprocess
import sys
import uuid

import mujoco
import numpy as np
import pytest

import asr
from asr.core.ffi import ffi, lib
from asr.mujoco import plugin as mujoco_plugin
from tests.support.elf import dynamic_section, interpreter_rpaths
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

ROOT = str(ROOT_PATH)
TIMEOUT_S = 120  # a fresh process imports asr and MuJoCo: a few seconds on the 2-core machine

XML = """<mujoco><option timestep="0.001"/>
<extension><plugin plugin="asr.actuator"><instance name="j">
  <config key="model" value="sea"/><config key="mode" value="3"/>
</instance></plugin></extension>
<worldbody><body name="b"><joint name="j" type="hinge"/>
  <geom type="sphere" size="0.05" pos="0 0.1 0"/></body></worldbody>
<actuator><plugin name="j_ref1" joint="j" instance="j"/>
  <plugin name="j_ref2" joint="j" instance="j"/></actuator></mujoco>"""

USER_PARAMS = (  # the built-in sea's stiffness under a name that has no config key of its own
    asr.ParamSpec("u_k", 10.0, lo=0.0, hi=np.inf, lo_open=True, hi_open=True, unit="N m/rad"),
    asr.ParamSpec("u_def", 0.8, lo=0.0, hi=np.inf, lo_open=True, hi_open=True, unit="rad"),
)


def run_python(code, cwd, *args):
    """Run `code` in a fresh Python (cwd: where MuJoCo writes its warning log); its last line of
    output, as JSON, and the process."""
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert out.returncode == 0, f"exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    return json.loads(out.stdout.splitlines()[-1]), out


def library_copy(folder):
    """A copy of the built plugin library in `folder`: another file, as an installed wheel's
    library is to a build tree's."""
    copy = os.path.join(os.path.realpath(folder), os.path.basename(mujoco_plugin.path()))
    shutil.copyfile(mujoco_plugin.path(), copy)
    return copy


def mujoco_soname():
    needed = [n for n in dynamic_section(mujoco_plugin.path())["needed"] if "mujoco" in n]
    assert len(needed) == 1, needed
    return needed[0]


# ---------------------------------------------------------------------------- the library file


def test_library_needs_libmujoco_by_soname_and_no_runpath_of_its_own():
    """No runpath into the build tree, site-packages or MuJoCo's folder: the library takes the
    running process's libmujoco (by its soname), never another one a stale build points to."""
    where = mujoco_plugin.path()
    elf = dynamic_section(where)
    running = os.path.realpath(os.path.dirname(mujoco.__file__))
    assert mujoco_soname() == next(n for n in os.listdir(running) if n.startswith("libmujoco.so"))
    assert not [n for n in elf["needed"] if os.sep in n], elf["needed"]  # sonames, not paths
    # only the interpreter's own (its LDSHARED links every extension with it)
    assert set(elf["runpath"]) <= interpreter_rpaths(), elf["runpath"]
    for folder in elf["runpath"]:
        assert "mujoco" not in folder and "$ORIGIN" not in folder, folder
        assert not os.path.realpath(folder).startswith((ROOT, running)), folder
    assert mujoco_plugin.built_for(where) == mujoco.mj_version()


def other_mujoco_copy(folder, stamp=True):
    """A copy of the library as a build against another MuJoCo version looks to the loader and
    to asr: its NEEDED libmujoco soname and its version stamp rewritten (same length) to the
    running version minus or plus one, which no installed MuJoCo provides; `stamp` False: no
    stamp at all, as a library an older asr built. Returns (path, version)."""
    running = mujoco.mj_version()
    other = running - 1 if running % 10 else running + 1
    soname = mujoco_soname()
    other_soname = "libmujoco.so." + mujoco_plugin._version_text(other)
    assert len(other_soname) == len(soname) and other_soname != soname
    with open(mujoco_plugin.path(), "rb") as f:
        data = f.read()
    old_stamp = f"ASR_MUJOCO_BUILT_FOR={running}\0".encode()
    new_stamp = f"ASR_MUJOCO_BUILT_FOR={other}\0" if stamp else f"ASR_MUJOCO_BUILT_XXX={running}\0"
    assert data.count(old_stamp) == 1 and data.count(soname.encode() + b"\0") >= 1
    data = data.replace(old_stamp, new_stamp.encode())
    data = data.replace(soname.encode() + b"\0", other_soname.encode() + b"\0")
    assert len(data) == os.path.getsize(mujoco_plugin.path())
    copy = os.path.join(os.path.realpath(folder), f"other_{stamp}.so")
    with open(copy, "wb") as f:
        f.write(data)
    assert dynamic_section(copy)["needed"].count(other_soname) == 1
    return copy, other


def mapped(path):
    with open("/proc/self/maps") as f:
        return path in f.read()


def test_other_mujoco_version_is_named_before_the_library_loads(tmp_path):
    """A library built for another MuJoCo: ImportError naming both versions and the rebuild,
    raised before the loader runs (which would fail on the missing libmujoco.so.<version>)."""
    copy, other = other_mujoco_copy(tmp_path)
    running = mujoco.mj_version()
    with pytest.raises(ImportError) as info:
        mujoco_plugin._open(copy, mujoco)
    text = str(info.value)
    assert f"{copy} was built for MuJoCo {mujoco_plugin._version_text(other)} ({other})" in text
    assert f"MuJoCo {mujoco.__version__} ({running}) is running" in text
    assert "`make build`" in text and "--no-build-isolation --no-binary asr-sim asr-sim" in text
    assert not mapped(copy)
    with pytest.raises(OSError, match=r"libmujoco\.so\."):  # what the loader itself says
        ctypes.CDLL(copy)


def test_library_without_version_stamp_is_refused_before_it_loads(tmp_path):
    copy, _ = other_mujoco_copy(tmp_path, stamp=False)
    with pytest.raises(ImportError, match="does not say which MuJoCo it was built for") as info:
        mujoco_plugin._open(copy, mujoco)
    assert f"MuJoCo {mujoco.__version__} ({mujoco.mj_version()}) is running" in str(info.value)
    assert "`make build`" in str(info.value)
    assert not mapped(copy)


def test_version_text():
    assert mujoco_plugin._version_text(4000001) == "4.0.1"
    assert mujoco_plugin._version_text(4012003) == "4.12.3"
    assert mujoco_plugin._version_text(327) == "3.2.7"
    assert mujoco_plugin._version_text(mujoco.mj_version()) == mujoco.__version__


# ---------------------------------------------------------------------------- two copies

COPY_FIRST = f"""
import json, sys, mujoco
from asr.mujoco import plugin as mujoco_plugin
mujoco.mj_loadPluginLibrary(sys.argv[1])   # another copy, loaded by someone else
out = {{}}
try:
    mujoco_plugin.load()
except ImportError as exc:
    out["error"] = str(exc)
m = mujoco.MjModel.from_xml_string({XML!r})  # the copy's plugin still runs
d = mujoco.MjData(m)
d.ctrl[:] = 0.1
mujoco.mj_step(m, d, nstep=50)
out["qpos"] = float(d.qpos[0])
print(json.dumps(out))
"""


def test_second_copy_after_another_is_an_import_error_naming_both(tmp_path):
    copy = library_copy(tmp_path)
    out, _ = run_python(COPY_FIRST, tmp_path, copy)
    ours = os.path.realpath(mujoco_plugin.path())
    assert out["error"] == (
        f"asr's MuJoCo plugin library {ours} cannot register 'asr.actuator': another copy of "
        f"it, {copy}, registered it first in this process (loaded with mj_loadPluginLibrary or "
        "ctypes, not by asr.mujoco.plugin.load). Two copies (an installed wheel's and a build "
        "tree's, say) cannot both register it: load one, asr.mujoco.plugin.path()"
    )
    assert out["qpos"] != 0.0 and np.isfinite(out["qpos"])


ASR_FIRST = f"""
import ctypes, json, sys, mujoco
from asr.mujoco import plugin as mujoco_plugin
first = mujoco_plugin.load()
mujoco.mj_loadPluginLibrary(sys.argv[1])   # then another copy: it must not register
out = {{"registered": ctypes.CDLL(sys.argv[1]).asr_mujoco_registered(),
       "again": mujoco_plugin.load() == first}}
m = mujoco.MjModel.from_xml_string({XML!r})
d = mujoco.MjData(m)
d.ctrl[:] = 0.1
mujoco.mj_step(m, d, nstep=50)
out["instances"] = mujoco_plugin.instances(m)
out["state"] = mujoco_plugin.states(m, d)["j"]["steps"]
print(json.dumps(out))
"""


def test_another_copy_after_asr_registers_nothing_and_keeps_the_process(tmp_path):
    copy = library_copy(tmp_path)
    out, proc = run_python(ASR_FIRST, tmp_path, copy)
    assert out == {"registered": -1, "again": True, "instances": [0], "state": 50.0}
    # MuJoCo's warning handler (stdout and MUJOCO_LOG.TXT in the working folder) says why
    warned = proc.stdout + proc.stderr
    log = tmp_path / "MUJOCO_LOG.TXT"
    warned += log.read_text() if log.exists() else ""
    assert "asr.actuator: not registered by this library: another library registered it" in warned


# ---------------------------------------------------------------------------- register_model


def builtin(name):
    return next(
        lib.asr_model_get(k)
        for k in range(lib.asr_model_count())
        if ffi.string(lib.asr_model_get(k).name) == name.encode()
    )


def test_register_model_names_a_name_taken_by_another_definition():
    sea = builtin("sea")
    name = f"user_sea_{uuid.uuid4().hex[:8]}"
    asr.register_model(name, sea.elastic, sea.refmap, params=USER_PARAMS, nmotor=1)
    try:
        mujoco_plugin.register_model(name)
        asr.unregister_model(name)
        asr.register_model(name, sea.elastic, sea.refmap, params=USER_PARAMS, nmotor=1)
        with pytest.raises(ValueError) as info:  # a new definition under the plugin's name
            mujoco_plugin.register_model(name)
    finally:
        asr.unregister_model(name)
    assert str(info.value) == (
        f"name: {name!r} is registered with the MuJoCo plugin as another model (an earlier "
        "definition of that name, which the plugin keeps for the models compiled with it); "
        "valid: a name the plugin does not know yet, or the definition it registered"
    )


FILL = """
import json, numpy as np, asr
from asr.mujoco import plugin as mujoco_plugin
from asr.core.ffi import ffi, lib
sea = next(lib.asr_model_get(k) for k in range(lib.asr_model_count())
           if ffi.string(lib.asr_model_get(k).name) == b"sea")
spec = asr.ParamSpec("u_k", 10.0, lo=0.0, hi=np.inf, lo_open=True, hi_open=True)
done = 0
while done < 1000:
    name = f"user_sea_{done}"
    asr.register_model(name, sea.elastic, sea.refmap, params=(spec,), nmotor=1)
    try:
        mujoco_plugin.register_model(name)
    except ValueError as exc:
        print(json.dumps({"registered": done, "error": str(exc)}))
        break
    done += 1
"""


def test_register_model_names_the_plugins_limit(tmp_path):
    out, _ = run_python(FILL, tmp_path)
    most = ctypes.CDLL(mujoco_plugin.load()).asr_mujoco_max_user_models()
    assert out["registered"] == most == 64
    assert out["error"] == (
        f"name: 'user_sea_{most}' cannot be registered: the MuJoCo plugin holds {most} user "
        f"models already (registered models stay for the process); valid: at most {most} user "
        "models per process"
    )
