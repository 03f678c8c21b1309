"""The built extension under Debian's valgrind (memcheck): a small asr.Sim rollout on two threads
and a CPR solve; and the MuJoCo plugin library (asr/_asr_mujoco*.so: groups formed and re-formed as
one MjData steps other models, resets, copies, RK4, and the crash cases of
tests/support/mujoco_plugin_cases.py: a configuration failing at a step under mj_step, mujoco.batch
and mujoco.rollout, settings edited in place, bad restored headers, params= from two threads).
Errors whose innermost frame outside the C library is in asr's own library (invalid reads and
writes, uses of uninitialised values, definitely lost blocks it allocated) fail the test; those of
Python, NumPy, MuJoCo or the loader are not asr's. The C tests run under ASan/UBSan separately
(tests/core/test_c_core.py)."""

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import asr._core
import asr.mujoco.plugin
from tests.conftest import IN_CI
from tests.support.mujoco_plugin_cases import CASES

pytestmark = pytest.mark.sanitizer

SCRIPT = """
import numpy as np, asr, asr.cpr
sim = asr.Sim("pendulum_1dof", 4, threads=2)
out = sim.rollout(200, [[0.5, 0.2]])
assert np.all(np.isfinite(out["q"])) and out["q"].shape == (4, 200, 1)
sol = asr.cpr.load_cpr("stewart_till").solve_igm([0.0, 0.0, 0.4])
assert sol.converged
print("asr under valgrind: done")
"""
CORE = os.path.realpath(asr._core.__file__)  # the built extension
PLUGIN_SCRIPT = """
import mujoco, mujoco.rollout, numpy as np, asr.mujoco.plugin
asr.mujoco.plugin.load()

def arm(models, integrator="Euler"):
    body, inst, act = "", "", ""
    for j, (model, k) in enumerate(models):
        body += f'<body pos="0 0.1 0"><joint name="j{j}" axis="1 0 0"/>'
        body += '<geom type="capsule" fromto="0 0 0 0 0.1 0" size="0.01" mass="0.5"/>'
        key = "k" if model == "sea" else "k1"
        inst += (f'<instance name="j{j}"><config key="model" value="{model}"/>'
                 f'<config key="mode" value="6"/><config key="{key}" value="{k}"/></instance>')
        act += (f'<plugin name="j{j}_1" joint="j{j}" instance="j{j}"/>'
                f'<plugin name="j{j}_2" joint="j{j}" instance="j{j}"/>')
    body += "</body>" * len(models)
    return mujoco.MjModel.from_xml_string(
        f'<mujoco><option integrator="{integrator}"/><extension><plugin plugin="asr.actuator">'
        f'{inst}</plugin></extension><worldbody>{body}</worldbody><actuator>{act}</actuator>'
        '</mujoco>')

a = arm([("sea", 100.0), ("qbmove_advanced", 0.003), ("sea", 150.0), ("sea", 120.0)])
b = arm([("sea", 90.0), ("sea", 110.0), ("qbmove_advanced", 0.002), ("sea", 130.0)])
r = arm([("sea", 100.0), ("sea", 100.0), ("sea", 100.0), ("sea", 100.0)], "RK4")
d = mujoco.MjData(a)
d.ctrl[:] = 0.3
for _ in range(20):
    mujoco.mj_step(a, d)
mujoco.mj_forward(a, d)
c = mujoco.MjData(a)
mujoco.mj_copyData(c, a, d)
for _ in range(10):
    mujoco.mj_step(b, c)
mujoco.mj_resetData(a, d)
d.ctrl[:] = float("nan")
mujoco.mj_step(a, d)
dr = mujoco.MjData(r)
dr.ctrl[:] = 0.2
for _ in range(10):
    mujoco.mj_step(r, dr)
size = mujoco.mj_stateSize(a, mujoco.mjtState.mjSTATE_FULLPHYSICS)
x0 = np.zeros((2, size))
state, _ = mujoco.rollout.rollout([a, b], [mujoco.MjData(a)], x0, np.full((2, 10, a.nu), 0.3))
assert np.all(np.isfinite(state))
del c, d, dr
print("plugin under valgrind: done")
"""
# the plugin's crash cases (tests/support/mujoco_plugin_cases.py) against the same library, loaded
# already: one round of the threads' compilations; memcheck's allocator keeps freed blocks back,
# so a freed model's address need not come back
CASES_SCRIPT = (
    "\nimport sys, asr.mujoco.plugin\n"
    'sys.argv = ["-c", asr.mujoco.plugin.path(), "rounds=1", "reuse=optional"]\n'
    + CASES
    + '\nprint("plugin cases under valgrind: done")\n'
)
# frames that only pass the error on: valgrind's replacements, the C library, the loader
NOT_THE_CULPRIT = ("vgpreload_", "libc.so", "ld-linux")


