"""The text files of the catkin package asr.ros.export writes: the rospy node (NODE_TEMPLATE,
with ONNX_BLOCK for an ONNX policy), package.xml, CMakeLists.txt, the launch file and the README
of an ONNX package. asr.ros.export writes them atomically; here they are only composed."""

import json
import xml.etree.ElementTree as ET

ONNX_BLOCK = r'''

def onnx_actor(path):
    """obs (list, the task's order) -> action (list): the ONNX policy (observation
    normalisation and action clipping inside) run with onnxruntime, one thread. Needs numpy and
    onnxruntime in the Python that runs this node (see README.md)."""
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as exc:
        raise SystemExit("this node runs an ONNX policy and needs numpy and onnxruntime in the "
                         "Python that runs it (%s): pip install numpy onnxruntime, or run the "
                         "node with such a Python (launch argument python:=...)" % exc)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name

    def act(obs):
        x = np.asarray([obs], dtype=np.float32)
        return [float(v) for v in session.run(None, {name: x})[0][0]]
    return act
'''

NODE_TEMPLATE = r'''#!/usr/bin/env python3
"""@PACKAGE@: an asr policy exported for the toolbox ROS interface [Mengacci2021].

Reads <ns>/joint_states (sensor_msgs/JointState) and publishes the commands of the policy in
@DATA@ (written by asr.ros.export, kind "@KIND@"); see that module's documentation. @NEEDS@
Private parameters: ~namespace (topic prefix, default from the data file), ~target (rad, per
joint, linear and ONNX policies), ~settle_s (s, time tables), ~use_stamps (default true: time
is the JointState header stamp; false: rospy time, which follows /clock under /use_sim_time).
"""
import json
import math
import os

import rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray, MultiArrayDimension

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "@DATA@")
@ONNX@

def topic(*parts):
    """Absolute topic name from a namespace and names ('' parts are left out)."""
    return "/" + "/".join(p.strip("/") for p in parts if p and p.strip("/"))


class Policy:
    """Commands (ref_1, ref_2), per joint, from the time since the first state and the state."""

    def __init__(self, d, target=None, settle_s=None):
        self.d, self.kind, self.nj = d, d["kind"], len(d["joints"])
        self.last_step, self.held = None, None
        if self.kind == "table":
            self.values_1 = [[float(v) for v in row] for row in d["values_1"]]
            self.ref_2 = [float(v) for v in d["ref_2"]]
            self.dt = float(d["dt"])
            self.start_s = float(d["start_s"] if settle_s is None else settle_s)
        elif self.kind in ("linear", "onnx"):
            self.low, self.high = list(map(float, d["low"])), list(map(float, d["high"]))
            self.target = [float(v) for v in (d["target"] if target is None else target)]
            if len(self.target) != self.nj:
                raise ValueError("~target: expected %d values (rad), got %r"
                                 % (self.nj, target))
            self.env_dt = float(d["env_dt"])
            if self.kind == "linear":
                self.W = [[float(v) for v in row] for row in d["W"]]
                self.act = self.linear
            else:
                self.act = onnx_actor(os.path.join(os.path.dirname(DATA), d["onnx"]))
        else:
            self.held = (list(map(float, d["ref_1"])), list(map(float, d["ref_2"])))

    def linear(self, obs):
        """a = low + (high - low) (1 + tanh(W [obs, 1])) / 2"""
        z = [math.fsum(w * x for w, x in zip(row, obs + [1.0])) for row in self.W]
        return [lo + (hi - lo) * 0.5 * (1.0 + math.tanh(v))
                for lo, hi, v in zip(self.low, self.high, z)]

    def command(self, t, q, dq):
        if self.kind == "table":
            k = int(math.floor((t - self.start_s) / self.dt + 1e-6))
            k = min(max(k, 0), len(self.values_1) - 1)
            return self.values_1[k], self.ref_2
        if self.kind in ("linear", "onnx"):
            step = int(math.floor(t / self.env_dt + 1e-6))   # env step since the first state
            if step != self.last_step:
                obs = (list(q) + list(dq) + self.target
                       + [a - b for a, b in zip(q, self.target)])
                a = self.act(obs)
                self.held = (a[:self.nj], a[self.nj:])
                self.last_step = step
        return self.held


def array_msg(values, label):
    m = Float64MultiArray(data=values)
    m.layout.dim = [MultiArrayDimension(label=label, size=len(values), stride=len(values))]
    return m


def main():
    with open(DATA) as f:
        d = json.load(f)
    rospy.init_node(d["node"], anonymous=False)
    ns = rospy.get_param("~namespace", d["namespace"])
    policy = Policy(d, rospy.get_param("~target", None), rospy.get_param("~settle_s", None))
    use_stamps = bool(rospy.get_param("~use_stamps", True))
    joints = d["joints"]
    if d["topics"] == "robot":
        pubs = [rospy.Publisher(topic(ns, d["robot"], "reference_%d" % i), Float64MultiArray,
                                queue_size=10, latch=True) for i in (1, 2)]

        def publish(r1, r2):
            pubs[0].publish(array_msg(r1, "joints"))
            pubs[1].publish(array_msg(r2, "joints"))
    else:
        pubs = [[rospy.Publisher(topic(ns, j, name), Float64, queue_size=10, latch=True)
                 for j in joints] for name in ("equilibrium_position", "stiffness_preset")]

        def publish(r1, r2):
            for p, v in zip(pubs[0] + pubs[1], list(r1) + list(r2)):
                p.publish(Float64(v))

        publish(*policy.held)
    state = {"t0": None}

    def on_state(msg):
        t = msg.header.stamp.to_sec() if use_stamps else rospy.get_time()
        if state["t0"] is None:
            state["t0"] = t
        index = {n: i for i, n in enumerate(msg.name)}
        try:
            idx = [index[j] for j in joints] if msg.name else list(range(len(joints)))
            q = [float(msg.position[i]) for i in idx]
            dq = ([float(msg.velocity[i]) for i in idx] if msg.velocity
                  else [0.0] * len(joints))
        except (KeyError, IndexError):
            rospy.logwarn_throttle(5.0, "joint_states without the joints %s" % joints)
            return
        publish(*policy.command(t - state["t0"], q, dq))

    rospy.Subscriber(topic(ns, "joint_states"), JointState, on_state, queue_size=10)
    rospy.spin()


if __name__ == "__main__":
    main()
'''


