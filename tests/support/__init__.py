"""Helpers shared by the tests (no test module imports another): paths, batch and model
helpers, the dashboard server, the ROS 1 / ROS 2 machinery and its peers."""
