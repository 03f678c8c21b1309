"""The ROS 2 standard simulation interfaces on asr's node (asr.ros.ros2_sim_interfaces), with
real rclpy over Fast DDS: the node (real time, in a namespace) in one subprocess, a bare rclpy
client without asr (tests/support/ros2_peers/sim_interfaces.py, simulation_interfaces from
asr/ros/interfaces' install) in another; the entity states are checked here against an
asr.Sim stepped through the same periods in this process."""

import json
import re

import mujoco
import numpy as np
import pytest

from asr.ros.node_core import NodeCore
from tests.support.ros2 import NodeProcess, ros2_interfaces, run_peer, run_peer_beside_node
from tests.support.ros2_node import RATE, ROBOT, control_period

pytestmark = [pytest.mark.ros2]

NS = "/sim_std"
# SimulatorFeatures: ENTITY_STATE_GETTING, SIMULATION_RESET, SIMULATION_STATE_GETTING / SETTING /
# PAUSE, STEP_SIMULATION_SINGLE / MULTIPLE / ACTION
FEATURES = [10, 20, 24, 25, 26, 31, 32, 33]
OK, UNSUPPORTED, NOT_FOUND, FAILED, ALREADY = 1, 0, 2, 4, 101  # Result / SetSimulationState
STOPPED, PLAYING, PAUSED = 0, 1, 2  # SimulationState
SUCCEEDED, CANCELED, ABORTED = 4, 5, 6  # action_msgs/GoalStatus


def engine_states(periods):
    """{link: (pose (7,) x y z qx qy qz qw, twist (6,) linear then angular, body_state's
    position (3,) and velocity (3,))} of the robot after `periods` node periods from its reset
    state with the initial references held (what the node's STOPPED, then steps, run)."""
    core = NodeCore(ROBOT, rate=RATE)
    for _ in range(periods):
        core.step_period()
    sim = core.sim
    m, d = sim.models[0], sim.datas[0]
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    mujoco.mj_comVel(m, d)
    out = {}
    for b in range(1, m.nbody):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)
        vel = np.zeros(6)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_XBODY, b, vel, 0)
        w, x, y, z = d.xquat[b]
        pose = np.r_[d.xpos[b], x, y, z, w]
        out[name] = (pose, np.r_[vel[3:], vel[:3]], *sim.body_state(name))
    return out


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    ros2_interfaces()
    with NodeProcess(tmp_path_factory.mktemp("ros2"), robot=ROBOT, rate=RATE, namespace=NS) as n:
        out = run_peer("sim_interfaces.py", NS)
        try:  # SetSimulationState(QUITTING): the node exits on its own, status 0
            code = n.proc.wait(20)
        except Exception:
            code = None
        yield out, code, n.log()


def test_features_and_states(answers):
    out, code, log = answers
    assert out["features"] == FEATURES
    assert out["spawn_formats"] == []
    assert "one step = one node period of 0.01 s" in out["custom_info"]
    assert out["initial_state"] == PLAYING  # a real-time node plays from its start
    assert out["pause"] == [OK, ""] and out["paused_state"] == PAUSED
    assert out["pause_again"][0] == ALREADY
    assert out["stop"] == [OK, ""] and out["stopped_state"] == STOPPED
    assert out["stopped_entity"]["stamp"] == 0  # stopped: reset to t = 0
    assert out["reset_time_only"][0] == UNSUPPORTED and "SCOPE_TIME" in out["reset_time_only"][1]
    assert out["reset"] == [OK, ""] and out["after_reset_stamp"] == 0
    assert out["play"] == [OK, ""] and out["playing_state"] == PLAYING
    assert out["alias_paused_state"] == PAUSED  # asr's own pause service is an alias
    assert out["no_world"][0] == UNSUPPORTED
    assert out["quit"] == [OK, ""]
    assert code == 0, f"the node did not exit on STATE_QUITTING:\n{log[-2000:]}"


def test_stepping_service_and_action(answers):
    out = answers[0]
    _, period_ns = control_period()
    assert out["step3"] == [OK, ""] and out["after_step_state"] == PAUSED
    assert out["after_step_stamp"] == 3 * period_ns
    sim5 = out["simulate5"]
    assert sim5["accepted"] and sim5["status"] == SUCCEEDED and sim5["result"][0] == OK
    assert sim5["feedback"] == [[k, 5 - k] for k in range(1, 6)]  # one after each step
    assert out["step0"][0] == FAILED and "steps: got 0" in out["step0"][1]
    cancelled = out["cancelled"]
    assert cancelled["accepted"] and cancelled["status"] == CANCELED
    assert cancelled["result"][0] == FAILED and "cancelled after" in cancelled["result"][1]
    # feedback of a long goal: in order, but not every one (the action's feedback topic keeps
    # the newest few, and a busy peer reads late); the cancel stops it long before its end
    done = [c for c, _ in cancelled["feedback"]]
    assert len(done) >= 3 and done == sorted(set(done)) and done[0] >= 1, done[:20]
    assert all(c + r == 1_000_000 for c, r in cancelled["feedback"])
    stopped = re.fullmatch(r"cancelled after (\d+) of 1000000 steps", cancelled["result"][1])
    assert stopped and done[-1] <= int(stopped.group(1)) < 1_000_000, cancelled["result"]
    # playing: the standard's stepping needs a paused simulation
    assert out["step_playing"][0] == FAILED
    playing = out["simulate_playing"]
    assert playing["accepted"] and playing["status"] == ABORTED
    assert playing["result"][0] == FAILED and playing["feedback"] == []


