"""notebooks/train_cem.ipynb runs (quick mode) and its CEM learning curve goes up; and a direct
short CEM run improves."""

import json
import os

import gymnasium
import numpy as np
import pytest

import asr.envs  # noqa: F401  (registers the environments)
from asr.envs import cem
from tests.conftest import require
from tests.support.notebooks import run_notebook  # noqa: E402
from tests.support.paths import ROOT  # noqa: E402

NOTEBOOK = os.path.join(str(ROOT), "notebooks", "train_cem.ipynb")


def _improved(curve):
    """The population mean return of the first iteration (a random policy around the initial
    mean, std 0.5) is far below that of the last one: CEM has narrowed onto a policy. Require
    the last to beat the first by 20 % of |first| and to be the best but within noise."""
    first, last = curve[0], curve[-1]
    assert last > first + 0.2 * abs(first), curve
    assert last >= max(curve) - 0.05 * abs(max(curve)), curve


@pytest.mark.notebooks
def test_train_cem_notebook(tmp_path, monkeypatch):
    out = tmp_path / "curve.json"
    nb = run_notebook("train_cem.ipynb", tmp_path, monkeypatch, ASR_NOTEBOOK_OUT=str(out))
    curve = json.loads(out.read_text())["curve"]
    assert len(curve) == 4
    _improved(curve)
    last = json.loads(nb.cells[-1].outputs[0]["text"])
    assert last == {"first": curve[0], "last": curve[-1]}
    assert any("plotly" in str(o.get("data", {})) for c in nb.cells for o in c.get("outputs", []))


def test_cem_direct_improves():
    env = gymnasium.make_vec("asr/Reach2DOF-v0", num_envs=8 * 2, max_episode_steps=50)
    res = cem.train(env, 4, population=8, episodes=2, seed=1)
    _improved(res["curve"])
    assert res["mean"].shape == (4, 9)
    assert np.all(np.isfinite(res["mean"]))


@pytest.mark.notebooks
def test_cpr_notebook(tmp_path, monkeypatch):
    """notebooks/cpr.ipynb runs (quick mode), writes its plotly figures as offline HTML and a
    JSON summary whose workspace sweep converged at some poses, the home pose included."""
    require("plotly")
    run_notebook("cpr.ipynb", tmp_path, monkeypatch, ASR_NOTEBOOK_OUT_DIR=str(tmp_path))
    summary = json.loads((tmp_path / "cpr_summary.json").read_text())
    assert summary["quick"] is True
    names = {
        "cpr_3rfr_dgm.html",
        "cpr_3rfr_igm.html",
        "cpr_stewart_till.html",
        "cpr_workspace.html",
        "cpr_workspace_z04.html",
    }
    assert names <= set(summary["html"])
    for name in names:
        html = (tmp_path / name).read_text()
        assert "Plotly.newPlot" in html, name  # a plotly figure ...
        assert len(html) > 1_000_000, name  # ... with plotly.js embedded (offline)
    assert summary["till"]["home_converged"] and summary["till"]["tilted_converged"]
    assert max(summary["till"]["home_q"]) > 0.4  # rod lengths for z = 0.4: at least 0.4 m
    ws = summary["workspace"]
    assert ws["home_converged"]
    assert ws["n_poses"] == ws["n_converged"] + ws["n_not_converged"] + ws["n_skipped"]
    assert 0 < ws["n_converged"] <= ws["n_poses"]
    assert ws["n_converged"] >= 5  # the centre and its nearby poses
    assert len(summary["planar_dgm"]) >= 3


@pytest.mark.notebooks
def test_train_ppo_notebook(tmp_path, monkeypatch):
    """notebooks/train_ppo.ipynb runs (quick mode): PPO's mean episode return rises, the curve
    is drawn with plotly, and the exported ONNX policy acts like the torch one (float32 graph:
    within 1e-5)."""
    require("stable_baselines3")
    require("onnxruntime")
    out = tmp_path / "summary.json"
    nb = run_notebook(
        "train_ppo.ipynb", tmp_path, monkeypatch, timeout=300, ASR_NOTEBOOK_OUT=str(out)
    )
    summary = json.loads(out.read_text())
    assert summary["last_return"] > summary["first_return"], summary
    assert summary["onnx_vs_torch"] <= 1e-5, summary
    assert any("plotly" in str(o.get("data", {})) for c in nb.cells for o in c.get("outputs", []))
