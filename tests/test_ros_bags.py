"""asr.ros.bags: rollouts written as ROS 1 / ROS 2 / MCAP bags, checked with independent readers
(Debian's rosbag Python API and command-line tools, rosbags' rosbag2 reader, the mcap package),
and a bag recorded by `rosbag record` from a rospy publisher read back with read_bag."""

import os
import signal
import struct
import subprocess

import numpy as np
import pytest
from conftest import require, require_ros1

import asr
from asr.iterative_learning import ILCResult
from asr.parameter_sweep import SweepResult
from asr.ros.bags import as_rollout, read_bag, write_bag
from asr.ros.environment import tool_env
from asr.ros.messages import STATE_INFO_DEFINITION, STATE_INFO_FIELDS

pytestmark = pytest.mark.ros

STEPS = 200
RECORD = asr.sim.DEFAULT_RECORD + (
    "ref1",
    "ref2",
    "th1d",
    "th2d",
    "tau_m1",
    "tau_m2",
    "tau_el1",
    "tau_el2",
)
LINK = {
    "q": "q",
    "dq": "qd",
    "ref_1": "ref1",
    "ref_2": "ref2",
    "tau": "tau_joint",
    "stiff": "stiffness",
}


@pytest.fixture(scope="module")
def run():
    """(sim, out): 2 instances of the 2-DOF arm with different references, 200 steps."""
    sim = asr.Sim("qbmove_arm_2dof", 2)
    refs = np.array([[[0.3, 0.2], [-0.2, 0.4]], [[0.5, 0.1], [0.1, 0.3]]])
    return sim, sim.rollout(STEPS, refs, record=RECORD)


def stamps_ns(dt, t0=0.0, steps=STEPS):
    return [round(t0 * 1e9) + round((k + 1) * dt * 1e9) for k in range(steps)]


def run_tool(args, env, timeout=60):
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout


# ---------------------------------------------------------------- ROS 1


def test_ros1_read_by_debian_rosbag(run, tmp_path):
    rosbag = require_ros1("rosbag")
    sensor_msgs, std_msgs = require_ros1("sensor_msgs.msg"), require_ros1("std_msgs.msg")
    sim, out = run
    path = write_bag(out, tmp_path / "arm.bag", sim=sim, instance=1)
    want_t = stamps_ns(sim.dt)
    seen = {}
    with rosbag.Bag(str(path)) as bag:
        info = bag.get_type_and_topic_info()
        assert info.topics["/joint_states"].msg_type == "sensor_msgs/JointState"
        assert info.topics["/joint1/link_state"].msg_type == "asr_msgs/state_info"
        assert info.topics["/joint2/torque_el2_state"].msg_type == "std_msgs/Float64"
        assert info.msg_types["sensor_msgs/JointState"] == sensor_msgs.JointState._md5sum
        assert info.msg_types["std_msgs/Float64"] == std_msgs.Float64._md5sum
        assert info.msg_types["asr_msgs/state_info"] == asr.ros.messages.state_info_class()._md5sum
        for topic, msg, t in bag.read_messages():
            k = len(seen.setdefault(topic, []))
            seen[topic].append(t.to_nsec())
            if topic.count("/") == 1:  # robot-level JointState
                assert msg.header.stamp.to_nsec() == t.to_nsec() == want_t[k]
                assert tuple(msg.name) == ("joint1", "joint2")
                p, v, e = {
                    "/motor_1_state": ("th1", "th1d", "tau_m1"),
                    "/motor_2_state": ("th2", "th2d", "tau_m2"),
                }.get(topic, ("q", "qd", "tau_joint"))
                assert list(msg.position) == out[p][1, k].tolist()
                assert list(msg.velocity) == out[v][1, k].tolist()
                assert list(msg.effort) == out[e][1, k].tolist()
            elif topic.endswith("/link_state") or topic.endswith("/motor_2_state"):
                j = int(topic.split("/")[1][-1]) - 1
                fmap = (
                    LINK
                    if topic.endswith("link_state")
                    else dict(LINK, q="th2", dq="th2d", tau="tau_m2")
                )
                for f, src in fmap.items():
                    assert getattr(msg, f) == out[src][1, k, j], (topic, f, k)
            elif topic.endswith("/torque_el1_state"):
                assert msg.data == out["tau_el1"][1, k, int(topic.split("/")[1][-1]) - 1]
    assert len(seen) == 14  # 4 robot-level + 2 joints x 5
    for topic, ts in seen.items():
        assert ts == want_t, topic


