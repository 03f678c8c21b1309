"""asr.ros.bags: rollouts written as ROS 1 bags, checked with independent readers (Debian's rosbag
Python API and command-line tools), and a bag recorded by `rosbag record` from a rospy publisher
read back with read_bag. ROS 2 bags: tests/ros/test_ros2_bags.py."""

import os
import signal
import subprocess

import numpy as np
import pytest

from asr.analysis.sweep import SweepResult
from asr.learning.iterative_learning import ILCResult
from asr.ros._bag_layout import LINK_MAP as LINK
from asr.ros.bags import as_rollout, read_bag, state_info, write_bag
from asr.ros.environment import tool_env
from asr.ros.messages import STATE_INFO_FIELDS
from tests.conftest import require, require_ros1
from tests.support.bags import (  # noqa: E402
    RECORD,
    STEPS,
    run,  # noqa: F401 (a fixture)
    stamps_ns,
)

pytestmark = pytest.mark.ros

# link_state's type in ROS 1 bags (the live node's); the toolbox's holds float32, every field of
# one type: what a ROS 1 bag keeps
STATE_INFO, STATE_INFO_DEFINITION, state_info_class = state_info()
SI_DTYPE = np.dtype(STATE_INFO_DEFINITION.split()[0])
SI_ONLY = ("ref1", "ref2", "stiffness")  # fields a ROS 1 bag carries in state_info only


def as_state_info(a):
    """A float64 array as it reads back from a state_info field."""
    return np.asarray(a).astype(SI_DTYPE).astype(float)


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
        assert info.topics["/joint1/link_state"].msg_type == STATE_INFO
        assert info.topics["/joint2/motor_2_state"].msg_type == "sensor_msgs/JointState"
        assert info.topics["/joint2/torque_el2_state"].msg_type == "std_msgs/Float64"
        assert info.msg_types["sensor_msgs/JointState"] == sensor_msgs.JointState._md5sum
        assert info.msg_types["std_msgs/Float64"] == std_msgs.Float64._md5sum
        assert info.msg_types[STATE_INFO] == state_info_class()._md5sum
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
            elif topic.endswith("/link_state"):
                j = int(topic.split("/")[1][-1]) - 1
                for f, src in LINK.items():
                    assert getattr(msg, f) == as_state_info(out[src][1, k, j]), (topic, f, k)
            elif topic.endswith("/motor_2_state"):  # the toolbox's: a JointState of one motor
                j = int(topic.split("/")[1][-1]) - 1
                assert tuple(msg.name) == (f"joint{j + 1}",)  # as the ROS 1 node names it
                assert msg.header.stamp.to_nsec() == want_t[k]
                assert list(msg.position) == [out["th2"][1, k, j]]
                assert list(msg.velocity) == [out["th2d"][1, k, j]]
                assert list(msg.effort) == [out["tau_m2"][1, k, j]]
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
        "/joint1/link_state": (STATE_INFO, STEPS),
        "/joint2/link_state": (STATE_INFO, STEPS),
    }
    assert info["start"] == pytest.approx(sim.dt) and info["end"] == pytest.approx(STEPS * sim.dt)
    # rosbag check needs state_info's package importable: one made here from its definition
    pkg_name, msg_name = STATE_INFO.split("/")
    pkg = tmp_path / "py" / pkg_name / "msg"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text(
        f"import genpy.dynamic\n{msg_name} = genpy.dynamic.generate_dynamic("
        f"{STATE_INFO!r}, {STATE_INFO_DEFINITION!r})[{STATE_INFO!r}]\n"
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
        want = as_state_info(out[f]) if f in SI_ONLY else out[f]
        assert np.array_equal(back[f], want), f
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
    assert np.array_equal(back["ref1"], as_state_info(res.input))
    assert np.array_equal(back["ref2"], as_state_info(np.repeat(res.presets[:, None], T, axis=1)))
    assert np.array_equal(back["t"], np.array(stamps_ns(0.002, steps=T)) * 1e-9)
    assert np.array_equal(back["t"], np.rint(res.time * 1e9) * 1e-9)
    assert "qd" not in back and "tau_joint" not in back  # empty JointState arrays
    assert np.array_equal(back["stiffness"], np.zeros((n, T, J)))  # absent state_info field


# ---------------------------------------------------------------- errors


def test_bad_input(run, tmp_path):
    sim, out = run
    with pytest.raises(ValueError, match=r"format: got 'ros3'.*'ros1', 'ros2', 'mcap', 'ros2-sql"):
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
    huge = dict(out, stiffness=np.full_like(out["q"], 1e39))
    if SI_DTYPE == np.float32:
        with pytest.raises(ValueError, match=r"result\['stiffness'\]: .* 1e\+39 exceeds float32's"):
            write_bag(huge, tmp_path / "a.bag", sim=sim)
    else:  # a float64 state_info holds it
        back = as_rollout(read_bag(write_bag(huge, tmp_path / "huge.bag", sim=sim)))
        assert np.all(back["stiffness"] == 1e39)
        (tmp_path / "huge.bag").unlink()
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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bag"]


# ---------------------------------------------------------------- a bag recorded live

PUBLISHER = r"""
import sys, time, genpy.dynamic, rospy
from sensor_msgs.msg import JointState
SI = genpy.dynamic.generate_dynamic(sys.argv[2], sys.argv[1])[sys.argv[2]]
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
        ["/usr/bin/python3", "-c", PUBLISHER, STATE_INFO_DEFINITION, STATE_INFO],
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
