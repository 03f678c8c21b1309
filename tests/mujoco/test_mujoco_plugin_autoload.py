"""Registering asr's MuJoCo plugin when `import mujoco` runs (docs/mujoco_plugin.md, "Loading
automatically"): asr-sim's entry point of MuJoCo's group "mujoco.plugins"
(asr_mujoco_autoload.register) loads the plugin when ASR_MUJOCO_AUTOLOAD is 1 and does nothing
otherwise.

It acts at the first `import mujoco` of a process, so every case runs in a fresh Python (real
MuJoCo, the installed asr-sim's entry point: its metadata must be current, `pip install -e .`),
which prints what it saw as JSON on its last line.
"""

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points

import mujoco
import pytest

import asr_mujoco_autoload
from asr.mujoco import plugin as mujoco_plugin
from tests.support.mujoco_plugin import plugin_mjcf
from tests.support.paths import ROOT

VARIABLE = asr_mujoco_autoload.VARIABLE
TIMEOUT_S = 120  # a fresh process imports MuJoCo (and asr): a few seconds on the 2-core machine
XML = plugin_mjcf([{"name": "j", "model": "sea", "mode": 3}])

# Imports mujoco first of all, recording its RuntimeWarnings (the category of MuJoCo's "Failed to
# load mujoco plugin entry point" and of asr_mujoco_autoload's; a DeprecationWarning of some
# dependency's import is not this test's business); then compiles XML (argv[1]) and steps it;
# LOAD_AGAIN then calls load() where the import loaded asr. Runs from tmp_path (MuJoCo's log goes
# there) with the checkout on sys.path; prints `out` as JSON.
IMPORT_AND_COMPILE = """
import json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import mujoco
out = {"asr_imported": "asr" in sys.modules,
       "warnings": [f"{w.category.__name__}: {w.message}" for w in caught
                    if issubclass(w.category, RuntimeWarning)]}
try:
    m = mujoco.MjModel.from_xml_string(sys.argv[1])
    d = mujoco.MjData(m)
    d.ctrl[:] = 0.1
    mujoco.mj_step(m, d)
    out["compiled"], out["nu"] = True, int(m.nu)
except ValueError as exc:
    out["compiled"], out["error"] = False, str(exc)
"""
LOAD_AGAIN = """
if out["asr_imported"]:
    from asr.mujoco import plugin
    lib = plugin._LOADED.get("lib")
    out["path"], out["loaded_before"] = plugin.path(), plugin._LOADED.get("path")
    out["load"] = plugin.load()
    out["same_library"] = lib is not None and plugin._LOADED["lib"] is lib
"""
PRINT = "print(json.dumps(out))"
PROBE = IMPORT_AND_COMPILE + LOAD_AGAIN + PRINT


