"""A bare rclpy peer (no asr) that waits for a node on the ROS 2 graph: argv node name,
namespace, the topics the node must publish (one, or several separated by commas: DDS discovery
announces a node's publishers in no set order, so a test that judges several waits for them
all), and optionally a float that a transient_local std_msgs/Float64 on the first must carry.
Prints JSON {"found", "publishes" (every wanted topic seen), "value", "topics" (every topic the
node publishes, sorted)}; exits 1 when the node or its publishers did not show within
DEADLINE_S."""

import json
import sys
import time

import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64

DEADLINE_S = 30.0


def main():
    name, namespace, wanted = sys.argv[1:4]
    topic, wanted = wanted.split(",")[0], set(wanted.split(","))
    expect = float(sys.argv[4]) if len(sys.argv) > 4 else None
    rclpy.init()
    node = rclpy.create_node("graph_probe")
    got = []
    if expect is not None:
        latched = QoSProfile(
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        node.create_subscription(Float64, topic, lambda m: got.append(m.data), latched)
    found = publishes = False
    topics = set()
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
        found = (name, namespace) in node.get_node_names_and_namespaces()
        if found:
            topics = {t for t, _ in node.get_publisher_names_and_types_by_node(name, namespace)}
            publishes = wanted <= topics
        if found and publishes and (expect is None or got):
            break
    out = {"found": found, "publishes": publishes, "value": got[0] if got else None}
    out["topics"] = sorted(topics)
    node.destroy_node()
    rclpy.try_shutdown()
    print(json.dumps(out))
    return 0 if found and publishes and (expect is None or got) else 1


if __name__ == "__main__":
    sys.exit(main())