def test_rosbag_info_and_check(run, tmp_path):
    require_ros1("rosbag")
    yaml = require("yaml")
    sim, out = run
    path = write_bag(
        {f: out[f] for f in ("q", "qd", "tau_joint", "stiffness")},
        tmp_path / "arm.bag",
        dt=sim.dt,
        joint_names=("joint1", "joint2"),
        instance=0,
    )
    env = tool_env()
    info = yaml.safe_load(run_tool(["rosbag", "info", "--yaml", str(path)], env))
    assert info["messages"] == 4 * STEPS
    assert {t["topic"]: (t["type"], t["messages"]) for t in info["topics"]} == {
        "/joint_states": ("sensor_msgs/JointState", STEPS),
        "/robot_state": ("sensor_msgs/JointState", STEPS),
        "/joint1/link_state": ("asr_msgs/state_info", STEPS),
        "/joint2/link_state": ("asr_msgs/state_info", STEPS),
    }
    assert info["start"] == pytest.approx(sim.dt) and info["end"] == pytest.approx(STEPS * sim.dt)
    # rosbag check needs asr_msgs importable: a package made here from the message definition
    pkg = tmp_path / "py" / "asr_msgs" / "msg"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(
        "import genpy.dynamic\nstate_info = genpy.dynamic.generate_dynamic("
        f"'asr_msgs/state_info', {STATE_INFO_DEFINITION!r})['asr_msgs/state_info']\n"
    )
    env["PYTHONPATH"] = str(tmp_path / "py")
    checked = run_tool(["rosbag", "check", str(path)], env)
    assert "does not need any migrations" in checked, checked


def test_read_bag_round_trip_all_instances(run, tmp_path):
    sim, out = run
    path = write_bag(out, tmp_path / "all.bag", sim=sim, t0=2.5)
    topics = read_bag(path)
    assert len(topics) == 2 * 14
    assert "/instance_1/joint2/motor_1_state" in topics and "/joint_states" not in topics
    si = topics["/instance_0/joint1/link_state"]
    assert set(si) == {"type", "t", "t_record"} | set(STATE_INFO_FIELDS)
    back = as_rollout(topics)
    assert back["joint_names"] == ("joint1", "joint2")
    want_t = np.array(stamps_ns(sim.dt, 2.5)) * 1e-9
    assert np.array_equal(back["t"], want_t)
    assert set(back) - {"t", "joint_names"} == set(RECORD)
    for f in RECORD:
        assert back[f].shape == (2, STEPS, 2)
        assert np.array_equal(back[f], out[f]), f
    assert not np.array_equal(back["q"][0], back["q"][1])  # instances stay apart
    # one topic, single instance
    one = read_bag(
        write_bag(out, tmp_path / "one.bag", sim=sim, instance=0), topics="/joint_states"
    )
    assert list(one) == ["/joint_states"]
    assert np.array_equal(one["/joint_states"]["position"], out["q"][0])


