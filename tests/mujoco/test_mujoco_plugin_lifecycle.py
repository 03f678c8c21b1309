"""asr's MuJoCo plugin never aborts the process and never silently mis-simulates: the cases of
tests/support/mujoco_plugin_cases.py (a configuration that fails at a step, under mj_step,
mujoco.batch and mujoco.rollout; settings edited in place; restored headers that are not a step's;
params= from two threads; a model at a freed model's address) in a child process with the built
library and, marked sanitizer, with an AddressSanitizer + UBSan build of it (a Python that preloads
libasan; MuJoCo's Python bindings run unchanged)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import IN_CI, require
from tests.support.mujoco_plugin_cases import CASES
from tests.support.paths import ROOT

CSRC = ROOT / "csrc"
CASE_LINE = re.compile(r"^case .*: done$", re.MULTILINE)
NCASES = CASES.count('print(f"case') + CASES.count('print("case')
SANITIZER_REPORT = re.compile(r"ERROR: AddressSanitizer|runtime error:|UndefinedBehaviorSanitizer")


def run_cases(library, *flags, env=None):
    """The cases against the plugin library at `library`: (returncode, stdout, stderr)."""
    run = subprocess.run(
        [sys.executable, "-c", CASES, library, *flags],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    return run.returncode, run.stdout, run.stderr


@pytest.mark.slow
def test_crash_cases_run_to_the_end_in_one_process():
    require("mujoco")
    from asr.mujoco import plugin as mujoco_plugin

    rc, out, err = run_cases(mujoco_plugin.path())
    assert rc == 0, err[-4000:]
    assert len(CASE_LINE.findall(out)) == NCASES, out
    assert "case address reuse (True" in out  # the new model did take the freed address
    # the stopped actuators were reported through MuJoCo's warning handler, naming the setting
    assert "asr.actuator: actuator 'p1_1' stopped at step 0 with asr status 2" in err
    assert "gear = 2; valid: 1" in err


def sanitized_plugin(tmp_path):
    """The plugin library built with AddressSanitizer and UBSan (float casts included) into
    tmp_path, from the same sources and against the same MuJoCo as asr/_asr_mujoco*.so: the
    files of csrc/mujoco and csrc/core (asr/_build.py lists every one of them by name for the
    plugin; the C core tests compile csrc/<part>/*.c the same way)."""
    mujoco = require("mujoco")

    gcc = shutil.which("gcc")
    if gcc is None:
        if IN_CI:
            pytest.fail("gcc is required for the sanitizer build and is missing in CI")
        pytest.skip("gcc not installed (a failure when CI is set)")
    folder = Path(mujoco.__file__).parent
    libmujoco = sorted(folder.glob("libmujoco.so*"))[-1]
    out = tmp_path / "asr_mujoco_asan.so"
    sources = sorted((CSRC / "mujoco").glob("*.c")) + sorted((CSRC / "core").glob("*.c"))
    cmd = [
        gcc,
        "-std=c11",
        "-O1",
        "-g",
        "-fno-omit-frame-pointer",
        "-fsanitize=address,undefined,float-cast-overflow",
        "-fno-sanitize-recover=all",
        "-ffp-contract=off",
        "-Wno-psabi",
        "-fPIC",
        "-shared",
        "-fvisibility=hidden",
        f"-I{CSRC}",
        f"-I{folder / 'include'}",
        *map(str, sources),
        str(libmujoco),
        "-lm",
        "-lpthread",
        "-o",
        str(out),
    ]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    libasan = subprocess.run(
        [gcc, "-print-file-name=libasan.so"], capture_output=True, text=True
    ).stdout.strip()
    if not os.path.isabs(libasan):
        if IN_CI:
            pytest.fail("this gcc has no AddressSanitizer runtime (libasan), required in CI")
        pytest.skip("this gcc has no AddressSanitizer runtime (libasan; a failure when CI is set)")
    return str(out), libasan


@pytest.mark.slow
@pytest.mark.sanitizer
def test_crash_cases_under_address_sanitizer(tmp_path):
    library, libasan = sanitized_plugin(tmp_path)
    env = dict(
        os.environ,
        LD_PRELOAD=libasan,  # ASan's runtime first, as a Python that is not built with it needs
        # Python's own allocations are not freed at exit: leaks are not this test's question
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
    )
    rc, out, err = run_cases(library, "rounds=3", "reuse=optional", env=env)
    report = SANITIZER_REPORT.search(err)
    assert report is None, err[report.start() :][:4000]
    assert rc == 0, err[-4000:]
    assert len(CASE_LINE.findall(out)) == NCASES, out


@pytest.mark.parametrize("bad", [float("nan"), 1e300, 0.5, -3.0])
def test_states_names_a_status_that_is_not_a_code(bad):
    """A restored status that no step writes reads as such (it once raised on NaN, or read 0.5
    as "ok"); the next step stops the actuator with status 2 for it."""
    mujoco = require("mujoco")
    from asr.mujoco import plugin as mujoco_plugin
    from tests.support.mujoco_plugin import compile_plugin, plugin_mjcf

    m, d = compile_plugin(plugin_mjcf([{"name": "j", "model": "sea", "mode": 3}]))
    d.ctrl[:] = 0.2
    mujoco.mj_step(m, d, nstep=3)
    d.plugin_state[m.plugin_stateadr[0] + 1] = bad
    state = mujoco_plugin.states(m, d)["j"]
    assert state["status_text"].startswith(f"not a status code: {bad!r}")
    mujoco.mj_step(m, d)
    state = mujoco_plugin.states(m, d)["j"]
    assert state["status"] == 2 and state["failed_step"] == 3 and d.actuator_force[0] == 0.0
