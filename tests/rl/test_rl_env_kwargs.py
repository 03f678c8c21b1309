"""asr.rl.train's env_kwargs: the task class's keyword arguments, checked before anything is
built, stored in config.json and used again by the held-out evaluation, resume, train_many and
`asr train --env`. Throw with actuator="rigid" (a rigid arm instead of the qbmove actuators)."""

import json

import numpy as np
import pytest

from tests.support.rl import one_torch_thread  # noqa: F401  (autouse: one torch thread)

THROW = "asr/Throw-v0"
RIGID = {"actuator": "rigid"}
TINY = dict(n_steps=8, batch_size=16, n_epochs=1, eval_every=0, final_eval_episodes=4)


@pytest.mark.parametrize(
    "env_kwargs, err, match",
    [
        (
            {"bogus": 1},
            ValueError,
            r"env_kwargs: 'bogus' is not a keyword argument of Throw; "
            r"valid: actuator, .*max_episode_steps",
        ),
        ({"threads": 2}, ValueError, r"'threads' is not a keyword argument"),
        ({"actuator": object()}, ValueError, r"env_kwargs\['actuator'\]: got .* expected a JSON"),
        ([("actuator", "rigid")], TypeError, r"env_kwargs: expected a dict, got list"),
    ],
)
def test_bad_env_kwargs_are_refused_before_anything_is_built(tmp_path, env_kwargs, err, match):
    from asr.rl import train

    out = tmp_path / "run"
    with pytest.raises(err, match=match):
        train(THROW, total_steps=16, num_envs=2, out_dir=out, env_kwargs=env_kwargs, **TINY)
    assert not out.exists()


def test_a_bad_value_is_the_task_class_error():
    from asr.rl import train

    with pytest.raises(ValueError, match="actuator: got 'steel'"):
        train(THROW, total_steps=16, num_envs=2, env_kwargs={"actuator": "steel"}, **TINY)


@pytest.mark.slow
def test_rigid_throw_trains_evaluates_and_resumes_with_its_env_kwargs(tmp_path):
    """The folder's config.json holds env_kwargs; the final held-out metric equals the policy's
    evaluation on the rigid arm (TrainResult.evaluate, evaluate_policy with env_kwargs) and the
    rigid arm's distances differ from the qbmove arm's for the same policy; resume needs the
    same env_kwargs."""
    from asr.envs.throw import Throw
    from asr.rl import load_checkpoint, train
    from asr.rl._results import evaluate_policy

    out = tmp_path / "run"
    res = train(THROW, total_steps=16, num_envs=2, seed=1, out_dir=out, env_kwargs=RIGID, **TINY)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["env_kwargs"] == RIGID
    rigid = evaluate_policy(res.model, res.vecnormalize, Throw, 4, env_kwargs=RIGID)
    assert res.final_metric == pytest.approx(float(np.mean(rigid)), abs=1e-12)
    loaded = load_checkpoint(out)
    assert loaded.evaluate(4) == pytest.approx(res.final_metric, abs=1e-12)
    with pytest.raises(ValueError, match=r"env_kwargs: got \{\}, but the checkpoint .*'rigid'"):
        train(THROW, total_steps=32, num_envs=2, seed=1, out_dir=out, resume=True)
    more = train(
        THROW, total_steps=32, num_envs=2, seed=1, out_dir=out, resume=True, env_kwargs=RIGID
    )
    assert more.curve[-1]["steps"] == 32 and more.config["env_kwargs"] == RIGID


class ScriptedThrow:
    """A policy with SB3's predict that swings the arm and releases the ball at its 40th step
    (every episode throws: a non-zero distance that depends on the arm's actuators)."""

    def __init__(self, space):
        self.space, self.calls = space, 0

    def predict(self, obs, deterministic=True):
        self.calls += 1
        act = np.tile(np.clip(0.5, self.space.low, self.space.high), (len(obs), 1))
        act[:, -1] = 1.0 if self.calls > 40 else -1.0
        return act, None


@pytest.mark.slow
def test_the_held_out_evaluation_uses_the_env_kwargs():
    """evaluate_policy and TrainResult.evaluate build the task with the run's env_kwargs: the
    same scripted throw lands elsewhere from the rigid arm than from the qbmove arm."""
    from asr.envs.throw import Throw
    from asr.rl import TrainResult
    from asr.rl._results import evaluate_policy

    space = Throw.single_action_space
    rigid = evaluate_policy(ScriptedThrow(space), None, Throw, 2, env_kwargs=RIGID)
    soft = evaluate_policy(ScriptedThrow(space), None, Throw, 2)
    assert np.all(rigid > 0.05) and np.all(soft > 0.05)
    assert abs(rigid.mean() - soft.mean()) > 0.01
    res = TrainResult(ScriptedThrow(space), None, {"task": THROW, "env_kwargs": RIGID}, [])
    assert res.evaluate(2) == pytest.approx(rigid.mean(), abs=1e-12)


@pytest.mark.slow
def test_train_many_and_the_cli_pass_env_kwargs(tmp_path):
    from asr.cli import main, parse_env
    from asr.rl import train_many

    assert parse_env(["actuator=rigid", "preset=0.5", "x=[1, 2]", "s=null"]) == {
        "actuator": "rigid",
        "preset": 0.5,
        "x": [1, 2],
        "s": None,
    }
    with pytest.raises(ValueError, match="--env: got 'rigid', expected KEY=VALUE"):
        parse_env(["rigid"])
    runs = [dict(task=THROW, total_steps=16, num_envs=2, env_kwargs=RIGID, **TINY)]
    (summary,) = train_many(runs, out_root=tmp_path / "many")
    assert summary["config"]["env_kwargs"] == RIGID
    argv = ["train", "--task", THROW, "--total-steps", "16", "--num-envs", "2", "--no-progress"]
    argv += ["--out", str(tmp_path / "cli"), "--env", "actuator=rigid"]
    for k, v in TINY.items():
        argv += ["--set", f"{k}={v}"]
    assert main(argv) == 0
    cfg = json.loads((tmp_path / "cli" / "config.json").read_text())
    assert cfg["env_kwargs"] == RIGID
    assert cfg["final_eval"]["metric"] == pytest.approx(summary["final_metric"], abs=1e-12)
    assert main(argv[:-2] + ["--env", "colour=red"]) == 2
