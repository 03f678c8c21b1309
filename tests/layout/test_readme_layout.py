"""README.md's layout table names only paths that exist, and lists every top-level folder."""

import re
import subprocess

import pytest

from tests.conftest import IN_CI
from tests.support.paths import ROOT


def layout_paths():
    """The backquoted paths in the first column of the table under README.md's '## Layout'."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows[0].replace(" ", "") == "|path|holds|", rows[0]
    paths = []
    for row in rows[2:]:  # after the header and its | --- | --- | line
        first = row.split("|")[1].strip()
        m = re.fullmatch(r"`([^`]+)`", first)
        assert m, f"first column of {row!r} is not one `path`"
        paths.append(m.group(1))
    return paths


def test_layout_paths_exist():
    paths = layout_paths()
    assert len(paths) >= 10
    missing = [
        p for p in paths if not (ROOT / p).exists() or (p.endswith("/") and not (ROOT / p).is_dir())
    ]
    assert not missing, f"README.md's layout table names paths that do not exist: {missing}"


def test_layout_lists_every_top_level_folder():
    try:
        tracked = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError) as exc:
        if IN_CI:  # CI runs on a clone: git must answer there
            pytest.fail(f"git ls-files failed in CI: {exc}")
        pytest.skip("not a git checkout")
    folders = {f.split("/", 1)[0] + "/" for f in tracked if "/" in f}
    unlisted = sorted(folders - set(layout_paths()))
    assert not unlisted, f"top-level folders missing from README.md's layout table: {unlisted}"
