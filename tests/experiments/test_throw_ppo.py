"""The learned-throw comparison (asr.experiments.throw_ppo, benchmarks/bench_throw.py) at a tiny
budget: its structure (the sweep's best preset is the best fixed strategy, the ratios are those
of the mean distances, every strategy's best throw replayed with its energy account, ONNX
policies that throw as the trained ones), the benchmark's figures merged into rl.json without
losing the other benchmark's keys, and the notebook on the committed results."""

import json
import os
import sys

import numpy as np
import pytest

from tests.conftest import require
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

require("stable_baselines3")
require("onnxruntime")

ROOT = str(ROOT_PATH)
RESULTS = os.path.join(ROOT, "benchmarks", "results", "throw_ppo")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from asr.experiments import throw_ppo

    out = tmp_path_factory.mktemp("throw_ppo")
    res = throw_ppo.run(total_steps=2048, seeds=(0, 1), presets=(0.0, 0.8), out_dir=str(out))
    return res, out


@pytest.mark.slow
def test_tiny_comparison_structure(tiny):
    res, _ = tiny
    assert set(res["sweep"]) == {0.0, 0.8}
    assert res["sweep"][res["best_preset"]] == max(res["sweep"].values())
    assert res["distances"]["best fixed"] == res["distances"][f"fixed {res['best_preset']:g}"]
    assert len(res["distances"]["best fixed"]) == 2 and len(res["distances"]["variable"]) == 2
    assert len(res["distances"]["fixed 0.8" if res["best_preset"] == 0.0 else "fixed 0"]) == 1
    for name in ("variable", "best fixed", "rigid"):
        assert res["mean"][name] == pytest.approx(np.mean(res["distances"][name]))
        throw = res["throws"][name]
        # the best seed's throw, replayed: its distance is that seed's held-out distance
        assert throw["distance"] == pytest.approx(max(res["distances"][name]), abs=1e-9)
        assert throw["account"]["motor_work"] >= throw["account"]["delivered"]
    m = res["mean"]
    if m["best fixed"] > 0:
        assert res["vsa_vs_best_fixed"] == pytest.approx(m["variable"] / m["best fixed"])
    else:
        assert np.isnan(res["vsa_vs_best_fixed"])


@pytest.mark.slow
def test_onnx_policies_throw_as_trained(tiny, tmp_path):
    from asr.envs.throw import Throw
    from asr.experiments import throw_ppo
    from asr.rl import OnnxPolicy

    res, _ = tiny
    paths = throw_ppo.export_policies(res, str(tmp_path))
    for name, path in paths.items():
        throw = res["throws"][name]
        policy = OnnxPolicy(path)
        env = Throw(1, **throw["env_kwargs"])
        obs, _ = env.reset(seed=0)
        for a in throw["actions"]:
            onnx_a = policy.predict(obs)[0][0]
            np.testing.assert_allclose(
                np.clip(onnx_a, env.single_action_space.low, env.single_action_space.high),
                a,
                atol=1e-4,
            )
            obs, *_ = env.step(a[None])


@pytest.mark.slow
def test_bench_figures_merge_into_rl_json(tiny, tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bench_throw

    res, _ = tiny
    fig = bench_throw.throw_figures(res)
    for name in ("variable", "best_fixed", "rigid"):
        assert fig[f"throw_distance_mean_m_{name}"] == res["mean"][name.replace("_", " ")]
        assert f"throw_energy_{name}_delivered" in fig
    assert fig["throw_vsa_vs_best_fixed"] is res["vsa_vs_best_fixed"]
    out = tmp_path / "rl.json"
    out.write_text(json.dumps({"reach_train_s": 20.0, "throw_old": 1.0}))
    merged = bench_throw.merged_into(str(out), fig, bench_throw.is_throw_figure)
    assert merged["reach_train_s"] == 20.0 and "throw_old" not in merged
    assert merged["throw_vsa_vs_rigid"] is res["vsa_vs_rigid"]


@pytest.mark.slow
@pytest.mark.notebooks
def test_throw_ppo_notebook_on_the_committed_results(tmp_path, monkeypatch):
    """The notebook runs the three committed ONNX policies closed-loop (it asserts that each
    throws as in the benchmark, within 1 mm) and replays them."""
    nbformat = require("nbformat")
    nbclient = require("nbclient")
    require("ipykernel")
    require("plotly")
    with open(os.path.join(RESULTS, "summary.json")) as f:
        summary = json.load(f)
    out = tmp_path / "distances.json"
    monkeypatch.setenv("ASR_NOTEBOOK_OUT", str(out))
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "throw_ppo.ipynb"), as_version=4)
    nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    distances = json.loads(out.read_text())
    for name in ("variable", "best fixed", "rigid"):
        assert distances[name] == pytest.approx(summary["throws"][name]["distance"], abs=1e-3)
        assert distances[name] > 0.5  # every trained strategy throws
    assert any("plotly" in str(o.get("data", {})) for c in nb.cells for o in c.get("outputs", []))
