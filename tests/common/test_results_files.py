"""Results files of sweeps and ILC (asr/common/files.py): written atomically, a sweep killed with
SIGKILL
resumes to exactly the results of an uninterrupted run, and a truncated, corrupted or
inconsistent file is reported with a clear error, never merged or silently started over."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from asr.analysis.sweep import SweepResult, sweep
from asr.common.files import atomic_write
from asr.learning.iterative_learning import ILCResult
from tests.support.paths import TESTS  # noqa: E402

HERE = str(TESTS)
PENDULUM = os.path.join(HERE, "data", "robots", "pendulum")  # 1 DOF, dt 1 ms
GRID = {
    "joint.k1": [0.0019, 0.003, 0.005],
    "mujoco.body_mass.link": [0.1, 0.3],
    "refs.preset.joint": [0.2, 0.5],
}
KW = dict(steps=150_000, refs=[[0.8, 0.3]], batch_size=2, progress=False)  # 6 batches, ~0.4 s each
CHILD = """import json, sys
from asr.analysis.sweep import sweep
sweep(sys.argv[1], json.loads(sys.argv[2]), results=sys.argv[3], **json.loads(sys.argv[4]))
"""


def test_atomic_write_keeps_the_old_file_when_interrupted(tmp_path):
    path = tmp_path / "r.npz"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(path) as f:
        f.write(b"half of the new")
        raise RuntimeError("killed here")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["r.npz"]
    with atomic_write(path) as f:
        f.write(b"new")
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["r.npz"]


def done_batches(path):
    """Completed batches in the results file (it must always load)."""
    return int(SweepResult.load(path).done.sum()) // KW["batch_size"] if path.exists() else 0


@pytest.mark.slow
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path):
    full = sweep(PENDULUM, GRID, **KW)
    path = tmp_path / "sweep.npz"
    seen = [0]
    for delay in (0.0, 0.2, 0.05):  # killed during a batch (or a save) three times
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, PENDULUM, json.dumps(GRID), str(path), json.dumps(KW)],
            cwd=tmp_path,  # not tests/: its mujoco folder would shadow MuJoCo
        )
        deadline = time.monotonic() + 60
        while done_batches(path) <= seen[-1] and proc.poll() is None:
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.01)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        seen.append(done_batches(path))
    print(f"batches done after each SIGKILL: {seen[1:]} of 6")
    assert seen == sorted(seen) and 0 < seen[-1] < 6  # progress kept, killed mid-way
    resumed = sweep(PENDULUM, GRID, results=str(path), **KW)
    again = SweepResult.load(path)
    for res in (resumed, again):
        assert res.complete and np.array_equal(res.params, full.params)
        assert res.metrics.keys() == full.metrics.keys()
        for k in full.metrics:
            assert np.array_equal(res.metrics[k], full.metrics[k]), k
        rows = res.rows()
        assert [r["sample"] for r in rows] == list(range(len(full)))  # none lost or twice
    assert sorted(os.listdir(tmp_path)) == ["sweep.json", "sweep.npz"]


@pytest.fixture(scope="module")
def complete_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("complete") / "sweep.npz"
    sweep(
        PENDULUM,
        {"joint.k1": [0.002, 0.003, 0.004, 0.005]},
        steps=50,
        refs=[[0.8, 0.3]],
        batch_size=2,
        progress=False,
        results=str(path),
    )
    return path.read_bytes()


def _flip_middle(data):
    k = len(data) // 2
    return data[:k] + bytes([data[k] ^ 0xFF]) + data[k + 1 :]


def _partly_done_batch(path):
    res = SweepResult.load(path)
    res.done[0] = False  # sample 0 without sample 1 of the same batch
    res.save(path)


@pytest.mark.parametrize(
    "damage, words",
    [
        (
            lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
            "truncated or corrupted",
        ),
        (lambda p: p.write_bytes(p.read_bytes()[:100]), "truncated or corrupted"),
        (lambda p: p.write_bytes(b""), "truncated or corrupted"),
        (lambda p: p.write_bytes(_flip_middle(p.read_bytes())), "truncated or corrupted"),
        (lambda p: p.write_text("samples,done\n1,true\n"), "truncated or corrupted"),
        (_partly_done_batch, "a batch is partly done"),
    ],
)
def test_damaged_results_are_detected(tmp_path, complete_file, damage, words):
    path = tmp_path / "sweep.npz"
    path.write_bytes(complete_file)
    damage(path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=words):
        SweepResult.load(path)
    with pytest.raises(ValueError, match=f"cannot resume from .*{words}"):
        sweep(
            PENDULUM,
            {"joint.k1": [0.002, 0.003, 0.004, 0.005]},
            steps=50,
            refs=[[0.8, 0.3]],
            batch_size=2,
            progress=False,
            results=str(path),
        )
    assert path.read_bytes() == before  # left for the user to inspect


def _ilc_result(value):
    n, T, J = 1, 6, 1
    return ILCResult(
        input=np.full((n, T, J), value),
        errors=np.array([[0.3], [0.1]]),
        iterations=np.array([2]),
        converged=np.array([True]),
        reference=np.zeros((n, T, J)),
        dt=1e-3,
        wall_s=0.5,
        tol=0.2,
        presets=np.zeros((n, J)),
        metadata={"robot": "pendulum"},
    )


def test_ilc_files(tmp_path):
    npz, js = _ilc_result(1.0).save(tmp_path / "a")
    assert ILCResult.load(tmp_path / "a").input[0, 0, 0] == 1.0
    assert sorted(os.listdir(tmp_path)) == sorted(["a.json", os.path.basename(npz)])  # a.<hash>.npz
    good = open(npz, "rb").read()
    open(npz, "wb").write(good[: len(good) // 2])
    with pytest.raises(ValueError, match="truncated, corrupted"):
        ILCResult.load(tmp_path / "a")
    other_npz, _ = _ilc_result(2.0).save(tmp_path / "b")
    os.replace(other_npz, npz)  # an .npz that is not the one a.json was saved with
    with pytest.raises(ValueError, match="SHA-256 differs"):
        ILCResult.load(tmp_path / "a")
    open(npz, "wb").write(good)
    text = open(js).read()
    open(js, "w").write(text[: len(text) // 2])
    with pytest.raises(ValueError, match="a.json: truncated or corrupted"):
        ILCResult.load(tmp_path / "a")
