"""What the dynamic loader reads from a shared library: its NEEDED libraries and its runpath
(RUNPATH or RPATH), through binutils' readelf -d (the compiler's binutils: present wherever the
libraries are built; a failure in CI, a skip elsewhere, when it is missing)."""

import os
import re
import shlex
import shutil
import subprocess
import sysconfig

import pytest

IN_CI = bool(os.environ.get("CI"))


def dynamic_section(path):
    """{"needed": [soname, ...], "runpath": [folder, ...]} of the ELF library at `path`."""
    readelf = shutil.which("readelf")
    if readelf is None:
        if IN_CI:
            pytest.fail("readelf (binutils) is missing in CI")
        pytest.skip("readelf (binutils) is not installed (a failure when CI is set)")
    out = subprocess.run(
        [readelf, "-d", path], check=True, capture_output=True, text=True, timeout=30
    ).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", out)
    paths = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", out)
    return {"needed": needed, "runpath": [p for entry in paths for p in entry.split(":") if p]}


def interpreter_rpaths():
    """The runpath folders this Python adds to every extension it links (-Wl,-rpath in its
    LDSHARED / LDFLAGS: a pyenv build's own lib folder), which no build setting removes."""
    flags = " ".join(sysconfig.get_config_var(v) or "" for v in ("LDSHARED", "LDFLAGS"))
    found = set()
    for arg in shlex.split(flags):
        for prefix in ("-Wl,-rpath,", "-Wl,-R", "-Wl,-rpath="):
            if arg.startswith(prefix):
                found.update(arg[len(prefix) :].split(":"))
    return found
