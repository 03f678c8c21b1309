"""`asr export-onnx` and `asr eval` (asr.rl.export_checked, asr.rl.evaluate) on folders that
`asr train` wrote, both backends (Reach2DOF, a few PPO updates: the policy need not be good).

References: the returns `asr eval` prints against the same policy driven through gymnasium's
SyncVectorEnv of single envs (another stepping path, bit for bit equal by asr.envs.vector's
contract), its mean metric against the trainer's own held-out evaluation in config.json (same
seeds), its confidence interval against scipy's Student t; the ONNX policy's returns against the
torch policy's (within 1e-6: the ONNX graph computes in float32 where SB3 normalises in
float64, measured figures printed with -s). Bad folders, bad counts and a missing extra give
exit codes 2 / 1 with one clear line and no traceback."""

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import require
from tests.support.paths import ROOT as ROOT_PATH
from tests.support.rl import make_model

ROOT = str(ROOT_PATH)
TASK = "asr/Reach2DOF-v0"
EPISODES = 4  # held-out episodes of the training's final evaluation, and of `asr eval`
RETURN_ATOL = 1e-6  # torch against ONNX returns (125 rewards of order 1 each)
SETTINGS = (
    "n_steps=64",
    "batch_size=128",
    "n_epochs=2",
    "net_arch=16,16",
    "eval_every=0",
    f"final_eval_episodes={EPISODES}",
)


def _deps():
    for module in ("torch", "stable_baselines3", "rsl_rl", "onnx", "onnxruntime", "gymnasium"):
        require(module)


