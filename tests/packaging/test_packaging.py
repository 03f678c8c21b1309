"""The package a user installs: a wheel built from a copy of the source tree, installed in a fresh
virtual environment that holds only the core dependencies (cffi, NumPy, MuJoCo, tqdm and what they
need, read from the wheel's own Requires-Dist), run from a folder outside the source tree.

Every robot of robots/ must load from the installed package (asr/robots_data, not the checkout),
`import asr` and asr.Sim must work without any extra, and a feature whose extra is missing must
name it. The wheel installs top-level names of asr's own only (asr, and asr_dashboard: the
dashboard/ folder); installed in a second environment beside the extra [dashboard]'s
dependencies, `asr dashboard` serves its page and an export child starts under the installed
name. The dependencies are linked from this environment's site-packages (no network); the wheel
build compiles the C core (and the Gazebo shim where Gazebo is installed): the module took
142 s on the busy shared 2-core development machine, 122 s of it the wheel build (the build
timeout below is generous)."""

import importlib.metadata
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
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


def _requirements(wheel, extra=""):
    """The Requires-Dist names of the wheel that hold without an extra (its core dependencies)
    or with `extra`."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    reqs = [
        Requirement(line.split(":", 1)[1].strip())
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    return [r.name for r in reqs if r.marker is None or r.marker.evaluate({"extra": extra})]


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
    python, site = _install(wheel, venv, base / "core_deps")
    return python, site, wheel


def _install(wheel, venv, deps, extra=""):
    """(python, site-packages) of a fresh virtual environment `venv` holding the wheel, with
    the dependencies it needs (with `extra`) linked from this environment into folder `deps`."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = str(venv / "bin" / "python")
    site = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
    ).stdout.strip()
    _link_dependencies(_closure(_requirements(wheel, extra)), str(deps))
    with open(os.path.join(site, f"{deps.name}.pth"), "w") as f:
        f.write(str(deps) + "\n")
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
    return python, site


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
from asr.cpr.description import cpr_dir
from asr.robots.robot import load_robot, robot_names, robots_dir, variant_names
rows = []
for name in robot_names():
    for variant in variant_names(name):
        r = load_robot(name, variant)
        r.mj_model()
        rows.append([name, variant, r.folder, r.mjcf, r.sdf])
cprs = sorted(os.path.splitext(f)[0] for f in os.listdir(cpr_dir()))
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


# the top-level names the wheel may install: asr's own (setup.py: DASHBOARD, the top-level
# dashboard/ folder installed as asr_dashboard); a generic name such as `dashboard` could be
# installed over by, or install over, another distribution's package. asr_mujoco_autoload (one
# module, setup.cfg py_modules): the entry point `import mujoco` imports in every process
# (mujoco.plugins), top-level because any module of asr would run asr/__init__.py there, about
# 0.1 s of every user's `import mujoco` (docs/mujoco_plugin.md, "Loading automatically")
OWN_TOP_LEVEL = {"asr", "asr_dashboard", "asr_mujoco_autoload"}
# `asr dashboard` from the installed wheel answers on its port within this (generous: ~5 s here)
STARTUP_S = 120


def test_wheel_installs_only_asr_owned_top_level_names(installed, tmp_path):
    """The wheel's top_level.txt and every path of its RECORD name asr's packages only (and its
    own .dist-info); installed, `import dashboard` finds nothing."""
    python, site, wheel = installed
    with zipfile.ZipFile(wheel) as z:
        record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        info = record.rsplit("/", 1)[0]
        rows = z.read(record).decode().splitlines()
        top_level = set(z.read(f"{info}/top_level.txt").decode().split())
        entry_points = z.read(f"{info}/entry_points.txt").decode()
    assert top_level == OWN_TOP_LEVEL
    # a package's rows are under its folder, a module's is its file
    tops = {row.split(",")[0].split("/")[0].removesuffix(".py") for row in rows if row}
    assert tops == OWN_TOP_LEVEL | {info}
    # `import mujoco` (4.0.1) calls the group mujoco.plugins: ASR_MUJOCO_AUTOLOAD=1 loads the plugin
    assert "[mujoco.plugins]\nasr = asr_mujoco_autoload:register\n" in entry_points
    assert not os.path.exists(os.path.join(site, "dashboard"))
    out = _in_venv(python, "import dashboard", tmp_path, ok=False)
    assert out.returncode != 0 and "No module named 'dashboard'" in out.stderr
    shipped = os.path.join(site, "asr_dashboard")
    for rel in ("PROTOCOL.md", "static/index.html", "static/app.js", "routes/api.py"):
        assert os.path.isfile(os.path.join(shipped, rel)), rel


@pytest.fixture(scope="module")
def installed_dashboard(installed, tmp_path_factory):
    """(venv python, venv site-packages) of the same wheel in a second fresh environment that
    also holds the extra [dashboard]'s dependencies, linked from this environment."""
    for module in ("fastapi", "uvicorn", "websockets", "plotly", "swagger_ui_bundle"):
        require(module)
    _, _, wheel = installed
    base = tmp_path_factory.mktemp("packaging_dashboard")
    return _install(wheel, base / "venv", base / "dashboard_deps", "dashboard")


def _get(url):
    """(status, body) of GET url; (None, the error) when nothing answers yet."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError as exc:
        return None, str(exc)


def test_installed_dashboard_serves_its_page(installed_dashboard, tmp_path):
    """`asr dashboard` of the installed wheel, run outside the source tree, serves the page and
    its scripts from site-packages' asr_dashboard and simulates the default robot."""
    python, site = installed_dashboard
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "ASR_ROBOTS") and not k.startswith("ASR_DASHBOARD_")
    }
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [os.path.join(os.path.dirname(python), "asr"), "dashboard", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        status, body = _get(f"{base}/api/state")
        while status is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            status, body = _get(f"{base}/api/state")
        assert status == 200, (status, body, log.read_text(errors="replace")[-3000:])
        state = json.loads(body)
        assert state["robot"] == "qbmove_arm_2dof", state
        status, page = _get(f"{base}/")
        assert status == 200 and b'<script type="module" src="/static/app.js' in page
        status, script = _get(f"{base}/static/app.js")
        with open(os.path.join(site, "asr_dashboard", "static", "app.js"), "rb") as f:
            assert status == 200 and script == f.read()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


EXPORT_CHILD = """
import json, sys
from asr_dashboard.exports import ExportError, export_bytes
try:
    export_bytes("onnx", (sys.argv[1], "asr/Reach2DOF-v0"), 120)
except ExportError as exc:
    print(json.dumps({"status": exc.status, "detail": exc.detail}))
"""


def test_installed_dashboard_export_child_runs_under_its_name(installed_dashboard, tmp_path):
    """An export child of the installed dashboard (`python -m asr_dashboard.exports`, named by
    its package) starts from site-packages: without the extra [rl] it answers 501 naming the
    extra, where a child started under another name would fail with 500 'No module named'."""
    python, _ = installed_dashboard
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ASR_ROBOTS")}
    out = subprocess.run(
        [python, "-c", EXPORT_CHILD, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    answer = json.loads(out.stdout.splitlines()[-1])
    assert answer["status"] == 501, answer
    assert "ONNX export is not available on this server" in answer["detail"]
    assert "needs the extra [rl]" in answer["detail"], answer
    assert f"pip install '{DIST}[rl]'" in answer["detail"], answer