def probe(tmp_path, value, code=PROBE):
    """Run `code` in a fresh Python with ASR_MUJOCO_AUTOLOAD=value (None: unset); its JSON."""
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    if value is not None:
        env[VARIABLE] = value
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-c", code, XML],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert out.returncode == 0, f"exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    return json.loads(out.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def autoloaded(tmp_path_factory):
    return probe(tmp_path_factory.mktemp("autoload"), "1")


def test_entry_point_is_declared_for_mujoco():
    """The installed asr-sim declares the entry point MuJoCo's import calls (a stale editable
    install lacks it: `pip install --no-deps --no-build-isolation -e .`)."""
    found = [e for e in entry_points(group="mujoco.plugins") if e.dist.name == "asr-sim"]
    assert [(e.name, e.value) for e in found] == [("asr", "asr_mujoco_autoload:register")]
    assert found[0].load() is asr_mujoco_autoload.register


def test_variable_set_registers_the_plugin_at_import_mujoco(autoloaded):
    """ASR_MUJOCO_AUTOLOAD=1: an MJCF naming asr.actuator compiles and steps right after
    `import mujoco`, no load() called, and the import warns of nothing."""
    assert autoloaded["warnings"] == []
    assert autoloaded["compiled"], autoloaded.get("error")
    assert autoloaded["nu"] == 2
    assert autoloaded["asr_imported"]
    assert autoloaded["loaded_before"] == autoloaded["path"]


def test_explicit_load_after_autoload_is_a_no_op(autoloaded):
    """load() after the import loaded the plugin returns the same file and keeps the library
    handle the import opened (no second dlopen, no second registration)."""
    assert autoloaded["load"] == autoloaded["path"] == autoloaded["loaded_before"]
    assert autoloaded["same_library"]


@pytest.mark.parametrize("value", [None, "", "0"])
def test_variable_unset_or_off_leaves_mujoco_as_it_was(tmp_path, value):
    """Unset, empty or 0: MuJoCo's own "plugin not found" as before, and `import mujoco` did not
    import asr (it costs a user who did not opt in nothing but the tiny module)."""
    out = probe(tmp_path, value)
    assert out["warnings"] == []
    assert not out["compiled"]
    assert "plugin asr.actuator not found" in out["error"]
    assert not out["asr_imported"]


@pytest.mark.parametrize("value", ["yes", "true", " 1", "2"])
def test_bad_value_warns_naming_the_variable(tmp_path, value):
    """Any other value: one RuntimeWarning naming the variable, the value and the valid values
    (not MuJoCo's "Failed to load mujoco plugin entry point"), nothing loaded, asr not imported."""
    out = probe(tmp_path, value)
    assert len(out["warnings"]) == 1, out["warnings"]
    text = out["warnings"][0]
    assert text.startswith(f"RuntimeWarning: {VARIABLE}={value!r} is not a valid value")
    assert "valid: '1'" in text and "'0', empty or unset" in text
    assert "Failed to load mujoco plugin entry point" not in text
    assert not out["compiled"] and "plugin asr.actuator not found" in out["error"]
    assert not out["asr_imported"]


def test_library_for_another_mujoco_is_a_warning_not_a_failed_import(tmp_path):
    """A plugin library built for another MuJoCo version (its stamp rewritten, as by an old
    build): `import mujoco` still succeeds, with one RuntimeWarning naming the variable and
    load()'s ImportError (both versions, the rebuild)."""
    running = mujoco.mj_version()
    other = running - 1 if running % 10 else running + 1
    with open(mujoco_plugin.path(), "rb") as f:
        data = f.read()
    stamp = f"ASR_MUJOCO_BUILT_FOR={running}\0".encode()
    assert data.count(stamp) == 1
    copy = tmp_path / "other.so"
    copy.write_bytes(data.replace(stamp, f"ASR_MUJOCO_BUILT_FOR={other}\0".encode()))
    # asr.mujoco.plugin does not import mujoco: its path() is pointed at the copy first
    code = f"from asr.mujoco import plugin; plugin.path = lambda: {str(copy)!r}"
    code += IMPORT_AND_COMPILE + PRINT
    out = probe(tmp_path, "1", code)
    assert len(out["warnings"]) == 1, out["warnings"]
    text = out["warnings"][0]
    assert text.startswith(f"RuntimeWarning: {VARIABLE}=1: asr's MuJoCo plugin was not loaded")
    assert f"ImportError: asr's MuJoCo plugin library {copy} was built for MuJoCo" in text
    assert f"({other}) but MuJoCo {mujoco.__version__} ({running}) is running" in text
    assert f"Unset {VARIABLE}" in text
    assert not out["compiled"] and "plugin asr.actuator not found" in out["error"]


def test_load_before_mujoco_is_imported_loads_once(tmp_path):
    """load() called first, with the variable set: its own `import mujoco` runs the entry point,
    which calls load() again inside it; both return the one library, loaded once."""
    code = (
        "import json, sys\nfrom asr.mujoco import plugin\nfirst = plugin.load()\n"
        "import mujoco\nm = mujoco.MjModel.from_xml_string(sys.argv[1])\n"
        "print(json.dumps([first, plugin.load(), plugin.path(), m.nu]))"
    )
    first, again, where, nu = probe(tmp_path, "1", code)
    assert first == again == where and nu == 2
