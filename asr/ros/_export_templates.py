"""The text files of the catkin package asr.ros.export writes: the rospy node (NODE_TEMPLATE),
package.xml, CMakeLists.txt, the launch file and a README; and the plain Python that the ROS 1
node and the ROS 2 node (asr.ros._export_ros2_templates) both embed: POLICY_BLOCK (the policy
maths, the reading of a JointState, the command publishers) and ONNX_BLOCK (an ONNX policy's
actor). asr.ros.export writes them atomically; here they are only composed."""

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

POLICY_BLOCK = r'''

def name_of(*parts):
    """A ROS name relative to the node's namespace from names ('' parts left out)."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def finite(value, name, valid):
    """value as a finite float, or a ValueError naming the parameter, value and valid range."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = float("nan")
    if not math.isfinite(x):
        raise ValueError("%s: got %r, valid: %s" % (name, value, valid))
    return x


class Policy:
    """Commands (ref_1, ref_2), per joint, from the time since the first state and the state.
    d: the data file; folder: where its files are; target (rad per joint) and settle_s (s): the
    node's parameters, None for the data file's values."""

    def __init__(self, d, folder, target=None, settle_s=None):
        self.d, self.kind, self.nj = d, d["kind"], len(d["joints"])
        self.last_step, self.held = None, None
        if self.kind == "table":
            self.values_1 = [[float(v) for v in row] for row in d["values_1"]]
            self.ref_2 = [float(v) for v in d["ref_2"]]
            self.dt = float(d["dt"])
            settle_s = d["start_s"] if settle_s is None else settle_s
            self.start_s = finite(settle_s, "settle_s", "a time >= 0 s")
            if self.start_s < 0.0:
                raise ValueError("settle_s: got %r, valid: a time >= 0 s" % (settle_s,))
        elif self.kind in ("linear", "onnx"):
            self.low, self.high = list(map(float, d["low"])), list(map(float, d["high"]))
            self.obs_map, self.act_map = task_entries(d, self.nj)
            self.target = self.read_target(d, target)
            self.reference = self.read_reference(d)
            self.env_dt = float(d["env_dt"])
            self.max_steps = d.get("max_steps")  # episodic tasks: hold after it (env steps)
            self.releasing, self.ended, self.release_due = False, False, False
            self.release_above = float(d.get("release_above", 0.0))
            self.has_release = any(sink == "release" for sink, _ in self.act_map)
            if self.kind == "linear":
                self.W = [[float(v) for v in row] for row in d["W"]]
                self.act = self.linear
            else:
                self.act = onnx_actor(os.path.join(folder, d["onnx"]))
        else:
            self.held = (list(map(float, d["ref_1"])), list(map(float, d["ref_2"])))

    def read_target(self, d, target):
        """The target (rad per joint) of a task observing one, else None."""
        if "target" not in d:
            if target is not None:
                raise ValueError("target: got %r, valid: none (task %s observes no target)"
                                 % (target, d["task"]))
            return None
        target = d["target"] if target is None else target
        valid = "%d finite values (rad, one per joint)" % self.nj
        many = isinstance(target, (list, tuple)) or hasattr(target, "tolist")
        out = [finite(v, "target", valid) for v in (target if many else [target])]
        if len(out) != self.nj:
            raise ValueError("target: got %r, valid: %s" % (target, valid))
        return out

    def read_reference(self, d):
        """The task's reference (a task observing one: q_ref, qd_ref and their errors), the
        data file's {"centre" (rad per joint), "amplitude" (rad), "frequency" (Hz)}; else None."""
        sources = set(source for source, _ in self.obs_map)
        if not sources & set(REFERENCE_SOURCES):
            return None
        r = d.get("reference")
        if not isinstance(r, dict):
            raise ValueError("reference: got %r, valid: the task's {centre, amplitude, "
                             "frequency} (its observation has %s)"
                             % (r, sorted(sources & set(REFERENCE_SOURCES))))
        valid = "%d finite values (rad, one per joint)" % self.nj
        centre = [finite(v, "reference centre", valid) for v in r.get("centre", [])]
        if len(centre) != self.nj:
            raise ValueError("reference centre: got %r, valid: %s" % (r.get("centre"), valid))
        return (centre, finite(r.get("amplitude"), "reference amplitude", "a finite angle (rad)"),
                finite(r.get("frequency"), "reference frequency", "a finite frequency (Hz)"))

    def reference_at(self, t):
        """(q_ref (rad), qd_ref (rad/s)) per joint at t s: centre + amplitude sin(2 pi f t) and
        its rate amplitude 2 pi f cos(2 pi f t), computed as asr.envs.periodic.reference and
        reference_rate compute them (tests/ros/test_ros_export_tasks.py compares the two)."""
        centre, amplitude, frequency = self.reference
        w = 2.0 * math.pi * frequency
        s, c = amplitude * math.sin(w * t), amplitude * w * math.cos(w * t)
        return [x + s for x in centre], [c] * len(centre)

    def observe(self, step, q, dq):
        """The task's observation at the start of env step `step` (its OBSERVATION's order):
        t = step env_dt (as the env: env steps x env step, s), the reference at the step's end,
        (step + 1) env_dt."""
        ref = None if self.reference is None else self.reference_at((step + 1) * self.env_dt)
        value = {"q": lambda j: q[j], "qd": lambda j: dq[j],
                 "target": lambda j: self.target[j], "error": lambda j: q[j] - self.target[j],
                 "q_ref": lambda j: ref[0][j], "qd_ref": lambda j: ref[1][j],
                 "ref_error": lambda j: q[j] - ref[0][j],
                 "rate_error": lambda j: dq[j] - ref[1][j],
                 "t": lambda j: step * self.env_dt}
        return [value[source](j) for source, j in self.obs_map]

    def env_step(self, step, q, dq):
        """A new env step: the release of the step before takes effect (the env lets the ball
        go at the end of the step whose action asked for it), the episode's time limit ends the
        episode, or the policy computes the next references. After the end: held."""
        limit = self.max_steps is not None and step >= self.max_steps
        if self.releasing or limit:  # Throw: at its time limit the hand opens too
            self.ended = True
            self.release_due = self.releasing or (limit and self.has_release)
            return
        a = self.act(self.observe(step, q, dq))
        refs = {"equilibrium": [0.0] * self.nj, "preset": [0.0] * self.nj}
        for (sink, j), v in zip(self.act_map, a):
            if sink == "release":
                self.releasing = v > self.release_above
            else:
                refs[sink][j] = v
        self.held = (refs["equilibrium"], refs["preset"])

    def take_release(self):
        """True once, at the first state after the release step (publish the release then)."""
        due, self.release_due = self.release_due, False
        return due

    def linear(self, obs):
        """a = low + (high - low) (1 + tanh(W [obs, 1])) / 2"""
        z = [math.fsum(w * x for w, x in zip(row, obs + [1.0])) for row in self.W]
        return [lo + (hi - lo) * 0.5 * (1.0 + math.tanh(v))
                for lo, hi, v in zip(self.low, self.high, z)]

    def command(self, t, q, dq):
        """(ref_1, ref_2) t s after the first state, from q (rad) and dq (rad/s) per joint."""
        if self.kind == "table":
            k = int(math.floor((t - self.start_s) / self.dt + 1e-6))
            k = min(max(k, 0), len(self.values_1) - 1)
            return self.values_1[k], self.ref_2
        if self.kind in ("linear", "onnx"):
            step = int(math.floor(t / self.env_dt + 1e-6))   # env step since the first state
            if step != self.last_step and not self.ended:
                self.env_step(step, q, dq)
            self.last_step = step
        return self.held


# the observation sources a task's reference gives (asr.ros.export.REFERENCE_SOURCES)
REFERENCE_SOURCES = ("q_ref", "qd_ref", "ref_error", "rate_error")


def task_entries(d, nj):
    """The data file's observation / action entries; a data file of an older asr has none:
    its tasks observed [q, dq, target, q - target] and acted [equilibria, presets]."""
    if "observation" in d:
        return ([tuple(e) for e in d["observation"]], [tuple(e) for e in d["action"]])
    joints = list(range(nj))
    obs = [(s, j) for s in ("q", "qd", "target", "error") for j in joints]
    return obs, [(s, j) for s in ("equilibrium", "preset") for j in joints]


def joint_values(joints, names, position, velocity):
    """(q (rad), dq (rad/s)) of `joints` from a JointState's name, position and velocity (the
    joints in order when it names none; dq zero when it has no velocities), or None when one
    is missing."""
    index = {n: i for i, n in enumerate(names)}
    try:
        idx = [index[j] for j in joints] if len(names) else list(range(len(joints)))
        q = [float(position[i]) for i in idx]
        dq = [float(velocity[i]) for i in idx] if len(velocity) else [0.0] * len(joints)
    except (KeyError, IndexError):
        return None
    return q, dq


def array_msg(values, label):
    m = Float64MultiArray(data=[float(v) for v in values])
    m.layout.dim = [MultiArrayDimension(label=label, size=len(values), stride=len(values))]
    return m


def step_msg(r1, r2):
    """asr's lockstep message: one period with these references, (J, 2) row-major."""
    return array_msg([v for pair in zip(r1, r2) for v in pair], "joints_x_refs")


class Commands:
    """The command publishers: robot-level reference_1 / reference_2 (Float64MultiArray, one
    value per joint) or, for a constant policy, each joint's equilibrium_position and
    stiffness_preset (Float64). advertise(name, type): one publisher; prefix: the names'
    prefix ('' for the node's namespace)."""

    def __init__(self, d, advertise, prefix=""):
        self.robot_level = d["topics"] == "robot"
        if self.robot_level:
            self.pubs = [advertise(name_of(prefix, "reference_%d" % i), Float64MultiArray)
                         for i in (1, 2)]
        else:
            self.pubs = [advertise(name_of(prefix, j, n), Float64)
                         for n in ("equilibrium_position", "stiffness_preset")
                         for j in d["joints"]]

    def publish(self, r1, r2):
        if self.robot_level:
            self.pubs[0].publish(array_msg(r1, "joints"))
            self.pubs[1].publish(array_msg(r2, "joints"))
        else:
            for p, v in zip(self.pubs, list(r1) + list(r2)):
                p.publish(Float64(data=float(v)))
'''