def test_ilc_result(tmp_path):
    rng = np.random.default_rng(1)
    n, T, J = 2, 30, 2
    res = ILCResult(
        input=rng.normal(size=(n, T, J)),
        errors=np.ones((1, n)),
        iterations=np.ones(n, int),
        converged=np.zeros(n, bool),
        reference=rng.normal(size=(n, T, J)),
        dt=0.002,
        wall_s=0.0,
        tol=0.01,
        presets=rng.normal(size=(n, J)),
        output=rng.normal(size=(n, T, J)),
        metadata={"robot": "qbmove_arm_2dof", "joints": ["joint1", "joint2"]},
    )
    back = as_rollout(read_bag(write_bag(res, tmp_path / "ilc.bag")))
    assert np.array_equal(back["q"], res.output)
    assert np.array_equal(back["ref1"], res.input)
    assert np.array_equal(back["ref2"], np.repeat(res.presets[:, None], T, axis=1))
    assert np.array_equal(back["t"], np.array(stamps_ns(0.002, steps=T)) * 1e-9)
    assert np.array_equal(back["t"], np.rint(res.time * 1e9) * 1e-9)
    assert "qd" not in back and "tau_joint" not in back  # empty JointState arrays
    assert np.array_equal(back["stiffness"], np.zeros((n, T, J)))  # absent state_info field


# ---------------------------------------------------------------- ROS 2 and MCAP


def test_ros2_sqlite_read_by_rosbags(run, tmp_path):
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    sim, out = run
    path = write_bag(out, tmp_path / "arm_ros2", "ros2", sim=sim, instance=0)
    assert (path / "metadata.yaml").is_file() and list(path.glob("*.db3"))
    store = get_typestore(Stores.ROS2_HUMBLE)
    store.register(get_types_from_msg(STATE_INFO_DEFINITION, "asr_msgs/msg/StateInfo"))
    want_t = stamps_ns(sim.dt)
    counts = {}
    with Reader(path) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
        assert types["/joint_states"] == "sensor_msgs/msg/JointState"
        assert types["/joint2/link_state"] == "asr_msgs/msg/StateInfo"
        assert types["/joint1/torque_el1_state"] == "std_msgs/msg/Float64"
        for conn, t, data in reader.messages():
            k = counts[conn.topic] = counts.get(conn.topic, -1) + 1
            assert t == want_t[k]
            msg = store.deserialize_cdr(data, conn.msgtype)
            if conn.topic == "/joint_states":
                assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == t
                assert np.array_equal(msg.position, out["q"][0, k])
                assert np.array_equal(msg.effort, out["tau_joint"][0, k])
            elif conn.topic == "/joint2/link_state":
                assert [getattr(msg, f) for f in LINK] == [out[s][0, k, 1] for s in LINK.values()]
    assert len(counts) == 14 and set(counts.values()) == {STEPS - 1}
    back = as_rollout(read_bag(path))
    for f in RECORD:
        assert np.array_equal(back[f], out[f][:1]), f


def test_mcap_read_by_mcap_package(run, tmp_path):
    mcap_reader = require("mcap.reader")
    sim, out = run
    path = write_bag(out, tmp_path / "arm_mcap", "mcap", sim=sim)
    files = list(path.glob("*.mcap"))
    assert len(files) == 1 and (path / "metadata.yaml").is_file()
    want_t = stamps_ns(sim.dt)
    counts = {}
    with open(files[0], "rb") as f:
        reader = mcap_reader.make_reader(f)
        summary = reader.get_summary()
        chans = {c.topic: c for c in summary.channels.values()}
        assert len(chans) == 2 * 14
        assert summary.statistics.message_count == 2 * 14 * STEPS
        for topic, schema in (
            ("/instance_1/joint_states", "sensor_msgs/msg/JointState"),
            ("/instance_0/joint1/link_state", "asr_msgs/msg/StateInfo"),
        ):
            assert summary.schemas[chans[topic].schema_id].name == schema
            assert summary.schemas[chans[topic].schema_id].encoding == "ros2msg"
            assert chans[topic].message_encoding == "cdr"
        assert (
            "float64 stiff"
            in summary.schemas[chans["/instance_0/joint1/link_state"].schema_id].data.decode()
        )
        for _schema, channel, message in reader.iter_messages(log_time_order=True):
            k = counts[channel.topic] = counts.get(channel.topic, -1) + 1
            assert message.log_time == message.publish_time == want_t[k]
            data = message.data
            assert data[:4] == b"\x00\x01\x00\x00"  # CDR, little endian
            if channel.topic.endswith("joint_states"):  # header.stamp: int32, uint32
                sec, nsec = struct.unpack_from("<iI", data, 4)
                assert sec * 10**9 + nsec == want_t[k]
            elif channel.topic.endswith("/joint2/link_state"):  # six float64, 8-aligned
                i = int(channel.topic.split("/")[1].rsplit("_", 1)[1])
                got = struct.unpack_from("<6d", data, 4)
                assert list(got) == [out[s][i, k, 1] for s in LINK.values()]
    assert set(counts.values()) == {STEPS - 1}
    for p in (path, files[0]):  # the folder, or the .mcap file alone
        back = as_rollout(read_bag(p))
        for f in RECORD:
            assert np.array_equal(back[f], out[f]), (p, f)


