"""The tree a newcomer reads: a source file as long as its one concept needs (those past 800
lines reported, none past 1000; generated files aside), no import cycle among asr's and the
dashboard's Python modules (imports inside functions counted too: a cycle hidden in a function
is still a cycle), asr's layering contracts kept (lint-imports, pyproject.toml), and a room's
private names used only inside it (docs/development.md, "How the parts depend on each other")."""

import ast
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.support.paths import ROOT

LONG_LINES = 800  # a file past this many lines is reported: does it still hold one concept?
MAX_LINES = 1000  # and none is past this many
SOURCE_DIRS = ("asr", "dashboard", "csrc", "tests", "benchmarks", "robots/tools", ".ci")
SOURCE_SUFFIXES = {".py", ".c", ".h", ".cc", ".js", ".css", ".html"}
# written by the build (asr/_build.py: cffi's C source of the extension), not by hand
GENERATED = {"asr/_core.c"}
# the Python packages: installed name -> folder (setup.py installs dashboard/ as asr_dashboard)
PACKAGES = {"asr": "asr", "asr_dashboard": "dashboard"}
# compiled extension modules, imported like modules but with no .py source: the room each
# belongs to (the one that reads it; the build puts them at the package's top)
EXTENSIONS = {"asr._core": "asr.core", "asr._asr_gz": "asr.engines"}
# the Python outside asr that may not use asr's private names either
OUTSIDE = ("tests", "benchmarks", "dashboard", "robots/tools", ".ci")
# private names of asr used from outside their room, each with its reason; a test in
# tests/<room>/ may use its own room's private names (it tests them) and is not listed
ALLOWED_PRIVATE: dict[str, str] = {}


def source_files():
    for folder in SOURCE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            rel = path.relative_to(ROOT).as_posix()
            if path.suffix in SOURCE_SUFFIXES and path.is_file() and rel not in GENERATED:
                yield rel, path


def line_counts():
    return {
        rel: len(path.read_text(encoding="utf-8", errors="replace").splitlines())
        for rel, path in source_files()
    }


def test_no_source_file_over_1000_lines():
    counts = line_counts()
    long = {rel: n for rel, n in counts.items() if n > LONG_LINES}
    if long:
        warnings.warn(
            f"files past {LONG_LINES} lines (one concept each still?): {long}", stacklevel=1
        )
    over = {rel: n for rel, n in long.items() if n > MAX_LINES}
    assert not over, f"files over {MAX_LINES} lines (split them along their seams): {over}"
    assert len(counts) > 300 and "asr/sim/simulation.py" in counts


