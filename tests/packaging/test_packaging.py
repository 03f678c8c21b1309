"""The package a user installs: a wheel built from a copy of the source tree, installed in a fresh
virtual environment that holds only the core dependencies (cffi, NumPy, MuJoCo, tqdm and what they
need, read from the wheel's own Requires-Dist), run from a folder outside the source tree.

Every robot of robots/ must load from the installed package (asr/robots_data, not the checkout),
`import asr` and asr.Sim must work without any extra, and a feature whose extra is missing must
name it. The dependencies are linked from this environment's site-packages (no network); the
wheel build compiles the C core (and the Gazebo shim where Gazebo is installed): the module
took 27 s on the shared 2-core development machine (the build timeout below is generous)."""

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from asr.mujoco.plugin import built_for
from tests.conftest import require
from tests.support.elf import dynamic_section, interpreter_rpaths
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = str(ROOT_PATH)
DIST = "asr-sim"
# not copied into the build tree: build outputs, environments, caches, the extension built in place
SKIP = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    "*.so",
    "_core.c",
    "*.o",
    "demo_output",
    "out",
    "*_output",
    "node_modules",
)
BUILD_TIMEOUT_S = 900  # generous: ~45 s here, a busy shared CI host may be far slower


def _run(cmd, timeout=300, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _key(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _core_requirements(wheel):
    """The unconditional Requires-Dist names of the wheel (its core dependencies)."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    reqs = [
        Requirement(line.split(":", 1)[1].strip())
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    return [r.name for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]


def _closure(names):
    """The installed distributions `names` need, themselves included (no extras)."""
    from packaging.requirements import Requirement

    seen, todo = {}, list(names)
    while todo:
        name = todo.pop()
        if _key(name) in seen:
            continue
        dist = seen[_key(name)] = importlib.metadata.distribution(name)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen.values()


def _link_dependencies(dists, folder):
    """`folder` with a link to each top-level file or folder of `dists` in this site-packages."""
    os.makedirs(folder)
    for dist in dists:
        for top in {str(f).split("/")[0] for f in dist.files or ()} - {".."}:
            target = os.path.join(str(dist.locate_file("")), top)
            link = os.path.join(folder, top)
            if os.path.exists(target) and not os.path.lexists(link):
                os.symlink(target, link)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, venv site-packages, wheel path) of the core-only installation."""
    require("packaging")
    base = tmp_path_factory.mktemp("packaging")
    src, dist, venv = base / "src", base / "dist", base / "venv"
    shutil.copytree(ROOT, src, ignore=SKIP, symlinks=True)
    # build_ext builds the extensions (C core, MuJoCo plugin, Gazebo shim) side by side, one per
    # core: the same compiler commands, the wheel's content unchanged (distutils reads this
    # extra config file from DIST_EXTRA_CONFIG; the source copy stays as it is)
    extra_config = base / "build_ext.cfg"
    extra_config.write_text(f"[build_ext]\nparallel = {os.cpu_count() or 1}\n")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            ".",
        ],
        cwd=src,
        timeout=BUILD_TIMEOUT_S,
        env=dict(os.environ, DIST_EXTRA_CONFIG=str(extra_config)),
    )
    wheel = str(next(dist.glob("asr_sim-*.whl")))
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = str(venv / "bin" / "python")
    site = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
    ).stdout.strip()
    _link_dependencies(_closure(_core_requirements(wheel)), str(base / "core_deps"))
    with open(os.path.join(site, "core_deps.pth"), "w") as f:
        f.write(str(base / "core_deps") + "\n")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            wheel,
        ]
    )
    return python, site, wheel


def _in_venv(python, code, cwd, ok=True):
    """Run `code` in the venv from `cwd` (outside the source tree), nothing of ours in the
    environment; its CompletedProcess."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ASR_ROBOTS")}
    out = subprocess.run(
        [python, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    if ok:
        assert out.returncode == 0, out.stderr[-3000:]
    return out


def _files(folder):
    return sorted(
        os.path.relpath(os.path.join(d, f), folder)
        for d, _, names in os.walk(folder)
        if "__pycache__" not in d
        for f in names
    )


def test_wheel_ships_every_robot_file(installed):
    """asr/robots_data in the installed package holds every file of robots/ (any type: robot.toml,
    MJCF, SDF, meshes, READMEs), byte for byte."""
    _, site, _ = installed
    shipped = os.path.join(site, "asr", "robots_data")
    robots = os.path.join(ROOT, "robots")
    want, have = _files(robots), _files(shipped)  # pip compiles the .py of robots/tools
    assert have == want
    for rel in want:
        with (
            open(os.path.join(robots, rel), "rb") as a,
            open(os.path.join(shipped, rel), "rb") as b,
        ):
            assert a.read() == b.read(), rel


LOAD_ALL = """
import json, os, sys
import numpy as np
import asr, asr.cpr
from asr.robots.robot import load_robot, robot_names, robots_dir, variant_names
rows = []
for name in robot_names():
    for variant in variant_names(name):
        r = load_robot(name, variant)
        r.mj_model()
        rows.append([name, variant, r.folder, r.mjcf, r.sdf])
