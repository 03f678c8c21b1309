"""The `asr dashboard` command line (asr/cli.py) starts for every robot: without --variant in the
robot's own default variant, without --robot with the default robot or, when the robots folder
lacks it, the first robot that loads; a folder without a loadable robot exits with code 2 and a
clear message, no traceback."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import require

require("fastapi")
require("uvicorn")
from asr.cli import DEFAULT_ROBOT, build_parser, dashboard_settings, main  # noqa: E402
from asr.robots.robot import robot_names, robots_dir, tomllib  # noqa: E402
from tests.support.dashboard_server import ROOT, get_json, server_process  # noqa: E402

ROBOTS = robots_dir()


@pytest.fixture(autouse=True)
def no_dashboard_env(monkeypatch):
    for name in ("ASR_DASHBOARD_ROBOT", "ASR_DASHBOARD_VARIANT"):
        monkeypatch.delenv(name, raising=False)


def settings_of(*argv):
    return dashboard_settings(build_parser().parse_args(["dashboard", *argv]))


def default_variant(name, folder=ROBOTS):
    with open(os.path.join(folder, name, "robot.toml"), "rb") as f:
        doc = tomllib.load(f)
    return doc.get("default_variant", next(iter(doc["variants"])))


def robots_folder(tmp_path, monkeypatch, *names, broken=()):
    """ASR_ROBOTS = a folder with copies of the named robots and broken robot folders."""
    folder = tmp_path / "robots"
    folder.mkdir()
    for name in names:
        shutil.copytree(os.path.join(ROBOTS, name), folder / name)
    for name in broken:
        (folder / name).mkdir()
        (folder / name / "robot.toml").write_text("variants = 1\n")
    monkeypatch.setenv("ASR_ROBOTS", str(folder))
    return folder


@pytest.mark.parametrize("name", robot_names())
def test_every_robot_starts_in_its_default_variant(name):
    settings, lines = settings_of("--robot", name)
    assert (settings.robot, settings.variant) == (name, default_variant(name))
    assert lines == [f"asr dashboard: http://127.0.0.1:8000/ ({name}, {settings.variant})"]


def test_defaults_and_variants(monkeypatch):
    settings, lines = settings_of()
    assert (settings.robot, settings.variant) == (DEFAULT_ROBOT, default_variant(DEFAULT_ROBOT))
    assert len(lines) == 1
    assert settings_of("--robot", "pendulum_1dof", "--variant", "sea")[0].variant == "sea"
    monkeypatch.setenv("ASR_DASHBOARD_ROBOT", "rrbot_sea")
    monkeypatch.setenv("ASR_DASHBOARD_VARIANT", "k500")
    assert settings_of()[0].variant == "k500"  # the environment's robot and variant
    # --robot without --variant: that robot's default, not the environment's variant
    assert settings_of("--robot", "pendulum_1dof")[0].variant == "qbmove_advanced"


def test_bad_variant_exits_2(capsys):
    assert main(["dashboard", "--robot", "pendulum_1dof", "--variant", "vertical"]) == 2
    err = capsys.readouterr().err
    assert "unknown variant 'vertical'; valid: sea, awas2, bavs, qbmove_advanced" in err


def test_without_the_default_robot_the_first_that_loads(tmp_path, monkeypatch):
    robots_folder(tmp_path, monkeypatch, "rrbot_sea", "pendulum_1dof", broken=["aaa_broken"])
    settings, lines = settings_of()
    assert (settings.robot, settings.variant) == ("pendulum_1dof", "qbmove_advanced")
    assert lines[-1] == (
        f"asr dashboard: robot {DEFAULT_ROBOT!r} is not in the robots folder; "
        "starting with 'pendulum_1dof', the first robot that loads"
    )
    with pytest.raises(
        FileNotFoundError,
        match="no folder 'qbmove_3r'.*available: aaa_broken, pendulum_1dof, rrbot_sea",
    ):
        settings_of("--robot", "qbmove_3r")  # a robot asked for by name is not replaced


def test_a_broken_default_robot_is_skipped(tmp_path, monkeypatch):
    folder = robots_folder(tmp_path, monkeypatch, "rrbot_sea", DEFAULT_ROBOT)
    (folder / DEFAULT_ROBOT / "robot.toml").write_text("variants = 1\n")
    settings, lines = settings_of()
    assert (settings.robot, settings.variant) == ("rrbot_sea", "k188")
    assert f"robot {DEFAULT_ROBOT!r} does not load; starting with 'rrbot_sea'" in lines[-1]


@pytest.mark.parametrize(
    "names, broken, words",
    [
        ((), (), "no robot in the robots folder"),
        (
            (),
            ("aaa", "bbb"),
            "loads: robot 'aaa' (robot.toml): variants: expected a table, got 1; robot 'bbb'",
        ),
    ],
)
def test_no_loadable_robot_exits_2(tmp_path, monkeypatch, capsys, names, broken, words):
    folder = robots_folder(tmp_path, monkeypatch, *names, broken=broken)
    assert main(["dashboard"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"asr dashboard: no robot in the robots folder {folder}") and words in err
    assert main(["dashboard", "--robot", "pendulum_1dof"]) == 2
    assert "robot 'pendulum_1dof': no folder" in capsys.readouterr().err


@pytest.mark.slow
def test_empty_robots_folder_process_exits_2_without_traceback(tmp_path):
    env = dict(os.environ, ASR_ROBOTS=str(tmp_path))
    env.pop("ASR_DASHBOARD_ROBOT", None)
    done = subprocess.run(
        [sys.executable, "-m", "asr.cli", "dashboard", "--port", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "no robot in the robots folder" in done.stderr


@pytest.mark.slow
def test_dashboard_process_serves_the_robot_in_its_default_variant():
    env = {"ASR_DASHBOARD_VARIANT": "vertical"}  # ignored: --robot is given
    with server_process("--robot", "pendulum_1dof", env=env) as (url, proc):
        state = get_json(url + "/api/state")
        assert (state["robot"], state["variant"]) == ("pendulum_1dof", "qbmove_advanced")
        assert proc.poll() is None


@pytest.mark.slow
def test_server_settings_default_to_the_robots_own_variant(monkeypatch):
    """The server without the command line (settings from ASR_DASHBOARD_* only)."""
    require("httpx")
    from fastapi.testclient import TestClient

    from asr_dashboard.app import create_app
    from asr_dashboard.settings import settings_from_env

    monkeypatch.setenv("ASR_DASHBOARD_ROBOT", "pendulum_1dof")
    settings = settings_from_env()
    assert settings.variant is None
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        state = c.get("/api/state").json()
    assert (state["robot"], state["variant"]) == ("pendulum_1dof", "qbmove_advanced")


@pytest.mark.parametrize(
    "args, words",
    [
        (["--rate", "0"], ["rate", "0.0", "valid range (0, 1000]"]),
        (["--rate", "nan"], ["rate", "nan"]),
        (["--namespace", "9bad"], ["namespace", "'9bad'"]),
        (["--engine", "bullet"], ["engine", "'bullet'", "mujoco, gazebo"]),
        (["--name", "1node"], ["name", "'1node'"]),
        (["--duration", "-1"], ["duration", "-1", "valid range"]),
        (["--robot", "no_such_robot"], ["no_such_robot"]),
    ],
)
def test_ros2_bad_arguments_exit_2_with_the_reason(args, words, capsys):
    """`asr ros2` checks its arguments before ROS 2 is imported: no rclpy needed."""
    assert main(["ros2", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("asr ros2: ") and all(w in err for w in words), err


def test_ros2_without_rclpy_exits_1_naming_the_install(capsys, monkeypatch):
    """rclpy made unimportable (None in sys.modules), as it is in .venv, where ROS 1 lives."""
    monkeypatch.setitem(sys.modules, "rclpy", None)
    assert main(["ros2", "--robot", "pendulum_1dof", "--duration", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("asr ros2: ") and "pip install asr-sim[ros2]" in err, err


def test_ros_engine_argument_is_checked(capsys):
    """`asr ros --engine`: anything but mujoco / gazebo exits 2 before any ROS contact."""
    assert main(["ros", "--engine", "bullet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("asr ros: ") and "engine: got 'bullet'" in err, err
    args = build_parser().parse_args(["ros2", "--engine", "gazebo", "--lockstep", "--no-clock"])
    assert (args.engine, args.lockstep, args.no_clock, args.name) == ("gazebo", True, True, "asr")


@pytest.mark.ros2
@pytest.mark.slow
def test_ros2_command_runs_for_its_duration():
    """`asr ros2 --duration 2` under ROS 2 Jazzy's Python starts, runs and exits 0."""
    from tests.support.ros2 import asr_env, ros2_python

    r = subprocess.run(
        [ros2_python(), "-m", "asr.cli", "ros2", "--robot", "pendulum_1dof", "--duration", "2"],
        cwd=ROOT,
        env=asr_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
