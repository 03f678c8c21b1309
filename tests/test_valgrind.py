"""The built extension under Debian's valgrind (memcheck): a small asr.Sim rollout on two threads
and a CPR solve. Errors whose innermost frame outside the C library is in asr's own extension
(asr/_core*.so: invalid reads and writes, uses of uninitialised values, definitely lost blocks
it allocated) fail the test; those of Python, NumPy, MuJoCo or the loader are not asr's. The C
tests run under ASan/UBSan separately (tests/test_c_core.py)."""

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from conftest import IN_CI

import asr._core

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


def test_sim_rollout_and_cpr_solve_under_valgrind(tmp_path):
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
            SCRIPT,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "asr under valgrind: done" in run.stdout
    text = xml.read_text()
    found = asr_errors(text)
    print(f"valgrind: {text.count('<error>')} errors in all, {len(found)} in asr")
    assert found == []