def python_modules():
    """{dotted module name: path} of the packages' modules (a package: its __init__.py)."""
    modules = {}
    for package, folder in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [package, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def absolute(module, is_package, node):
    """The module an ImportFrom node imports from, relative imports resolved."""
    base = node.module or ""
    if node.level:
        here = module.split(".")[: None if is_package else -1]
        base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
    return base


def imported(module, path, modules):
    """The package modules `module` (at path) imports anywhere in its body: `from pkg import x`
    counts as importing pkg.x when that is a module, else pkg itself."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute(module, is_package, node)
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        else:
            continue
        for name in names:
            while name and name not in modules and name not in EXTENSIONS:
                name = name.rpartition(".")[0]
            if name in modules and name != module:
                found.add(name)
    return found


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_python():
    modules = python_modules()
    graph = {name: imported(name, path, modules) for name, path in modules.items()}
    assert "asr.sim.simulation" in graph["asr"] and "asr.core.batch" in graph["asr.sim.simulation"]
    assert "asr_dashboard.server" in graph["asr.cli"]  # the dashboard by its installed name
    assert "asr_dashboard.datasheet" in graph["asr_dashboard.app"]  # relative imports resolved
    assert cycles(graph) == [], "import cycles (each a set of modules importing each other)"


def test_layering_contracts_are_kept():
    """`make lint`'s lint-imports, here too: the contracts of pyproject.toml, every one kept."""
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint_imports is None:
        pytest.fail("lint-imports missing: pip install -e '.[test]' (import-linter)")
    proc = subprocess.run(
        [lint_imports, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "asr.analysis | asr.learning | asr.mujoco" in (ROOT / "pyproject.toml").read_text()
    assert "0 broken" in proc.stdout


# ---- private names stay in their room ------------------------------------------------------


def is_private(part):
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def room_of(dotted, modules):
    """The room of an asr name: asr.<subpackage> for what is inside a first-level subpackage,
    "asr" for the modules at the package's top, the owning room for a compiled extension."""
    for extension, room in EXTENSIONS.items():
        if dotted == extension or dotted.startswith(extension + "."):
            return room
    parts = dotted.split(".")
    if len(parts) > 1 and (ROOT / "asr" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return "asr"


def is_room(name):
    """Whether tests/<name>/ mirrors a room of asr (a subpackage or a module at its top)."""
    return (ROOT / "asr" / name).is_dir() or (ROOT / "asr" / f"{name}.py").is_file()


def asr_uses(path, module, modules):
    """[(line, dotted name of asr used)] of a Python file: every name imported from asr, and
    every attribute read through a name bound to an asr module (`mod._x` after
    `from asr.pkg import mod` or `import asr.pkg.mod as mod`, `asr.pkg._x` after `import asr`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    uses, bound, attributes = [], {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if is_private(node.attr):
                attributes.append(node)
        elif isinstance(node, ast.ImportFrom):
            if node.level and module is None:
                continue
            base = absolute(module, is_package, node) if module else (node.module or "")
            if base.split(".")[0] != "asr":
                continue
            for a in node.names:
                uses.append((node.lineno, f"{base}.{a.name}"))
                if f"{base}.{a.name}" in modules:
                    bound[a.asname or a.name] = f"{base}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] != "asr":
                    continue
                uses.append((node.lineno, a.name))
                bound[a.asname or "asr"] = a.name if a.asname else "asr"
    for node in attributes:  # `x._y`, x a chain of attributes of a name bound to asr
        chain, value = [node.attr], node.value
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in bound:
            uses.append((node.lineno, ".".join([bound[value.id], *reversed(chain)])))
    return uses


def private_crossings():
    """{("file:line", private asr name)} for every use of a private name of asr outside its
    room (a test under tests/<room>/ counts as inside asr.<room>)."""
    modules = python_modules()
    files = [(path, name) for name, path in modules.items() if name.split(".")[0] == "asr"]
    for folder in OUTSIDE:
        files += [(path, None) for path in sorted((ROOT / folder).rglob("*.py"))]
    found = set()
    for path, module in files:
        rel = path.relative_to(ROOT)
        if module is not None:
            here = room_of(module, modules)
        elif rel.parts[0] == "tests" and len(rel.parts) > 2 and is_room(rel.parts[1]):
            here = room_of(f"asr.{rel.parts[1]}", modules)
        else:
            here = None
        for line, name in asr_uses(path, module, modules):
            parts = name.split(".")
            if not any(is_private(p) for p in parts[1:]):
                continue
            # the private part's owner: the name up to and including its first private part
            first = next(i for i, p in enumerate(parts) if i and is_private(p))
            if room_of(".".join(parts[: first + 1]), modules) != here:
                found.add((f"{rel.as_posix()}:{line}", name))
    return found


@pytest.mark.slow  # every Python file of the tree parsed: 1.3 s of CPU
def test_private_names_stay_in_their_room():
    found = private_crossings()
    unlisted = sorted((where, name) for where, name in found if name not in ALLOWED_PRIVATE)
    assert not unlisted, (
        "private names of asr used outside their room (make the name public in its room, or "
        f"list it in ALLOWED_PRIVATE with its reason): {unlisted}"
    )
    stale = set(ALLOWED_PRIVATE) - {name for _, name in found}
    assert not stale, f"ALLOWED_PRIVATE lists names no longer used outside their room: {stale}"


def test_private_crossings_are_found(tmp_path, monkeypatch):
    """The finder sees each way a private name crosses a room: an import of it, of a private
    module, an attribute through an imported module, through `import asr`."""
    pkg = tmp_path / "asr"
    (pkg / "core").mkdir(parents=True)
    (pkg / "sim").mkdir()
    (pkg / "__init__.py").write_text("from asr import _moved\n")
    (pkg / "_moved.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "_lanes.py").write_text("")
    (pkg / "core" / "batch.py").write_text("from asr.core._lanes import x\n_handle = 1\n")
    (pkg / "sim" / "__init__.py").write_text("")
    (pkg / "sim" / "run.py").write_text(
        "import asr\nfrom asr.core import batch\nfrom asr.core.batch import _handle\n"
        "from asr.core._lanes import y\nbatch._handle\nasr.core.batch._handle\nbatch.public\n"
    )
    (tmp_path / "tests" / "core").mkdir(parents=True)
    (tmp_path / "tests" / "core" / "test_b.py").write_text("from asr.core.batch import _handle\n")
    (tmp_path / "tests" / "test_c.py").write_text("from asr.core.batch import _handle\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGES", {"asr": "asr"})
    monkeypatch.setattr(sys.modules[__name__], "OUTSIDE", ("tests",))
    assert private_crossings() == {
        ("asr/sim/run.py:3", "asr.core.batch._handle"),
        ("asr/sim/run.py:4", "asr.core._lanes.y"),
        ("asr/sim/run.py:5", "asr.core.batch._handle"),
        ("asr/sim/run.py:6", "asr.core.batch._handle"),
        ("tests/test_c.py:1", "asr.core.batch._handle"),
    }
