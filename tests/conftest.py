"""Shared test helpers. In CI (CI set) a missing dependency is a failure, never a skip."""

import importlib
import os

import pytest

IN_CI = bool(os.environ.get("CI"))

# A developer's opt-in to asr's MuJoCo plugin at `import mujoco` (asr_mujoco_autoload.py) would
# register the plugin in every child interpreter the tests start, where the loading tests need a
# process without it: the tests decide for themselves (tests/mujoco/test_mujoco_plugin_autoload.py
# sets it where it is the subject).
os.environ.pop("ASR_MUJOCO_AUTOLOAD", None)


def require(module_name):
    """Import an optional test dependency; fail in CI, skip elsewhere, when it is missing."""
    try:
        return importlib.import_module(module_name)
    except ImportError:
        if IN_CI:
            pytest.fail(f"required test dependency {module_name!r} is missing in CI")
        pytest.skip(f"{module_name} not installed (a failure when CI is set)")


def need_gazebo():
    """asr's Gazebo engine (the shim asr/_asr_gz.so and Gazebo's libraries, make gazebo), loaded;
    fail in CI, skip elsewhere, when it is missing."""
    from asr.engines import gz_shim as gazebo

    try:
        return gazebo.load_shim()
    except ImportError as exc:
        if IN_CI:
            pytest.fail(f"the Gazebo engine is missing in CI: {exc}")
        pytest.skip(f"{exc} (a failure when CI is set)")


def require_ros1(module="rospy"):
    """A ROS 1 Python module from the system's packages (asr.ros.environment.ros1); fail in
    CI, skip elsewhere, when ROS 1 is not installed (`make ros` installs it)."""
    from asr.ros.environment import ros1

    try:
        return ros1(module)
    except ImportError as exc:
        if IN_CI:
            pytest.fail(f"ROS 1 is missing in CI: {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def ros_master():
    """A real roscore on a free loopback port for the test session: yields its ROS_MASTER_URI
    (also set in os.environ while the session runs) and stops it after. One for the whole
    session because rospy.init_node binds this process to one master for good (see
    rospy_node)."""
    import shutil

    from asr.ros.master import roscore

    require_ros1()
    if shutil.which("roscore", path="/usr/bin:/bin") is None:
        if IN_CI:
            pytest.fail("roscore is missing in CI (make ros)")
        pytest.skip("roscore not installed")
    old = {k: os.environ.get(k) for k in ("ROS_MASTER_URI", "ROS_IP")}
    with roscore() as uri:
        os.environ["ROS_MASTER_URI"], os.environ["ROS_IP"] = uri, "127.0.0.1"
        try:
            yield uri
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@pytest.fixture(scope="session")
def rospy_node(ros_master, tmp_path_factory):
    """rospy with this test process initialised as a node on the session's master (rospy
    allows one init_node per process, for one master: every test module shares this one)."""
    rospy = require_ros1("rospy")
    os.environ.setdefault("ROS_HOME", str(tmp_path_factory.mktemp("ros_home")))
    if not rospy.core.is_initialized():
        rospy.init_node("asr_tests", anonymous=True, disable_signals=True)
    return rospy


# ---------------------------------------------------------------- parallel runs (pytest-xdist)

# The modules that judge real-time behaviour (rates, latencies, pacing, a reader against
# flooders, a recorder keeping up at 1 kHz): under `make test` (pytest -n 2 --dist loadgroup) they
# share one xdist group, so no two of them ever run at once. Each judges a rate against a rate
# measured in the same run, so the other worker's tests beside them are load like any other.
REALTIME = (
    "tests/dashboard/test_attack_dashboard.py",
    "tests/dashboard/test_dashboard_export_samples.py",
    "tests/dashboard/test_dashboard_first_view.py",
    "tests/dashboard/test_dashboard_load.py",
    "tests/dashboard/test_dashboard_pacing.py",
    "tests/ros/test_ros2_node_realtime.py",
    "tests/ros/test_ros_node.py",
    "tests/ros/test_ros_node_toolbox.py",
)


def xdist_group_of(nodeid):
    """The group a test runs in under `pytest -n N --dist loadgroup`: "realtime" for the modules
    of REALTIME, the group of an xdist_group mark where xdist names one in the id (`...@name`),
    else its module's path, so that a module runs on one worker and builds its module fixtures
    once (xdist's per-test spread would build a module's server, node or training on each)."""
    if "@" in nodeid:
        return nodeid.rsplit("@", 1)[1]
    module = nodeid.split("::", 1)[0]
    return "realtime" if module in REALTIME else module


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup schedules the groups of xdist_group_of, each on one worker. xdist's own
    loadgroup reads xdist_group marks through a test id it rewrites, which pytest 9.2 no longer
    takes (Item._nodeid): its groups would be single tests."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return xdist_group_of(nodeid)

    return ModuleGroups(config, log)
