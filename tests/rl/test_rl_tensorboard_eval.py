"""asr.rl.train as its users work: per-task default hyperparameters registered with the task
(asr.envs.TRAIN_DEFAULTS, docs/learning.md's table), TensorBoard event files from both backends
read back by tensorboard's EventAccumulator, and the evaluation callback: the best model in
RUN_DIR/best/ (loadable, its held-out metric the best evaluation's), early stopping after
`patience` evaluations without improvement, its counters kept by resume."""

import json
import os

import numpy as np
import pytest

from tests.conftest import require
from tests.support.paths import ROOT
from tests.support.rl import (
    TASK,
    one_torch_thread,  # noqa: F401  (autouse: one torch thread)
)
from tests.support.rl import TINY as RL_TINY

require("gymnasium")
require("rsl_rl")
require("tensorboard")

BACKENDS = ("sb3", "rsl_rl")
# 4 sub-envs x 16 steps: 64 env-steps an update; every update evaluated on 2 episodes
TINY = dict(RL_TINY, batch_size=64, n_epochs=1, eval_episodes=2, final_eval_episodes=2)
UPDATE = 64  # env-steps of one update
SHORT = {"max_episode_steps": 16}  # Reach2DOF episodes of 16 steps: one ends every update
SHARED_SCALARS = (
    "rollout/ep_rew_mean",
    "rollout/ep_len_mean",
    "train/policy_loss",
    "train/value_loss",
    "train/entropy",
    "train/learning_rate",
    "time/fps",
    "eval/mean_return",
    "eval/metric",
    "eval/best_metric",
)


def defaults_table():
    """docs/learning.md's table of the registered training defaults, made from the registry."""
    from asr.envs import TRAIN_DEFAULTS

    lines = [
        "| task | num_envs | total_steps | registered hyperparameters (the rest: generic) |",
        "| --- | --- | --- | --- |",
    ]
    for task, reg in TRAIN_DEFAULTS.items():
        hp = reg.get("hyperparameters", {})
        text = ", ".join(f"`{k}={v!r}`" for k, v in hp.items()) or "none: the generic defaults"
        lines.append(
            f"| `{task}` | {reg.get('num_envs', '64 (generic)')} | "
            f"{reg.get('total_steps', '100000 (generic)')} | {text} |"
        )
    return "\n".join(lines)


def test_docs_table_matches_the_registry():
    import gymnasium

    from asr.envs import TRAIN_DEFAULTS
    from asr.rl.training import validate_hyperparameters

    tasks = sorted(k for k in gymnasium.registry if k.startswith("asr/"))
    assert sorted(TRAIN_DEFAULTS) == tasks  # every task registers its defaults ({}: generic)
    for task, reg in TRAIN_DEFAULTS.items():
        assert set(reg) <= {"num_envs", "total_steps", "hyperparameters"}, task
        validate_hyperparameters(reg.get("hyperparameters", {}), reg.get("num_envs"))
    with open(os.path.join(str(ROOT), "docs", "learning.md")) as f:
        assert defaults_table() in f.read()


def test_registered_defaults_explicit_settings_win():
    from asr.envs import TRAIN_DEFAULTS
    from asr.rl._config import HYPERPARAMETERS, resolve_defaults

    reg = TRAIN_DEFAULTS[TASK]
    hp, sources, num_envs, total = resolve_defaults(TASK, {"learning_rate": 1e-4})
    assert (num_envs, total) == (reg["num_envs"], reg["total_steps"])
    assert sources["num_envs"] == sources["total_steps"] == "task"
    assert hp["learning_rate"] == 1e-4 and sources["learning_rate"] == "set"
    assert hp["lr_decay"] == reg["hyperparameters"]["lr_decay"] == 1.0
    assert sources["lr_decay"] == "task"
    assert hp["clip_range"] == HYPERPARAMETERS["clip_range"][0]
    assert sources["clip_range"] == "default"
    # desired_kl > 0 set: the registered lr_decay (which it excludes) gives way to the generic 0
    hp, sources, *_ = resolve_defaults(TASK, {"desired_kl": 0.01})
    assert hp["lr_decay"] == 0.0 and sources["lr_decay"] == "default"
    # a registered batch larger than one rollout of the caller's sub-envs: capped to it
    hp, sources, num_envs, _ = resolve_defaults(TASK, {}, num_envs=4)
    assert num_envs == 4 and sources["num_envs"] == "set"
    assert hp["batch_size"] == 16 * 4 and sources["batch_size"].startswith("task, capped")
    # a task without registered ones: the generic defaults
    hp, sources, num_envs, total = resolve_defaults("asr/EquilibriumTracking-v0", {})
    assert (num_envs, total) == (64, 100_000)
    assert hp == {k: v[0] for k, v in HYPERPARAMETERS.items()}
    assert set(sources.values()) == {"default"}


