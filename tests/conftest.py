"""Shared test helpers. In CI (CI set) a missing dependency is a failure, never a skip."""
import importlib
import os

import pytest

IN_CI = bool(os.environ.get("CI"))


def require(module_name):
    """Import an optional test dependency; fail in CI, skip elsewhere, when it is missing."""
    try:
        return importlib.import_module(module_name)
    except ImportError:
        if IN_CI:
            pytest.fail(f"required test dependency {module_name!r} is missing in CI")
        pytest.skip(f"{module_name} not installed (a failure when CI is set)")
