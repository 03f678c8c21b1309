"""The C core's folders (csrc/asr.h): each part includes only its own files and those of the
parts it builds on, so the include graph between parts has no cycle and core stands alone."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CSRC = ROOT / "csrc"
# part -> the parts its files may include (itself included); csrc/gz, the C++ Gazebo shim,
# includes none of them; csrc/mujoco, the MuJoCo plugin library, builds on core alone
ALLOWED = {
    "mujoco": {"mujoco", "core"},
    "core": {"core"},
    "engine": {"engine", "core"},
    "interaction": {"interaction", "engine", "core"},
    "cpr": {"cpr", "core"},
    "gz": {"gz"},
}
# the parts' public headers, what the umbrella csrc/asr.h includes
PUBLIC = [
    "core/asr_batch.h",
    "engine/asr_engine.h",
    "interaction/asr_interaction.h",
    "cpr/asr_cpr.h",
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def quoted_includes(path):
    """The csrc files path includes with #include "...": resolved as the compiler does with
    -I csrc (the including file's folder first, then csrc/), as paths relative to csrc/."""
    found = []
    for name in INCLUDE.findall(path.read_text(encoding="utf-8")):
        for base in (path.parent, CSRC):
            if (base / name).is_file():
                found.append((base / name).resolve().relative_to(CSRC.resolve()))
                break
        else:
            raise AssertionError(
                f"{path.relative_to(ROOT)} includes {name!r}, which is not in "
                f"its folder or under csrc/"
            )
    return found


def test_every_file_of_csrc_is_in_a_part():
    loose = sorted(p.name for p in CSRC.iterdir() if p.is_file() and p.name != "asr.h")
    assert not loose, f"csrc/ holds files outside the parts' folders: {loose}"
    assert {p.name for p in CSRC.iterdir() if p.is_dir()} == set(ALLOWED)


def test_parts_include_only_the_parts_they_build_on():
    """No header or source of core includes one of engine/, interaction/ or cpr/ (nor asr.h,
    which includes them all); engine includes no interaction or cpr file; and so on."""
    checked = 0
    for part, allowed in ALLOWED.items():
        for path in sorted((CSRC / part).iterdir()):
            for inc in quoted_includes(path):
                target = inc.parts[0] if len(inc.parts) > 1 else "csrc/" + inc.name
                assert target in allowed, (
                    f"csrc/{part}/{path.name} includes csrc/{inc}: "
                    f"{part} may include only {sorted(allowed)}"
                )
                checked += 1
    assert checked > 40, checked  # the walk above saw the includes


def test_umbrella_header_includes_each_part_public_header():
    assert [str(p) for p in quoted_includes(CSRC / "asr.h")] == PUBLIC
