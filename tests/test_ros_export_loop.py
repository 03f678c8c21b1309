"""asr.ros.export: exported nodes (ILC table, linear policy) in closed loop with
`asr ros --lockstep`, compared with the offline asr rollout of the same policy
(tests/_ros_export_loop.py)."""

import numpy as np
import pytest
from _ros_export_helpers import (
    fake_ilc,
    ros_node,  # noqa: F401  (a fixture)
)
from _ros_export_loop import Loop, live_node, reach_loop

from asr.ros.export import export_policy

pytestmark = pytest.mark.ros


def test_closed_loop_ilc_table(ros_node, ros_master, tmp_path):
    import asr

    live_node()
    robot, variant = "qbmove_arm_2dof", "vertical"
    sim = asr.Sim(robot, 1)  # a fresh Sim: the live node's start state (the table
    # starts there)
    q0, dt = sim.q[0].copy(), sim.dt
    names = list(sim.robot.joint_names)
    T, settle_s = 150, 0.05
    s = np.linspace(0, 1, T)[:, None]
    u = q0[None, :] + np.array([0.6, -0.4]) * (10 * s**3 - 15 * s**4 + 6 * s**5)
    res = fake_ilc(T=T, joints=names, dt=dt, settle_s=settle_s)
    res.input[0] = u
    package = export_policy(res, robot, tmp_path / "src", namespace="loop_ilc")
    settle = int(round(settle_s / dt))
    periods = settle + T + 20  # past the end: the last sample held
    loop = Loop(ros_node, tmp_path, ros_master, robot, variant, 1 / dt, package, "loop_ilc")
    try:
        q_live, refs = loop.run(names, periods)
    finally:
        loop.close()
    # offline: the table as ilc applies it (settle at sample 0, one sample per step, then held)
    k = np.clip(np.arange(periods) - settle, 0, T - 1)
    table = np.stack([u[k], np.broadcast_to(res.presets[0], (periods, 2))], axis=-1)
    assert np.array_equal(refs, table)  # the node played the table exactly
    q_off = asr.Sim(robot, 1).rollout(periods, table[None], record=("q",))["q"][0]
    assert np.max(np.abs(q_live - q_off)) <= 1e-9, np.max(np.abs(q_live - q_off))
    assert np.ptp(q_off[:, 0]) > 0.1  # the arm moved: the comparison means something


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
