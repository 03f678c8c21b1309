"""The files of the ROS 2 (ament_python) package asr.ros.export writes with ros=2: the rclpy
node module (NODE_TEMPLATE, embedding the policy maths of asr.ros._export_templates that the ROS
1 node embeds too), package.xml (format 3), setup.py, setup.cfg, the ament resource marker, the
Python launch file and the README. asr.ros.export writes them atomically; here they are only
composed."""

import json

from asr.ros._export_templates import data_text, node_source, readme_intro
from asr.ros._ros2_types import QOS_DEPTH_CONTROL

NODE_TEMPLATE = r'''"""@PACKAGE@.@NODE@: an asr policy exported for asr's ROS 2 interface
(the compliant-actuator toolbox's topics [Mengacci2021] on ROS 2).

Reads joint_states (sensor_msgs/msg/JointState) and publishes the commands of the policy in
@DATA@ (written by asr.ros.export, kind "@KIND@"); see that module's documentation. @NEEDS@
Names are relative to the node's namespace (launch argument ns, or --ros-args -r __ns:=/x); a
node started in none uses the data file's. Parameters: target (rad, per joint: a task that
observes one), settle_s (s, time tables), use_stamps (default true: time is the JointState header
stamp; false: the node's clock, which follows /clock under use_sim_time), lockstep (default
false; true: every new joint state is answered by one `step` message of asr's lockstep node,
the references as data, instead of reference_1 / reference_2). A task with a release action
(Throw) also gets `release` (std_msgs/Bool, transient_local): True once, at the first state
after the env step whose action asked for it; from then on, and after a task's time limit,
the last references are held.

    python3 -m @PACKAGE@.@NODE@ --ros-args -r __ns:=/robot1 -p lockstep:=true
"""
import json
import math
import os
import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rcl_interfaces.msg import ParameterDescriptor
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64, Float64MultiArray, MultiArrayDimension

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "@DATA@")
QOS_DEPTH = @QOS_DEPTH@  # as asr's node: 1 s at 1 kHz, none lost by a peer that keeps up
@ONNX@@POLICY@

def qos(depth, latched):
    """Reliable, keep_last `depth`; latched: transient_local (a late subscriber gets the last
    `depth` messages, as a ROS 1 latched topic)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=(DurabilityPolicy.TRANSIENT_LOCAL if latched
                                  else DurabilityPolicy.VOLATILE))


class PolicyNode(Node):
    def __init__(self, d):
        super().__init__(d["node"], namespace="/" + d["namespace"])
        self.d = d
        free = ParameterDescriptor(dynamic_typing=True)  # 0.3 or [0.3], 1 or 1.0: checked here
        target = settle_s = None
        if "target" in d:
            target = self.declare_parameter("target", d["target"], free).value
        if "start_s" in d:
            settle_s = self.declare_parameter("settle_s", d["start_s"], free).value
        self.use_stamps = self.declare_parameter("use_stamps", True).value
        self.lockstep = self.declare_parameter("lockstep", False).value
        self.policy = Policy(d, os.path.dirname(DATA), target, settle_s)
        self.t0, self.last_ns, self.pending = None, None, None
        self.release = None
        if d.get("release"):  # the task's release action: True once (latched), then held
            self.release = self.create_publisher(Bool, "release", qos(1, True))
        if self.lockstep:
            self.step = self.create_publisher(Float64MultiArray, "step", qos(QOS_DEPTH, False))
            # a step sent before asr's node subscribes is lost, and the loop would wait forever:
            # a state that comes first is answered once the subscription is there
            self.create_timer(0.01, self.answer_pending)
            # asr's node latches its latest state there: the start state reaches a late peer
            self.create_subscription(JointState, "joint_states_latest", self.on_state,
                                     qos(1, True))
        else:
            self.out = Commands(d, lambda name, kind: self.create_publisher(
                kind, name, qos(1 if d["topics"] == "joint" else QOS_DEPTH, True)))
            if self.policy.held is not None:
                self.out.publish(*self.policy.held)
        self.create_subscription(JointState, "joint_states", self.on_state, qos(QOS_DEPTH, False))

    def answer_pending(self):
        if self.pending is not None and self.step.get_subscription_count() > 0:
            msg, self.pending = self.pending, None
            self.on_state(msg)

    def on_state(self, msg):
        stamp_ns = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        if self.lockstep:
            if self.last_ns is not None and stamp_ns <= self.last_ns:
                return  # a state answered already (it comes on both state topics)
            if self.step.get_subscription_count() == 0:
                self.pending = msg
                return
        t_ns = stamp_ns if self.use_stamps else self.get_clock().now().nanoseconds
        got = joint_values(self.d["joints"], msg.name, msg.position, msg.velocity)
        if got is None:
            self.get_logger().warn("joint_states without the joints %s" % self.d["joints"],
                                   throttle_duration_sec=5.0)
            return
        self.t0 = t_ns if self.t0 is None else self.t0
        self.last_ns = stamp_ns
        r1, r2 = self.policy.command((t_ns - self.t0) * 1e-9, *got)
        if self.lockstep:
            self.step.publish(step_msg(r1, r2))
        else:
            self.out.publish(r1, r2)
        if self.release is not None and self.policy.take_release():
            self.release.publish(Bool(data=True))
            self.get_logger().info("released at env step %d (t = %.6f s)" % (
                self.policy.last_step, (t_ns - self.t0) * 1e-9))


def main(args=None):
    with open(DATA) as f:
        d = json.load(f)
    rclpy.init(args=sys.argv if args is None else args)
    node = None
    try:
        node = PolicyNode(d)
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as exc:  # a parameter out of its range: say which, exit 2
        print("@NODE@: %s" % exc, file=sys.stderr)
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def package_xml(name, robot, kind):
    numpy = "\n  <exec_depend>python3-numpy</exec_depend>" if kind == "onnx" else ""
    return f"""<?xml version="1.0"?>
<?xml-model href="http://download.ros.org/schema/package_format3.xsd"
  schematypens="http://www.w3.org/2001/XMLSchema"?>
<package format="3">
  <name>{name}</name>
  <version>0.1.0</version>
  <description>asr policy ({kind}) for the robot {robot}, exported by asr.ros.export for asr's
    ROS 2 interface (the compliant-actuator toolbox's topics [Mengacci2021]).</description>
  <maintainer email="asr@example.com">asr</maintainer>
  <license>MIT</license>
  <buildtool_depend>ament_python</buildtool_depend>
  <exec_depend>rclpy</exec_depend>
  <exec_depend>rcl_interfaces</exec_depend>
  <exec_depend>std_msgs</exec_depend>
  <exec_depend>sensor_msgs</exec_depend>
  <exec_depend>launch</exec_depend>
  <exec_depend>launch_ros</exec_depend>{numpy}
  <export>
    <build_type>ament_python</build_type>
  </export>
</package>
"""


def _setup_py(name, node, kind):
    data = [f"{node}.json"] + ([f"{node}.onnx"] if kind == "onnx" else [])
    return f'''"""The build of {name}: `pip install .`, or colcon with a full ROS 2 install."""