# ---------------------------------------------------------------- errors


def test_bad_input(run, tmp_path):
    sim, out = run
    with pytest.raises(ValueError, match=r"format: got 'ros3'.*'ros1', 'ros2', 'mcap'"):
        write_bag(out, tmp_path / "a.bag", "ros3", sim=sim)
    with pytest.raises(ValueError, match=r"path: the folder .*nowhere.* does not exist"):
        write_bag(out, tmp_path / "nowhere" / "a.bag", sim=sim)
    with pytest.raises(TypeError, match=r"dt: .*pass dt="):
        write_bag(out, tmp_path / "a.bag", joint_names=("joint1", "joint2"))
    with pytest.raises(ValueError, match=r"dt: got -0.001, valid range"):
        write_bag(out, tmp_path / "a.bag", dt=-0.001, joint_names=("joint1", "joint2"))
    with pytest.raises(TypeError, match=r"joint_names: .*pass joint_names="):
        write_bag(out, tmp_path / "a.bag", dt=0.001)
    with pytest.raises(ValueError, match=r"joint_names: got 1 names.*J = 2"):
        write_bag(out, tmp_path / "a.bag", dt=0.001, joint_names=("joint1",))
    with pytest.raises(ValueError, match=r"instance: got 2, valid range 0 to 1 \(N = 2\)"):
        write_bag(out, tmp_path / "a.bag", sim=sim, instance=2)
    with pytest.raises(ValueError, match=r"path: .*a\.db3.* ends in \.bag"):
        write_bag(out, tmp_path / "a.db3", sim=sim)
    with pytest.raises(ValueError, match=r"t0: got -1.0, valid range"):
        write_bag(out, tmp_path / "a.bag", sim=sim, t0=-1.0)
    with pytest.raises(ValueError, match=r"result: no 'q'"):
        write_bag({"qd": out["qd"]}, tmp_path / "a.bag", sim=sim)
    with pytest.raises(ValueError, match=r"result\['qd'\]: shape \(2, 10, 2\) differs"):
        write_bag({"q": out["q"], "qd": out["qd"][:, :10]}, tmp_path / "a.bag", sim=sim)
    with pytest.raises(TypeError, match=r"result: a SweepResult keeps per-sample metrics"):
        write_bag(
            SweepResult(("joint1.kp",), np.zeros((1, 1)), {}, np.ones(1, bool), {}),
            tmp_path / "a.bag",
            sim=sim,
        )
    with pytest.raises(TypeError, match=r"result: got list"):
        write_bag([1, 2], tmp_path / "a.bag", sim=sim)
    write_bag(out, tmp_path / "a.bag", sim=sim, instance=0)
    with pytest.raises(ValueError, match=r"exists already"):
        write_bag(out, tmp_path / "a.bag", sim=sim, instance=0)
    with pytest.raises(ValueError, match=r"topics: \['/nope'\] not in the bag"):
        read_bag(tmp_path / "a.bag", topics=["/nope"])
    with pytest.raises(ValueError, match=r"path: .*missing\.bag.* does not exist"):
        read_bag(tmp_path / "missing.bag")
    with pytest.raises(ValueError, match=r"instance namespaces \['/instance_1'\] are not 0"):
        as_rollout({"/instance_1/joint_states": {}})
    with pytest.raises(ValueError, match=r"topics: no /joint_states"):
        as_rollout({"/chatter": {}})
    with pytest.raises(TypeError, match=r"topics: got str"):
        as_rollout("a.bag")
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "a.db3").exists()


