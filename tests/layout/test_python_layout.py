"""The tree a newcomer reads: no source file over 600 lines (generated files aside), and no import
cycle among asr's and the dashboard's Python modules (imports inside functions counted too: a
cycle hidden in a function is still a cycle)."""

import ast

from tests.support.paths import ROOT

MAX_LINES = 600
SOURCE_DIRS = ("asr", "dashboard", "csrc", "tests", "benchmarks", "robots/tools", ".ci")
SOURCE_SUFFIXES = {".py", ".c", ".h", ".cc", ".js", ".css", ".html"}
# written by the build (asr/_build.py: cffi's C source of the extension), not by hand
GENERATED = {"asr/_core.c"}
PACKAGES = ("asr", "dashboard")
# compiled extension modules, imported like modules but with no .py source
EXTENSIONS = ("asr._core", "asr._asr_gz")


def source_files():
    for folder in SOURCE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            rel = path.relative_to(ROOT).as_posix()
            if path.suffix in SOURCE_SUFFIXES and path.is_file() and rel not in GENERATED:
                yield rel, path


def test_no_source_file_over_600_lines():
    long = {}
    for rel, path in source_files():
        n = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
        if n > MAX_LINES:
            long[rel] = n
    assert not long, f"files over {MAX_LINES} lines (split them along their seams): {long}"


def python_modules():
    """{dotted module name: path} of the packages' modules (a package: its __init__.py)."""
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported(module, path, modules):
    """The package modules `module` (at path) imports anywhere in its body: `from pkg import x`
    counts as importing pkg.x when that is a module, else pkg itself."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".")[: None if is_package else -1]
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
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
    assert cycles(graph) == [], "import cycles (each a set of modules importing each other)"
