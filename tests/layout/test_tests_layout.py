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