# ---------------------------------------------------------------- a bag recorded live

PUBLISHER = r"""
import sys, time, genpy.dynamic, rospy
from sensor_msgs.msg import JointState
SI = genpy.dynamic.generate_dynamic("asr_msgs/state_info", sys.argv[1])["asr_msgs/state_info"]
rospy.init_node("fake_asr_node", disable_signals=True)
js = rospy.Publisher("/joint_states", JointState, queue_size=100)
ls = rospy.Publisher("/joint1/link_state", SI, queue_size=100)
end = time.monotonic() + 20
while (js.get_num_connections() < 1 or ls.get_num_connections() < 1) and time.monotonic() < end:
    time.sleep(0.05)
if time.monotonic() >= end:
    sys.exit("no subscriber")
time.sleep(0.5)
for i in range(40):
    stamp = rospy.Time(100, 10_000_000 * i)
    m = JointState(name=["joint1"], position=[0.25 * i], velocity=[-0.5 * i], effort=[i / 8])
    m.header.stamp = stamp
    js.publish(m)
    ls.publish(SI(q=0.25 * i, dq=-0.5 * i, ref_1=1.0, ref_2=2.0, tau=i / 8, stiff=3.0))
    time.sleep(0.01)
time.sleep(0.5)
"""


def _stop(proc, sig=signal.SIGINT, timeout=15):
    """Signal a process group started here and wait for it (bounded), then kill it."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def test_read_bag_recorded_by_rosbag_record(ros_master, tmp_path):
    env = tool_env(ros_master)
    out = tmp_path / "live.bag"
    rec = subprocess.Popen(
        [
            "rosbag",
            "record",
            "-O",
            str(out),
            "/joint_states",
            "/joint1/link_state",
            "__name:=asr_test_record",
        ],
        env=env,
        cwd=tmp_path,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    pub = subprocess.Popen(
        ["/usr/bin/python3", "-c", PUBLISHER, STATE_INFO_DEFINITION],
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        pub_out, _ = pub.communicate(timeout=40)
        assert pub.returncode == 0, pub_out.decode(errors="replace")
    finally:
        _stop(pub, signal.SIGKILL)
        _stop(rec)
    rec_out = rec.stdout.read().decode(errors="replace")
    rec.stdout.close()
    pub.stdout.close()
    assert out.is_file(), rec_out
    topics = read_bag(out)
    js, ls = topics["/joint_states"], topics["/joint1/link_state"]
    assert js["type"] == "sensor_msgs/msg/JointState" and js["name"] == ("joint1",)
    i = np.arange(40)
    assert np.array_equal(js["position"][:, 0], 0.25 * i)
    assert np.array_equal(js["velocity"][:, 0], -0.5 * i)
    assert np.array_equal(js["effort"][:, 0], i / 8)
    assert np.array_equal(js["t"], (100 * 10**9 + 10_000_000 * i) * 1e-9)  # header stamps
    assert np.all(np.diff(js["t_record"]) >= 0) and js["t_record"][0] > 1e9  # wall clock
    assert np.array_equal(ls["q"], 0.25 * i) and np.array_equal(ls["stiff"], np.full(40, 3.0))
    assert np.array_equal(ls["t"], ls["t_record"])  # state_info has no header
