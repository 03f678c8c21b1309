"""Smoke test of the RL benchmark: it runs with tiny settings and writes the figures the issue
asks for."""

import json
import os
import sys

import pytest
from conftest import require

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
)


@pytest.mark.slow
def test_bench_rl_writes_its_figures(tmp_path):
    require("torch")
    require("stable_baselines3")
    import bench_rl as bench

    out = tmp_path / "rl.json"
    reach = dict(
        num_envs=8,
        total_steps=256,
        seed=0,
        hyperparameters=dict(
            n_steps=16, batch_size=64, n_epochs=1, eval_every=0, final_eval_episodes=8, net_arch=[8]
        ),
    )
    fig = bench.main(reach=reach, n=4, throughput_steps=4 * 32, out=str(out), quiet=True)
    saved = json.loads(out.read_text())
    assert saved == fig
    for key in (
        "reach_final_error_rad",
        "reach_train_s",
        "ppo_ratio_vs_dummyvecenv_n4",
        "ppo_steps_per_s_sb3vecenv_n4",
        "ppo_steps_per_s_dummyvecenv_n4",
    ):
        assert saved[key] > 0, key
    assert saved["target_met_reach_final_error_rad"] is False  # 256 steps cannot reach it
