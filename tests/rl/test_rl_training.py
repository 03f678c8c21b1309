"""asr.rl: SB3VecEnv against SB3's DummyVecEnv, PPO training (improves, deterministic, resumable
after SIGKILL, stops on a simulation error) and bad input. Tiny budgets, one torch thread."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402
from tests.support.rl import (  # noqa: E402
    TASK,
    TINY,
    curve_rows,
    one_torch_thread,  # noqa: F401  (autouse: one torch thread)
)

ROOT = str(ROOT_PATH)


@pytest.fixture(autouse=True)
def _sb3_backend(monkeypatch):
    """This file checks the training folder as the Stable-Baselines3 backend writes it (model.zip,
    vecnormalize.json); tests/rl/test_rl_rsl_rl.py checks the rsl_rl backend's. algo="ppo" (the
    default) runs sb3 here, as `asr train --algo sb3` in the subprocesses."""
    monkeypatch.setattr("asr.rl._config.DEFAULT_BACKEND", "sb3")


def _stop_near_target():
    """Reach2DOF whose episodes also terminate when the arm is within 0.5 rad of its target: the
    sub-envs end at different steps (terminated or truncated), so resets are partial."""
    from asr.envs.tasks import Reach2DOF

    class Reach2DOFStop(Reach2DOF):
        def _terminated(self):
            return np.linalg.norm(self.q - self.target, axis=1) < 0.5

    return Reach2DOFStop


@pytest.mark.parametrize("early_stop", [False, True])
def test_sb3_vec_env_equals_dummy_vec_env_bit_for_bit(early_stop):
    """For the same actions, SB3VecEnv over one batch of N instances gives the observations,
    rewards, dones, infos, terminal observations and reset infos of SB3's DummyVecEnv over N
    single asr envs, bit for bit, across several episode ends.

    Seeding: VecEnv.seed(s) makes the next reset seed sub-env i with s + i in both (DummyVecEnv
    passes seed s + i to env i's reset; SB3VecEnv passes the list of seeds to the batch, whose
    sub-env i then owns numpy Generator seeding.np_random(s + i), the one a single env reset with
    s + i owns). Later episodes (autoresets) draw their targets from each sub-env's own generator,
    in the same order in both."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from asr.envs.tasks import Reach2DOF
    from asr.envs.vector import AsrEnv
    from asr.rl import SB3VecEnv

    n, horizon, steps = 5, 6, 40
    cls = _stop_near_target() if early_stop else Reach2DOF
    ours = SB3VecEnv(cls(n, max_episode_steps=horizon))
    ref = DummyVecEnv([lambda: AsrEnv(cls, max_episode_steps=horizon) for _ in range(n)])
    for env in (ours, ref):
        env.seed(123)
    o1, o2 = ours.reset(), ref.reset()
    assert o1.dtype == o2.dtype == np.float64 and np.array_equal(o1, o2)
    rng = np.random.default_rng(7)
    low, high = ours.action_space.low, ours.action_space.high
    ends = partial = truncations = terminations = 0
    for _ in range(steps):
        a = rng.uniform(low, high, (n, low.size))
        o1, r1, d1, i1 = ours.step(a)
        o2, r2, d2, i2 = ref.step(a)
        assert np.array_equal(o1, o2)
        assert r1.dtype == r2.dtype and np.array_equal(r1, r2)
        assert np.array_equal(d1, d2)
        for a_, b_ in zip(i1, i2):
            assert sorted(a_) == sorted(b_)
            for key in a_:
                assert np.array_equal(a_[key], b_[key]), key
        for a_, b_ in zip(ours.reset_infos, ref.reset_infos):
            assert sorted(a_) == sorted(b_)
            for key in a_:
                assert np.array_equal(a_[key], b_[key]), key
        ends += int(d1.sum())
        partial += int(0 < d1.sum() < n)
        truncations += sum(bool(i["TimeLimit.truncated"]) for i in i1)
        terminations += sum(bool(d and not i["TimeLimit.truncated"]) for d, i in zip(d1, i1))
    assert ends >= 2 * n
    if early_stop:
        assert partial >= 2 and terminations >= 2 and truncations >= 1
    print(
        f"\nSB3VecEnv == DummyVecEnv over {steps} steps of {n} sub-envs: {ends} episode "
        f"ends ({terminations} terminated, {truncations} truncated), {partial} partial resets"
    )
    ours.close()
    ref.close()


