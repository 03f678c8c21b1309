"""The suite in parallel (`make test`: pytest -n 2 --dist loadgroup, pytest-xdist): a module runs
on one worker, the real-time modules share one group (tests/conftest.py), and the workers of one
run talk ROS 2 in DDS domains of their own (tests/support/ros2.py)."""

import re
import subprocess
import sys

import pytest

from tests.conftest import REALTIME, require, xdist_group_of
from tests.support.paths import ROOT
from tests.support.ros2 import domain_id


def test_every_real_time_module_exists():
    assert [p for p in REALTIME if not (ROOT / p).is_file()] == []


def test_a_module_is_its_own_group_and_the_real_time_ones_share_one():
    assert xdist_group_of("tests/core/test_sim.py::test_a[1-x]") == "tests/core/test_sim.py"
    assert xdist_group_of("tests/core/test_sim.py::TestA::test_b") == "tests/core/test_sim.py"
    assert xdist_group_of("tests/core/test_sim.py::test_c@ports") == "ports"
    assert {xdist_group_of(f"{p}::test_x") for p in REALTIME} == {"realtime"}


def test_the_workers_of_one_run_have_distinct_dds_domains():
    for run in ("0123abcd", "ffffffffffff", "x"):
        ids = [
            domain_id({"PYTEST_XDIST_WORKER": f"gw{n}", "PYTEST_XDIST_TESTRUNUID": run})
            for n in range(16)
        ]
        assert len(set(ids)) == 16 and all(1 <= i <= 100 for i in ids), ids
    assert domain_id({}, pid=4321) == 22  # a plain run: its process id's
    assert 1 <= domain_id({"PYTEST_XDIST_WORKER": "master"}, pid=99) <= 100


@pytest.mark.slow
def test_a_parallel_run_keeps_each_module_on_one_worker(tmp_path):
    """pytest -n 2 --dist loadgroup over three real modules: every test of a module ran on one
    worker (xdist's plain per-test spread would split them), and all passed."""
    require("xdist")
    modules = [
        "tests/core/test_state_fields.py",
        "tests/ros/test_ros_node_throttle.py",
        "tests/core/test_clear_errors.py",
    ]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "t"),
            *modules,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ran = re.findall(r"\[(gw\d+)\] \[\s*\d+%\] PASSED (tests/\S+?\.py)::", proc.stdout)
    workers = {}
    for worker, module in ran:
        workers.setdefault(module, set()).add(worker)
    assert set(workers) == set(modules), proc.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), workers
