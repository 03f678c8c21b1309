"""Where ROS 1 lives: Debian's Python packages (rospy, rosbag, genpy, message packages) are
installed for the system interpreter under /usr/lib/python3/dist-packages. They import into
asr's virtual environment (the same Python 3.11) when that folder is *appended* to sys.path;
prepended, it would shadow the environment's NumPy with Debian's older one. Debian's ROS scripts
(roscore, rostopic, rosbag) start with `#!/usr/bin/env python3`, so they are run with /usr/bin
first on PATH (the system interpreter, not the venv's)."""

import importlib
import os
import sys

DIST_PACKAGES = "/usr/lib/python3/dist-packages"
# what asr.ros uses of ROS 1 (the node's reset / pause services: std_srvs; catkin_make builds the
# exported packages); `make ros` installs this list
DEBIAN_PACKAGES = (
    "ros-core",
    "python3-rospy",
    "python3-rosbag",
    "python3-rostopic",
    "python3-std-msgs",
    "python3-sensor-msgs",
    "python3-std-srvs",
    "python3-genpy",
    "liburdfdom-tools",
    "catkin",
)
INSTALL_HINT = "apt-get install " + " ".join(DEBIAN_PACKAGES)


def ros1(module="rospy"):
    """Import a ROS 1 Python module (rospy, rosbag, genpy, std_msgs.msg, ...) from the system's
    packages; ImportError naming the Debian packages when ROS 1 is not installed."""
    if os.path.isdir(DIST_PACKAGES) and DIST_PACKAGES not in sys.path:
        sys.path.append(DIST_PACKAGES)
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"ROS 1 module {module!r} not found ({exc}); install ROS 1 from the "
            f"operating system: {INSTALL_HINT}"
        ) from None


def tool_env(master_uri=None, base=None):
    """Environment for Debian's ROS command-line tools: /usr/bin first on PATH (their
    interpreter), ROS_MASTER_URI (when given) and ROS_IP / ROS_HOSTNAME on loopback unless set."""
    env = dict(os.environ if base is None else base)
    env["PATH"] = "/usr/bin:/bin:" + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    if master_uri is not None:
        env["ROS_MASTER_URI"] = master_uri
    env.setdefault("ROS_IP", "127.0.0.1")
    return env
