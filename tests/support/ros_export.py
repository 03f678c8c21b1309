"""The exported policies, the rospy test node and the exported node's process that
tests/ros/test_ros_export_*.py and tests/ros/test_ros2_export*.py share."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import asr  # noqa: F401  (registers the asr/ ids)
from asr.learning.iterative_learning import ILCResult

WAIT_S = 10.0
ASR_CLI = os.path.join(os.path.dirname(sys.executable), "asr")


def fake_ilc(T=40, joints=("joint1", "joint2"), dt=1e-3, settle_s=0.05, seed=0):
    """An ILCResult of one instance with a random learned input (the node only reads input,
    presets, dt and metadata)."""
    rng = np.random.default_rng(seed)
    J = len(joints)
    u = rng.uniform(-1, 1, (1, T, J))
    return ILCResult(
        input=u,
        errors=np.zeros((1, 1)),
        iterations=np.ones(1, int),
        converged=np.zeros(1, bool),
        reference=u.copy(),
        dt=dt,
        wall_s=0.0,
        tol=0.1,
        presets=rng.uniform(0.2, 0.6, (1, J)),
        metadata={
            "robot": "qbmove_arm_2dof",
            "variant": "vertical",
            "joints": list(joints),
            "modes": [3] * J,
            "settle_s": settle_s,
        },
    )


def smooth_ilc(robot="qbmove_arm_2dof", T=150, settle_s=0.05, extra=20):
    """An ILC result whose table moves the arm smoothly (a minimum-jerk step) from the live
    node's start state (a fresh Sim's), and what the node must play: (res, table (periods, J, 2)
    of references per MJCF step, settle_s at sample 0, one sample per step, then `extra` steps
    holding the last, as ilc applies it) and the offline link angles (periods, J) rad."""
    import asr

    sim = asr.Sim(robot, 1)
    q0, dt, names = sim.q[0].copy(), sim.dt, list(sim.robot.joint_names)
    s = np.linspace(0, 1, T)[:, None]
    u = q0[None, :] + np.array([0.6, -0.4]) * (10 * s**3 - 15 * s**4 + 6 * s**5)
    res = fake_ilc(T=T, joints=names, dt=dt, settle_s=settle_s)
    res.input[0] = u
    settle = int(round(settle_s / dt))
    periods = settle + T + extra
    k = np.clip(np.arange(periods) - settle, 0, T - 1)
    table = np.stack([u[k], np.broadcast_to(res.presets[0], (periods, len(names)))], axis=-1)
    q_off = asr.Sim(robot, 1).rollout(periods, table[None], record=("q",))["q"][0]
    assert np.ptp(q_off[:, 0]) > 0.1  # the arm moves: comparisons with it mean something
    return res, table, q_off


def workspace():
    return {
        "version": "asr.dashboard/1",
        "robot": "qbmove_arm_2dof",
        "variant": "vertical",
        "preset": {"joint1": 0.35, "joint2": 0.5},
        "mode": {"joint1": 3, "joint2": 6},
        "params": {"joint1": {"kp": 150.0}},
        "reference": {
            "joint1": {"kind": "hold", "offset": 0.25, "amplitude": 0.0},
            "joint2": {"kind": "step", "offset": 0.1, "amplitude": -0.4},
        },
        "speed": 1.0,
        "paused": False,
        "compare": [],
    }


def linear_W(seed=1):
    return np.random.default_rng(seed).normal(0, 0.7, (2, 5))


def onnx_deps():
    """What exporting a PPO policy to ONNX needs (skip, or fail in CI, without it)."""
    from tests.conftest import require

    for m in ("torch", "stable_baselines3", "onnx", "onnxscript", "onnxruntime"):
        require(m)
    import torch

    torch.set_num_threads(1)


def reach_onnx(tmp_path):
    """An exported Reach2DOF PPO policy (untrained, its action layer scaled up so that it moves
    the arm and leaves the action Box), as asr.rl.export_onnx writes it."""
    import torch

    from asr.rl.onnx_policy import export_onnx
    from tests.support.rl import make_model

    model, venv = make_model("asr/Reach2DOF-v0", 0, seed=2)
    with torch.no_grad():
        model.policy.action_net.weight.mul_(300.0)
    return export_onnx(model, tmp_path / "reach.onnx", vec_normalize=venv)


@pytest.fixture(scope="module")
def ros_node(rospy_node):
    """This test process as a rospy node (conftest's, shared by every module)."""
    return rospy_node


def start_node(path, master, log, name, remap=()):
    """The exported node as a ROS user runs it: Debian's python3, ROS tools' environment."""
    from asr.ros.environment import tool_env

    env = tool_env(master)
    env["ROS_HOME"] = str(log.parent)
    return subprocess.Popen(
        [
            "/usr/bin/python3",
            os.path.join(path, "scripts", "policy_node.py"),
            f"__name:={name}",
            *remap,
        ],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc):
    import signal

    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
    except ProcessLookupError:
        pass


def start_onnx_node(path, master, log, name, remap=()):
    from asr.ros.environment import DIST_PACKAGES, tool_env

    env = tool_env(master)
    env["ROS_HOME"] = str(log.parent)
    code = (
        "import runpy, sys; sys.path.append(sys.argv[1]); sys.argv = sys.argv[2:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            DIST_PACKAGES,
            os.path.join(path, "scripts", "policy_node.py"),
            f"__name:={name}",
            *remap,
        ],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def node_policy_class():
    """The Policy class the exported nodes embed, run in this process (no ROS needed)."""
    from asr.ros.export import ONNX_BLOCK, POLICY_BLOCK

    space = {"math": math, "os": os}
    exec(compile(ONNX_BLOCK + POLICY_BLOCK, "<node policy>", "exec"), space)
    return space["Policy"]
