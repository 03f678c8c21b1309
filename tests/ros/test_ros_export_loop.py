"""asr.ros.export: exported nodes (ILC table, linear policy) in closed loop with
`asr ros --lockstep`, compared with the offline asr rollout of the same policy
(tests/support/ros_export_loop.py)."""

import numpy as np
import pytest

from asr.ros.export import export_policy
from tests.support.ros_export import (
    ros_node,  # noqa: F401  (a fixture)
    smooth_ilc,
)
from tests.support.ros_export_loop import Loop, live_node, reach_loop

pytestmark = pytest.mark.ros


def test_closed_loop_ilc_table(ros_node, ros_master, tmp_path):
    live_node()
    robot, variant = "qbmove_arm_2dof", "vertical"
    res, table, q_off = smooth_ilc(robot)
    package = export_policy(res, robot, tmp_path / "src", namespace="loop_ilc")
    loop = Loop(ros_node, tmp_path, ros_master, robot, variant, 1 / res.dt, package, "loop_ilc")
    try:
        q_live, refs = loop.run(res.metadata["joints"], len(table))
    finally:
        loop.close()
    assert np.array_equal(refs, table)  # the node played the table exactly
    assert np.max(np.abs(q_live - q_off)) <= 1e-9, np.max(np.abs(q_live - q_off))


def test_closed_loop_linear_policy(ros_node, ros_master, tmp_path):
    from asr.envs.cem import linear_policy
    from asr.envs.tasks import Reach2DOF

    live_node()
    env = Reach2DOF(1)
    obs, _ = env.reset(seed=4)
    target = env.target[0].copy()
    W = np.random.default_rng(5).normal(0, 0.5, (4, 9))
    low, high = env.single_action_space.low, env.single_action_space.high
    package = export_policy(
        {"mean": W, "curve": []},
        "qbmove_arm_2dof",
        tmp_path / "src",
        namespace="loop_cem",
        target=target,
    )
    acts, q_off, q_live, refs = reach_loop(
        lambda o: linear_policy(W[None], o, low, high),
        package,
        "loop_cem",
        ros_node,
        tmp_path,
        ros_master,
        env,
        obs,
    )
    np.testing.assert_allclose(
        refs, np.stack([acts[:, :2], acts[:, 2:]], axis=-1), rtol=0, atol=1e-9
    )
    err = np.max(np.abs(q_live - q_off))
    assert err <= 1e-9, err
