# One command each, on a fresh machine: `make run`, `make test`, `make bench`.
# Everything lives in a virtual environment (.venv) created and filled on first use.

PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.deps-installed
# torch for asr-sim[rl], installed first so that the extra's `torch>=2.3` is already met: the CPU
# build (a plain `pip install torch` on Linux pulls the CUDA libraries, several GB, GPU or not).
TORCH  ?= torch==2.13.0
CORE   := build/.core-built
# The C core's parts, one folder each under csrc/ (csrc/asr.h); csrc/gz is the Gazebo shim.
CPARTS := core engine interaction cpr
CSRC   := $(wildcard csrc/*.h $(foreach p,$(CPARTS),csrc/$(p)/*.c csrc/$(p)/*.h))
# csrc/mujoco: the MuJoCo plugin library asr/_asr_mujoco*.so, built with the extension
MJSRC  := $(wildcard csrc/mujoco/*.c csrc/mujoco/*.h)

.PHONY: all build gz-shim gazebo browser threejs valgrind ros ros2 run experiments lint test test-fast ctest bench clean

all: build

$(VPY):
	$(PYTHON) -m venv $(VENV)

# Dependencies, installed once (and again when the package metadata changes). The build that
# follows ($(CORE)) compiles the extension and the MuJoCo plugin library in place: the editable
# install cannot build the plugin the first time, before it has installed mujoco's headers.
$(STAMP): $(VPY) pyproject.toml setup.cfg setup.py
	$(VPY) -m pip install -q --upgrade pip setuptools wheel "cffi>=1.17"
	$(VPY) -m pip install -q $(TORCH)
	$(VPY) -m pip install -q --no-build-isolation -e ".[all,test]"
	touch $@

# The C core as the extension asr._core, rebuilt when a C file or the build script changes.
# The old libraries are unlinked first: a running Python keeps its mapped copy instead of
# seeing the file rewritten under it.
$(CORE): $(STAMP) $(CSRC) $(MJSRC) asr/_build.py setup.py
	rm -f asr/_core*.so asr/_asr_mujoco*.so
	$(VPY) setup.py -q build_ext --inplace
	@mkdir -p build && touch $@

build: $(CORE) gz-shim

# The Gazebo engine shim asr/_asr_gz.so (csrc/gz, C++ over gz-physics 5 with DART and SDFormat 12;
# asr.Sim(..., engine="gazebo")): built when pkg-config finds Gazebo's libraries (make gazebo).
GZ_PKGS := ignition-physics5 ignition-physics5-sdf ignition-plugin1-loader sdformat12 \
           ignition-common4-profiler
GZ_SO   := asr/_asr_gz.so
gz-shim:
	@if ! pkg-config --exists $(GZ_PKGS) 2>/dev/null; then \
	  echo "Gazebo libraries missing: $(GZ_SO) not built (make gazebo installs them)"; \
	elif [ ! -f $(GZ_SO) ] || [ -n "$$(find csrc/gz -newer $(GZ_SO))" ]; then \
	  echo "g++ csrc/gz/asr_gz.cc -> $(GZ_SO)"; \
	  g++ -std=c++17 -O2 -fPIC -shared -Wall -Wextra \
	    -DASR_GZ_DARTSIM_PLUGIN="\"$$(pkg-config --variable=libdir ignition-physics5-dartsim-plugin)/ign-physics-5/engine-plugins/libignition-physics5-dartsim-plugin.so.5\"" \
	    $$(pkg-config --cflags $(GZ_PKGS)) csrc/gz/asr_gz.cc -o $(GZ_SO) $$(pkg-config --libs $(GZ_PKGS)); \
	fi

# Main job: the live dashboard on http://127.0.0.1:8000 with the default robot simulating
# (qbmove_arm_2dof, vertical). HOST / PORT override (make run HOST=... PORT=...); given neither,
# asr dashboard takes $ASR_DASHBOARD_HOST / _PORT, else its defaults, as every other setting
# (dashboard/PROTOCOL.md). The papers' experiments: make experiments.
RUN_ARGS = $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))
run: build threejs
	$(VPY) -m asr.cli dashboard $(RUN_ARGS)

experiments: build
	$(VPY) -m asr.demo --out demo_output

# Installs Debian package $(2) when command $(1) is missing and we may use apt-get.
define apt_install
	@command -v $(1) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq $(2); \
	  else echo "$(1) missing: run 'sudo apt-get install $(2)'"; fi; }
endef

# The dashboard's end-to-end tests drive Debian's Chromium (Playwright's own browser download
# does not work offline).
browser:
	$(call apt_install,chromium,chromium)

# The dashboard's 3-D view draws with three.js, from Debian's libjs-three (served by the
# dashboard from /usr/share/javascript/three; npm's registry is not reachable everywhere).
THREEJS := /usr/share/javascript/three/three.module.js
threejs:
	@test -f $(THREEJS) || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq libjs-three; \
	  else echo "three.js missing: run 'sudo apt-get install libjs-three'"; fi; }

# tests/core/test_valgrind.py runs a Sim rollout and a CPR solve of the built extension under Debian's
# valgrind.
valgrind:
	$(call apt_install,valgrind,valgrind)

# ROS 1 from Debian for asr.ros and its tests (roscore, rospy, rosbag, rostopic, message
# packages, genpy, check_urdf, catkin_make): asr/ros/environment.py's DEBIAN_PACKAGES, read here
# so that the list lives in one place; installed when one of them is missing.
ROS_DEBS := $(shell $(PYTHON) -c "import ast; t = ast.parse(open('asr/ros/environment.py').read()); \
              print(*[ast.literal_eval(n.value) for n in t.body if isinstance(n, ast.Assign) \
              and n.targets[0].id == 'DEBIAN_PACKAGES'][0])")
ros:
	@dpkg -s $(ROS_DEBS) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq $(ROS_DEBS); \
	  else echo "ROS 1 missing: run 'sudo apt-get install $(ROS_DEBS)'"; fi; }

# ROS 2 Jazzy from PyPI (the extra asr-sim[ros2] of setup.cfg: rclpy, Fast DDS, message packages)
# in an environment of its own, .venv-ros2: ROS 2's Python packages (std_msgs, sensor_msgs, ...)
# have the names of Debian's ROS 1 ones, so they cannot share .venv with asr.ros's ROS 1. It holds
# no asr (a robot's Python: exported packages and the tests' ROS 2 peers run there); NumPy and
# ONNX Runtime pinned to .venv's versions so that policies compute the same numbers. The tests run
# asr's ROS 2 node with this Python and asr's tree and .venv on PYTHONPATH (tests/support/ros2.py).
ROS2_VENV  := .venv-ros2
ROS2_STAMP := $(ROS2_VENV)/.deps-installed
ROS2_REQS   = $$($(VPY) -c "import configparser as c; p = c.ConfigParser(); p.read('setup.cfg'); \
              print(p['options.extras_require']['ros2'])" | grep -v '^\s*\#')
$(ROS2_STAMP): $(STAMP) setup.cfg
	$(PYTHON) -m venv $(ROS2_VENV)
	$(ROS2_VENV)/bin/python -m pip install -q $(ROS2_REQS) \
	  "numpy==$$($(VPY) -c 'import numpy; print(numpy.__version__)')" \
	  "onnxruntime==$$($(VPY) -c 'import onnxruntime; print(onnxruntime.__version__)')"
	touch $@
# simulation_interfaces, control_msgs and tf2_msgs are not on PyPI: colcon builds their published
# definitions (asr/ros/interfaces), with asr's own asr_msgs (generated from csrc/core/asr_fields.h),
# into build/ros2-interfaces/install with PyPI's Jazzy ament and rosidl wheels, which the script pip-installs into .venv-ros2 (about 4 minutes once; nothing
# when up to date). tests/support/ros2.py puts the install on the ROS 2 processes' paths.
ros2: $(ROS2_STAMP)
	$(VPY) asr/ros/interfaces/build.py --venv $(ROS2_VENV)

# Gazebo's libraries from Debian (gz-physics 5 with its DART plugin, SDFormat 12) for
# asr.Sim(..., engine="gazebo") and tests/engines/test_gazebo.py: installed when one is missing.
GZ_DEBS := libignition-physics-dev libignition-physics5-dartsim-plugin5 libsdformat-dev \
           libignition-math-dev libignition-plugin-dev
gazebo:
	@dpkg -s $(GZ_DEBS) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq $(GZ_DEBS); \
	  else echo "Gazebo libraries missing: run 'sudo apt-get install $(GZ_DEBS)'"; fi; }

# ruff (lint and format check) and mypy over the Python tree, their settings in pyproject.toml
# (.venv, build/ and the generated asr/_core.c left out). `make test` runs it before pytest.
# lint-imports checks the layering contracts of asr's rooms (pyproject.toml [tool.importlinter]).
# clang-format (pinned in setup.cfg, settings in .clang-format) checks the C of csrc/ and tests/c.
CFORMAT := $(wildcard csrc/*.h csrc/*/*.c csrc/*/*.h csrc/*/*.cc tests/c/*.c tests/c/*.h)
lint: $(STAMP)
	$(VPY) -m ruff check .
	$(VPY) -m ruff format --check .
	$(VPY) -m mypy
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/clang-format --dry-run --Werror $(CFORMAT)

# `make test` runs the tests on PYTEST_WORKERS processes (pytest-xdist, pinned in setup.cfg's
# test extra) with --dist loadgroup: a test module on one worker, the modules that judge real-time
# behaviour in one group (tests/conftest.py's REALTIME), each worker in a DDS domain of its own.
PYTEST_WORKERS ?= 2
test: lint gazebo build browser threejs valgrind ros ros2
	$(VPY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup

# The loop while working, under a minute on 2 cores: every test but those marked (setup.cfg)
# slow or needing ROS, Gazebo, Chromium, a sanitizer build or a notebook kernel, on the same
# workers as `make test` (1651 tests: 55.9 s on two workers, 79.5 s on one, the 2-core machine at
# load 3.5 from other work). `make test` (and CI) runs them all.
FAST := not slow and not ros and not ros2 and not gazebo and not browser and not sanitizer and not notebooks
test-fast: build
	$(VPY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup -m "$(FAST)"

# The C test programs (tests/c) built with csrc/ under AddressSanitizer + UndefinedBehaviorSanitizer
# and run, without Python: the flags and settings of tests/core/test_c_core.py's sanitizer build.
CTEST_CC  ?= gcc
CTESTS    := test_core_models test_core_batch test_core_lanes test_core_threads test_core_fuzz \
             test_engine_sea test_engine_faults test_engine_modes test_rod test_cpr_till \
             test_cpr_robots test_linalg test_lanes test_lanes_avx2
CSTRICT   := -std=c11 -Wall -Wextra -Wpedantic -Wmissing-prototypes -Werror -ffp-contract=off \
             -Wno-psabi
CSANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -g -O1
ctest:
	@mkdir -p build/ctest
	@set -e; for p in $(CTESTS); do \
	  echo "== $$p"; \
	  $(CTEST_CC) $(CSTRICT) $(CSANITIZE) -I csrc $(sort $(filter %.c,$(CSRC))) tests/c/$$p.c \
	    -o build/ctest/$$p -lm -lpthread; \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    build/ctest/$$p >build/ctest/$$p.log 2>&1 || { tail -n 40 build/ctest/$$p.log; exit 1; }; \
	  tail -n 1 build/ctest/$$p.log; \
	done

bench: build
	$(VPY) benchmarks/bench_core.py
	$(VPY) benchmarks/bench_coupled.py
	$(VPY) benchmarks/bench_learning.py
	$(VPY) benchmarks/bench_cpr.py
	$(VPY) benchmarks/bench_rl.py
	$(VPY) benchmarks/bench_ros.py
	$(VPY) benchmarks/bench_mujoco_plugin.py
	$(VPY) benchmarks/bench_warp.py

# the fair stiffness comparison (benchmarks/bench_stiffness.py): longer than 30 minutes on two
# cores (CEM restarts x seeds per arm, then PPO per arm), so not in `make bench`;
# `$(VPY) benchmarks/bench_stiffness.py --quick` runs it at a small budget in a few minutes
.PHONY: bench-stiffness
bench-stiffness: build
	$(VPY) benchmarks/bench_stiffness.py

clean:
	rm -rf build $(ROS2_VENV) asr/_core*.so asr/_asr_mujoco*.so asr/_core.c asr/*.o *.egg-info demo_output
