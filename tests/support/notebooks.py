"""run_notebook: execute a notebook of notebooks/ in quick mode in a scratch folder (the notebook
tests of tests/envs, tests/analysis and tests/controllers)."""

import os

import asr.envs  # noqa: F401  (registers the environments)
from tests.conftest import require
from tests.support.paths import ROOT


def run_notebook(name, tmp_path, monkeypatch, timeout=120, **env):
    """Execute notebooks/<name> in quick mode (ASR_NOTEBOOK_QUICK=1, plus `env`) with its
    working folder in tmp_path; the executed notebook."""
    nbformat = require("nbformat")
    nbclient = require("nbclient")
    require("ipykernel")
    monkeypatch.setenv("ASR_NOTEBOOK_QUICK", "1")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    nb = nbformat.read(os.path.join(str(ROOT), "notebooks", name), as_version=4)
    # kernel "python3": with ipykernel in this interpreter's environment, jupyter_client resolves
    # it to this interpreter (the venv with asr), not to a system Python
    nbclient.NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    return nb
