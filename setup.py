"""Shim: setuptools reads everything from setup.cfg except cffi's `cffi_modules` keyword, which
it accepts only as a setup() argument. The MuJoCo plugin library asr/_asr_mujoco.<suffix>.so
(csrc/mujoco: asr's actuators as the MuJoCo plugin "asr.actuator", asr.mujoco.plugin) is built
against the installed mujoco package's headers. The Gazebo engine shim (csrc/gz, C++) is an optional
extension, built when pkg-config finds Gazebo's libraries: asr/_asr_gz.<suffix>.so, a plain C
library that asr.engines.gz_shim loads like the Makefile's asr/_asr_gz.so. The robot descriptions
(the top-level robots/ folder) are copied into the built package as asr/robots_data, and the
shim's header csrc/gz/asr_gz.h next to the shim, where asr.engines.gz_shim reads its cffi
declarations (build_py below). The dashboard, the top-level dashboard/ folder, installs as the
package asr_dashboard (DASHBOARD below).
"""

import importlib.util
import os
import subprocess

from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py

# The installed name of the top-level dashboard/ folder: a name of asr's own, where a top-level
# `dashboard` is a generic one that another distribution could install over (or shadow). Its
# modules import each other relatively and name their child processes by their package's
# __package__, so the folder works under either name; asr.cli imports asr_dashboard (the
# editable install maps it to the folder). Nothing else is installed at the top level: asr,
# asr_dashboard and the module asr_mujoco_autoload (setup.cfg's py_modules: MuJoCo imports an
# entry point's module inside `import mujoco`, and one under asr would import asr each time;
# tests/packaging/test_packaging.py reads the wheel's top_level.txt and RECORD).
DASHBOARD = "asr_dashboard"
PACKAGES = find_packages(include=["asr", "asr.*"]) + [
    DASHBOARD,
    *(f"{DASHBOARD}.{p}" for p in find_packages("dashboard")),
]

GZ_PKGS = [
    "ignition-physics5",
    "ignition-physics5-sdf",
    "ignition-plugin1-loader",
    "sdformat12",
    "ignition-common4-profiler",
]


def _pkg_config(*args):
    return subprocess.run(
        ["pkg-config", *args], check=True, capture_output=True, text=True
    ).stdout.split()


def _gazebo_shim():
    try:
        cflags, libs = _pkg_config("--cflags", *GZ_PKGS), _pkg_config("--libs", *GZ_PKGS)
        libdir = _pkg_config("--variable=libdir", "ignition-physics5-dartsim-plugin")[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return []  # no Gazebo libraries: asr works with MuJoCo only
    plugin = f"{libdir}/ign-physics-5/engine-plugins/libignition-physics5-dartsim-plugin.so.5"
    return [
        Extension(
            "asr._asr_gz",
            ["csrc/gz/asr_gz.cc"],
            language="c++",
            optional=True,
            extra_compile_args=cflags + ["-O2", f'-DASR_GZ_DARTSIM_PLUGIN="{plugin}"'],
            extra_link_args=libs,
        )
    ]


def _mujoco_plugin():
    """asr._asr_mujoco, the MuJoCo plugin library (asr/_build.py, loaded by path: importing the
    asr package needs the extension this build makes)."""
    spec = importlib.util.spec_from_file_location("_asr_build", os.path.join("asr", "_build.py"))
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    ext = build.mujoco_plugin_extension()
    if ext is None:
        print("mujoco is not installed: asr's MuJoCo plugin library is not built")
    return [ext] if ext else []


class BuildPyWithRobots(build_py):
    """build_py that also copies robots/ (every robot, every file: robot.toml, MJCF, SDF, meshes,
    textures, READMEs) to asr/robots_data in the build folder, so that wheels and `pip install .`
    ship them as package data (asr.robots.robot.robots_dir finds them with importlib.resources). The
    folder stays at the top of the source tree; editable installs read it there."""

    def run(self):
        super().run()
        if self.editable_mode:
            return
        target = os.path.join(self.build_lib, "asr", "robots_data")
        for folder, subfolders, names in os.walk("robots"):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
            for name in sorted(names):
                source = os.path.join(folder, name)
                out = os.path.join(target, os.path.relpath(source, "robots"))
                self.mkpath(os.path.dirname(out))
                self.copy_file(source, out)
        # the shim's declarations, read by asr.engines.gz_shim when it loads it (one definition)
        self.copy_file(os.path.join("csrc", "gz", "asr_gz.h"), os.path.join(self.build_lib, "asr"))


setup(
    packages=PACKAGES,
    package_dir={DASHBOARD: "dashboard"},
    cffi_modules=["asr/_build.py:ffibuilder"],
    ext_modules=_mujoco_plugin() + _gazebo_shim(),
    cmdclass={"build_py": BuildPyWithRobots},
)
