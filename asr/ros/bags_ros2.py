"""ROS 2 bags of asr rollouts, as ROS 2 Jazzy's `ros2 bag record` writes them: a rosbag2 folder
with metadata.yaml (version 9) and one storage file, `<folder>_0.mcap` (MCAP, Jazzy's default
storage) or `<folder>.db3` (SQLite 3, written by rosbags), CDR messages of standard types only (see
asr.ros._ros2_types for the versions, type hashes and QoS). Called by asr.ros.bags.write_bag.
"""

import shutil

from asr.common.optional import need
from asr.common.version import __version__
from asr.ros import _ros2_types as ros2
from asr.ros._bag_layout import MSGTYPE, layout

_CHUNK_BYTES = 768 * 1024  # the MCAP C++ writer's default chunk size, which rosbag2 keeps


def _messages(fields, names, instances, stamps):
    """(topics [(name, msgtype)], generator of (step, topic index, CDR bytes) in time order)."""
    store = ros2.typestore()
    T = store.types
    Header, Time = T["std_msgs/msg/Header"], T["builtin_interfaces/msg/Time"]
    Dim = T["std_msgs/msg/MultiArrayDimension"]
    entries = layout(2, fields, names, instances)
    topics = [(t, MSGTYPE[kind]) for t, kind, _ in entries]

    def build(kind, content, header, stamp):
        if kind == "js":
            name, position, velocity, effort = content
            return T[ros2.JOINT_STATE](
                header=header, name=list(name), position=position, velocity=velocity, effort=effort
            )
        if kind == "f64":
            return T[ros2.FLOAT64](data=content)
        if kind == "f64ma":  # held_references: (J, 2) row-major, the node's layout
            nj = len(content) // 2
            dims = [Dim(label="joints", size=nj, stride=2 * nj), Dim("references", 2, 2)]
            layout_msg = T["std_msgs/msg/MultiArrayLayout"](dim=dims, data_offset=0)
            return T[ros2.FLOAT64_ARRAY](layout=layout_msg, data=content)
        return T[ros2.CLOCK](clock=stamp)

    def generate():
        for s, ns_total in enumerate(stamps):
            stamp = Time(sec=int(ns_total // 1_000_000_000), nanosec=int(ns_total % 1_000_000_000))
            header = Header(stamp=stamp, frame_id="")
            for i, (_, kind, get) in enumerate(entries):
                msg = build(kind, get(s), header, stamp)
                yield s, i, bytes(store.serialize_cdr(msg, topics[i][1]))

    return topics, generate()


def write_ros2(path, storage, fields, names, robot, instances, stamps, dt):
    """Write the rosbag2 folder `path` (not existing yet) with storage "mcap" or "sqlite3"; a
    failed write leaves no folder behind."""
    custom = {"asr.robot": robot, "asr.dt_s": repr(dt)}
    path.mkdir()
    try:
        if storage == "mcap":
            _write_mcap(path, fields, names, instances, stamps, custom)
        else:
            _write_sqlite3(path, fields, names, instances, stamps, custom)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise


def _write_mcap(path, fields, names, instances, stamps, custom):
    need("mcap", "ros", "asr.ros.write_bag(format='ros2')")
    from mcap.writer import CompressionType, Writer

    file_name = f"{path.name}_0.mcap"
    topics, messages = _messages(fields, names, instances, stamps)
    counts = [0] * len(topics)
    with open(path / file_name, "wb") as f:
        writer = Writer(f, chunk_size=_CHUNK_BYTES, compression=CompressionType.NONE)
        writer.start(profile="ros2", library=f"asr {__version__}")
        schemas, channels = {}, []
        for topic, msgtype in topics:
            text, rihs01 = ros2.definition(msgtype)
            if msgtype not in schemas:
                schemas[msgtype] = writer.register_schema(msgtype, "ros2msg", text.encode())
            qos = ros2.dump_yaml(ros2.qos_profiles(msgtype))
            meta = {"offered_qos_profiles": qos, "topic_type_hash": rihs01}
            channels.append(writer.register_channel(topic, "cdr", schemas[msgtype], meta))
        for s, i, data in messages:
            t = int(stamps[s])
            writer.add_message(channels[i], log_time=t, data=data, publish_time=t)
            counts[i] += 1
        meta = ros2.bag_metadata(
            "mcap", file_name, topics, counts, (int(stamps[0]), int(stamps[-1])), custom
        )
        writer.add_metadata("rosbag2", {"serialized_metadata": ros2.dump_yaml(meta)})
        writer.finish()
    text = ros2.dump_yaml({"rosbag2_bagfile_information": meta})
    (path / "metadata.yaml").write_text(text, encoding="utf-8")


def _write_sqlite3(path, fields, names, instances, stamps, custom):
    """SQLite 3 storage through rosbags' writer (version 9 metadata; its ros_distro reads
    "rosbags"); the folder made by write_ros2 is handed over empty."""
    from rosbags.interfaces import (
        Qos,
        QosDurability,
        QosHistory,
        QosLiveliness,
        QosReliability,
        QosTime,
    )
    from rosbags.rosbag2 import StoragePlugin, Writer

    def qos(msgtype):
        p = ros2.qos_profiles(msgtype)[0]
        return Qos(
            QosHistory[p["history"].upper()],
            p["depth"],
            QosReliability[p["reliability"].upper()],
            QosDurability[p["durability"].upper()],
            QosTime(**p["deadline"]),
            QosTime(**p["lifespan"]),
            QosLiveliness[p["liveliness"].upper()],
            QosTime(**p["liveliness_lease_duration"]),
            p["avoid_ros_namespace_conventions"],
        )

    path.rmdir()
    topics, messages = _messages(fields, names, instances, stamps)
    with Writer(path, version=ros2.METADATA_VERSION, storage_plugin=StoragePlugin.SQLITE3) as w:
        for key, value in custom.items():
            w.set_custom_data(key, value)
        conns = []
        for topic, msgtype in topics:
            text, rihs01 = ros2.definition(msgtype)
            conns.append(
                w.add_connection(
                    topic, msgtype, msgdef=text, rihs01=rihs01, offered_qos_profiles=[qos(msgtype)]
                )
            )
        for s, i, data in messages:
            w.write(conns[i], int(stamps[s]), data)
