"""The dashboard as a client of asr: it uses asr's public API only (no name with a leading
underscore at any level, each imported name in its module's __all__ where the module has one,
no private attribute of another object), it names itself relatively (the top-level dashboard/
folder installs as the package asr_dashboard), and nothing of the tree imports it as the generic
top-level `dashboard`, a name only the source tree's folder answers to."""

import ast
import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

DASHBOARD = ROOT / "dashboard"
# where the tree may name the dashboard's package: the code, the tests, the benchmarks, the docs
USERS = ("asr", "tests", "benchmarks", "docs", "notebooks", "dashboard")


def _trees():
    for path in sorted(DASHBOARD.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _public(dotted):
    """None when `dotted` (asr.x.y) names public API, else why not: a part with a leading
    underscore, or a name its module leaves out of its __all__ (a submodule is public by its
    own name)."""
    parts = dotted.split(".")
    if any(p.startswith("_") for p in parts):
        return "a private name"
    obj = importlib.import_module(parts[0])
    for i, name in enumerate(parts[1:], 1):
        module = ".".join(parts[:i])
        exported = getattr(obj, "__all__", None)
        if exported is not None and name in exported:
            obj = getattr(obj, name)
        elif hasattr(obj, "__path__") and importlib.util.find_spec(f"{module}.{name}"):
            obj = importlib.import_module(f"{module}.{name}")
        elif exported is not None:
            return f"not in {module}.__all__"
        else:
            obj = getattr(obj, name)
    return None


def _asr_names(tree):
    """The asr names a module uses: its `from asr... import name`, `import asr...` and the
    attribute chains it reads from the asr package (asr.Sim, asr.core.batch.check_mode)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module.split(".")[0] == "asr":
                yield node.lineno, *(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            yield node.lineno, *(a.name for a in node.names if a.name.split(".")[0] == "asr")
        elif isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.insert(0, inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "asr":
                yield node.lineno, "asr." + ".".join(chain)


def test_public_check_tells_private_from_public():
    assert _public("asr.rl.MODEL_FILES") is None
    assert _public("asr.controllers.interaction.ControllerBusy") is None
    assert _public("asr.rl._config.MODEL_FILES") == "a private name"
    assert _public("asr.core.batch.check_mode") is None
    assert _public("asr.learning.gym_registry.ENVS") is None  # a module without __all__
    assert _public("asr.envs.vector.AsrVectorEnv.observe") is None
    assert _public("asr.envs.vector.AsrVectorEnv._observe") == "a private name"


def test_dashboard_uses_public_asr_names_only():
    bad = []
    for rel, tree in _trees():
        for lineno, *names in _asr_names(tree):
            for name in names:
                # an attribute chain read off asr: the longest prefix that resolves is checked
                why = _public(name)
                if why:
                    bad.append(f"{rel}:{lineno}: {name} ({why})")
    assert not bad, "\n".join(bad)


def test_dashboard_reads_no_private_attribute_of_another_object():
    """`env._observe()`, `sim.batch._b`: a private attribute read off anything but self / cls
    (dunders such as __package__ aside)."""
    bad = [
        f"{rel}:{node.lineno}: {ast.unparse(node)}"
        for rel, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]
    assert not bad, "\n".join(bad)


def test_dashboard_names_itself_relatively():
    """Its modules import each other relatively and start their children by __package__: they
    work as asr_dashboard (installed) whatever the folder is called."""
    absolute = [
        f"{rel}:{node.lineno}"
        for rel, tree in _trees()
        for node in ast.walk(tree)
        if (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module)
        and node.module.split(".")[0] in ("dashboard", "asr_dashboard")
        or isinstance(node, ast.Import)
        and any(a.name.split(".")[0] in ("dashboard", "asr_dashboard") for a in node.names)
    ]
    assert not absolute, absolute
    source = (DASHBOARD / "exports.py").read_text(encoding="utf-8")
    assert '"-m", f"{__package__}.exports"' in source


# a dashboard module named in a string ("dashboard.exports"), not a file ("dashboard.png")
MODULES = sorted({p.stem for p in DASHBOARD.rglob("*.py")} - {"__init__"} | {"routes"})
MODULE_STRING = re.compile(r"[\"']dashboard\.(?:" + "|".join(MODULES) + r")\b")
TOP_LEVEL = re.compile(r"^\s*(?:from\s+dashboard(?:\.\w+)*\s+import|import\s+dashboard\b)", re.M)


def test_nothing_imports_the_generic_top_level_name():
    """No code, test, benchmark or doc of the tree imports `dashboard` (only the source tree
    has it: an installed asr answers to asr_dashboard), nor runs `python -m dashboard.<x>`."""
    found = []
    for folder in USERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".md", ".ipynb") or not path.is_file():
                continue
            if path.resolve() == Path(__file__).resolve():
                continue  # this file spells the patterns
            text = path.read_text(encoding="utf-8", errors="replace")
            rel = path.relative_to(ROOT).as_posix()
            found += [f"{rel}: {m.group(0).strip()}" for m in TOP_LEVEL.finditer(text)]
            found += [f"{rel}: -m dashboard." for _ in re.finditer(r"-m\s+dashboard\.", text)]
            found += [f"{rel}: {m.group(0)}" for m in MODULE_STRING.finditer(text)]
    for name in ("Makefile", "README.md", "setup.cfg", "setup.py", "pyproject.toml"):
        text = (ROOT / name).read_text(encoding="utf-8")
        found += [f"{name}: {m.group(0).strip()}" for m in TOP_LEVEL.finditer(text)]
        found += [f"{name}: -m dashboard." for _ in re.finditer(r"-m\s+dashboard\.", text)]
    assert not found, "\n".join(found)


@pytest.mark.slow  # a fresh interpreter imports the app
def test_asr_dashboard_is_the_folder():
    """In the source tree (the editable install) asr_dashboard is dashboard/, and importing it
    and its app loads no module under the generic name."""
    code = (
        "import sys, asr_dashboard, asr_dashboard.app, asr_dashboard.server\n"
        "print(asr_dashboard.__file__)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'dashboard'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT / "docs", capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    path, loaded = out.stdout.splitlines()[-2:]
    assert path == str(DASHBOARD / "__init__.py") and loaded == "[]"
