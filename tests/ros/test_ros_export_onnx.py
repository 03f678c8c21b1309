"""asr.ros.export: ONNX policies (asr.rl) exported as a ROS package, and in closed loop with
`asr ros --lockstep`."""

import os

import numpy as np
import pytest

from asr.ros.export import export_policy
from tests.conftest import require_ros1
from tests.support.ros_export import (
    onnx_deps,
    reach_onnx,
    ros_node,  # noqa: F401  (a fixture)
    start_onnx_node,
)
from tests.support.ros_export_loop import live_node, reach_loop

pytestmark = pytest.mark.ros

# ---------------------------------------------------------------- ONNX policies (asr.rl)
#
# The exported ONNX node needs numpy and onnxruntime, which Debian's python3 lacks: it is run
# with this venv's Python (numpy, onnxruntime) with the system's ROS packages appended to
# sys.path after the venv's own (asr.ros.environment.ros1 does the same), through runpy so the
# script runs as __main__ with its own argv (remappings, __name).


def test_onnx_package(tmp_path):
    onnx_deps()
    parse_package = require_ros1("catkin_pkg.package").parse_package
    import json
    import xml.etree.ElementTree as ET

    from asr.rl.onnx_policy import OnnxPolicy

    onnx_path = reach_onnx(tmp_path)
    for obj in (onnx_path, OnnxPolicy(onnx_path)):
        path = export_policy(
            obj, "qbmove_arm_2dof", tmp_path / "src", namespace="arm", target=[0.1, -0.2]
        )
        pkg = parse_package(os.path.join(path, "package.xml"))
        pkg.validate()
        assert "python3-numpy" in [x.name for x in pkg.exec_depends]
        assert (
            open(os.path.join(path, "scripts", "policy_node.onnx"), "rb").read()
            == open(onnx_path, "rb").read()
        )
        assert "policy_node.onnx" in open(os.path.join(path, "CMakeLists.txt")).read()
        assert "onnxruntime" in open(os.path.join(path, "README.md")).read()
        node = ET.parse(os.path.join(path, "launch", "policy_node.launch")).getroot()
        assert node.find("node").get("launch-prefix") == "$(arg python)"
        d = json.load(open(os.path.join(path, "scripts", "policy_node.json")))
        assert (d["kind"], d["task"], d["onnx"], d["target"]) == (
            "onnx",
            "Reach2DOF",
            "policy_node.onnx",
            [0.1, -0.2],
        )
        assert d["metadata"]["task_id"] == "asr/Reach2DOF-v0" and d["env_dt"] == 0.02
        assert "import onnxruntime" in open(os.path.join(path, "scripts", "policy_node.py")).read()
    # (the other kinds' nodes stay free of numpy / onnxruntime: test_package_validates)
    with pytest.raises(ValueError, match="exported for 'qbmove_arm_2dof'"):
        export_policy(onnx_path, "pendulum_1dof", tmp_path / "bad")
    from asr.envs.tasks import EquilibriumTracking

    with pytest.raises(
        ValueError,
        match="EquilibriumTracking has observation size 4 and action "
        "size 2.*size 8 and gives actions of size 4",
    ):
        OnnxPolicy(onnx_path).check_task(EquilibriumTracking)  # what _from_onnx calls
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00junk")
    with pytest.raises(ValueError, match="junk.onnx"):
        export_policy(junk, "qbmove_arm_2dof", tmp_path / "bad")
    assert not os.path.exists(tmp_path / "bad") or not os.listdir(tmp_path / "bad")


def test_closed_loop_onnx_policy(ros_node, ros_master, tmp_path):
    """The exported ONNX node against `asr ros --lockstep` reproduces the asr rollout of the same
    OnnxPolicy (the Loop harness above; its node started with start_onnx_node)."""
    onnx_deps()
    from asr.envs.tasks import Reach2DOF
    from asr.rl.onnx_policy import OnnxPolicy

    live_node()
    policy = OnnxPolicy(reach_onnx(tmp_path), env=Reach2DOF)
    env = Reach2DOF(1)
    obs, _ = env.reset(seed=4)
    target = env.target[0].copy()
    package = export_policy(
        policy, "qbmove_arm_2dof", tmp_path / "src", namespace="loop_onnx", target=target
    )
    acts, q_off, q_live, refs = reach_loop(
        policy,
        package,
        "loop_onnx",
        ros_node,
        tmp_path,
        ros_master,
        env,
        obs,
        starter=start_onnx_node,
    )
    periods = len(acts)
    da = np.max(np.abs(refs - np.stack([acts[:, :2], acts[:, 2:]], axis=-1)))
    err = np.max(np.abs(q_live - q_off))
    print(
        f"\nONNX node in lockstep vs asr rollout, {periods} env steps: references {da:.1e}, "
        f"q {err:.1e} rad"
    )
    assert da <= 1e-9, da
    assert err <= 1e-9, err
    assert np.ptp(q_off) > 0.1  # the arm moved
    assert np.any(acts == np.float32(0.59999996))  # the clip inside the graph is exercised
