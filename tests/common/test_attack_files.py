"""Results files under attack (asr/common/files.py): a writer killed with SIGKILL at a random
moment,
two writers of one path at once, and a file edited by hand. After any kill, loading gives the
old result or the new one; two writers never crash and leave one complete version; an edited
file is refused with an error naming it, never resumed as finished work.

The kills are real: a subprocess imports asr once, then forks a writer that re-saves one path
in a loop and kills it with SIGKILL after a random delay (forking keeps 30+ kills per writer
well under a minute on a busy machine), then loads the path."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from asr.analysis.sweep import SweepResult, sweep
from tests.support.paths import ROOT, TESTS  # noqa: E402

HERE = str(TESTS)
PENDULUM = os.path.join(HERE, "data", "robots", "pendulum")
KILLS = 30
TIMEOUT_S = 120  # generous: the whole kill series of one writer on a shared, busy host

# the writers: value k saved to `path`, and the value read back (all arrays must agree)
WRITERS = r"""
import json, os, random, signal, sys, time
import numpy as np

def ilc_result(k):
    from asr.learning.iterative_learning import ILCResult
    n, T, J = 2, 400, 2
    return ILCResult(input=np.full((n, T, J), float(k)), errors=np.full((3, n), 0.1),
                     iterations=np.array([3, 3]), converged=np.array([True, True]),
                     reference=np.full((n, T, J), float(k)), dt=1e-3, wall_s=0.5, tol=0.2,
                     presets=np.zeros((n, J)), metadata={"k": k})

def ilc_save(path, k):
    ilc_result(k).save(path)

def ilc_load(path):
    from asr.learning.iterative_learning import ILCResult
    r = ILCResult.load(path)
    ks = {float(r.input.min()), float(r.input.max()), float(r.reference.max()),
          float(r.metadata["k"])}
    assert len(ks) == 1, f"a mix of saves: {ks}"
    return int(ks.pop())

def sweep_result(k):
    from asr.analysis.sweep import SweepResult
    S = 2000
    return SweepResult(["joint.k1"], np.linspace(1, 2, S)[:, None], {"m": np.full(S, float(k))},
                       np.ones(S, bool), {"samples": S, "batch_size": 10, "k": k})

def sweep_save(path, k):
    sweep_result(k).save(path)

def sweep_load(path):
    from asr.analysis.sweep import SweepResult
    r = SweepResult.load(path)
    ks = {float(r.metrics["m"].min()), float(r.metrics["m"].max())}
    assert len(ks) == 1, f"a mix of saves: {ks}"
    return int(ks.pop())

def ident_result(k):
    from asr.analysis.identification import Identification
    names = tuple(f"p{i}" for i in range(40))
    v = {n: float(k) for n in names}
    return Identification(names=names, estimates=v, stderr=v, ci95={n: (k, k) for n in names},
                                covariance=np.full((40, 40), float(k)), initial=v,
                                residual_rms={"q": float(k)}, cost=float(k), m=100, dof=60,
                                nfev=k, njev=k, success=True, message="ok", kind="static",
                                source="test")

def ident_save(path, k):
    ident_result(k).save(path)

def ident_load(path):
    from asr.analysis.identification import Identification
    r = Identification.load(path)
    ks = {float(r.cost), float(r.nfev), float(r.covariance.max()), float(r.estimates["p39"])}
    assert len(ks) == 1, f"a mix of saves: {ks}"
    return int(ks.pop())

RL_FILES = ("model.zip", "vecnormalize.pkl", "config.json", "curve.json")

def rl_save(path, k):  # the writer of asr.rl.train's checkpoints, with files of 200 kB
    from asr.common.files import write_version
    os.makedirs(path, exist_ok=True)
    body = json.dumps({"k": k, "pad": "x" * 200_000}).encode()
    write_version(path, [(n, lambda f: f.write(body)) for n in RL_FILES])

def rl_load(path):
    from asr.common.files import current_version
    folder = current_version(path)
    ks = set()
    for n in RL_FILES:
        with open(os.path.join(folder, n), "rb") as f:
            ks.add(json.loads(f.read())["k"])
    assert len(ks) == 1, f"a mix of checkpoints: {ks}"
    return ks.pop()

def ros_save(path, k):  # asr.ros.export_policy of a dashboard workspace; k in an offset
    from asr.ros.export import export_policy
    ws = {"version": "asr.dashboard/1", "robot": "qbmove_arm_2dof", "variant": "vertical",
          "preset": {"joint1": 0.35, "joint2": 0.5}, "mode": {"joint1": 3, "joint2": 6},
          "reference": {"joint1": {"kind": "hold", "offset": k * 1e-6, "amplitude": 0.0},
                        "joint2": {"kind": "hold", "offset": 0.1, "amplitude": 0.0}},
          "speed": 1.0, "paused": False, "compare": []}
    export_policy(ws, "qbmove_arm_2dof", path, package="pkg")