cprs = sorted(os.path.splitext(f)[0] for f in os.listdir(asr.cpr.cpr_dir()))
for c in cprs:
    asr.cpr.load_cpr(c)
steps = {}
for name in ("ur10", "pendulum_1dof"):
    sim = asr.Sim(name, 1)
    sim.rollout(10, np.zeros((1, sim.n_joints, 2)))
    assert np.isfinite(sim.q).all(), name
    steps[name] = float(sim.time)
print(json.dumps({"asr": asr.__file__, "robots": robots_dir(), "rows": rows, "cpr": cprs,
                  "time": steps}))
"""


def test_installed_package_loads_every_robot(installed, tmp_path):
    """Outside the source tree every robot (every variant) and every CPR loads from the
    installed package, and asr.Sim("ur10", 1) runs: the files come from site-packages."""
    python, site, _ = installed
    got = json.loads(_in_venv(python, LOAD_ALL, tmp_path).stdout.splitlines()[-1])
    package = os.path.join(site, "asr")
    assert got["asr"] == os.path.join(package, "__init__.py")
    assert got["robots"] == os.path.join(package, "robots_data")
    source = sorted(
        d
        for d in os.listdir(os.path.join(ROOT, "robots"))
        if os.path.isfile(os.path.join(ROOT, "robots", d, "robot.toml"))
    )
    assert sorted({row[0] for row in got["rows"]}) == source and "ur10" in source
    for name, variant, *paths in got["rows"]:
        for path in filter(None, paths):
            assert path.startswith(package + os.sep) and not path.startswith(ROOT), (
                name,
                variant,
                path,
            )
    assert got["cpr"] == sorted(
        os.path.splitext(f)[0] for f in os.listdir(os.path.join(ROOT, "robots", "cpr"))
    )
    assert all(t > 0 for t in got["time"].values()), got["time"]


PLUGIN_RUN = """
import json, mujoco, numpy as np, asr, asr.mujoco.plugin
path = asr.mujoco.plugin.load()
xml = asr.export_mjcf("qbmove_arm_2dof", "vertical", "arm.xml")
m = mujoco.MjModel.from_xml_path(xml)
d = mujoco.MjData(m)
mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
mujoco.mj_step(m, d, nstep=200)
sim = asr.Sim("qbmove_arm_2dof", 1, variant="vertical")
robot = sim.robot
sim.reset(q0=np.array(robot.initial_q), refs=np.array(robot.initial_refs))
sim.rollout(200, np.array(robot.initial_refs))
print(json.dumps({"path": path, "dq": float(np.max(np.abs(sim.q[0] - d.qpos[:2])))}))
"""


def test_installed_package_has_the_mujoco_plugin(installed, tmp_path):
    """The wheel ships the MuJoCo plugin library: outside the source tree it loads into MuJoCo
    from site-packages and an exported robot steps as asr.Sim does. The library names libmujoco
    by its soname and has no runpath of its own (none into the folder the wheel was built in,
    this environment's site-packages or MuJoCo's folder): it takes the running MuJoCo's copy,
    here one linked from another folder than the installed asr's (core_deps)."""
    python, site, _ = installed
    got = json.loads(_in_venv(python, PLUGIN_RUN, tmp_path).stdout.splitlines()[-1])
    assert got["path"].startswith(os.path.join(site, "asr", "_asr_mujoco")), got["path"]
    assert got["dq"] == 0.0
    mujoco = require("mujoco")
    elf = dynamic_section(got["path"])
    folder = os.path.dirname(mujoco.__file__)
    assert [n for n in elf["needed"] if "mujoco" in n] == [
        n for n in os.listdir(folder) if n.startswith("libmujoco.so")
    ]
    assert set(elf["runpath"]) <= interpreter_rpaths(), elf["runpath"]
    assert built_for(got["path"]) == mujoco.mj_version()


def test_core_install_names_the_missing_extra(installed, tmp_path):
    """Only the core is installed: no web server, SciPy or Gymnasium; `asr dashboard`,
    asr.identify and asr.envs each say which extra to install."""
    python, _, _ = installed
    for module in ("fastapi", "uvicorn", "scipy", "gymnasium", "torch", "plotly"):
        out = _in_venv(python, f"import {module}", tmp_path, ok=False)
        assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr, module
    out = subprocess.run(
        [os.path.join(os.path.dirname(python), "asr"), "dashboard"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1, out.stderr
    assert (
        f"the dashboard needs the extra [dashboard] (no module 'fastapi'): "
        f"pip install '{DIST}[dashboard]'" in out.stderr
    )
    code = (
        "import asr\n"
        "for f in (lambda: asr.identify('sea', data={}, params=['k']),\n"
        "          lambda: __import__('asr.envs')):\n"
        "    try:\n        f()\n    except ImportError as exc:\n        print(exc)\n"
    )
    lines = _in_venv(python, code, tmp_path).stdout.splitlines()
    assert lines == [
        f"asr.identify needs the extra [identify] (no module 'scipy'): "
        f"pip install '{DIST}[identify]'",
        f"asr.envs needs the extra [rl] (no module 'gymnasium'): pip install '{DIST}[rl]'",
    ]
