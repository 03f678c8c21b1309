"""cffi build script (out-of-line API mode): compiles csrc/ into the extension ``asr._core``;
and the MuJoCo plugin library ``asr/_asr_mujoco*.so`` (csrc/mujoco with the actuator core,
mujoco_plugin_extension below), which setup.py builds next to it.

The cdef is csrc/asr.h itself run through the C preprocessor (cdef cannot parse macros, and the
state fields are an X-macro list, csrc/core/asr_fields.h), so the compiler checks the
declarations cffi sees against the real header.
"""

import glob
import os
import shlex
import subprocess
import sysconfig

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(os.path.dirname(HERE), "csrc")

# Listed explicitly, by part (csrc/<part>/, see csrc/asr.h): a new C file is a deliberate change
# to the build.
PARTS = ["core", "engine", "interaction", "cpr"]
CORE_SOURCES = [
    "core/params.c",
    "core/models.c",
    "core/model_sea.c",
    "core/model_awas2.c",
    "core/model_bavs.c",
    "core/model_qbmove.c",
    "core/joint.c",
    "core/joint_avx2.c",
    "core/joint_avx512.c",
    "core/batch.c",
    "core/threads.c",
]
SOURCES = CORE_SOURCES + [
    "engine/engine.c",
    "interaction/interaction.c",
    "cpr/rod.c",
    "cpr/rotation.c",
    "cpr/cpr_legs.c",
    "cpr/cpr.c",
    "cpr/linalg.c",
]

# Python-implemented compliance models are called from C through these trampolines.
PYTHON_CALLBACKS = """
extern "Python" int asr_py_elastic(void*, const double*, const asr_elastic_in*, asr_elastic_out*);
extern "Python" int asr_py_refmap(void*, const double*, double, double, double*, double*);
"""

# -ffp-contract=off: no FMA contraction, so results do not depend on the compiler's choices.
# -Wno-psabi: the lane vectors (csrc/core/lanes.h) are 32-byte aligned on every target, and GCC
# notes at each by-value use that GCC 4.6 changed how such arguments pass; every function
# taking them is inlined, and no vector crosses a non-inlined call by value.
# -fno-wrapv undoes the -fwrapv that Python's own CFLAGS add: with wrapping int indices GCC
# cannot prove a loop's addresses affine and leaves it scalar (csrc never relies on wrapping;
# the sanitizer build of the C tests checks for signed overflow).
# The strict warning set (-Wall -Wextra -Wpedantic -Werror) is applied to csrc/ by the C tests
# (tests/c); here it would also fire on cffi's generated wrapper.
# -fvisibility=hidden: the module's only exported symbol is its PyInit function; the C core's
# functions (public asr_* and the private helpers) are reached through cffi, never by name from
# outside, so they cannot clash with another library's symbols.
CFLAGS = [
    "-std=c11",
    "-O3",
    "-ffp-contract=off",
    "-Wno-psabi",
    "-fno-math-errno",
    "-fno-wrapv",
    "-fvisibility=hidden",
]


def header_cdef(path):
    """The header's declarations with its macros expanded by the C compiler's preprocessor."""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    cmd = [*cc, "-E", "-P", "-std=c11", "-x", "c", "-I", os.path.dirname(path), path]
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        raise RuntimeError(
            f"preprocessing {path} for the cffi cdef failed ({shlex.join(cmd)}): {detail}"
        ) from None


ffibuilder = FFI()
ffibuilder.cdef(header_cdef(os.path.join(CSRC, "asr.h")) + PYTHON_CALLBACKS)
ffibuilder.set_source(
    "asr._core",
    '#include "asr.h"',
    sources=[os.path.relpath(os.path.join(CSRC, s)) for s in SOURCES],
    include_dirs=[os.path.relpath(CSRC)],
    # headers as dependencies: a change to an inlined helper (core/motor.h, ...) rebuilds the
    # module; the parts include each other's headers by path from csrc/ ("core/batch.h")
    depends=sorted(
        os.path.relpath(h)
        for folder in ["", *PARTS]
        for h in glob.glob(os.path.join(CSRC, folder, "*.h"))
    ),
    extra_compile_args=CFLAGS,
    libraries=["m", "pthread"],
)


def mujoco_plugin_extension():
    """The MuJoCo plugin "asr.actuator" (csrc/mujoco/asr_mujoco.h) as a setuptools Extension
    asr._asr_mujoco: a plain shared library (no Python module in it) of csrc/mujoco and the
    actuator core, compiled against the headers of the mujoco package installed here. None
    without mujoco.

    It needs libmujoco by its soname alone (libmujoco.so.<version>, what linking the file
    records) and has no runpath of its own: it loads into a process that runs that MuJoCo
    already (MuJoCo's Python bindings have it loaded, a C program links it), whose copy the
    loader takes by that soname. A runpath to the build's site-packages would send a stale
    build to another environment's libmujoco (two MuJoCo copies in one process); the installed
    layout's ../mujoco is the running package only when nothing else is on sys.path. The version
    it is built for is stamped into the file (asr_mujoco_stamp), so that asr.mujoco.plugin checks
    it before the loader looks for a libmujoco that another MuJoCo version no longer has."""
    try:
        import mujoco
    except ImportError:
        return None
    from setuptools import Extension

    folder = os.path.dirname(mujoco.__file__)
    libs = sorted(glob.glob(os.path.join(folder, "libmujoco.so*")))
    if not libs:
        return None
    mujoco_sources = ["mujoco/plugin.c", "mujoco/group.c", "mujoco/config.c"]
    return Extension(
        "asr._asr_mujoco",
        [os.path.relpath(os.path.join(CSRC, s)) for s in mujoco_sources + CORE_SOURCES],
        include_dirs=[os.path.relpath(CSRC), os.path.join(folder, "include")],
        depends=sorted(
            os.path.relpath(h)
            for part in ("core", "mujoco")
            for h in glob.glob(os.path.join(CSRC, part, "*.h"))
        ),
        extra_compile_args=CFLAGS,
        extra_link_args=[libs[-1]],  # recorded as NEEDED by its soname, not by this path
        libraries=["m", "pthread"],
    )


if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