from setuptools import setup

NAME = "{name}"

setup(
    name=NAME,
    version="0.1.0",
    packages=[NAME],
    package_data={{NAME: {data!r}}},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + NAME]),
        ("share/" + NAME, ["package.xml", "README.md"]),
        ("share/" + NAME + "/launch", ["launch/{node}.launch.py"]),
    ],
    install_requires=["setuptools"],
    zip_safe=False,  # the node reads its data files next to its module
    maintainer="asr",
    maintainer_email="asr@example.com",
    description="asr policy ({kind}) exported by asr.ros.export",
    license="MIT",
    entry_points={{"console_scripts": ["{node} = {name}.{node}:main"]}},
)
'''


def setup_cfg(name):
    # where ros2 run looks for a package's executables: lib/<package>
    return f"[develop]\nscript_dir=$base/lib/{name}\n[install]\ninstall_scripts=$base/lib/{name}\n"


def _launch(name, node, d):
    python = d["kind"] == "onnx"  # the interpreter with numpy and onnxruntime ('': the default)
    args = [
        ("node_name", node, "the node's name (two policies at once: two names)"),
        ("ns", d["namespace"], "the robot's namespace (its joint_states, reference_1, ...)"),
        ("lockstep", "false", "true: step asr's lockstep node, one period per joint state"),
        ("use_stamps", "true", "time from the JointState stamps (false: the node's clock)"),
    ] + ([("python", "", "the Python that runs the node (numpy, onnxruntime)")] if python else [])
    declared = "".join(
        f"            DeclareLaunchArgument(\n                {json.dumps(a)},\n"
        f"                default_value={json.dumps(v)},\n"
        f"                description={json.dumps(h)},\n            ),\n"
        for a, v, h in args
    )
    prefix = '                prefix=LaunchConfiguration("python"),\n' if python else ""
    return f'''"""Launches {name}'s {node}:
ros2 launch {name} {node}.launch.py ns:=robot1 node_name:=policy_1
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def generate_launch_description():
    return LaunchDescription(
        [
{declared}            Node(
                package="{name}",
                executable="{node}",
                name=LaunchConfiguration("node_name"),
                namespace=LaunchConfiguration("ns"),
                output="screen",
{prefix}                parameters=[
                    {{
                        "lockstep": ParameterValue(
                            LaunchConfiguration("lockstep"), value_type=bool
                        ),
                        "use_stamps": ParameterValue(
                            LaunchConfiguration("use_stamps"), value_type=bool
                        ),
                    }}
                ],
            ),
        ]
    )
'''


# what the node needs from PyPI's ROS 2 Jazzy wheels (a part of the extra asr-sim[ros2] of
# setup.cfg, without asr): rclpy (with rcl_interfaces), its DDS and the two message packages
ROS2_WHEELS = (
    "ros-jazzy-rclpy",
    "ros-jazzy-rmw-fastrtps-cpp",
    "ros-jazzy-std-msgs",
    "ros-jazzy-sensor-msgs",
)
ONNX_WHEELS = ("numpy", "onnxruntime")
# the README's section of the commands PyPI's wheels cannot run (colcon, ros2 launch, ros2 run)
FULL_ROS2_SECTION = "## With a full ROS 2 Jazzy install"


def _readme(name, node, d):
    onnx = d["kind"] == "onnx"
    needs = ", numpy and onnxruntime" if onnx else " (plain Python arithmetic: no numpy)"
    onnx_pip = f"    pip install {' '.join(ONNX_WHEELS)}\n" if onnx else ""
    onnx_launch = (
        " (`python:=/path/to/python` runs the node with a Python that has numpy and onnxruntime)"
        if onnx
        else ""
    )
    return f"""{readme_intro(name, d, f"{name}/{node}.py", f"{name}/{node}.json")}