def _package_xml(name, robot, kind):
    numpy = "\n  <exec_depend>python3-numpy</exec_depend>" if kind == "onnx" else ""
    return f"""<?xml version="1.0"?>
<package format="2">
  <name>{name}</name>
  <version>0.1.0</version>
  <description>asr policy ({kind}) for the robot {robot}, exported by asr.ros.export for the
    toolbox ROS interface [Mengacci2021].</description>
  <maintainer email="asr@example.com">asr</maintainer>
  <license>MIT</license>
  <buildtool_depend>catkin</buildtool_depend>
  <depend>rospy</depend>
  <depend>std_msgs</depend>
  <depend>sensor_msgs</depend>{numpy}
</package>
"""


def _cmakelists(name, node, kind="linear"):
    onnx = f" scripts/{node}.onnx" if kind == "onnx" else ""
    return f"""cmake_minimum_required(VERSION 3.0.2)
project({name})
find_package(catkin REQUIRED COMPONENTS rospy std_msgs sensor_msgs)
catkin_package(CATKIN_DEPENDS rospy std_msgs sensor_msgs)
catkin_install_python(PROGRAMS scripts/{node}.py
  DESTINATION ${{CATKIN_PACKAGE_BIN_DESTINATION}})
install(FILES scripts/{node}.json{onnx} DESTINATION ${{CATKIN_PACKAGE_BIN_DESTINATION}})
install(DIRECTORY launch DESTINATION ${{CATKIN_PACKAGE_SHARE_DESTINATION}})
"""


def _launch(name, node, d):
    root = ET.Element("launch")
    ET.SubElement(root, "arg", name="namespace", default=d["namespace"])
    extra = {}
    if d["kind"] == "onnx":  # the interpreter with rospy, numpy and onnxruntime ('': python3)
        ET.SubElement(root, "arg", name="python", default="")
        extra["launch-prefix"] = "$(arg python)"
    n = ET.SubElement(
        root, "node", pkg=name, type=f"{node}.py", name=node, output="screen", **extra
    )
    ET.SubElement(n, "param", name="namespace", value="$(arg namespace)")
    for key in ("target", "gains", "modes", "params"):
        if d.get(key):
            ET.SubElement(n, "rosparam", param=key).text = json.dumps(d[key])
    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _onnx_readme(name, node, d):
    return f"""# {name}

An ONNX policy exported by asr (asr.ros.export) for the robot {d["robot"]} (task {d["task"]},
control period {d["env_dt"]} s): scripts/{node}.py runs scripts/{node}.onnx with onnxruntime every
env step and publishes `<ns>/{d["robot"]}/reference_1` (equilibria, rad) and `reference_2`
(presets, rad) from `<ns>/joint_states`; `~target` (rad per joint) sets the task's target.

The node needs rospy, std_msgs and sensor_msgs (ROS) and numpy and onnxruntime in the same
Python: `pip install numpy onnxruntime` for the ROS Python, or a virtual environment with them
that also sees the ROS packages (for example one created with `--system-site-packages`), given to
the launch file:

    roslaunch {name} {node}.launch python:=/path/to/venv/bin/python
"""


def package_files(name, node, d, robot, onnx):
    """{path in the package: text} of package `name` with node `node` for the policy data d
    (asr.ros.export.policy_data); onnx: the ONNX policy (OnnxPolicy, bytes) the node runs, or
    None."""
    needs = (
        "Needs rospy, std_msgs, sensor_msgs, and numpy and onnxruntime (ONNX Runtime)."
        if onnx
        else "Needs only\nrospy, std_msgs and sensor_msgs (plain Python arithmetic: no numpy)."
    )
    files = {
        "package.xml": _package_xml(name, robot, d["kind"]),
        "CMakeLists.txt": _cmakelists(name, node, d["kind"]),
        f"launch/{node}.launch": _launch(name, node, d),
        f"scripts/{node}.json": json.dumps(d, indent=None if d["kind"] == "table" else 1) + "\n",
        f"scripts/{node}.py": NODE_TEMPLATE.replace("@PACKAGE@", name)
        .replace("@DATA@", f"{node}.json")
        .replace("@KIND@", d["kind"])
        .replace("@NEEDS@", needs)
        .replace("@ONNX@", ONNX_BLOCK if onnx else ""),
    }
    if onnx:
        files["README.md"] = _onnx_readme(name, node, d)
    return files
