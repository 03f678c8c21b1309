"""`asr ros2 --lean` (run_ros2_node(lean=True)): the node publishes the first ROS 2 node's topics
only, none of robot_description, /tf_static, /tf, actuator_states, held_references_stamped;
without it, all of them. Real ROS 2: the node in a subprocess, a bare rclpy graph probe
(tests/support/ros2_peers/graph_probe.py) reads the topics it publishes from the ROS graph."""

import pytest

from tests.support.ros2 import NodeProcess, ros2_interfaces, run_peer
from tests.support.ros2_node import RATE, ROBOT

pytestmark = [pytest.mark.ros2]

NEW = {"/tf", "/tf_static", "/full/robot_description", "/full/actuator_states"}
NEW |= {"/full/held_references_stamped"}
KEPT = {"joint_states", "motor_states", "held_references", "joint1/stiffness"}


@pytest.mark.parametrize("lean", [True, False])
def test_lean_publishes_none_of_the_new_topics(tmp_path, lean):
    ros2_interfaces()  # tf2_msgs and asr_msgs built: the full node publishes every topic
    ns = "lean" if lean else "full"
    with NodeProcess(tmp_path, robot=ROBOT, rate=RATE, namespace=ns, lean=lean) as n:
        # the probe waits for every topic the node must publish: DDS discovery announces them in
        # no set order (a full node's joint1/stiffness once showed after its stamped topics)
        wanted = {f"/{ns}/{t}" for t in KEPT}
        wanted |= set() if lean else {t.replace("/full/", f"/{ns}/") for t in NEW}
        got = run_peer("graph_probe.py", "asr", f"/{ns}", ",".join(sorted(wanted)))
        assert n.stop() == 0, n.log()[-2000:]
    topics = set(got["topics"])
    assert {f"/{ns}/{t}" for t in KEPT} <= topics, sorted(topics)
    new = {t.replace("/full/", f"/{ns}/") for t in NEW}
    assert not (new & topics) if lean else new <= topics, (sorted(new - topics), sorted(topics))