@pytest.mark.parametrize(
    "hp, match",
    [
        ({"patience": -1}, r"patience: got -1, valid range \[0, inf\)"),
        ({"patience": 2, "eval_every": 0}, r"patience: got 2, valid only with eval_every > 0"),
        ({"min_delta": -0.5}, r"min_delta: got -0.5, valid range \[0.0, inf\)"),
        ({"eval_every": -64}, r"eval_every: got -64, valid range \[0, inf\)"),
        ({"tensorboard": "no"}, r"tensorboard: got 'no', expected true or false"),
        ({"patience": 1.5}, r"patience: got 1.5, expected an int in \[0, inf\)"),
    ],
)
def test_bad_evaluation_settings_are_refused(hp, match):
    from asr.rl import train

    with pytest.raises((ValueError, TypeError), match=match):
        train(TASK, total_steps=64, num_envs=4, **dict(TINY, **hp))


def run(backend, out, updates, seed, resume=False, **hp):
    """train() on Reach2DOF with 16-step episodes, 4 sub-envs, `updates` updates of 64 steps."""
    from asr.rl import train

    n = None if resume else 4  # resume: the folder's
    return train(
        TASK,
        algo=backend,
        total_steps=updates * UPDATE,
        num_envs=n,
        seed=seed,
        env_kwargs=SHORT,
        out_dir=out,
        resume=resume,
        **hp,
    )