def asr_errors(xml_text, core=CORE):
    """[(kind, innermost relevant frame)] of the errors in valgrind's XML that are asr's."""
    out = []
    for error in ET.fromstring(xml_text).iter("error"):
        for frame in error.find("stack").iter("frame"):
            obj = frame.findtext("obj") or ""
            if os.path.basename(obj).startswith(NOT_THE_CULPRIT):
                continue
            if os.path.realpath(obj) == core:
                out.append((error.findtext("kind"), frame.findtext("fn")))
            break
    return out


def test_the_classifier_blames_only_asr():
    frame = "<frame><obj>{}</obj><fn>{}</fn></frame>"
    doc = (
        "<valgrindoutput>"
        + "".join(
            f"<error><kind>{kind}</kind><stack>{''.join(frame.format(*f) for f in frames)}</stack>"
            "</error>"
            for kind, frames in [
                (
                    "InvalidRead",
                    [
                        ("/lib/vgpreload_memcheck.so", "memcpy"),
                        ("/x/asr/_core.abi3.so", "asr_batch_step"),
                    ],
                ),
                (
                    "UninitValue",
                    [
                        ("/x/libpython3.11.so", "Py_INCREF"),
                        ("/x/asr/_core.abi3.so", "asr_batch_step"),
                    ],
                ),
                (
                    "Leak_DefinitelyLost",
                    [("/lib/vgpreload_memcheck.so", "malloc"), ("/x/libmujoco.so", "mj_makeData")],
                ),
            ]
        )
        + "</valgrindoutput>"
    )
    assert asr_errors(doc, core="/x/asr/_core.abi3.so") == [("InvalidRead", "asr_batch_step")]


def memcheck(tmp_path, script):
    """Valgrind's XML report of running script (Python) under memcheck."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        if IN_CI:
            pytest.fail("Debian's valgrind is required in CI (make test installs it)")
        pytest.skip("valgrind not installed (a failure when CI is set)")
    xml = tmp_path / "memcheck.xml"
    env = dict(os.environ, PYTHONMALLOC="malloc")  # every allocation seen by memcheck
    run = subprocess.run(
        [
            valgrind,
            "--tool=memcheck",
            "--xml=yes",
            f"--xml-file={xml}",
            "--leak-check=full",
            "--show-leak-kinds=definite",
            "--errors-for-leak-kinds=definite",
            "--num-callers=40",
            sys.executable,
            "-c",
            script,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # every part of the script ran to its end (each prints its own "done" line)
    assert run.stdout.count("under valgrind: done") == script.count("under valgrind: done")
    return xml.read_text()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """Valgrind's XML report of one process that runs SCRIPT, then PLUGIN_SCRIPT and the plugin's
    crash cases (CASES_SCRIPT): the two tests
    read their own library's errors from it (each error is blamed on one library's frame), so
    Python, NumPy and MuJoCo start under memcheck once, not twice (~20 s each on 2 cores)."""
    return memcheck(tmp_path_factory.mktemp("valgrind"), SCRIPT + PLUGIN_SCRIPT + CASES_SCRIPT)


def test_sim_rollout_and_cpr_solve_under_valgrind(report):
    found = asr_errors(report)
    print(f"valgrind: {report.count('<error>')} errors in all, {len(found)} in asr")
    assert found == []


def test_mujoco_plugin_under_valgrind(report):
    found = asr_errors(report, core=os.path.realpath(asr.mujoco.plugin.path()))
    print(f"valgrind: {report.count('<error>')} errors in all, {len(found)} in the plugin")
    assert found == []