NODE_TEMPLATE = r'''#!/usr/bin/env python3
"""@PACKAGE@: an asr policy exported for the toolbox ROS interface [Mengacci2021].

Reads joint_states (sensor_msgs/JointState) and publishes the commands of the policy in @DATA@
(written by asr.ros.export, kind "@KIND@"); see that module's documentation. @NEEDS@
Names are relative to the node's namespace (launch argument ns, or __ns:=); a node started in
none (rosrun) uses the data file's. A task with a release action (Throw) also gets `release`
(std_msgs/Bool, latched): True once, at the first state after the env step whose action asked
for it; from then on, and after a task's time limit, the last references are held. Private
parameters: ~namespace (a prefix of the names instead), ~target (rad, per joint: a task that
observes one), ~settle_s (s, time tables), ~use_stamps (default true: time is the JointState
header stamp; false: rospy time, which follows /clock under /use_sim_time).
"""
import json
import math
import os

import rospy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64, Float64MultiArray, MultiArrayDimension

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "@DATA@")
@ONNX@@POLICY@

def main():
    with open(DATA) as f:
        d = json.load(f)
    rospy.init_node(d["node"], anonymous=False)
    own_ns = rospy.get_namespace() not in ("", "/")
    prefix = rospy.get_param("~namespace", "" if own_ns else d["namespace"])
    policy = Policy(d, os.path.dirname(DATA), rospy.get_param("~target", None),
                    rospy.get_param("~settle_s", None))
    use_stamps = bool(rospy.get_param("~use_stamps", True))
    out = Commands(d, lambda name, kind: rospy.Publisher(name, kind, queue_size=10, latch=True),
                   prefix)
    if policy.held is not None:
        out.publish(*policy.held)
    release = None
    if d.get("release"):  # the task's release action: one True, latched, then references held
        release = rospy.Publisher(name_of(prefix, "release"), Bool, queue_size=1, latch=True)
    state = {"t0": None}

    def on_state(msg):
        t = msg.header.stamp.to_sec() if use_stamps else rospy.get_time()
        if state["t0"] is None:
            state["t0"] = t
        got = joint_values(d["joints"], msg.name, msg.position, msg.velocity)
        if got is None:
            rospy.logwarn_throttle(5.0, "joint_states without the joints %s" % d["joints"])
            return
        out.publish(*policy.command(t - state["t0"], *got))
        if release is not None and policy.take_release():
            release.publish(Bool(data=True))
            rospy.loginfo("released at env step %d (t = %.6f s)", policy.last_step,
                          t - state["t0"])

    rospy.Subscriber(name_of(prefix, "joint_states"), JointState, on_state, queue_size=10)
    rospy.spin()


if __name__ == "__main__":
    main()
'''