def scalars(folder):
    """{tag: [(step, value), ...]} of the TensorBoard event files in folder."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_tensorboard_and_the_best_model(backend, tmp_path):
    from asr.rl import load_checkpoint

    out = tmp_path / "run"
    res = run(backend, out, 4, 2, **TINY)
    steps = [r["steps"] for r in res.curve]
    assert steps == [UPDATE * k for k in range(1, 5)]
    # TensorBoard: event files in out/tb with the names both backends share, one point per update
    assert [n for n in os.listdir(out / "tb") if n.startswith("events.out.tfevents")]
    tb = scalars(out / "tb")
    assert set(SHARED_SCALARS) <= set(tb), sorted(tb)
    for tag in SHARED_SCALARS:
        assert [s for s, _ in tb[tag]] == steps, tag
        assert all(np.isfinite(v) for _, v in tb[tag]), tag
    assert [v for _, v in tb["eval/metric"]] == pytest.approx([r["metric"] for r in res.curve])
    returns = [r["return"] for r in res.curve]
    assert [v for _, v in tb["rollout/ep_rew_mean"]] == pytest.approx(returns)
    assert all(v > 0 for _, v in tb["train/value_loss"] + tb["time/fps"])
    assert all(v > 0 for _, v in tb["train/entropy"])  # a Gaussian of std e^-1 per action: > 0
    # Reach's registered lr_decay 1: the rate of the update at s env-steps, lr (1 - s / total)
    lr = res.config["hyperparameters"]["learning_rate"]
    assert res.config["sources"]["lr_decay"] == "task"
    expected = [lr * (1 - s / steps[-1]) for s in steps]
    assert [v for _, v in tb["train/learning_rate"]] == pytest.approx(expected, abs=1e-9)
    # the best model: the evaluation with the lowest final error, in out/best, loadable
    ev = res.config["evaluation"]
    metrics = [r["metric"] for r in res.curve]
    k = int(np.argmin(metrics))
    assert ev["best"] == metrics[k] and ev["best_steps"] == steps[k]
    assert ev["evaluations"] == 4 and ev["without_improvement"] == 3 - k
    assert [v for _, v in tb["eval/best_metric"]] == pytest.approx(np.minimum.accumulate(metrics))
    best = load_checkpoint(out / "best")
    assert best.config["best"]["steps"] == steps[k] and best.model.num_timesteps == steps[k]
    assert [r["steps"] for r in best.curve] == steps[: k + 1]
    # the same held-out episodes give the best evaluation's value again (deterministic policy)
    assert best.evaluate(TINY["eval_episodes"]) == pytest.approx(ev["best"], abs=1e-12)
    final = load_checkpoint(out)
    assert final.model.num_timesteps == steps[-1]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["evaluation"] == ev and cfg["sources"]["eval_every"] == "set"


@pytest.mark.parametrize("backend", BACKENDS)
def test_early_stopping_and_resume_keep_the_counters(backend, tmp_path):
    """min_delta 1e9 rad: no evaluation after the first can improve. patience 3 over two
    updates: not stopped, one evaluation without improvement; resumed to eight updates it stops
    at the fourth (1 + 3), not the fifth (had resume reset the counter, at 2 + 1 + 3 = 6)."""
    from asr.rl import load_checkpoint

    hp = dict(TINY, patience=3, min_delta=1e9)
    out = tmp_path / "run"
    a = run(backend, out, 2, 1, **hp)
    ev = a.config["evaluation"]
    assert ev["stopped_early"] is False and ev["without_improvement"] == 1
    assert ev["best_steps"] == UPDATE and ev["evaluations"] == 2
    b = run(backend, out, 8, 1, resume=True, **hp)
    assert [r["steps"] for r in b.curve] == [UPDATE * k for k in range(1, 5)]
    ev = b.config["evaluation"]
    assert ev["stopped_early"] is True and ev["without_improvement"] == 3
    assert ev["evaluations"] == 4 and ev["best_steps"] == UPDATE
    loaded = load_checkpoint(out)
    assert loaded.model.num_timesteps == 4 * UPDATE < b.config["total_steps"]
    assert loaded.config["final_eval"]["steps"] == 4 * UPDATE
    assert load_checkpoint(out / "best").model.num_timesteps == UPDATE
    # the TensorBoard points of both sessions, one per update, none dropped or twice (sorted:
    # the accumulator reads the two files in the order of their names, which within one
    # second and one process end in a per-process counter, not a time)
    steps = sorted(s for s, _ in scalars(out / "tb")["train/value_loss"])
    assert steps == [64, 128, 192, 256]
    # a stopped run stays stopped when resumed again
    c = run(backend, out, 8, 1, resume=True, **hp)
    assert c.curve == b.curve and load_checkpoint(out).model.num_timesteps == 4 * UPDATE


@pytest.mark.parametrize("backend", BACKENDS)
def test_patience_one_stops_at_the_second_evaluation(backend, tmp_path):
    hp = dict(TINY, patience=1, min_delta=1e9, tensorboard=False)
    res = run(backend, tmp_path, 6, 0, **hp)
    assert [r["steps"] for r in res.curve] == [UPDATE, 2 * UPDATE]
    assert res.config["evaluation"]["stopped_early"] is True
    assert res.model.num_timesteps == 2 * UPDATE
    assert not (tmp_path / "tb").exists()  # tensorboard=false: no event files
    assert (tmp_path / "best" / "config.json").exists()


def test_bare_cli_run_takes_the_registered_defaults(tmp_path, capsys):
    """`asr train --task asr/Throw-v0` with only the run's size given: config.json holds Throw's
    registered hyperparameters and says they came from the task."""
    from asr.cli import main
    from asr.envs import TRAIN_DEFAULTS

    task = "asr/Throw-v0"
    out = tmp_path / "run"
    argv = ["train", "--task", task, "--total-steps", "256", "--num-envs", "2"]
    assert main(argv + ["--out", str(out), "--no-progress"]) == 0, capsys.readouterr().err
    cfg = json.loads((out / "config.json").read_text())
    reg = TRAIN_DEFAULTS[task]["hyperparameters"]
    for key, value in reg.items():
        if key != "batch_size":
            assert cfg["hyperparameters"][key] == value and cfg["sources"][key] == "task", key
    # 128 steps x 2 sub-envs: the registered 2048-sample batch capped to the one rollout
    assert cfg["hyperparameters"]["batch_size"] == 256
    assert cfg["sources"]["batch_size"] == "task, capped to n_steps * num_envs"
    assert cfg["sources"]["num_envs"] == "set" and cfg["sources"]["clip_range"] == "default"
    assert cfg["final_eval"]["episodes"] == reg["final_eval_episodes"]
    # eval_every 81920 > 256 env-steps: the one evaluation is the one after the last update
    assert [r["steps"] for r in json.loads((out / "curve.json").read_text())] == [256]
    assert cfg["evaluation"]["evaluations"] == 1


def test_cli_without_num_envs_takes_the_registered_count(tmp_path, capsys):
    """`asr train` without --num-envs: the task's registered sub-env count (the CLI's own default
    was 64 before, which hid it), recorded as from the task."""
    from asr.cli import main
    from asr.envs import TRAIN_DEFAULTS

    task = "asr/Reach2DOF-v0"
    out = tmp_path / "run"
    argv = ["train", "--task", task, "--total-steps", "256", "--out", str(out), "--no-progress"]
    assert main(argv) == 0, capsys.readouterr().err
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["num_envs"] == TRAIN_DEFAULTS[task]["num_envs"] != 64
    assert cfg["sources"]["num_envs"] == "task" and cfg["sources"]["total_steps"] == "set"