def ros_load(path):
    pkg = os.path.join(path, "pkg")
    with open(os.path.join(pkg, "scripts", "policy_node.json")) as f:
        k = round(json.load(f)["ref_1"][0] * 1e6)
    for rel in ("package.xml", "CMakeLists.txt", "launch/policy_node.launch",
                "scripts/policy_node.py"):
        assert os.path.getsize(os.path.join(pkg, rel)) > 0, rel
    return k
"""

KILL_SERVER = (
    WRITERS
    + r"""
kind, path, kills = sys.argv[1], sys.argv[2], int(sys.argv[3])
save, load = globals()[kind + "_save"], globals()[kind + "_load"]
random.seed(1)
save(path, 0)
last, report = 0, {"lost": 0, "kills": 0, "errors": []}
for round_ in range(kills):
    base = (round_ + 1) * 1000
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: saves base, base + 1, ... and says so after each save
        os.close(r)
        k = base
        while True:
            save(path, k)
            os.write(w, b"%d\n" % k)
            k += 1
    os.close(w)
    time.sleep(random.uniform(0.0, 0.15))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    with os.fdopen(r) as f:
        done = [int(x) for x in f.read().split()]
    done_last = done[-1] if done else last
    allowed = {done_last, done[-1] + 1 if done else base}  # the old result or the new one
    report["kills"] += 1
    try:
        got = load(path)
        if got not in allowed:
            raise AssertionError(f"loaded {got}, expected one of {sorted(allowed)}")
        last = got
    except Exception as exc:  # noqa: BLE001  (any failure to load counts as lost)
        report["lost"] += 1
        report["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
        save(path, base)  # start the next round from a good file
        last = base
save(path, 1)  # a save after the kills removes what they left that is not its own
folder = path if kind in ("rl", "ros") else os.path.dirname(os.path.abspath(path))
report["files"] = sorted(os.listdir(folder))
print(json.dumps(report))
"""
)


def _run(script, *args, timeout=TIMEOUT_S):
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=str(ROOT),  # not tests/: its mujoco and packaging folders would shadow those packages
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "kind, name",
    [("ilc", "res"), ("sweep", "res.npz"), ("ident", "res.npz"), ("rl", "run"), ("ros", "ws")],
)
@pytest.mark.slow
def test_sigkill_while_saving_leaves_the_old_or_the_new_result(tmp_path, kind, name):
    report = _run(KILL_SERVER, kind, tmp_path / name, KILLS)
    print(
        f"{kind}: {report['lost']} of {report['kills']} kills lost the result; "
        f"files left: {report['files']}"
    )
    assert report["kills"] == KILLS
    assert report["lost"] == 0, report["errors"][:3]
    # after one more save: the result's files, and for rl / ros at most one hidden leftover
    # (their folder swaps: asr.common.files.write_version, replace_folder); the killed writers'
    # temporaries of single files are gone (test_temporaries_of_killed_writers_...)
    visible = [f for f in report["files"] if not f.startswith(".")]
    assert len(visible) == {"ilc": 2, "sweep": 2, "ident": 1, "rl": 5, "ros": 1}[kind], visible
    assert len(report["files"]) - len(visible) <= (1 if kind in ("rl", "ros") else 0)


CONCURRENT = (
    WRITERS
    + r"""
kind, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
save, load = globals()[kind + "_save"], globals()[kind + "_load"]
pids = []
for w in range(2):
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            for i in range(n):
                save(path, (w + 1) * 1000 + i)
        except BaseException as exc:  # noqa: BLE001
            print(f"writer {w}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            code = 1
        os._exit(code)
    pids.append(pid)
failed = sum(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) != 0 for p in pids)
got = load(path)
print(json.dumps({"failed": failed, "got": got,
                  "files": sorted(os.listdir(os.path.dirname(os.path.abspath(path))))}))
"""
)


@pytest.mark.parametrize("kind, name", [("ilc", "cc"), ("sweep", "cc.npz"), ("rl", "run")])
@pytest.mark.slow
def test_two_writers_of_one_path_never_crash(tmp_path, kind, name):
    for attempt in range(3):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        report = _run(CONCURRENT, kind, folder / name, 40)
        assert report["failed"] == 0, f"attempt {attempt}: a writer crashed"
        assert report["got"] in (1039, 2039)  # one complete version: a writer's last save
        assert not [f for f in report["files"] if f.endswith(".tmp")], report["files"]


def test_sweep_file_edited_to_mark_every_sample_done_is_refused(tmp_path):
    path = tmp_path / "sweep.npz"
    space = {"joint.k1": [0.002, 0.003, 0.004, 0.005]}
    kw = dict(steps=50, refs=[[0.8, 0.3]], batch_size=2, progress=False)
    res = sweep(PENDULUM, space, results=str(path), **kw)
    res.done[2:] = False  # a sweep half done, as an interrupted run leaves it
    res.metrics = {k: np.where(res.done, v, np.nan) for k, v in res.metrics.items()}
    res.save(path)
    with np.load(path) as z:  # the edit: every sample marked done, the metrics left NaN
        arrays = {k: z[k] for k in z.files}
    arrays["done"][:] = True
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=r"sweep\.npz.*SHA-256.*done.*another path"):
        SweepResult.load(path)
    with pytest.raises(ValueError, match=r"cannot resume from .*sweep\.npz.*SHA-256"):
        sweep(PENDULUM, space, results=str(path), **kw)


def test_ilc_data_file_edited_is_refused(tmp_path):
    from asr.learning.iterative_learning import ILCResult

    res = ILCResult(
        input=np.ones((1, 5, 1)),
        errors=np.array([[0.3]]),
        iterations=np.array([1]),
        converged=np.array([True]),
        reference=np.zeros((1, 5, 1)),
        dt=1e-3,
        wall_s=0.5,
        tol=0.2,
        presets=np.zeros((1, 1)),
        metadata={},
    )
    npz, js = res.save(tmp_path / "a")
    with np.load(npz) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["input"][:] = np.nan
    np.savez(npz, **arrays)
    with pytest.raises(ValueError, match=r"a\..*\.npz.*SHA-256.*another path"):
        ILCResult.load(js)


def test_temporaries_of_killed_writers_are_removed_by_the_next_write(tmp_path):
    """Unheld temporaries (their writers were killed) go, old or just made: no clock decides;
    one a live writer holds (flock) stays, and so does another path's."""
    import fcntl
    import time

    from asr.learning.iterative_learning import ILCResult

    old = time.time() - 3600
    names = {
        "killed": ".a.json.x1.tmp",
        "killed_data": ".a.0123456789abcdef.npz.x2.tmp",
        "killed_now": ".a.json.x3.tmp",
        "held": ".a.json.x4.tmp",
        "other": ".b.json.x5.tmp",
    }
    for key, name in names.items():
        (tmp_path / name).write_bytes(b"half")
        if key != "killed_now":
            os.utime(tmp_path / name, (old, old))
    held = os.open(tmp_path / names["held"], os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        ILCResult(
            input=np.ones((1, 5, 1)),
            errors=np.array([[0.3]]),
            iterations=np.array([1]),
            converged=np.array([True]),
            reference=np.zeros((1, 5, 1)),
            dt=1e-3,
            wall_s=0.5,
            tol=0.2,
            presets=np.zeros((1, 1)),
            metadata={},
        ).save(tmp_path / "a")
    finally:
        os.close(held)
    left = set(os.listdir(tmp_path))
    killed = {names["killed"], names["killed_data"], names["killed_now"]}
    assert not killed & left
    assert {names["held"], names["other"]} <= left


def test_a_temporary_removed_before_its_writer_locks_it_is_replaced(tmp_path, monkeypatch):
    """The instant between creating a temporary and locking it: a cleaner (another writer's
    _remove_stale) that removes it then makes the writer take a new one, not write into a file
    with no name (the result would be lost)."""
    import tempfile

    from asr.common import files as _files

    made, mkstemp = [], tempfile.mkstemp

    def mkstemp_then_cleaned(**kw):
        fd, path = mkstemp(**kw)
        made.append(path)
        if len(made) == 1:
            os.remove(path)  # what the cleaner does to an unlocked temporary
        return fd, path

    monkeypatch.setattr(_files.tempfile, "mkstemp", mkstemp_then_cleaned)
    with _files.atomic_write(tmp_path / "r.json", "w") as f:
        f.write("{}")
    assert len(made) == 2 and (tmp_path / "r.json").read_text() == "{}"
    assert os.listdir(tmp_path) == ["r.json"]


def test_a_killed_writers_link_temporaries_go_with_the_next_version(tmp_path):
    """A writer killed between making its temporary symlink and renaming it leaves
    ".<name>.<pid>.link" (seen once in 30 kills): the next write_version, holding the folder's
    lock, removes those of any pid."""
    from asr.common.files import write_version

    write_version(tmp_path, [("a.txt", lambda f: f.write(b"1"))])
    for stale in (".checkpoint.99999.link", ".a.txt.12345.link"):
        os.symlink("nowhere", tmp_path / stale)
    write_version(tmp_path, [("a.txt", lambda f: f.write(b"2"))])
    names = sorted(os.listdir(tmp_path))
    assert not [n for n in names if n.endswith(".link")], names
    assert (tmp_path / "a.txt").read_bytes() == b"2"
