"""asr.ros.bags: rollouts written as ROS 2 Jazzy bags (rosbag2 folder, MCAP storage as `ros2 bag
record` writes by default, or SQLite 3), checked with independent readers: the mcap package,
rosbags' rosbag2 reader, and Jazzy's own rclpy deserialising every message with the real
message classes in .venv-ros2; type hashes against Jazzy's share/<pkg>/msg/<Type>.json."""

import base64
import json
import subprocess

import numpy as np
import pytest

from asr.ros import _ros2_types as ros2
from asr.ros.bags import as_rollout, read_bag, write_bag
from tests.conftest import require
from tests.support.bags import RECORD, STEPS, run, stamps_ns  # noqa: F401 (run: a fixture)
from tests.support.paths import SUPPORT  # noqa: E402
from tests.support.ros2 import ROS2_VENV, bare_env, ros2_python

PEER = SUPPORT / "ros2_peers" / "bag_deserialize.py"
# topic below an instance's namespace -> message type, for a rollout that recorded RECORD
PER_INSTANCE = {
    "joint_states": ros2.JOINT_STATE,
    "motor_states": ros2.JOINT_STATE,
    "held_references": ros2.FLOAT64_ARRAY,
    **{
        f"{j}/{t}": ros2.JOINT_STATE
        for j in ("joint1", "joint2")
        for t in ("link_state", "motor_1_state", "motor_2_state")
    },
    **{
        f"{j}/{t}": ros2.FLOAT64
        for j in ("joint1", "joint2")
        for t in ("torque_el1_state", "torque_el2_state", "stiffness")
    },
}
ALL_TOPICS = {f"/instance_{k}/{t}": v for k in (0, 1) for t, v in PER_INSTANCE.items()}
ALL_TOPICS["/clock"] = ros2.CLOCK


def metadata(path):
    yaml = require("yaml")
    return yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]


def jazzy_hash(msgtype):
    """The RIHS01 hash of `msgtype` in Jazzy's share/<pkg>/msg/<Type>.json (.venv-ros2)."""
    pkg, _, name = msgtype.split("/")
    doc = json.loads((ROS2_VENV / "share" / pkg / "msg" / f"{name}.json").read_text())
    return {h["type_name"]: h["hash_string"] for h in doc["type_hashes"]}[msgtype]


@pytest.fixture(scope="module")
def bag(run, tmp_path_factory):  # noqa: F811
    """(sim, out, path): every instance of `run` as an MCAP rosbag2 folder "arm"."""
    sim, out = run
    return sim, out, write_bag(out, tmp_path_factory.mktemp("ros2") / "arm", "ros2", sim=sim)


def test_metadata_is_jazzys(bag):
    sim, _, path = bag
    assert sorted(p.name for p in path.iterdir()) == ["arm_0.mcap", "metadata.yaml"]
    info = metadata(path)
    assert info["version"] == 9 and info["ros_distro"] == "jazzy"
    assert info["storage_identifier"] == "mcap" and info["relative_file_paths"] == ["arm_0.mcap"]
    want_t = stamps_ns(sim.dt)
    assert info["starting_time"] == {"nanoseconds_since_epoch": want_t[0]}
    assert info["duration"] == {"nanoseconds": want_t[-1] - want_t[0]}
    assert info["message_count"] == len(ALL_TOPICS) * STEPS
    assert info["files"] == [
        {
            "path": "arm_0.mcap",
            "starting_time": info["starting_time"],
            "duration": info["duration"],
            "message_count": info["message_count"],
        }
    ]
    assert info["custom_data"] == {"asr.robot": "qbmove_arm_2dof", "asr.dt_s": repr(sim.dt)}
    assert info["compression_mode"] == "" and info["compression_format"] == ""
    topics = {t["topic_metadata"]["name"]: t for t in info["topics_with_message_count"]}
    assert {t: m["topic_metadata"]["type"] for t, m in topics.items()} == ALL_TOPICS
    for name, t in topics.items():
        meta = t["topic_metadata"]
        assert t["message_count"] == STEPS and meta["serialization_format"] == "cdr"
        assert meta["type_description_hash"] == ros2.definition(meta["type"])[1]
        (qos,) = meta["offered_qos_profiles"]  # version 9: a YAML list, names not numbers
        assert (qos["history"], qos["reliability"], qos["durability"]) == (
            "keep_last",
            "reliable",
            "volatile",
        )
        assert qos["depth"] == (100 if name == "/clock" else 1000)
        assert qos["deadline"] == {"sec": 9223372036, "nsec": 854775807}