It needs rclpy, std_msgs and sensor_msgs{needs}; asr is not needed.

## Run with ROS 2 Jazzy from PyPI

PyPI's ROS 2 Jazzy wheels (those `pip install asr-sim[ros2]` installs, less asr) give rclpy, Fast
DDS and the messages, but not colcon, `ros2 run` or `ros2 launch`. In a virtual environment of
the wheels' Python, from this folder:

    pip install {" ".join(ROS2_WHEELS)}
{onnx_pip}    pip install .
    {node} --ros-args -r __ns:=/robot1 -r __node:=policy_1

`pip install .` puts the node's command `{node}` in the environment's `bin/`. Without installing
the package, from this folder:

    python -m {name}.{node} --ros-args -r __ns:=/robot1 -p lockstep:=true

`-r __ns:=/robot1`: the robot's namespace (default: the export's, `/{d["namespace"]}`);
`-r __node:=policy_1`: the node's name (two policies at once: two names); `-p name:=value`: a
parameter (below).

{FULL_ROS2_SECTION}

With a sourced `/opt/ros/jazzy` (ROS 2 from the operating system's packages: colcon and the
`ros2` command; not run by asr's tests, which have PyPI's wheels only), in a colcon workspace
whose `src/` holds this folder:

    colcon build --packages-select {name} && source install/setup.bash
    ros2 launch {name} {node}.launch.py ns:=robot1 node_name:=policy_1
    ros2 run {name} {node} --ros-args -r __ns:=/robot1 -p lockstep:=true

The launch file's arguments: `ns`, `node_name`, `lockstep`, `use_stamps`{onnx_launch}.

## Parameters

`target` (rad per joint: a task that observes one), `settle_s` (s: time tables), `use_stamps`
(true: time from the JointState header stamps), `lockstep` (true: against `asr ros2
--lockstep`, each joint state is answered by one `step` message carrying the references, so the
loop runs as asr's offline rollout does).
"""


def ros2_package_files(name, node, d, onnx):
    """({path in the package: text or bytes}, the paths of executables) of the ament_python
    package `name` with node module `node` for the policy data d (asr.ros.export.policy_data);
    onnx: the ONNX policy (OnnxPolicy, bytes) the node runs, or None."""
    needs = (
        "Needs rclpy, std_msgs, sensor_msgs,\nand numpy and onnxruntime (ONNX Runtime)."
        if onnx
        else "Needs only rclpy, std_msgs\nand sensor_msgs (plain Python arithmetic: no numpy)."
    )
    files = {
        "package.xml": package_xml(name, d["robot"], d["kind"]),
        "setup.py": _setup_py(name, node, d["kind"]),
        "setup.cfg": setup_cfg(name),
        f"resource/{name}": "",
        "README.md": _readme(name, node, d),
        f"launch/{node}.launch.py": _launch(name, node, d),
        f"{name}/__init__.py": f'"""{name}: an asr policy for ROS 2 (see {node}.py)."""\n',
        f"{name}/{node}.json": data_text(d),
        f"{name}/{node}.py": node_source(NODE_TEMPLATE, name, node, d, needs).replace(
            "@QOS_DEPTH@", str(QOS_DEPTH_CONTROL)
        ),
    }
    if onnx:
        files[f"{name}/{node}.onnx"] = onnx[1]
    return files, set()