def test_entities_and_their_states_are_the_engines(answers):
    out = answers[0]
    _, period_ns = control_period()
    expected = engine_states(8)  # STOPPED, then 3 steps and 5 in the action
    assert out["entities"] == [[OK, ""], sorted(expected)]
    assert out["entities_2"] == [[OK, ""], ["link2"]]
    assert out["entities_tags"][0] == [UNSUPPORTED, "filters: tags (ENTITY_TAGS)"]
    assert out["entities_bad_regex"][0][0] == FAILED
    assert out["unknown_entity"][0] == NOT_FOUND
    for name, (pose, twist, position, velocity) in expected.items():
        result, got = out["entity_states"][name]
        assert result == [OK, ""] and got["frame"] == "world"
        assert got["stamp"] == 8 * period_ns
        assert np.allclose(got["pose"], pose, rtol=0, atol=1e-12), name
        assert np.allclose(got["twist"], twist, rtol=0, atol=1e-12), name
        # asr.Sim's public body_state (mj_jacBody) agrees on the frame's position and velocity
        assert np.allclose(got["pose"][:3], position, rtol=0, atol=1e-12)
        assert np.allclose(got["twist"][:3], velocity, rtol=0, atol=1e-12)
        assert abs(np.linalg.norm(got["pose"][3:]) - 1) < 1e-12
    assert any(np.abs(t).max() > 1e-6 for _, t, _, _ in expected.values()), "nothing moved"
    result, names, states = out["entities_states"]
    assert result == [OK, ""] and names == sorted(expected)
    assert states == [out["entity_states"][n][1] for n in names]


def test_lockstep_playing_steps_only_on_request(tmp_path):
    _, period_ns = control_period()
    node = {"robot": ROBOT, "rate": RATE, "namespace": NS, "lockstep": True}
    out = run_peer_beside_node(tmp_path, "sim_interfaces.py", NS, "lockstep", **node)
    assert out["initial_state"] == PLAYING and out["initial_stamp"] == 0  # no step on its own
    assert out["step_period"] == f"t={period_ns}"
    assert out["step_playing"][0] == FAILED
    assert out["pause"] == [OK, ""] and out["step4"] == [OK, ""]
    assert out["stamp"] == 5 * period_ns
    assert out["stop"] == [OK, ""] and out["stopped_state"] == STOPPED
    assert out["play_from_stopped"] == [OK, ""] and out["played_stamp"] == 0


def test_sigint_during_a_goal_aborts_it_and_exits_cleanly(tmp_path):
    """SIGINT while a SimulateSteps goal of 10^6 steps runs: the goal stops at its next period
    and is aborted with a message saying why (its result goes out before the node is
    destroyed), and the node exits with status 0."""
    node = {"robot": ROBOT, "rate": RATE, "namespace": NS}
    out = run_peer_beside_node(
        tmp_path, "sim_interfaces.py", NS, "shutdown", peer_stops=True, **node
    )
    goal = out["goal"]
    assert out["pause"] == [OK, ""] and goal["accepted"] and goal["status"] == ABORTED, goal
    k = goal["feedback"][-1][0]
    assert k >= 3 and goal["result"][0] == FAILED, goal
    done = int(
        re.fullmatch(
            r"the node is shutting down: stopped after (\d+) of 1000000 steps", goal["result"][1]
        ).group(1)
    )
    assert done >= k, goal


def test_built_type_hash_is_the_published_one():
    """asr/ros/interfaces' build gives tf2_msgs/msg/TFMessage the RIHS01 hash that Jazzy's own
    packages carry (rosbag2 records it, rosidl's golden-hash tests check it): peers with the
    real package and with this build see one type."""
    install = ros2_interfaces()
    desc = json.loads((install / "share/tf2_msgs/msg/TFMessage.json").read_text())
    assert desc["type_hashes"][0]["type_name"] == "tf2_msgs/msg/TFMessage"
    assert desc["type_hashes"][0]["hash_string"] == (
        "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"
    )
