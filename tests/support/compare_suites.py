"""Compare two trees' test suites: the collected test ids and the assertions of every test.

    python tests/support/compare_suites.py BEFORE AFTER [--ids-before F] [--ids-after F]

BEFORE and AFTER are checkouts of asr (a `git worktree add /tmp/pre <commit>` and this tree, say).
Test ids are made path-independent: a test is its module's file name, its class and function
and its parametrization (`test_sim.py::test_rollout[2]`), so moving a file to another folder
keeps its id; the tree's own absolute path inside a parametrization is replaced by `<root>`.
The ids come from `pytest --collect-only -q` run in each tree with this Python (the tree must be
importable: its extension built), or from a file of ids written earlier (--ids-before/after).

Assertions are counted from the source with `ast`, not by running anything: for each test
function (module-level `test_*` and `Test*` class methods) its `assert` statements and its
`pytest.raises` / `pytest.warns` / `np.testing.assert_*` calls, and over the whole of tests/ the
same counts in every function, the helpers included (a helper moved from a test module to
tests/support keeps its asserts in the total). Prints what differs and a summary; exits 1 when
a test or an assertion was lost (fewer ids, a test gone, or a test or the total with fewer
assertions), 0 otherwise.
"""

import argparse
import ast
import collections
import os
import re
import subprocess
import sys
from pathlib import Path

CHECK_CALLS = re.compile(r"^(pytest\.(raises|warns|approx|fail)|(np|numpy)\.testing\.assert_\w+)$")


def collect_ids(tree, python=sys.executable):
    """The test ids pytest collects in `tree` (run there with `python`)."""
    proc = subprocess.run(
        [python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
    )
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    if not ids:
        tail = proc.stdout[-2000:] + proc.stderr[-2000:]
        raise SystemExit(f"no test collected in {tree}:\n{tail}")
    return ids


def normal_id(test_id, root):
    """`tests/core/test_x.py::test_y[a]` -> `test_x.py::test_y[a]` (root in parameters: <root>)."""
    path, _, rest = test_id.partition("::")
    rest = rest.replace(str(root).rstrip("/"), "<root>")
    return f"{os.path.basename(path)}::{rest}"


def read_ids(path):
    return [line.strip() for line in Path(path).read_text().splitlines() if "::" in line]


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def count_checks(node):
    """(assert statements, pytest.raises / warns / approx / fail and np.testing.assert_* calls)
    inside `node`."""
    asserts = calls = 0
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assert):
            asserts += 1
        elif isinstance(sub, ast.Call):
            name = _dotted(sub.func)
            if name and CHECK_CALLS.match(name):
                calls += 1
    return asserts, calls


def _functions(module):
    """(qualified name, node, is a test) of every function of a module, nested ones included
    in their outer function's count only."""
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node, node.name.startswith("test")
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    test = node.name.startswith("Test") and sub.name.startswith("test")
                    yield f"{node.name}.{sub.name}", sub, test


def tree_checks(tree):
    """({file name::test function: (asserts, calls)}, total (asserts, calls) over every function
    and module-level statement of tests/ (helpers and conftest included))."""
    per_test, total = {}, [0, 0]
    for path in sorted((Path(tree) / "tests").rglob("*.py")):
        module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        a, c = count_checks(module)
        total[0] += a
        total[1] += c
        if not path.name.startswith("test_"):
            continue
        for name, node, is_test in _functions(module):
            if is_test:
                per_test[f"{path.name}::{name}"] = count_checks(node)
    return per_test, tuple(total)


def _base(test_id):
    """`test_x.py::Class::test_y[p]` -> `test_x.py::Class.test_y` (the function's key)."""
    path, _, rest = test_id.partition("::")
    return f"{path}::{rest.split('[', 1)[0].replace('::', '.')}"


def compare(before_ids, after_ids, before_checks, after_checks, out=sys.stdout):
    """Print the differences and a summary; True when nothing was lost."""
    ok = True
    b, a = collections.Counter(before_ids), collections.Counter(after_ids)
    gone, new = sorted((b - a).elements()), sorted((a - b).elements())
    (b_tests, b_total), (a_tests, a_total) = before_checks, after_checks
    print(f"collected ids: before {sum(b.values())}, after {sum(a.values())}", file=out)
    for title, ids in (("only before", gone), ("only after", new)):
        for test_id in ids:
            print(f"  {title}: {test_id}", file=out)
    # a test whose id changed only in a parametrization (a path in it) is not lost
    gone_functions = {_base(i) for i in gone} - {_base(i) for i in a}
    if sum(a.values()) < sum(b.values()) or gone_functions:
        ok = False
        for f in sorted(gone_functions):
            print(f"  LOST test function: {f}", file=out)
    fewer = []
    for name, (asserts, calls) in sorted(b_tests.items()):
        if name not in a_tests:
            fewer.append(f"  test function gone from the source: {name}")
        elif a_tests[name][0] < asserts or a_tests[name][1] < calls:
            fewer.append(f"  fewer checks in {name}: {(asserts, calls)} -> {a_tests[name]}")
    more = sorted(n for n in a_tests if n not in b_tests or a_tests[n] > b_tests[n])
    print(
        f"test functions in the source: before {len(b_tests)}, after {len(a_tests)}; "
        f"with fewer checks or gone: {len(fewer)}; new or with more: {len(more)}",
        file=out,
    )
    for line in fewer:
        print(line, file=out)
    print(
        f"checks over tests/ (assert statements, pytest.raises/warns/approx/fail and "
        f"np.testing.assert_* calls): before {b_total}, after {a_total}",
        file=out,
    )
    if fewer or a_total[0] < b_total[0] or a_total[1] < b_total[1]:
        ok = False
    print("result: nothing lost" if ok else "result: LOST tests or assertions", file=out)
    return ok


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="the earlier tree (a git worktree)")
    parser.add_argument("after", help="the later tree")
    parser.add_argument("--ids-before", help="a file of ids collected in BEFORE (else collected)")
    parser.add_argument("--ids-after", help="a file of ids collected in AFTER (else collected)")
    args = parser.parse_args(argv)
    ids = []
    for tree, saved in ((args.before, args.ids_before), (args.after, args.ids_after)):
        raw = read_ids(saved) if saved else collect_ids(tree)
        ids.append([normal_id(i, os.path.realpath(tree)) for i in raw])
    ok = compare(ids[0], ids[1], tree_checks(args.before), tree_checks(args.after))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
