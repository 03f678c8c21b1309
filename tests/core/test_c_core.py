"""Build the C core with each plain C test program (tests/c/test_core_*.c: the public API, its
models, batches, held lanes, threads and a fuzz loop; tests/c/test_engine_*.c: the rigid-body engine
coupling against a fake engine; tests/c/test_rod.c: the rod packs of the CPR solver;
tests/c/test_cpr_*.c: the CPR solver on Till's Stewart-Gough robot, the planar 3RFR and eight legs,
checked against rods integrated independently; tests/c/test_linalg.c: its linear algebra;
tests/c/test_lanes.c: the lane arithmetic and the core's own exp, and tests/c/test_lanes_avx2.c: the
same built for AVX2) three times, with the strict warning set, with AddressSanitizer +
UndefinedBehaviorSanitizer and with ThreadSanitizer (batches on worker threads, several batches on
application threads, threaded CPR batches), and run every build. The programs share their helpers
through headers in tests/c (check.h, tbatch.h, core_check.h, fake_engine.h, sea_hand.h,
cpr_robots.h)."""

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import IN_CI
from tests.support.paths import ROOT

CSRC = ROOT / "csrc"
# The C core's parts, one folder each (csrc/asr.h; csrc/gz, the Gazebo shim, is not one of them).
PARTS = ("core", "engine", "interaction", "cpr")
TEST_DIR = ROOT / "tests" / "c"
# program name -> fewer checks than this means the program did not run its tests
PROGRAMS = {
    "test_core_models": 900,
    "test_core_batch": 200,
    "test_core_lanes": 30,
    "test_core_threads": 130,
    "test_core_fuzz": 50,
    "test_engine_sea": 10000,
    "test_engine_faults": 5000,
    "test_engine_modes": 20000,
    "test_rod": 90,
    "test_cpr_till": 150,
    "test_cpr_robots": 35,
    "test_linalg": 120,
    "test_lanes": 900,
    "test_lanes_avx2": 900,
}

STRICT = [
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Wpedantic",
    "-Wmissing-prototypes",
    "-Werror",
    "-ffp-contract=off",
    "-Wno-psabi",
]
SANITIZE = [
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=all",
    "-g",
    "-O1",
]
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
}
SANITIZER_REPORT = re.compile(
    r"ERROR: (Address|Leak)Sanitizer|runtime error:|"
    r"UndefinedBehaviorSanitizer"
)
THREAD_SANITIZE = ["-fsanitize=thread", "-fno-omit-frame-pointer", "-g", "-O1"]
THREAD_SANITIZER_ENV = {"TSAN_OPTIONS": "halt_on_error=1:exitcode=66"}
THREAD_SANITIZER_REPORT = re.compile(r"(WARNING|ERROR): ThreadSanitizer")
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed$", re.MULTILINE)


def _gcc():
    gcc = shutil.which("gcc")
    if gcc is None:
        if IN_CI:
            pytest.fail("gcc is required for the C core tests and is missing in CI")
        pytest.skip("gcc not installed (a failure when CI is set)")
    return gcc


def _compile_core(out_dir, extra):
    """csrc/<part>/*.c compiled to objects in out_dir, as many compilers at a time as there are
    CPUs: (objects, stderr of all compiles, 0 if every compile succeeded)."""

    def compile_one(src):
        obj = Path(out_dir) / f"{src.parent.name}_{src.stem}.o"
        cmd = [_gcc(), *STRICT, *extra, "-I", str(CSRC), "-c", str(src), "-o", str(obj)]
        return obj, subprocess.run(cmd, capture_output=True, text=True, timeout=600)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        done = list(
            pool.map(compile_one, sorted(p for part in PARTS for p in (CSRC / part).glob("*.c")))
        )
    rc = max(proc.returncode for _, proc in done)
    return [obj for obj, _ in done], "".join(proc.stderr for _, proc in done), rc


@pytest.fixture(scope="module")
def core_objects(tmp_path_factory):
    """The core compiled once per set of flags and linked into every test program (compiling
    it per program made this module the slowest of the suite): flags -> _compile_core."""
    cache = {}

    def get(extra):
        key = tuple(extra)
        if key not in cache:
            cache[key] = _compile_core(tmp_path_factory.mktemp("c_core"), extra)
        return cache[key]

    return get


