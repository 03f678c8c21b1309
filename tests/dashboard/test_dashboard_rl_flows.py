"""The RL panel's flows in Debian's Chromium (dashboard/PROTOCOL.md "RL"), against a real server
and real `asr train` processes: Throw (a task without targets) trains to the end and its policy
drives the live robot; a run that fails (its trainer killed) says so on the page, Watch stays
disabled and POST /api/rl/watch answers 422 naming the failure; the learning-curve plot shows the
current run only (a new run starts it clean) and a status older than the one shown (a late
answer) changes nothing. And every registered task is watchable: the watcher's references equal
those of the task's own env under the same policy."""

import os
import signal

import pytest

from tests.conftest import require

require("fastapi")
require("stable_baselines3")
from asr.learning.gym_registry import ENVS  # noqa: E402
from tests.support.dashboard_server import chromium_page, page_api, wait_for  # noqa: E402

THROW = {"#rl-num-envs": "4", "#rl-n-steps": "16", "#rl-batch-size": "64", "#rl-total-steps": "64"}
# a long first rollout (2000 steps of 16 sub-envs): the trainer is killed before or after its
# first row, the plot must show that run's rows only either way
LONG = {"#rl-num-envs": "16", "#rl-n-steps": "2000", "#rl-batch-size": "64"}
LONG["#rl-total-steps"] = "1000000"


def start(pg, task, fields):
    pg.select_option("#rl-task", task)
    for sel, value in fields.items():
        pg.fill(sel, value)
    pg.click("#btn-rl-start")


def status_text(pg, words, timeout_s):
    """Wait until #rl-status shows `words` and no training runs; its text."""
    pg.wait_for_function(
        """(w) => { const s = document.getElementById('rl-status');
            return s.dataset.running === '0' && s.textContent.includes(w); }""",
        arg=words,
        timeout=timeout_s * 1000,
    )
    return pg.text_content("#rl-status")


def plotted_steps(pg):
    """The run the plot shows (data-run) and the env-steps of each of its traces."""
    return pg.evaluate(
        """() => { const p = document.getElementById('plot-rl');
            return [p.dataset.run, (p.data || []).map(t => Array.from(t.x || []))]; }"""
    )


def assert_plot_is_run(pg, run):
    """The plot shows run `run` and exactly its curve (GET /api/rl/status): nothing older."""
    code, st = page_api(pg, "GET", "/api/rl/status")
    assert code == 200 and st["run"] == run
    shown, traces = plotted_steps(pg)
    assert shown == str(run)
    assert all(x == st["curve"]["steps"] for x in traces), (traces, st["curve"]["steps"])
    return st