def test_mcap_file_read_by_mcap_package(bag):
    mcap_reader = require("mcap.reader")
    yaml = require("yaml")
    sim, out, path = bag
    info = metadata(path)
    topics = {
        t["topic_metadata"]["name"]: t["topic_metadata"] for t in info["topics_with_message_count"]
    }
    want_t = stamps_ns(sim.dt)
    counts = {}
    with open(path / "arm_0.mcap", "rb") as f:
        reader = mcap_reader.make_reader(f)
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
        assert {s.name for s in summary.schemas.values()} == set(ros2.TYPES)
        for s in summary.schemas.values():
            assert s.encoding == "ros2msg" and s.data.decode() == ros2.definition(s.name)[0]
        chans = {c.topic: c for c in summary.channels.values()}
        assert set(chans) == set(ALL_TOPICS)
        for topic, c in chans.items():
            assert summary.schemas[c.schema_id].name == ALL_TOPICS[topic]
            assert c.message_encoding == "cdr"
            assert set(c.metadata) == {"offered_qos_profiles", "topic_type_hash"}
            assert c.metadata["topic_type_hash"] == topics[topic]["type_description_hash"]
            qos = yaml.safe_load(c.metadata["offered_qos_profiles"])
            assert qos == topics[topic]["offered_qos_profiles"]
        assert set(summary.statistics.channel_message_counts.values()) == {STEPS}
        (record,) = list(reader.iter_metadata())
        assert record.name == "rosbag2"
        assert yaml.safe_load(record.metadata["serialized_metadata"]) == info
        for _schema, channel, message in reader.iter_messages(log_time_order=True):
            k = counts[channel.topic] = counts.get(channel.topic, -1) + 1
            assert message.log_time == message.publish_time == want_t[k]
            assert message.data[:4] == b"\x00\x01\x00\x00"  # CDR, little endian
    assert counts == {t: STEPS - 1 for t in ALL_TOPICS}
    for p in (path, path / "arm_0.mcap"):  # the folder, or the .mcap file alone
        back = as_rollout(read_bag(p))
        assert np.array_equal(back["t"], np.array(want_t) * 1e-9)
        assert back["joint_names"] == ("joint1", "joint2")
        assert set(back) - {"t", "joint_names"} == set(RECORD)
        for f in RECORD:
            assert np.array_equal(back[f], out[f]), (p, f)


def raw_messages(path):
    """[(topic, msgtype, record time ns, CDR bytes)] of a rosbag2 folder, via rosbags."""
    from rosbags.rosbag2 import Reader

    with Reader(path) as reader:
        for c in reader.connections:
            assert c.digest == ros2.definition(c.msgtype)[1], c.topic
        return [(c.topic, c.msgtype, t, bytes(d)) for c, t, d in reader.messages()]


def test_sqlite3_and_mcap_alias_hold_the_same_messages(bag, tmp_path):
    require("rosbags")
    sim, out, path = bag
    ref = raw_messages(path)
    assert len(ref) == len(ALL_TOPICS) * STEPS
    for fmt, files in (("mcap", ["b_0.mcap"]), ("ros2-sqlite3", ["b.db3"])):
        (tmp_path / fmt).mkdir()
        other = write_bag(out, tmp_path / fmt / "b", fmt, sim=sim)
        assert sorted(p.name for p in other.iterdir()) == sorted(files + ["metadata.yaml"])
        info = metadata(other)
        assert info["version"] == 9
        hashes = {
            t["topic_metadata"]["type"]: t["topic_metadata"]["type_description_hash"]
            for t in info["topics_with_message_count"]
        }
        assert hashes == {t: ros2.definition(t)[1] for t in ros2.TYPES}
        key = lambda m: (m[2], m[0])  # noqa: E731 (time, then topic: storages may interleave)
        assert sorted(raw_messages(other), key=key) == sorted(ref, key=key), fmt
        (js,) = read_bag(other, topics=["/instance_1/joint_states"]).values()
        assert np.array_equal(js["position"], out["q"][1])