def _build(core_objects, tmp_dir, program, name, extra):
    """The test program linked with the core's objects: (executable, CompletedProcess whose
    returncode and stderr cover the core's compiles too)."""
    objects, core_stderr, core_rc = core_objects(extra)
    exe = Path(tmp_dir) / name
    cmd = [
        _gcc(),
        *STRICT,
        *extra,
        "-I",
        str(CSRC),
        str(TEST_DIR / f"{program}.c"),
        *map(str, objects),
        "-o",
        str(exe),
        "-lm",
        "-lpthread",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return exe, subprocess.CompletedProcess(
        cmd, max(core_rc, proc.returncode), proc.stdout, core_stderr + proc.stderr
    )


def _run(exe, env=None):
    return subprocess.run(
        [str(exe)], capture_output=True, text=True, timeout=300, env=dict(os.environ, **(env or {}))
    )


def _tail(text, n=4000):
    return text[-n:]


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def program(request):
    return request.param


@pytest.fixture(scope="module")
def strict_build(tmp_path_factory, core_objects, program):
    return _build(
        core_objects, tmp_path_factory.mktemp(f"c_strict_{program}"), program, program, ["-O2"]
    )


@pytest.fixture(scope="module")
def sanitized_build(tmp_path_factory, core_objects, program):
    return _build(
        core_objects,
        tmp_path_factory.mktemp(f"c_sanitized_{program}"),
        program,
        f"{program}_asan",
        SANITIZE,
    )


@pytest.fixture(scope="module")
def thread_sanitized_build(tmp_path_factory, core_objects, program):
    return _build(
        core_objects,
        tmp_path_factory.mktemp(f"c_tsan_{program}"),
        program,
        f"{program}_tsan",
        THREAD_SANITIZE,
    )


def _assert_passed(proc, program):
    m = SUMMARY.search(proc.stdout)
    assert m is not None, (
        f"no summary line; stdout:\n{_tail(proc.stdout)}\nstderr:\n{_tail(proc.stderr)}"
    )
    assert int(m.group(1)) > PROGRAMS[program], f"too few checks ran: {m.group(0)}"
    assert m.group(2) == "0", f"{m.group(0)}; failures:\n{_tail(proc.stderr)}"
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{_tail(proc.stderr)}"


@pytest.mark.slow
def test_strict_warning_build_succeeds(strict_build):
    exe, proc = strict_build
    assert proc.returncode == 0, f"strict build failed:\n{_tail(proc.stderr)}"
    assert proc.stderr.strip() == "", f"warnings:\n{_tail(proc.stderr)}"
    assert exe.exists()


@pytest.mark.slow
def test_core_program_passes(strict_build, program):
    exe, proc = strict_build
    assert proc.returncode == 0, f"strict build failed:\n{_tail(proc.stderr)}"
    _assert_passed(_run(exe), program)


@pytest.mark.sanitizer
def test_core_program_passes_under_sanitizers(sanitized_build, program):
    exe, proc = sanitized_build
    assert proc.returncode == 0, f"sanitizer build failed:\n{_tail(proc.stderr)}"
    run = _run(exe, SANITIZER_ENV)
    report = SANITIZER_REPORT.search(run.stderr)
    assert report is None, f"sanitizer report:\n{_tail(run.stderr[report.start() :])}"
    _assert_passed(run, program)


@pytest.mark.sanitizer
def test_core_program_passes_under_thread_sanitizer(thread_sanitized_build, program):
    exe, proc = thread_sanitized_build
    if proc.returncode != 0 and "tsan" in proc.stderr and not IN_CI:
        pytest.skip("this gcc has no ThreadSanitizer runtime (libtsan; a failure when CI is set)")
    assert proc.returncode == 0, f"ThreadSanitizer build failed:\n{_tail(proc.stderr)}"
    run = _run(exe, THREAD_SANITIZER_ENV)
    report = THREAD_SANITIZER_REPORT.search(run.stderr)
    assert report is None, f"ThreadSanitizer report:\n{_tail(run.stderr[report.start() :])}"
    _assert_passed(run, program)


def test_private_names_and_exports():
    """The naming scheme of csrc/asr.h: everything named asr_ is declared in the public headers
    (asr.h and the parts' asr_*.h it includes), and the private headers declare nothing named
    asr_ beyond the public types they use; the built extension exports only its PyInit
    function."""
    headers = [CSRC / "asr.h", *(h for part in PARTS for h in (CSRC / part).glob("*.h"))]
    public = "".join(p.read_text() for p in headers if p.name.startswith("asr"))
    public_names = set(re.findall(r"\basr_\w+", public))
    private = sorted(str(p.relative_to(CSRC)) for p in headers if not p.name.startswith("asr"))
    assert {
        "core/internal.h",
        "core/batch.h",
        "core/lanes.h",
        "core/springs.h",
        "core/motor.h",
        "core/simd.h",
        "cpr/rod.h",
    } <= set(private)
    for header in private:
        declared = set(re.findall(r"\basr_\w+", (CSRC / header).read_text()))
        assert declared <= public_names, f"{header} declares {sorted(declared - public_names)}"
    import asr._core

    nm = shutil.which("nm")
    if nm is None:
        assert not IN_CI, "nm (binutils) is needed to read the extension's symbols"
        pytest.skip("nm not found")
    out = subprocess.run(
        [nm, "-D", "--defined-only", asr._core.__file__], capture_output=True, text=True, check=True
    ).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.split()}
    assert exported == {"PyInit__core"}, sorted(exported)
