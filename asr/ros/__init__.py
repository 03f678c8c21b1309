"""asr and ROS 1: a live node behind the topics of the compliant-actuator toolbox
[Mengacci2021], policies and robots exported as ROS packages and URDF, rollouts as bags.

ROS 1 comes from the operating system (Debian 12: ros-core, python3-rospy, python3-rosbag,
python3-rostopic, python3-std-msgs, python3-sensor-msgs, python3-genpy, liburdfdom-tools; see
asr.ros.environment); bags are written with `rosbags` (PyPI). Everything here imports ROS lazily,
so `import asr` never needs it. See docs/ros.md.
"""