@pytest.mark.slow
@pytest.mark.browser
def test_throw_trains_and_a_failed_run_leaves_nothing_to_watch():
    with chromium_page(rl_stop_s=3) as pg:
        pg.wait_for_function(
            "() => document.querySelectorAll('#rl-task option').length > 0", timeout=20000
        )
        options = pg.eval_on_selector_all("#rl-task option", "os => os.map(o => o.value)")
        assert (
            "asr/Throw-v0" in options
            and options == page_api(pg, "GET", "/api/rl/tasks")[1]["tasks"]
        )

        # run 1: Throw to the end, its curve plotted, its policy watched on the throw arm
        start(pg, "asr/Throw-v0", THROW)
        text = status_text(pg, "finished", 240)
        assert text.startswith("run 1: finished; 64 steps"), text
        run1 = st = assert_plot_is_run(pg, 1)
        assert st["curve"]["steps"] == [64] and st["can_watch"]
        # the plot names Throw's metric: the distance thrown, m (not a joint error)
        assert st["metric"] == {"name": "distance thrown", "unit": "m", "better": "higher"}
        names = pg.evaluate("() => document.getElementById('plot-rl').data.map(t => t.name)")
        assert "distance thrown (m)" in names, names
        pg.wait_for_selector("#btn-rl-watch:not([disabled])", timeout=10000)
        pg.click("#btn-rl-watch")
        # watch starts after the checkpoint's ONNX export, made in a child that imports torch
        # (6 s idle, 20 s on a loaded host): 90 s is a stopped export, not a slow one
        pg.wait_for_selector("#btn-rl-manual:not([disabled])", timeout=90000)
        state = wait_for(
            lambda: (lambda s: s["watch"] and s["watch"]["env_step"] > 3 and s)(
                page_api(pg, "GET", "/api/state")[1]
            ),
            30,
            "the Throw policy acting",
        )
        assert state["watch"]["task"] == "asr/Throw-v0" and state["variant"] == "throw"
        assert state["error"] is None
        pg.click("#btn-rl-manual")
        pg.wait_for_selector("#btn-rl-manual[disabled]", timeout=20000)

        # run 2: the plot starts clean at once, then the trainer dies (SIGKILL)
        start(pg, "asr/Reach2DOF-v0", LONG)
        pg.wait_for_function(
            "() => document.getElementById('plot-rl').dataset.run === '2'", timeout=20000
        )
        code, st = page_api(pg, "GET", "/api/rl/status")
        assert code == 200 and st["run"] == 2 and st["running"]
        # nothing to watch before its first update (a 32000-step rollout after the trainer's
        # torch import: seconds at best, against the milliseconds of these requests)
        assert not st["curve"]["steps"] and not st["can_watch"]
        code, body = page_api(pg, "POST", "/api/rl/watch")
        assert code == 422 and "run 2 has no finished PPO update" in body["detail"], body
        training2 = st
        os.kill(st["pid"], signal.SIGKILL)
        text = status_text(pg, "failed", 60)
        assert text.startswith("run 2: failed (exit -9, SIGKILL)"), text
        st = assert_plot_is_run(pg, 2)
        # answers that cross: run 1's status and run 2's while it trained, arriving now (a status
        # poll answered late), are older than what the page shows and change nothing
        pg.evaluate(
            """async (old) => { const rl = await import('/static/rl.js');
                old.forEach((m) => rl.handleRl(m)); }""",
            [run1, training2],
        )
        assert pg.text_content("#rl-status") == text
        assert_plot_is_run(pg, 2)
        assert not st["can_watch"]
        assert pg.is_disabled("#btn-rl-watch")
        code, body = page_api(pg, "POST", "/api/rl/watch")
        assert code == 422 and "run 2 failed (exit -9" in body["detail"], body
        assert page_api(pg, "GET", "/api/state")[1]["watch"] is None
        assert not pg.js_errors, pg.js_errors


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(ENVS))  # every registered task
def test_the_watcher_acts_as_the_task(task, tmp_path):
    """Every task is watchable: the watcher's references from the link state equal those the
    task's own env holds when the same policy acts on it (same episode seed, same steps), for 2
    instances; Throw's release ends the watcher's episode as it ends the task's. The policy is
    exported here, in this process (torch is loaded already): the export child of a training
    folder that the server uses is run for every task by test_every_task_dashboard and
    test_dashboard_rl (a child per task here took ~9 s at load 6, against ~3 s)."""
    import numpy as np
    from stable_baselines3 import PPO

    from asr.rl.onnx_policy import OnnxPolicy, export_onnx
    from asr.rl.vec_env import SB3VecEnv
    from asr_dashboard.policy_watch import PolicyWatcher
    from asr_dashboard.rl_tasks import task_class, watchable_tasks

    assert task in watchable_tasks()
    cls = task_class(task)
    model = PPO("MlpPolicy", SB3VecEnv(cls(1)), n_steps=8, batch_size=8, seed=1, device="cpu")
    onnx = export_onnx(model, tmp_path / "policy.onnx", task=task)
    w = PolicyWatcher(OnnxPolicy(onnx), task, run_id=1, seed=5)
    env = cls(2)
    obs, _ = env.reset(seed=int(np.random.default_rng(5).integers(2**31)))
    for step in range(1, 6):
        held = w.act(env.q.copy(), env.qd.copy())
        action = np.clip(
            w.model.predict(obs.astype(np.float32), deterministic=True)[0], w.low, w.high
        )
        obs, _, term, trunc, _ = env.step(action)
        np.testing.assert_array_equal(held, env._held)
        assert w.info()["env_step"] == step and w.ended == bool(term.any() or trunc.any())
        if w.ended:
            break
    info = w.info()
    assert info["task"] == task and info["episode"] == 1
    # a task with targets reports its instance's target (Throw and Periodic2DOF have none)
    assert (info["target"] is None) == (getattr(cls, "target_range", None) is None)


@pytest.mark.slow
def test_the_watcher_runs_the_task_as_the_policy_was_trained(tmp_path):
    """A policy trained with env_kwargs (Periodic2DOF at 1 Hz, A = 0.3 rad: the ONNX file's
    env_kwargs) is watched on the task built with them: its references follow the 1 Hz
    reference of an env made with the same keywords, and its episodes last that task's 400 env
    steps (4 cycles), not the default 2 Hz task's 200. Before, the watcher built the task with
    its defaults."""
    import numpy as np
    from stable_baselines3 import PPO

    from asr.rl.onnx_policy import OnnxPolicy, export_onnx
    from asr.rl.vec_env import SB3VecEnv
    from asr_dashboard.policy_watch import PolicyWatcher
    from asr_dashboard.rl_tasks import RLInputError, task_class

    task, kwargs = "asr/Periodic2DOF-v0", {"frequency": 1.0, "amplitude": 0.3}
    cls = task_class(task)
    model = PPO("MlpPolicy", SB3VecEnv(cls(1)), n_steps=8, batch_size=8, seed=1, device="cpu")
    onnx = export_onnx(model, tmp_path / "policy.onnx", task=task, env_kwargs=kwargs)
    w = PolicyWatcher(OnnxPolicy(onnx), task, run_id=1, seed=5)
    assert w.env_kwargs == kwargs and w.episode_steps == 400 != cls(1).max_episode_steps
    env = cls(2, **kwargs)
    env.reset(seed=int(np.random.default_rng(5).integers(2**31)))
    for _ in range(3):
        held = w.act(env.q.copy(), env.qd.copy())
        obs = env.observe()
        np.testing.assert_array_equal(w.env.observe(), obs)  # q_ref, qd_ref of 1 Hz, A = 0.3
        action = w.model.predict(obs.astype(np.float32), deterministic=True)[0]
        env.step(np.clip(action, w.low, w.high))
        np.testing.assert_array_equal(held, env._held)
    # a file whose env_kwargs the task refuses is refused by name, not watched at the defaults
    bad = OnnxPolicy(onnx)
    bad.env_kwargs = {"frequency": 3.0}
    with pytest.raises(RLInputError, match="env_kwargs"):
        PolicyWatcher(bad, task, run_id=2)
