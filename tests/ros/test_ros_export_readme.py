"""The README of an exported ROS 1 (catkin) package gives commands that work with what it says to
install (Debian 12's ROS 1): its commands are run as written, in one shell, from a fresh folder
holding the package, against the session's roscore; the node they start registers under the
README's namespace and name and publishes its command topics."""

import subprocess
import time
from pathlib import Path

import pytest

from asr.ros.environment import tool_env
from asr.ros.export import export_policy
from tests.conftest import IN_CI, require_ros1
from tests.support.readme_commands import readme_commands
from tests.support.ros_export import stop, workspace

WAIT_S = 300.0  # catkin_make on a busy 2-core host, then roslaunch


@pytest.mark.ros
def test_readme_commands_run(ros_master, tmp_path):
    import shutil

    rosgraph = require_ros1("rosgraph")
    if shutil.which("catkin_make", path="/usr/bin:/bin") is None:
        missing = "catkin_make is missing (Debian's catkin: make ros)"
        pytest.fail(f"{missing} in CI") if IN_CI else pytest.skip(missing)
    here = tmp_path / "fresh"
    package = Path(export_policy(workspace(), "qbmove_arm_2dof", here))
    sections = readme_commands((package / "README.md").read_text())
    commands = sections.pop("## Build and run")
    assert not any(sections.values()), sections  # every command is in that section
    assert [c.split()[0] for c in commands] == ["mkdir", "cd", "."], commands
    assert "roslaunch" in commands[-1]
    log = tmp_path / "readme.log"
    env = dict(tool_env(ros_master), ROS_HOME=str(tmp_path))
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["bash", "-e", "-c", "\n".join(commands)],
            cwd=here,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    master = rosgraph.Master("/asr_readme_test")
    topic = "/robot1/joint1/equilibrium_position"
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            pubs = dict(master.getSystemState()[0])
            if "/robot1/policy_1" in pubs.get(topic, []):
                break
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        stop(proc)
    assert (here / "ws" / "devel" / "setup.sh").is_file()
