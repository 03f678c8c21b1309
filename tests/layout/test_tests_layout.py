"""tests/ mirrors the package: a folder per subpackage of asr (and a few for the rest of the
tree), each a package; helpers in tests/support; no test module imports another."""

import ast

from tests.support.paths import ROOT, TESTS

# folders of tests/ that are not a subpackage of asr: what they test or hold
NOT_ASR = {
    "benchmarks": "benchmarks/' baselines",
    "c": "the C test programs (no Python)",
    "cli": "asr.cli and asr.demo (modules, not subpackages)",
    "dashboard": "the dashboard/ folder (installed as asr_dashboard)",
    "data": "test robots and data files",
    "layout": "checks of the whole repository",
    "packaging": "the wheel",
    "support": "the helpers the tests share",
}


def folders():
    return sorted(p for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def test_every_folder_is_a_subpackage_of_asr_or_says_what_it_is():
    asr = {p.name for p in (ROOT / "asr").iterdir() if (p / "__init__.py").is_file()}
    assert [p.name for p in folders() if p.name not in asr | set(NOT_ASR)] == []


def test_every_folder_of_python_is_a_package():
    python = [p for p in folders() if any(p.glob("test_*.py")) or p.name == "support"]
    assert python and [p.name for p in python if not (p / "__init__.py").is_file()] == []
    assert (TESTS / "__init__.py").is_file()
    assert list(TESTS.glob("test_*.py")) == []  # every test module is in its folder


def imported_modules(path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_no_test_module_imports_another():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for name in imported_modules(path):
            if name.rsplit(".", 1)[-1].startswith("test_"):
                found.append(f"{path.relative_to(ROOT)}: {name}")
    assert found == []


def test_no_child_process_starts_in_tests():
    """A child started in tests/ has tests/ first on its sys.path, where tests/mujoco and
    tests/packaging would be imported for the MuJoCo and packaging libraries: children start in
    the repository (ROOT) or in tmp_path."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        module = ast.parse(path.read_text(encoding="utf-8"))
        bound = {
            t.id: ast.unparse(node.value)
            for node in module.body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(module):
            for kw in getattr(node, "keywords", []) if isinstance(node, ast.Call) else []:
                if kw.arg == "cwd":
                    value = ast.unparse(kw.value)
                    if bound.get(value, value) in ("TESTS", "str(TESTS)"):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