def _package_xml(name, robot, kind):
    # a Python-only node: catkin builds it alone (no message generation, nothing compiled);
    # rospy and the message packages are needed where it runs
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
  <exec_depend>rospy</exec_depend>
  <exec_depend>std_msgs</exec_depend>
  <exec_depend>sensor_msgs</exec_depend>{numpy}
</package>
"""


def _cmakelists(name, node, kind="linear"):
    onnx = f" scripts/{node}.onnx" if kind == "onnx" else ""
    # 3.5: the oldest version CMake 4 accepts (Noetic's catkin asks for 3.0.2, which it refuses)
    return f"""cmake_minimum_required(VERSION 3.5)
project({name})
find_package(catkin REQUIRED)
catkin_package()
catkin_install_python(PROGRAMS scripts/{node}.py
  DESTINATION ${{CATKIN_PACKAGE_BIN_DESTINATION}})
install(FILES scripts/{node}.json{onnx} DESTINATION ${{CATKIN_PACKAGE_BIN_DESTINATION}})
install(DIRECTORY launch DESTINATION ${{CATKIN_PACKAGE_SHARE_DESTINATION}})
"""


def _launch(name, node, d):
    """node_name and ns as arguments: two exported policies run side by side under two names
    or namespaces (ROS 1 stops the older of two nodes of one name)."""
    root = ET.Element("launch")
    ET.SubElement(root, "arg", name="node_name", default=node)
    ET.SubElement(root, "arg", name="ns", default=d["namespace"])
    extra = {}
    if d["kind"] == "onnx":  # the interpreter with rospy, numpy and onnxruntime ('': python3)
        ET.SubElement(root, "arg", name="python", default="")
        extra["launch-prefix"] = "$(arg python)"
    n = ET.SubElement(
        root,
        "node",
        pkg=name,
        type=f"{node}.py",
        name="$(arg node_name)",
        ns="$(arg ns)",
        output="screen",
        **extra,
    )
    for key in ("target", "gains", "modes", "params"):
        if d.get(key):
            ET.SubElement(n, "rosparam", param=key).text = json.dumps(d[key])
    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def topics_text(d):
    """What the node reads and publishes, for the READMEs (markdown)."""
    if d["topics"] == "robot":
        out = "`<ns>/reference_1` (equilibria, rad) and `<ns>/reference_2` (presets, rad)"
    else:
        out = "`<ns>/<joint>/equilibrium_position` and `<ns>/<joint>/stiffness_preset` (rad)"
    if d.get("release"):
        out += " and `<ns>/release` (std_msgs/Bool: True once, when the policy lets go)"
    return f"publishes {out} from `<ns>/joint_states`"


def readme_intro(name, d, script, data):
    """A README's title and first paragraph (markdown): what the node script does."""
    return f"""# {name}

A policy ({d["kind"]}) exported by asr (asr.ros.export) for the robot {d["robot"]}: the node
{script} {topics_text(d)}, with the data of {data}."""


