"""The ament_python package asr_ros2 of asr's own ROS 2 node (`asr ros2-package DIR`), so that
`asr ros2` starts as ROS 2 users start nodes:

    ros2 run asr_ros2 asr_node --robot qbmove_arm_2dof --namespace robot1
    ros2 launch asr_ros2 asr_node.launch.py robot:=qbmove_arm_2dof namespace:=robot1

Its files are generated from `asr ros2`'s argparse parser (asr.cli.ros2_parser), the one source
of the options: the launch file declares one launch argument per option (its dest, default and
help) and passes each to the node as --OPTION=VALUE, which node_argv reads back (a flag as
true/false, an empty value as the option's default). The executable asr_node imports asr, which
is installed separately (pip install asr-sim[ros2]); the package holds no copy of it. The
package layout (setup.cfg's lib/<package> scripts, the ament resource marker, atomic writing) is
asr.ros.export's for exported policies."""

import os
import re

from asr.ros._export_ros2_templates import package_xml as export_package_xml
from asr.ros._export_ros2_templates import setup_cfg
from asr.ros.export import write_package

PACKAGE, EXECUTABLE, LAUNCH = "asr_ros2", "asr_node", "asr_node.launch.py"
# the message packages the node publishes and serves (asr.ros.ros2_node and its modules)
MESSAGES = (
    "std_msgs",
    "sensor_msgs",
    "rosgraph_msgs",
    "rcl_interfaces",
    "trajectory_msgs",
    "geometry_msgs",
    "control_msgs",
    "tf2_msgs",
    "simulation_interfaces",
    "asr_msgs",
)


def options(parser):
    """[(dest, option string, flag, default text, help)] of the parser's options but --help:
    flag for a store_true option (default text 'false'); a default of None gives ''."""
    out = []
    for a in parser._actions:
        if not a.option_strings or a.dest == "help":
            continue
        flag = a.nargs == 0
        default = "false" if flag else ("" if a.default is None else str(a.default))
        out.append((a.dest, a.option_strings[-1], flag, default, a.help or ""))
    return out


def node_argv(parser, argv):
    """argv of `ros2 run asr_ros2 asr_node` -> the arguments of `asr ros2`: ROS 2's own
    (--ros-args up to a lone -- or the end) dropped, --FLAG=true -> --FLAG, --FLAG=false
    dropped, --OPTION= (empty: the launch argument's default '') dropped; the rest as given, so
    a bad option still gets argparse's message and exit status 2."""
    flags = {o: f for _, o, f, _, _ in options(parser)}
    out, ros = [], False
    for arg in argv:
        if arg == "--ros-args":
            ros = True
        elif ros:
            ros = arg != "--"
        elif arg.startswith("--") and "=" in arg and arg.split("=", 1)[0] in flags:
            opt, value = arg.split("=", 1)
            if flags[opt] and value.lower() in ("true", "1"):
                out.append(opt)
            elif not (flags[opt] and value.lower() in ("false", "0")) and value != "":
                out.append(arg)
        else:
            out.append(arg)
    return out


def _package_xml():
    """asr.ros.export's package.xml (format 3, ament_python, rclpy, launch, launch_ros) with
    this package's description and every message package of the node as exec_depend."""
    text = export_package_xml(PACKAGE, "", "node")
    text = re.sub(
        r"<description>.*?</description>",
        "<description>asr's ROS 2 node (`asr ros2`) as a ROS 2 package; asr itself is "
        "installed with pip (asr-sim[ros2]).</description>",
        text,
        flags=re.S,
    )
    have = set(re.findall(r"<exec_depend>(\w+)</exec_depend>", text))
    more = "".join(f"  <exec_depend>{m}</exec_depend>\n" for m in MESSAGES if m not in have)
    return text.replace("  <export>", more + "  <export>", 1)


