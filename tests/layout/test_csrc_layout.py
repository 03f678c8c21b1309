"""The C core's folders (csrc/asr.h): each part includes only its own files and those of the
parts it builds on, so the include graph between parts has no cycle and core stands alone; and of
another part only the public headers (asr_*.h), so a part's private headers (core/batch.h: the
batch's layout, its lanes) can change without touching the parts built on it."""

import re

from tests.support.paths import ROOT

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


def test_parts_include_only_public_headers_of_other_parts():
    """A file of part X includes X's own headers and, of another part, only its public headers
    (asr_*.h: asr_batch.h with asr_status.h, asr_model.h, asr_fields.h; the core's asr_threads.h
    and asr_simd.h, for the parts built on it; asr_engine.h; ...), with no exception: the MuJoCo
    plugin steps its actuators through asr_lanes (core/asr_batch.h), cpr runs its threads with
    asr_parallel_for (core/asr_threads.h) and builds its hot loops with ASR_CLONED
    (core/asr_simd.h)."""
    private, public = [], 0
    for part in ALLOWED:
        for path in sorted((CSRC / part).iterdir()):
            for inc in quoted_includes(path):
                if inc.parts[0] == part or len(inc.parts) < 2:
                    continue
                if inc.name.startswith("asr_"):
                    public += 1
                else:
                    private.append(f"csrc/{part}/{path.name} includes csrc/{inc}")
    assert not private, f"private headers of other parts included: {private}"
    assert public >= 8, public  # the walk above saw the parts' includes of each other
