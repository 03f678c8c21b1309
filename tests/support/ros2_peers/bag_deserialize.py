"""Deserialise a bag's raw messages with ROS 2 Jazzy's own classes (run with .venv-ros2's Python,
without asr): `python bag_deserialize.py IN.jsonl OUT.json`.

IN.jsonl: one message a line, {"topic", "type" (pkg/msg/Type), "data" (base64 of the CDR bytes
as stored in the bag)}. OUT.json: {topic: {"type", "stamp_ns": [...], fields: [...]}} with, per
message in order, JointState name / position / velocity / effort, Float64 data, Float64MultiArray
data and its layout's (label, size, stride) triples, Clock's time in ns. Floats go through JSON
exactly (Python writes the shortest repr that reads back to the same double).
"""

import base64
import importlib
import json
import sys

from rclpy.serialization import deserialize_message


def message_class(type_name):
    pkg, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


def ns(t):
    return t.sec * 1_000_000_000 + t.nanosec


def fields(msg, type_name):
    if type_name == "sensor_msgs/msg/JointState":
        return {
            "stamp_ns": ns(msg.header.stamp),
            "name": list(msg.name),
            "position": list(msg.position),
            "velocity": list(msg.velocity),
            "effort": list(msg.effort),
        }
    if type_name == "std_msgs/msg/Float64":
        return {"data": msg.data}
    if type_name == "std_msgs/msg/Float64MultiArray":
        dims = [[d.label, d.size, d.stride] for d in msg.layout.dim]
        return {"data": list(msg.data), "dim": dims}
    if type_name == "rosgraph_msgs/msg/Clock":
        return {"stamp_ns": ns(msg.clock)}
    raise SystemExit(f"unexpected type {type_name}")


def main(src, dst):
    out = {}
    with open(src) as f:
        for line in f:
            rec = json.loads(line)
            msg = deserialize_message(base64.b64decode(rec["data"]), message_class(rec["type"]))
            entry = out.setdefault(rec["topic"], {"type": rec["type"]})
            for key, value in fields(msg, rec["type"]).items():
                entry.setdefault(key, []).append(value)
    with open(dst, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