def cli(args, capsys):
    """(exit code, stdout, stderr) of asr.cli.main(args) in this process."""
    from asr.cli import main

    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def child(args, prelude=""):
    """`python -m asr.cli ARGS` in a child process (prelude: Python run before it)."""
    code = f"{prelude}\nimport sys\nfrom asr.cli import main\nsys.exit(main(sys.argv[1:]))"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT)
    return subprocess.run(
        [sys.executable, "-c", code, *[str(a) for a in args]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{backend: training folder} of `asr train` (2048 env-steps on 4 sub-envs)."""
    _deps()
    import torch

    from asr.cli import main

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for algo in ("sb3", "rsl_rl"):
        out[algo] = str(root / algo)
        args = ["train", "--task", TASK, "--algo", algo, "--total-steps", "2048"]
        args += ["--num-envs", "4", "--seed", "1", "--out", out[algo], "--no-progress"]
        for kv in SETTINGS:
            args += ["--set", kv]
        assert main(args) == 0
    return out


BACKENDS = pytest.mark.parametrize("algo", ["sb3", "rsl_rl"])


def sync_rollout(res, seeds, **env_kwargs):
    """(returns, final |q - target|) of the policy res.predict on gymnasium's SyncVectorEnv of
    single envs (made with env_kwargs), episode k reset with seeds[k]: rewards summed up to the
    step that ends it."""
    import gymnasium

    import asr  # noqa: F401  (registers the ids)

    envs = gymnasium.make_vec(TASK, num_envs=len(seeds), vectorization_mode="sync", **env_kwargs)
    obs, _ = envs.reset(seed=list(seeds))
    returns, final = np.zeros(len(seeds)), np.full(len(seeds), np.nan)
    while np.isnan(final).any():
        running = np.isnan(final)
        obs, reward, term, trunc, _ = envs.step(res.predict(obs))
        returns[running] += reward[running]
        for k in np.flatnonzero((term | trunc) & running):
            final[k] = np.linalg.norm(obs[k, -2:])  # the observation ends with q - target
    envs.close()
    return returns, final


@BACKENDS
def test_eval_reports_the_policys_returns_and_metric(runs, algo, capsys):
    stats = require("scipy.stats")

    from asr.rl import load_checkpoint

    code, out, err = cli(["eval", runs[algo], "--episodes", EPISODES, "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    res = load_checkpoint(runs[algo])
    seed = 1_000_000_000  # the default: training's held-out seeds
    assert doc["task"] == TASK and doc["backend"] == algo and doc["policy"] == "torch"
    assert doc["seeds"] == [seed, seed + EPISODES - 1] and doc["lengths"] == [125] * EPISODES
    returns, final = sync_rollout(res, range(seed, seed + EPISODES))
    np.testing.assert_array_equal(doc["returns"], returns)
    m = doc["metric"]
    assert (m["key"], m["unit"], m["better"]) == ("final_error_rad", "rad", "lower")
    np.testing.assert_allclose(m["values"], final, rtol=0, atol=1e-12)
    assert m["mean"] == pytest.approx(res.config["final_eval"]["metric"], abs=1e-12)
    half = stats.t.ppf(0.975, EPISODES - 1) * np.std(returns, ddof=1) / math.sqrt(EPISODES)
    assert doc["return"]["mean"] == pytest.approx(np.mean(returns), abs=1e-9)
    assert doc["return"]["ci95_half_width"] == pytest.approx(half, rel=1e-8)
    lo, hi = doc["return"]["ci95"]
    assert lo == pytest.approx(np.mean(returns) - half) and hi == pytest.approx(
        np.mean(returns) + half
    )
    # the text form: a line per episode, then the means
    code, out, _ = cli(["eval", runs[algo], "--episodes", 2, "--seed", 7], capsys)
    assert code == 0
    lines = out.strip().splitlines()
    assert len(lines) == 2 + 2 + 2, out
    assert lines[2].split()[:2] == ["0", "7"] and lines[3].split()[:2] == ["1", "8"]
    assert "final joint error" in lines[-1] and "95 % CI" in lines[-1]


def test_eval_on_a_distribution_training_did_not_see(runs, capsys):
    """--env replaces a keyword of the folder's env_kwargs: the episodes run with randomised
    start poses (the folder trained without), equal to gymnasium's own vector env of the task
    made with the same keyword; a keyword the task does not take exits 2 naming it."""
    from asr.rl import load_checkpoint

    rnd = {"start_q": 0.3, "noise_q": 0.01}
    args = ["eval", runs["sb3"], "--episodes", EPISODES, "--json"]
    code, out, err = cli([*args, "--env", "randomization=" + json.dumps(rnd)], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["env_kwargs"]["randomization"] == rnd
    seed = 1_000_000_000
    res = load_checkpoint(runs["sb3"])
    returns, final = sync_rollout(res, range(seed, seed + EPISODES), randomization=rnd)
    np.testing.assert_array_equal(doc["returns"], returns)
    plain, _ = sync_rollout(res, range(seed, seed + EPISODES))
    assert not np.array_equal(returns, plain)  # another distribution: other episodes
    code, out, err = cli([*args, "--env", "bogus=1"], capsys)
    assert code == 2 and "env: 'bogus' is not a keyword of Reach2DOF" in err, err
    assert "Traceback" not in err


@BACKENDS
def test_export_onnx_then_eval_onnx_gives_the_torch_returns(runs, algo, tmp_path, capsys):
    from asr.rl import OnnxPolicy

    path = tmp_path / "policy.onnx"
    code, out, err = cli(["export-onnx", runs[algo], "-o", path], capsys)
    assert code == 0, err
    diff = float(out.split("action difference ")[1].split()[0])
    assert 0.0 <= diff <= 1e-5, out
    assert OnnxPolicy(path).metadata["task_id"] == TASK
    assert [p.name for p in tmp_path.iterdir()] == ["policy.onnx"]  # no temporary file left
    results = {}
    for extra in ([], ["--onnx", path]):
        code, out, err = cli(["eval", runs[algo], "--episodes", 3, "--json", *extra], capsys)
        assert code == 0, err
        results["onnx" if extra else "torch"] = json.loads(out)
    torch_doc, onnx_doc = results["torch"], results["onnx"]
    assert onnx_doc["policy"] == "onnx" and onnx_doc["onnx"] == str(path)
    gap = np.max(np.abs(np.subtract(onnx_doc["returns"], torch_doc["returns"])))
    print(f"{algo}: export max |ONNX - torch| action {diff:.3g}; returns differ by {gap:.3g}")
    np.testing.assert_allclose(onnx_doc["returns"], torch_doc["returns"], rtol=0, atol=RETURN_ATOL)
    np.testing.assert_allclose(
        onnx_doc["metric"]["values"], torch_doc["metric"]["values"], rtol=0, atol=RETURN_ATOL
    )


def test_an_export_that_misses_the_tolerance_writes_nothing(runs, tmp_path):
    from asr.rl import export_checked

    path = tmp_path / "policy.onnx"
    # sb3 normalises in float64, the graph in float32: the actions differ by float32 rounding
    with pytest.raises(RuntimeError, match="not written: the ONNX policy's actions differ"):
        export_checked(runs["sb3"], path, tolerance=1e-300)
    assert list(tmp_path.iterdir()) == []
    check = export_checked(runs["sb3"], path, envs=2)
    assert check.observations == 2 * 125 and 0 < check.max_abs_diff <= 1e-5
    assert path.is_file()


def test_bad_folders_and_counts_exit_2_with_a_clear_line(runs, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    no_model = tmp_path / "no_model"
    no_model.mkdir()
    shutil.copy(os.path.join(runs["rsl_rl"], "config.json"), no_model / "config.json")
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    cases = [
        (["eval", tmp_path / "missing"], "run_dir: ", "does not exist"),
        (["eval", a_file], "run_dir: ", "is not a folder"),
        (["eval", empty], "run_dir: ", "it has no config.json"),
        (["export-onnx", empty, "-o", tmp_path / "p.onnx"], "run_dir: ", "no config.json"),
        (["eval", no_model], "run_dir: ", "has no model.pt"),
        (["eval", runs["sb3"], "--episodes", 0], "episodes: got 0", "an int >= 1"),
        (["eval", runs["sb3"], "--episodes", -3], "episodes: got -3", "an int >= 1"),
        (["eval", runs["sb3"], "--seed", -1], "seed: got -1", "an int >= 0"),
        (["eval", runs["sb3"], "--onnx", tmp_path / "none.onnx"], "onnx: ", "is not a file"),
        (["eval", runs["sb3"], "--onnx", a_file], "onnx: ", "not a valid ONNX model"),
        (["export-onnx", runs["sb3"], "-o", tmp_path / "no" / "p.onnx"], "path: ", "not exist"),
        (["export-onnx", runs["sb3"], "-o", empty], "path: ", "is a folder"),
    ]
    for args, name, why in cases:
        code, out, err = cli(args, capsys)
        assert code == 2, (args, out, err)
        assert err.startswith(f"asr {args[0]}: {name}") and why in err, (args, err)
        assert len(err.strip().splitlines()) == 1 and out == "", (args, err)
    # an ONNX file of another task is refused, naming it
    other = tmp_path / "other.onnx"
    from asr.rl.onnx_policy import export_onnx

    model, venv = make_model("asr/EquilibriumTracking-v0", 0)
    export_onnx(model, other, vec_normalize=venv, task="asr/EquilibriumTracking-v0")
    code, _, err = cli(["eval", runs["sb3"], "--onnx", other], capsys)
    assert code == 2 and "is a policy of asr/EquilibriumTracking-v0" in err, err
    # in a child process: the exit code and no traceback (argparse's own check included)
    for args, words in (
        (["eval", empty, "--episodes", 2], "it has no config.json"),
        (["eval", empty, "--episodes", "many"], "invalid int value: 'many'"),
    ):
        p = child(args)
        assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_missing_extra_is_named(runs, tmp_path, monkeypatch):
    from asr.rl.onnx_policy import export_onnx

    block = "import sys; sys.modules['torch'] = None"
    p = child(["export-onnx", runs["sb3"], "-o", tmp_path / "p.onnx"], prelude=block)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "needs the extra [rl] (no module 'torch'): pip install 'asr-sim[rl]'" in p.stderr
    assert not (tmp_path / "p.onnx").exists()
    # the Python API: export_onnx without torch or onnx, OnnxPolicy without onnxruntime
    for module in ("torch", "onnx"):
        with monkeypatch.context() as m:
            m.setitem(sys.modules, module, None)
            with pytest.raises(ModuleNotFoundError, match=rf"\[rl\] \(no module '{module}'\)"):
                export_onnx(runs["rsl_rl"], tmp_path / "q.onnx")
    export_onnx(runs["rsl_rl"], tmp_path / "q.onnx")
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "onnxruntime", None)
        from asr.rl import evaluate

        with pytest.raises(ModuleNotFoundError, match=r"\[rl\] \(no module 'onnxruntime'\)"):
            evaluate(runs["rsl_rl"], 1, onnx=tmp_path / "q.onnx")


def test_a_crafted_folder_is_refused_and_never_runs(runs, tmp_path, capsys):
    import torch

    class Payload:
        def __init__(self, marker):
            self.marker = marker

        def __reduce__(self):
            return (os.system, (f"touch '{self.marker}'",))

    folder = tmp_path / "run"
    shutil.copytree(runs["rsl_rl"], folder, symlinks=True)
    marker = tmp_path / "marker"
    model = os.path.realpath(folder / "model.pt")
    assert model.startswith(os.path.realpath(folder) + os.sep)
    torch.save({"actor": Payload(marker)}, model)
    for args in (["eval", folder], ["export-onnx", folder, "-o", tmp_path / "p.onnx"]):
        code, _, err = cli(args, capsys)
        assert code == 2 and "model.pt: refused" in err, err
    assert not marker.exists() and not (tmp_path / "p.onnx").exists()


def test_t_interval_against_scipy():
    stats = require("scipy.stats")

    from asr.rl.evaluation import t_interval, t_quantile

    for df in (1, 2, 3, 9, 30, 1000):
        for p in (0.9, 0.975, 0.995):
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-10, abs=1e-10)
    x = np.array([1.0, 2.5, 2.0, 4.0, 3.5])
    mean, half = t_interval(x)
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=stats.sem(x))
    assert mean == pytest.approx(np.mean(x)) and half == pytest.approx((hi - lo) / 2, rel=1e-10)
    assert math.isnan(t_interval([3.0])[1]) and t_interval([2.0, 2.0]) == (2.0, 0.0)
    with pytest.raises(ValueError, match="confidence: got 1.5"):
        t_interval(x, 1.5)