def test_sb3_vec_env_bad_input():
    from asr.rl import SB3VecEnv

    with pytest.raises(TypeError, match="vector_env"):
        SB3VecEnv(object())
    from asr.envs.tasks import Reach2DOF

    with pytest.raises(ValueError, match="on_error"):
        SB3VecEnv(Reach2DOF(1), on_error="ignore")


@pytest.mark.slow
def test_tiny_training_improves_the_return():
    """PPO on Reach2DOF for 40k env-steps (a few seconds): the mean episode return of the last
    rows is clearly above that of the first rows that have one, and the held-out final error
    falls."""
    from asr.rl import train

    res = train(
        TASK,
        total_steps=40_960,
        num_envs=64,
        seed=0,
        n_steps=32,
        batch_size=512,
        eval_every=4,
        eval_episodes=32,
        final_eval_episodes=64,
    )
    rets = [r["return"] for r in res.curve if r["return"] is not None]
    metrics = [r["metric"] for r in res.curve if r["metric"] is not None]
    print(
        f"\nreturn {rets[0]:.2f} -> {rets[-1]:.2f}; held-out final error {metrics[0]:.3f} -> "
        f"{metrics[-1]:.3f} rad; final (64 targets) {res.final_error_rad:.3f} rad"
    )
    assert res.curve[-1]["steps"] >= 40_960
    assert rets[-1] > rets[0] + 15
    assert metrics[-1] < 0.7 * metrics[0]
    fig = res.figure()
    assert len(fig.data) == 2 and list(fig.data[0].y) == [r["return"] for r in res.curve]


@pytest.mark.slow
def test_same_seed_one_thread_same_curve(tmp_path):
    from asr.rl import load_checkpoint, train

    # 10 PPO updates of 8 envs x 16 steps: the 10 curve rows asked for below, no more
    a = train(TASK, total_steps=1_280, num_envs=8, seed=3, out_dir=tmp_path / "a", **TINY)
    b = train(TASK, total_steps=1_280, num_envs=8, seed=3, out_dir=tmp_path / "b", **TINY)
    c = train(TASK, total_steps=1_280, num_envs=8, seed=4, **TINY)
    assert len(a.curve) >= 10
    assert curve_rows(a.curve) == curve_rows(b.curve)
    assert curve_rows(a.curve) != curve_rows(c.curve)
    assert a.final_error_rad == b.final_error_rad
    la = load_checkpoint(tmp_path / "a")
    assert la.curve == a.curve and la.final_error_rad == a.final_error_rad
    obs = np.random.default_rng(0).normal(size=(5, 8))
    assert np.array_equal(la.predict(obs), a.predict(obs))
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    for key in (
        "task",
        "robot",
        "variant",
        "algo",
        "seed",
        "num_envs",
        "hyperparameters",
        "total_steps",
        "asr_version",
    ):
        assert key in cfg
    assert cfg["robot"] == "qbmove_arm_2dof" and cfg["hyperparameters"]["n_steps"] == 16