_ONNX_NEEDS = (
    "numpy and onnxruntime in the same\nPython: `pip install numpy onnxruntime` for the ROS "
    "Python, or a virtual environment with them\nthat also sees the ROS packages (for example "
    "one created with `--system-site-packages`), given to\nthe launch file "
    "(`python:=/path/to/venv/bin/python`)."
)


# the Debian 12 packages the node's build and run need (of asr.ros.environment.DEBIAN_PACKAGES)
ROS1_DEBIAN = ("catkin", "ros-core", "python3-rospy", "python3-std-msgs", "python3-sensor-msgs")


def _readme(name, node, d):
    needs = _ONNX_NEEDS if d["kind"] == "onnx" else "nothing else (plain Python arithmetic)."
    return f"""{readme_intro(name, d, f"scripts/{node}.py", f"scripts/{node}.json")}

The node needs rospy, std_msgs and sensor_msgs (ROS 1) and {needs}

## Build and run

With ROS 1 from Debian 12's packages (`apt-get install {" ".join(ROS1_DEBIAN)}`), or with a
sourced ROS Noetic (`/opt/ros/noetic/setup.bash`), in the folder that holds this package's
folder (roslaunch starts a roscore when none runs at `ROS_MASTER_URI`):

    mkdir -p ws/src && cp -r {name} ws/src/
    cd ws && catkin_make
    . devel/setup.sh && roslaunch {name} {node}.launch ns:=robot1 node_name:=policy_1

The launch file's arguments: `ns` (the robot's namespace; default the export's,
`/{d["namespace"]}`), `node_name` (two policies at once: two names){
        ", `python` (the Python that runs the node)" if d["kind"] == "onnx" else ""
    }.
"""


