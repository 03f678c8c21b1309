"""Robot descriptions stay inside their folders (asr/robots/robot.py): servers load robots by name
only
(allow_path=False), a variant's MJCF file must resolve inside the robot's folder, and errors
about robots looked up by name never show the server's robots folder."""

import os
import shutil

import pytest

import asr
from asr.robots.robot import load_robot, robot_names, robots_dir
from tests.support.paths import TESTS  # noqa: E402

HERE = str(TESTS)
PENDULUM = os.path.join(HERE, "data", "robots", "pendulum")


def test_names_and_paths():
    assert {"pendulum_1dof", "qbmove_arm_2dof"} <= set(robot_names())
    assert load_robot("pendulum_1dof", allow_path=False).name == "pendulum_1dof"
    assert load_robot(PENDULUM).folder == PENDULUM  # the Python API takes the user's paths
    for path in (
        PENDULUM,
        "../tests/robots/pendulum",
        "qbmove_arm_2dof/../pendulum_1dof",
        "..",
        ".",
    ):
        with pytest.raises(FileNotFoundError, match="expected a robot name, not a path"):
            load_robot(path, allow_path=False)
    with pytest.raises(FileNotFoundError, match="available: .*pendulum_1dof"):
        load_robot("no_such_robot")
    with pytest.raises(TypeError, match="expected a name or a folder path"):
        load_robot(3)


@pytest.mark.parametrize(
    "mjcf", ["../outside.xml", "/etc/hostname", "sub/../../outside.xml", "link.xml"]
)
def test_the_mjcf_file_must_lie_in_the_robot_folder(tmp_path, mjcf):
    folder = tmp_path / "robot"
    shutil.copytree(PENDULUM, folder)
    shutil.copy(folder / "pendulum.xml", tmp_path / "outside.xml")
    os.symlink(tmp_path / "outside.xml", folder / "link.xml")  # a link out of the folder
    toml = (folder / "robot.toml").read_text()
    (folder / "robot.toml").write_text(toml.replace('mjcf = "pendulum.xml"', f'mjcf = "{mjcf}"'))
    with pytest.raises(ValueError, match="outside the robot's folder"):
        load_robot(str(folder))
    with pytest.raises(ValueError, match="outside the robot's folder"):
        asr.Sim(str(folder), 1)


def test_errors_by_name_show_no_server_path():
    messages = []
    for call in (
        lambda: load_robot("qbmove_arm_2dof", "upside_down"),
        lambda: load_robot("nope"),
        lambda: load_robot("../robots", allow_path=False),
    ):
        with pytest.raises((ValueError, FileNotFoundError)) as err:
            call()
        messages.append(str(err.value))
    assert "robot 'qbmove_arm_2dof'" in messages[0] and "unknown variant" in messages[0]
    for text in messages:
        assert robots_dir() not in text and os.path.dirname(HERE) not in text, text
