"""The message types asr speaks on ROS, with their full definitions (for rospy, for bags and
for exported packages) in one place.

The toolbox's per-joint `link_state` is its own message `state_info` (q, dq, ref_1, ref_2, tau,
stiff); asr defines the same fields as `asr_msgs/state_info`, generated at run time with genpy,
so Debian's `rostopic echo` and `rosbag check` read it from the full definition carried in the
connection header and in bags. Every other topic uses standard messages: std_msgs/Float64 for a
joint's scalar commands and elastic torques, std_msgs/Float64MultiArray for the robot-level
reference arrays, sensor_msgs/JointState for robot-level states.
"""
from asr.ros.environment import ros1

STATE_INFO = "asr_msgs/state_info"
# field: meaning, unit (q, dq: link or motor angle and velocity; ref_1, ref_2: the joint's two
# references in its mode's units; tau: link or motor torque; stiff: joint stiffness)
STATE_INFO_FIELDS = {"q": ("angle", "rad"), "dq": ("velocity", "rad/s"),
                     "ref_1": ("first reference", "mode's unit"),
                     "ref_2": ("second reference", "mode's unit"),
                     "tau": ("torque", "N m"), "stiff": ("stiffness", "N m/rad")}
STATE_INFO_DEFINITION = "".join(f"float64 {name}\n" for name in STATE_INFO_FIELDS)

_CLASSES = {}


def state_info_class():
    """The genpy message class of asr_msgs/state_info (generated once per process)."""
    if STATE_INFO not in _CLASSES:
        genpy_dynamic = ros1("genpy.dynamic")
        _CLASSES.update(genpy_dynamic.generate_dynamic(STATE_INFO, STATE_INFO_DEFINITION))
    return _CLASSES[STATE_INFO]
