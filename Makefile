# One command each, on a fresh machine: `make run`, `make test`, `make bench`.
# Everything lives in a virtual environment (.venv) created and filled on first use.

PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.deps-installed
CORE   := build/.core-built
CSRC   := $(wildcard csrc/*.c csrc/*.h)

.PHONY: all build run test test-c bench clean

all: build

$(VPY):
	$(PYTHON) -m venv $(VENV)

# Dependencies, installed once (and again when the package metadata changes).
$(STAMP): $(VPY) pyproject.toml setup.cfg setup.py
	$(VPY) -m pip install -q --upgrade pip setuptools wheel "cffi>=1.17"
	$(VPY) -m pip install -q --no-build-isolation -e ".[test,demo]"
	touch $@
	@mkdir -p build && touch $(CORE)

# The C core as the extension asr._core, rebuilt when a C file or the build script changes.
$(CORE): $(STAMP) $(CSRC) asr/_build.py
	$(VPY) setup.py -q build_ext --inplace
	@mkdir -p build && touch $@

build: $(CORE)

# Main job: the seed-000 experiments on their robots (MuJoCo links + asr actuators).
run: build
	$(VPY) -m asr.demo --out demo_output

test: build
	$(VPY) -m pytest -q

bench: build
	$(VPY) benchmarks/bench_core.py
	$(VPY) benchmarks/bench_coupled.py
	$(VPY) benchmarks/bench_learning.py

clean:
	rm -rf build asr/_core*.so asr/_core.c asr/*.o *.egg-info demo_output