_SETUP_PY = f'''"""The build of {PACKAGE}: colcon build (ament_python), or `pip install .`."""
from setuptools import setup

NAME = "{PACKAGE}"

setup(
    name=NAME,
    version="0.1.0",
    packages=[NAME],
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + NAME]),
        ("share/" + NAME, ["package.xml", "README.md"]),
        ("share/" + NAME + "/launch", ["launch/{LAUNCH}"]),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="asr",
    maintainer_email="asr@example.com",
    description="asr's ROS 2 node (asr ros2); asr itself is installed with pip",
    license="MIT",
    entry_points={{"console_scripts": ["{EXECUTABLE} = {PACKAGE}.{EXECUTABLE}:main"]}},
)
'''

_NODE = f'''"""{PACKAGE}.{EXECUTABLE}: `ros2 run {PACKAGE} {EXECUTABLE} ARGS` runs `asr ros2 ARGS`
(asr.cli.ros2_node_main; asr is installed separately: pip install asr-sim[ros2])."""
import sys

from asr.cli import ros2_node_main


def main():
    return ros2_node_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
'''


def _launch(parser):
    table = "".join(f"    ({d!r}, {o!r}, {v!r}, {h!r}),\n" for d, o, _, v, h in options(parser))
    names = " ".join(f"{d}:=..." for d, *_ in options(parser)[:2])
    return f'''"""Launches asr's ROS 2 node (`asr ros2`), one launch argument per option:
ros2 launch {PACKAGE} {LAUNCH} {names}
Generated by `asr ros2-package` from asr ros2's options (OPTIONS: launch argument, option,
default, description); a flag takes true or false, an empty value leaves the option at its
default."""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

OPTIONS = [
{table}]


def generate_launch_description():
    declared = [
        DeclareLaunchArgument(arg, default_value=default, description=text)
        for arg, _, default, text in OPTIONS
    ]
    node = Node(
        package="{PACKAGE}",
        executable="{EXECUTABLE}",
        namespace=LaunchConfiguration("namespace"),
        output="screen",
        arguments=[[option + "=", LaunchConfiguration(arg)] for arg, option, _, _ in OPTIONS],
    )
    return LaunchDescription([*declared, node])
'''


def _readme(parser):
    names = ", ".join(f"`{d}`" for d, *_ in options(parser))
    return f"""# {PACKAGE}

asr's ROS 2 node, `asr ros2` (docs/ros.md of asr), as a ROS 2 (ament_python) package, written by
`asr ros2-package DIR`. The package holds no simulator: its executable `{EXECUTABLE}` imports
asr, which is installed separately into the Python that ROS 2 runs:

    pip install asr-sim[ros2]

In a colcon workspace whose `src/` holds this folder, with ROS 2 Jazzy sourced:

    colcon build --packages-select {PACKAGE} && source install/setup.bash
    ros2 run {PACKAGE} {EXECUTABLE} --robot qbmove_arm_2dof --namespace robot1
    ros2 launch {PACKAGE} {LAUNCH} robot:=qbmove_arm_2dof namespace:=robot1

`{EXECUTABLE}` takes `asr ros2`'s options (`{EXECUTABLE} --help`). The launch file's arguments,
one per option: {names}; a flag takes true or false.
"""


def node_package_files(parser):
    """({path in the package: text}, executable paths) of asr_ros2 for `asr ros2`'s parser."""
    files = {
        "package.xml": _package_xml(),
        "setup.py": _SETUP_PY,
        "setup.cfg": setup_cfg(PACKAGE),
        f"resource/{PACKAGE}": "",
        "README.md": _readme(parser),
        f"launch/{LAUNCH}": _launch(parser),
        f"{PACKAGE}/__init__.py": f'"""{PACKAGE}: asr\'s ROS 2 node (see {EXECUTABLE}.py)."""\n',
        f"{PACKAGE}/{EXECUTABLE}.py": _NODE,
    }
    return files, set()


def node_package(out_dir, parser):
    """Write asr_ros2 into out_dir/asr_ros2 (created; an old one replaced whole); its path."""
    os.makedirs(out_dir, exist_ok=True)
    return write_package(PACKAGE, node_package_files(parser), out_dir)
