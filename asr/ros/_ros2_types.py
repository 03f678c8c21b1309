"""ROS 2 Jazzy facts for asr's bags: the standard message types asr writes, their definitions and
type hashes as Jazzy computes them, the QoS profile the topics offer, and the metadata that
Jazzy's rosbag2 (0.26.x) writes: metadata.yaml version 9, per topic the type hash and the
offered QoS profiles as a YAML list; MCAP channels with the metadata "offered_qos_profiles" and
"topic_type_hash"; an MCAP metadata record "rosbag2" holding the same metadata. Also the
node's answer while it shuts down (CLOSING), which its ROS 2 modules share.

Type hashes are RIHS01 strings (REP-2011: "RIHS01_" and the hex SHA-256 of the type
description's canonical JSON), computed by rosbags from its Jazzy type store, so writing a bag
needs neither a ROS 2 install nor a table of hashes; tests/ros/test_ros2_bags.py compares them with
the hashes in Jazzy's share/<pkg>/msg/<Type>.json.
"""

import functools
import io

METADATA_VERSION = 9  # rosbag2 0.26 (Jazzy): bag_metadata.hpp's BagMetadata::version
ROS_DISTRO = "jazzy"
JOINT_STATE = "sensor_msgs/msg/JointState"
FLOAT64 = "std_msgs/msg/Float64"
FLOAT64_ARRAY = "std_msgs/msg/Float64MultiArray"
CLOCK = "rosgraph_msgs/msg/Clock"
TYPES = (JOINT_STATE, FLOAT64, FLOAT64_ARRAY, CLOCK)
# the QoS history depths of asr's ROS 2 topics (the node's asr.ros.ros2_node.qos_profiles, the
# exported policy nodes', bags' offered profiles): 1 s of messages at 1 kHz on state and command
# topics, so a subscriber that keeps up loses none; 100 on /clock. Reliable, volatile; deadline,
# lifespan and lease infinite, as rmw reports the defaults
QOS_DEPTH_CONTROL = 1000
QOS_DEPTH_CLOCK = 100
QOS_DEPTH = {CLOCK: QOS_DEPTH_CLOCK}
# what the node answers a request it cannot serve once it is closing (a step_period call, a
# SimulateSteps or FollowJointTrajectory goal: asr.ros.ros2_node.Ros2Node.close)
CLOSING = "the node is shutting down"
_INFINITE = {"sec": 9223372036, "nsec": 854775807}  # RMW_DURATION_INFINITE, 2**63 - 1 ns


@functools.cache
def typestore():
    """rosbags' type store of ROS 2 Jazzy (the standard messages' definitions)."""
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_JAZZY)


@functools.cache
def definition(msgtype):
    """(full ros2msg definition text with its dependencies, RIHS01 type hash) of `msgtype`."""
    store = typestore()
    text, _ = store.generate_msgdef(msgtype, ros_version=2)
    return text, store.hash_rihs01(msgtype)


def qos_profiles(msgtype):
    """The offered QoS profiles of a topic of type `msgtype`, as version 9 metadata lists them."""
    return [
        {
            "history": "keep_last",
            "depth": QOS_DEPTH.get(msgtype, QOS_DEPTH_CONTROL),
            "reliability": "reliable",
            "durability": "volatile",
            "deadline": dict(_INFINITE),
            "lifespan": dict(_INFINITE),
            "liveliness": "automatic",
            "liveliness_lease_duration": dict(_INFINITE),
            "avoid_ros_namespace_conventions": False,
        }
    ]


def dump_yaml(data):
    """Block-style YAML text of `data` (dicts keep their order), as rosbag2 writes it."""
    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096  # a type hash stays on its key's line
    yaml.representer.ignore_aliases = lambda _data: True  # repeated dicts written out, no &id
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def bag_metadata(storage, file_name, topics, counts, stamps_ns, custom_data):
    """rosbag2_bagfile_information of a bag of one storage file (version 9, Jazzy's layout).

    topics: [(name, msgtype)]; counts: messages per topic; stamps_ns: (first, last) record
    time, ns; custom_data: {str: str}."""
    start, end = stamps_ns
    total = sum(counts)
    return {
        "version": METADATA_VERSION,
        "storage_identifier": storage,
        "duration": {"nanoseconds": end - start},
        "starting_time": {"nanoseconds_since_epoch": start},
        "message_count": total,
        "topics_with_message_count": [
            {
                "topic_metadata": {
                    "name": name,
                    "type": msgtype,
                    "serialization_format": "cdr",
                    "offered_qos_profiles": qos_profiles(msgtype),
                    "type_description_hash": definition(msgtype)[1],
                },
                "message_count": n,
            }
            for (name, msgtype), n in zip(topics, counts)
        ],
        "compression_format": "",
        "compression_mode": "",
        "relative_file_paths": [file_name],
        "files": [
            {
                "path": file_name,
                "starting_time": {"nanoseconds_since_epoch": start},
                "duration": {"nanoseconds": end - start},
                "message_count": total,
            }
        ],
        "custom_data": dict(custom_data) or None,
        "ros_distro": ROS_DISTRO,
    }
