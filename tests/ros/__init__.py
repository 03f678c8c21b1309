"""Tests of asr.ros (ROS 1 and ROS 2 nodes, bags, URDF, exported packages)."""