@pytest.mark.ros2
def test_type_hashes_are_jazzys(bag):
    ros2_python()  # .venv-ros2 with Jazzy's message packages (fail in CI, skip elsewhere)
    for msgtype in ros2.TYPES:
        assert ros2.definition(msgtype)[1] == jazzy_hash(msgtype), msgtype
    for t in metadata(bag[2])["topics_with_message_count"]:
        meta = t["topic_metadata"]
        assert meta["type_description_hash"] == jazzy_hash(meta["type"]), meta["name"]


@pytest.mark.ros2
@pytest.mark.slow
def test_rclpy_deserialises_every_message(bag, tmp_path):
    """Every stored message, deserialised by Jazzy's rclpy with the real classes in a
    .venv-ros2 process, holds exactly the rollout's values and stamps."""
    python = ros2_python()
    sim, out, path = bag
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.json"
    with open(src, "w") as f:
        for topic, msgtype, _, data in raw_messages(path):
            rec = {"topic": topic, "type": msgtype, "data": base64.b64encode(data).decode()}
            f.write(json.dumps(rec) + "\n")
    r = subprocess.run(
        [python, str(PEER), str(src), str(dst)],
        env=bare_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(dst.read_text())
    assert {t: d["type"] for t, d in got.items()} == ALL_TOPICS
    want_t = stamps_ns(sim.dt)
    assert got["/clock"]["stamp_ns"] == want_t
    names = ["joint1", "joint2"]
    motor_names = [f"{j}_motor_{m}" for j in names for m in (1, 2)]
    for k in (0, 1):
        ns = f"/instance_{k}"

        def joint_state(topic, names, keys, cols, ns=ns, k=k):
            d = got[f"{ns}/{topic}"]
            assert d["stamp_ns"] == want_t and all(n == names for n in d["name"])
            for key, f in zip(("position", "velocity", "effort"), keys):
                assert np.array_equal(np.array(d[key]), f[k][:, cols]), (topic, key)

        joint_state("joint_states", names, [out[f] for f in ("q", "qd", "tau_joint")], [0, 1])
        motors = [
            np.stack([out[a], out[b]], axis=-1).reshape(2, STEPS, 4)
            for a, b in (("th1", "th2"), ("th1d", "th2d"), ("tau_m1", "tau_m2"))
        ]
        joint_state("motor_states", motor_names, motors, slice(None))
        for j, jn in enumerate(names):
            joint_state(f"{jn}/link_state", [jn], [out[f] for f in ("q", "qd", "tau_joint")], [j])
            for m in (1, 2):
                keys = [out[f] for f in (f"th{m}", f"th{m}d", f"tau_m{m}")]
                joint_state(f"{jn}/motor_{m}_state", [f"{jn}_motor_{m}"], keys, [j])
            for topic, f in (
                ("torque_el1_state", "tau_el1"),
                ("torque_el2_state", "tau_el2"),
                ("stiffness", "stiffness"),
            ):
                assert got[f"{ns}/{jn}/{topic}"]["data"] == out[f][k, :, j].tolist(), topic
        held = got[f"{ns}/held_references"]
        assert all(d == [["joints", 2, 4], ["references", 2, 2]] for d in held["dim"])
        refs = np.stack([out["ref1"][k], out["ref2"][k]], axis=-1).reshape(STEPS, 4)
        assert np.array_equal(np.array(held["data"]), refs)