@pytest.mark.slow
def test_train_many_on_an_executor_equals_one_after_another(tmp_path):
    """asr.rl.train_many: two seeds on a two-process executor give the curves and final errors
    of the same runs trained one after another (each run on one torch thread: deterministic),
    in the order of the runs, each in out_root/run-<k>; bad runs are refused before training."""
    import concurrent.futures
    import multiprocessing

    from asr.rl import train_many

    # two PPO updates of 8 envs x 16 steps each: two curve rows per run to compare
    runs = [
        dict(task=TASK, algo="sb3", total_steps=256, num_envs=8, seed=s, **TINY) for s in (3, 4)
    ]
    serial = train_many(runs)
    with concurrent.futures.ProcessPoolExecutor(
        2, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        parallel = train_many(runs, executor=pool, out_root=tmp_path)
    for a, b in zip(serial, parallel):
        assert len(curve_rows(a["curve"])) >= 2
        assert curve_rows(a["curve"]) == curve_rows(b["curve"])
        assert a["final_error_rad"] == b["final_error_rad"]
    assert [p["config"]["seed"] for p in parallel] == [3, 4]
    assert [os.path.basename(p["out_dir"]) for p in parallel] == ["run-0", "run-1"]
    with pytest.raises(ValueError, match=r"runs\[0\]: needs 'task'"):
        train_many([dict(seed=1)])
    with pytest.raises(TypeError, match="executor"):
        train_many(runs[:1], executor=object())


def _wait_for(pred, timeout, what, proc=None):
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if pred():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"{what}: the process exited with {proc.returncode}: {proc.stderr.read()}"
            )
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout} s")


def _curve_len(path):
    try:
        return len(json.loads(path.read_text()))
    except (OSError, ValueError):
        return 0


@pytest.mark.slow
def test_resume_after_sigkill(tmp_path):
    """`asr train` killed with SIGKILL mid-training leaves a folder that loads (model, statistics
    and curve of one update); --resume continues it to total_steps."""
    from asr.rl import load_checkpoint

    out = tmp_path / "run"
    total = 12_800
    args = [
        sys.executable,
        "-m",
        "asr.cli",
        "train",
        "--algo",
        "sb3",
        "--task",
        TASK,
        "--total-steps",
        str(total),
        "--num-envs",
        "8",
        "--seed",
        "1",
        "--out",
        str(out),
        "--no-progress",
        "--set",
        "n_steps=16",
        "--set",
        "batch_size=128",
        "--set",
        "n_epochs=2",
        "--set",
        "net_arch=16,16",
        "--set",
        "eval_every=0",
        "--set",
        "final_eval_episodes=8",
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_for(lambda: _curve_len(out / "curve.json") >= 5, 120, "5 curve rows", proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
    killed = load_checkpoint(out)
    steps = killed.model.num_timesteps
    print(f"\nkilled at {steps} of {total} env-steps ({len(killed.curve)} curve rows)")
    assert 0 < steps < total
    assert killed.curve[-1]["steps"] <= steps
    assert abs(killed.vecnormalize.asr_num_timesteps - steps) <= 16 * 8
    done = subprocess.run(
        args + ["--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert not [p for p in os.listdir(out) if p.endswith(".tmp")]
    res = load_checkpoint(out)
    assert res.model.num_timesteps >= total
    assert res.curve[-1]["steps"] == res.model.num_timesteps
    assert res.vecnormalize.asr_num_timesteps == res.model.num_timesteps
    steps_seen = [r["steps"] for r in res.curve]
    assert steps_seen == sorted(set(steps_seen)) and steps_seen[-1] == total
    assert res.config["final_eval"]["episodes"] == 8
    assert res.config["total_steps"] == total


@pytest.mark.slow
def test_simulation_error_stops_training_and_keeps_the_checkpoint(tmp_path, monkeypatch):
    """A 1 s timestep makes the arm's springs diverge: train raises asr.SimulationError naming
    the instance, the step and the training step; the folder still loads."""
    import asr
    from asr.envs.tasks import Reach2DOF
    from asr.rl import load_checkpoint, train

    monkeypatch.setattr(Reach2DOF, "timestep", 1.0)
    with pytest.raises(
        asr.SimulationError,
        match=r"instance \d+, joint \d, step \d+.*"
        r"training stopped at \d+ env-steps.*last checkpoint",
    ) as info:
        train(
            TASK,
            total_steps=1_000,
            num_envs=4,
            seed=0,
            out_dir=tmp_path / "x",
            **dict(TINY, batch_size=64),
        )
    assert info.value.instance >= 0
    assert load_checkpoint(tmp_path / "x").model.num_timesteps == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(task="asr/Nope-v0"), r"task: got 'asr/Nope-v0', valid: .*asr/Reach2DOF-v0"),
        (dict(algo="sac"), r"algo: got 'sac', valid: ppo"),
        (dict(learning_rate=0.0), r"learning_rate: got 0.0, valid range \(0.0, 1.0\]"),
        (dict(learning_rate=2), r"learning_rate: got 2.0, valid range \(0.0, 1.0\]"),
        (dict(gamma=1.5), r"gamma: got 1.5, valid range \[0.0, 1.0\]"),
        (dict(n_steps=0), r"n_steps: got 0, valid range \[1, inf\)"),
        (dict(batch_size=1000), r"batch_size: got 1000, valid range \[2, n_steps \* num_envs"),
        (dict(clip_range=float("nan")), r"clip_range: got nan"),
        (dict(net_arch=[64, 0]), r"net_arch: got \[64, 0\]"),
        (dict(bogus=1), r"hyperparameter 'bogus': unknown; valid: learning_rate"),
        (dict(total_steps=0), r"total_steps: got 0, valid range \[1, inf\)"),
        (dict(num_envs=0), r"num_envs: got 0, valid range \[1, inf\)"),
    ],
)
def test_bad_input(kwargs, match):
    from asr.rl import train

    args = dict(task=TASK, total_steps=100, num_envs=2, n_steps=8, batch_size=16)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        train(**args)


def test_bad_types():
    from asr.rl import train

    with pytest.raises(TypeError, match="n_steps: got 1.5, expected an int"):
        train(TASK, total_steps=100, num_envs=2, n_steps=1.5)
    with pytest.raises(TypeError, match="learning_rate: got 'fast', expected a number"):
        train(TASK, total_steps=100, num_envs=2, learning_rate="fast")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["model.zip", "vecnormalize.json", "config.json", "curve.json"])