def package_files(name, node, d, robot, onnx):
    """({path in the package: text or bytes}, the paths of executables) of package `name` with
    node `node` for the policy data d (asr.ros.export.policy_data); onnx: the ONNX policy
    (OnnxPolicy, bytes) the node runs, or None."""
    needs = (
        "Needs rospy, std_msgs, sensor_msgs, and numpy and onnxruntime (ONNX Runtime)."
        if onnx
        else "Needs only\nrospy, std_msgs and sensor_msgs (plain Python arithmetic: no numpy)."
    )
    files = {
        "package.xml": _package_xml(name, robot, d["kind"]),
        "CMakeLists.txt": _cmakelists(name, node, d["kind"]),
        "README.md": _readme(name, node, d),
        f"launch/{node}.launch": _launch(name, node, d),
        f"scripts/{node}.json": data_text(d),
        f"scripts/{node}.py": node_source(NODE_TEMPLATE, name, node, d, needs),
    }
    if onnx:
        files[f"scripts/{node}.onnx"] = onnx[1]
    return files, {f"scripts/{node}.py"}


def data_text(d):
    """The node's data file (JSON: floats round-trip exactly; a time table on one line)."""
    return json.dumps(d, indent=None if d["kind"] == "table" else 1) + "\n"


def node_source(template, name, node, d, needs):
    """The node's source from a template with the shared blocks (ONNX_BLOCK for an ONNX
    policy only: the other nodes import no numpy)."""
    return (
        template.replace("@ONNX@", ONNX_BLOCK if d["kind"] == "onnx" else "")
        .replace("@POLICY@", POLICY_BLOCK)
        .replace("@PACKAGE@", name)
        .replace("@NODE@", node)
        .replace("@DATA@", f"{node}.json")
        .replace("@KIND@", d["kind"])
        .replace("@NEEDS@", needs)
    )
