"""Smoke test of the RL benchmark: it runs with tiny settings and writes the figures the issue
asks for (present, of the right type, finite; speeds are not asserted)."""

import json
import math
import os
import sys

import pytest

from tests.conftest import require
from tests.support.paths import ROOT  # noqa: E402

sys.path.insert(0, os.path.join(str(ROOT), "benchmarks"))


def _tiny(backend):
    hp = dict(n_steps=16, batch_size=64, n_epochs=1, eval_every=0, final_eval_episodes=8)
    if backend == "rsl_rl":
        hp["desired_kl"] = 0.01
    return dict(num_envs=8, total_steps=256, seed=0, threads=1, hyperparameters=hp)


@pytest.mark.slow
def test_bench_rl_writes_its_figures(tmp_path):
    require("torch")
    require("stable_baselines3")
    require("rsl_rl")
    import bench_rl as bench

    out = tmp_path / "rl.json"
    reach = {b: _tiny(b) for b in ("sb3", "rsl_rl")}
    fig = bench.main(
        reach=reach,
        n=4,
        throughput_steps=4 * 32,
        out=str(out),
        quiet=True,
        thread_sizes=(4, 8),
        thread_seconds=0.01,
    )
    saved = json.loads(out.read_text())
    assert saved == fig
    positive = ["ppo_ratio_vs_dummyvecenv_n4", "ppo_steps_per_s_sb3vecenv_n4"]
    positive += ["ppo_steps_per_s_dummyvecenv_n4", "reach_final_error_rad", "reach_train_s"]
    for b in ("sb3", "rsl_rl"):
        positive += [f"reach_final_error_rad_{b}", f"reach_train_s_{b}"]
        positive += [f"reach_steps_per_s_{b}", f"reach_hp_{b}_learning_rate"]
        positive += [f"reach_mujoco_rollout_s_before_{b}", f"reach_mujoco_rollout_s_after_{b}"]
        assert saved[f"target_met_reach_final_error_rad_{b}"] is False  # 256 steps: too few
        # the ratio is the training's wall time over bare MuJoCo's after it, same env-steps
        ratio = saved[f"reach_train_vs_mujoco_rollout_{b}"]
        after = saved[f"reach_mujoco_rollout_s_after_{b}"]
        assert ratio == pytest.approx(saved[f"reach_train_s_{b}"] / after)
        assert saved[f"target_met_reach_train_vs_mujoco_rollout_{b}"] is (ratio <= 3.0)
        drift = saved[f"reach_mujoco_rollout_drift_{b}"]
        assert drift == pytest.approx(saved[f"reach_mujoco_rollout_s_before_{b}"] / after)
        assert saved[f"reach_env_steps_{b}"] == 256 and saved[f"reach_threads_{b}"] == 1
    for n in (4, 8):
        positive += [f"vec_env_steps_per_s_n{n}_t1", f"vec_env_steps_per_s_n{n}_t2"]
        positive += [f"vec_env_ratio_t2_vs_t1_n{n}"]
    for t in (1, 2):
        positive += [f"mujoco_rollout_steps_per_s_n4_t{t}", f"vec_env_vs_mujoco_rollout_t{t}_n4"]
    for key in positive:
        value = saved[key]
        assert isinstance(value, (int, float)) and not isinstance(value, bool), key
        assert math.isfinite(value) and value > 0, key
    assert saved["default_backend"] in ("sb3", "rsl_rl")
    assert (
        saved["reach_final_error_rad"] == saved[f"reach_final_error_rad_{fig['default_backend']}"]
    )
    assert saved["reach_hp_rsl_rl_desired_kl"] == 0.01
    assert saved["target_met_reach_final_error_rad"] is False
    default = fig["default_backend"]
    for key in ("reach_train_vs_mujoco_rollout", "target_met_reach_train_vs_mujoco_rollout"):
        assert saved[key] == saved[f"{key}_{default}"]


def test_bare_rollout_in_chunks_counts_every_step():
    """mujoco_rollout_s splits a long rollout into chunks of whole env steps whose state output
    fits chunk_bytes: after the one-env-step warm-up, the chunks' physics steps add up to the
    env-steps asked for times frame_skip."""
    require("mujoco")
    import bench_rl as bench
    import mujoco
    import mujoco.rollout

    from asr.envs.tasks import Reach2DOF

    env = Reach2DOF(1)
    nstate = mujoco.mj_stateSize(env.sim.models[0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    env.close()
    skip = Reach2DOF.frame_skip
    calls = []
    real = mujoco.rollout.Rollout.rollout

    def spy(self, model, data, x0, *a, nstep, **k):
        calls.append(nstep)
        return real(self, model, data, x0, *a, nstep=nstep, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mujoco.rollout.Rollout, "rollout", spy)
        # 2 instances, 7 env steps, chunks of 3 env steps (a state output of 3 * skip steps)
        seconds = bench.mujoco_rollout_s(2, 1, 7, chunk_bytes=2 * 3 * skip * nstate * 8)
    assert seconds > 0
    assert calls == [skip, 3 * skip, 3 * skip, skip], calls