def test_corrupted_checkpoint_names_the_file(tmp_path, name):
    from asr.rl import load_checkpoint, train

    out = tmp_path / "run"
    train(TASK, total_steps=256, num_envs=8, seed=0, out_dir=out, **TINY)
    path = out / name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match=str(path).replace("\\", "\\\\")):
        load_checkpoint(out)
    with pytest.raises(ValueError, match=name):
        train(TASK, total_steps=512, num_envs=8, seed=0, out_dir=out, resume=True)


def test_out_dir_rules(tmp_path):
    from asr.rl import train

    out = tmp_path / "run"
    train(TASK, total_steps=128, num_envs=8, seed=0, out_dir=out, **TINY)
    with pytest.raises(ValueError, match="already holds .*resume"):
        train(TASK, total_steps=128, num_envs=8, seed=0, out_dir=out, **TINY)
    with pytest.raises(ValueError, match="seed: got 5, but the checkpoint .* was trained with 0"):
        train(TASK, total_steps=256, num_envs=8, seed=5, out_dir=out, resume=True)
    with pytest.raises(ValueError, match="n_epochs: got 3, but the checkpoint"):
        train(TASK, total_steps=256, num_envs=8, seed=0, out_dir=out, resume=True, n_epochs=3)
    with pytest.raises(ValueError, match="resume: needs out_dir"):
        train(TASK, total_steps=256, num_envs=8, resume=True)


def test_cli_bad_arguments(tmp_path, capsys):
    from asr.cli import main

    assert main(["train", "--out", str(tmp_path / "r"), "--set", "nonsense"]) == 2
    assert "--set: got 'nonsense', expected KEY=VALUE" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path / "r"), "--set", "gamma=2"]) == 2
    assert "gamma: got 2.0, valid range [0.0, 1.0]" in capsys.readouterr().err


def test_import_without_torch_says_how_to_install():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import asr.rl\n"
        "try:\n    asr.rl.train\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "pip install 'asr-sim[rl]'" in out.stdout
