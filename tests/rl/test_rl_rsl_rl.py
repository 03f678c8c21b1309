"""asr.rl.train(algo="rsl_rl"): rsl-rl-lib's PPO behind the same interface as the
Stable-Baselines3 backend. Its env adapter against SB3VecEnv (itself tested bit for bit against
SB3's DummyVecEnv), the training folder, determinism, resume, load_checkpoint, TrainResult,
the ONNX export against the torch policy, `asr train --algo rsl_rl` and bad input. Tiny budgets,
one torch thread."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import require
from tests.support.rl import (
    TASK,
    TINY,
    curve_rows,
    one_torch_thread,  # noqa: F401  (autouse: one torch thread)
)

require("rsl_rl")
ACTION_ATOL = 1e-5  # the ONNX graph and the torch actor, both float32


@pytest.mark.slow
def test_rsl_rl_env_steps_as_sb3_vec_env():
    """Same seeds, same actions (some outside the action Box, clipped by both): the same
    observations, rewards, dones and time-outs, across episode ends and resets."""
    import torch

    from asr.envs.tasks import Reach2DOF
    from asr.rl import SB3VecEnv
    from asr.rl._rsl_rl_env import RslRlVecEnv

    n = 4
    ours, ref = RslRlVecEnv(Reach2DOF(n)), SB3VecEnv(Reach2DOF(n))
    obs = ours.reset([7 + i for i in range(n)])["policy"].numpy()
    ref.seed(7)
    ref_obs = ref.reset()
    assert np.array_equal(obs, ref_obs.astype(np.float32))
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(2 * Reach2DOF.max_episode_steps + 3):
        act = rng.normal(0.0, 1.0, size=(n, ours.num_actions))
        td, rew, dones, extras = ours.step(torch.as_tensor(act, dtype=torch.float32))
        ref_obs, ref_rew, ref_dones, infos = ref.step(
            np.clip(act.astype(np.float32).astype(np.float64), ours.low, ours.high)
        )
        assert np.array_equal(td["policy"].numpy(), ref_obs.astype(np.float32))
        assert np.array_equal(rew.numpy(), ref_rew) and np.array_equal(dones.numpy(), ref_dones)
        outs = [i.get("TimeLimit.truncated", False) for i in infos]
        assert extras["time_outs"].tolist() == outs
        ended += int(ref_dones.sum())
    assert ended == 2 * n  # every sub-env ended two episodes (truncated), reset in the step
    assert [length for _, length in ours.episodes()] == [Reach2DOF.max_episode_steps] * 2 * n
    ours.close()
    ref.close()


@pytest.mark.slow
def test_rsl_rl_trains_a_folder_that_loads_resumes_and_exports(tmp_path):
    from asr.rl import OnnxPolicy, export_onnx, load_checkpoint, train

    out = tmp_path / "run"
    res = train(TASK, algo="rsl_rl", total_steps=1024, num_envs=8, seed=3, out_dir=out, **TINY)
    assert {"model.pt", "config.json", "curve.json"} <= set(os.listdir(out))
    assert not (out / "model.zip").exists()
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["algo"] == "ppo" and cfg["backend"] == "rsl_rl"
    assert cfg["backend_version"].startswith("rsl-rl-lib ")
    assert [r["steps"] for r in res.curve] == [128 * k for k in range(1, 9)]
    assert all(set(r) == {"steps", "wall_s", "return", "length", "metric"} for r in res.curve)
    assert all(np.isfinite(r["metric"]) for r in res.curve)
    assert res.final_metric == cfg["final_eval"]["metric"] == res.final_error_rad
    # the same seed on one thread: the same curve (but wall_s) and final error
    again = train(TASK, algo="rsl_rl", total_steps=1024, num_envs=8, seed=3, **TINY)
    assert curve_rows(again.curve) == curve_rows(res.curve)
    assert again.final_error_rad == res.final_error_rad
    # the folder loads: the same policy, the same held-out metric
    loaded = load_checkpoint(out)
    obs = np.random.default_rng(1).normal(0.0, 2.0, size=(32, 8))
    assert np.array_equal(loaded.predict(obs), res.predict(obs))
    assert loaded.evaluate(TINY["final_eval_episodes"]) == pytest.approx(res.final_metric)
    assert loaded.model.num_timesteps == 1024
    assert len(loaded.figure().data) == 2
    # ONNX: the deterministic action of the torch actor (its normalisation included)
    norm = loaded.model.actor.obs_normalizer
    assert float(norm.mean.abs().max()) > 1e-3  # statistics learnt, not the identity
    path = export_onnx(out, tmp_path / "policy.onnx")
    policy = OnnxPolicy(path)
    assert policy.metadata["task_id"] == TASK and "rsl-rl-lib" in policy.metadata["source"]
    err = np.abs(policy(obs) - res.predict(obs)).max()
    print(f"\nONNX vs torch actor: max |action difference| {err:.2e}")
    assert err <= ACTION_ATOL
    export_onnx(res.model, tmp_path / "direct.onnx")
    assert np.array_equal(OnnxPolicy(tmp_path / "direct.onnx")(obs), policy(obs))
    # loading and exporting the folder in a process of its own imports neither rsl-rl-lib nor
    # tensordict (and with it torch._dynamo): about 5 s of CPU time per Watch or export
    script = (
        "import sys; from asr.rl import export_onnx, load_checkpoint; "
        "load_checkpoint(sys.argv[1]).predict([[0.0] * 8]); export_onnx(sys.argv[1], sys.argv[2]); "
        "print(sorted(m for m in ('rsl_rl', 'tensordict', 'torch._dynamo') if m in sys.modules))"
    )
    child = subprocess.run(
        [sys.executable, "-c", script, str(out), str(tmp_path / "child.onnx")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.strip().splitlines()[-1] == "[]", child.stdout
    assert np.array_equal(OnnxPolicy(tmp_path / "child.onnx")(obs), policy(obs))
    # resume: the curve goes on; another backend is refused; "ppo" continues this one
    with pytest.raises(ValueError, match="algo: got 'sb3', but the checkpoint .* 'rsl_rl'"):
        train(TASK, algo="sb3", total_steps=2048, num_envs=8, seed=3, out_dir=out, resume=True)
    more = train(TASK, algo="ppo", total_steps=2048, num_envs=8, seed=3, out_dir=out, resume=True)
    assert [r["steps"] for r in more.curve] == [128 * k for k in range(1, 17)]
    assert more.curve[:8] == res.curve and more.config["backend"] == "rsl_rl"
    assert load_checkpoint(out).model.num_timesteps == 2048


@pytest.mark.slow
def test_rsl_rl_from_the_cli_and_a_corrupted_model(tmp_path, capsys):
    from asr.cli import main
    from asr.rl import load_checkpoint

    out = tmp_path / "run"
    argv = ["train", "--algo", "rsl_rl", "--total-steps", "128", "--num-envs", "8"]
    argv += ["--out", str(out), "--no-progress", "--set", "desired_kl=0.01"]
    for k, v in TINY.items():
        argv += ["--set", f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "128 env-steps" in capsys.readouterr().out
    cfg = load_checkpoint(out).config
    assert cfg["backend"] == "rsl_rl" and cfg["hyperparameters"]["desired_kl"] == 0.01
    path = out / "model.pt"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match=str(path)):
        load_checkpoint(out)


def test_bad_algo_and_backend_options():
    from asr.rl import train

    with pytest.raises(ValueError, match=r"algo: got 'a2c', valid: ppo, sb3, rsl_rl"):
        train(TASK, algo="a2c", total_steps=16, num_envs=2)
    with pytest.raises(ValueError, match=r"desired_kl: got 0.01, valid for the rsl_rl backend"):
        train(TASK, algo="sb3", total_steps=16, num_envs=2, batch_size=64, desired_kl=0.01)
    with pytest.raises(ValueError, match=r"desired_kl: got -1.0, valid range \[0.0, inf\)"):
        train(TASK, algo="rsl_rl", total_steps=16, num_envs=2, desired_kl=-1.0)


@pytest.mark.slow
def test_rsl_rl_stops_on_a_simulation_error(tmp_path, monkeypatch):
    import asr
    from asr.envs.tasks import Reach2DOF
    from asr.rl import load_checkpoint, train

    monkeypatch.setattr(Reach2DOF, "timestep", 1.0)
    with pytest.raises(
        asr.SimulationError,
        match=r"RslRlVecEnv.*training stopped at \d+ env-steps.*last checkpoint",
    ):
        train(
            TASK,
            algo="rsl_rl",
            total_steps=1_000,
            num_envs=4,
            out_dir=tmp_path / "x",
            **dict(TINY, batch_size=64),
        )
    assert load_checkpoint(tmp_path / "x").model.num_timesteps == 0


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["sb3", "rsl_rl"])
def test_lr_decay_ends_at_the_decayed_rate(tmp_path, algo):
    """lr_decay = 0.5: the rate of the last update (all total_steps done) is half the initial."""
    import torch

    from asr.rl import train

    hp = dict(TINY, learning_rate=2e-3, lr_decay=0.5, final_eval_episodes=0)
    res = train(TASK, algo=algo, total_steps=512, num_envs=8, out_dir=tmp_path / "r", **hp)
    if algo == "sb3":
        rate = res.model.policy.optimizer.param_groups[0]["lr"]
    else:
        saved = torch.load(tmp_path / "r" / "model.pt", weights_only=True)
        rate = saved["optimizer"]["param_groups"][0]["lr"]
    assert rate == pytest.approx(1e-3, rel=1e-12)
    with pytest.raises(ValueError, match=r"lr_decay: got 0.5, valid only with desired_kl = 0"):
        train(TASK, algo="rsl_rl", total_steps=16, num_envs=8, **dict(hp, desired_kl=0.01))


def test_an_untrained_actor_starts_at_the_tasks_policy_init():
    """Throw's policy_init: the untrained actor's mean action is near its mean (the output
    layer's bias, its weights scaled by 0.01) and its standard deviation is its std."""
    import torch

    from asr.envs.throw import Throw
    from asr.rl._config import validate_hyperparameters
    from asr.rl._rsl_rl import RslRlBackend

    learner = RslRlBackend(Throw(4), validate_hyperparameters({"batch_size": 64}, 4), seed=0)
    try:
        obs = learner.env.get_observations()["policy"].numpy()
        mean = np.asarray(Throw.policy_init["mean"])
        policy, _ = learner.policy()
        act = policy.actor(torch.as_tensor(obs)).detach().numpy()  # unclipped mean
        assert np.abs(act - mean).max() < 0.05, (obs, act)
        std = torch.exp(policy.actor.distribution.log_std_param).detach().numpy()
        np.testing.assert_allclose(std, Throw.policy_init["std"], rtol=1e-6)
    finally:
        learner.close()


def test_the_inference_actor_computes_what_rsl_rl_libs_actor_does():
    """asr.rl._rsl_rl_policy.InferenceActor (plain torch: what loading a folder builds) against
    rsl-rl-lib's own MLPModel actor as the backend builds it, with random weights, normalisation
    statistics and log std: the state dict loads key for key (strict), the deterministic action
    and a seeded stochastic one are bit for bit equal."""
    import torch
    from tensordict import TensorDict

    from asr.rl._config import validate_hyperparameters
    from asr.rl._rsl_rl import _model
    from asr.rl._rsl_rl_policy import InferenceActor

    obs_dim, act_dim = 8, 4
    hp = validate_hyperparameters({"net_arch": [32, 16, 8], "batch_size": 64}, 4)
    torch.manual_seed(0)
    actor = _model(obs_dim, act_dim, hp, "actor")
    with torch.no_grad():
        actor.obs_normalizer._mean.normal_(0.0, 2.0)
        actor.obs_normalizer._std.uniform_(0.1, 3.0)
        actor.distribution.log_std_param.normal_(-1.0, 0.5)
    ours = InferenceActor(obs_dim, act_dim, hp["net_arch"])
    ours.load_state_dict(actor.state_dict(), strict=True)
    actor.eval()
    ours.eval()
    assert ours.obs_normalizer.eps == actor.obs_normalizer.eps
    x = torch.randn(64, obs_dim) * 3.0
    td = TensorDict({"policy": x}, batch_size=[64])
    with torch.no_grad():
        assert torch.equal(ours(x), actor(td))
        torch.manual_seed(5)
        theirs = actor(td, stochastic_output=True)
        torch.manual_seed(5)
        assert torch.equal(ours(x, stochastic_output=True), theirs)
    assert torch.equal(ours.obs_normalizer.mean, actor.obs_normalizer.mean)
