"""asr.experiments.stiffness: the arms' keywords build the right envs (the fixed arm's per-joint
presets held, per sub-env in one batch), a tiny CEM comparison is reproducible and spends the same
number of episodes on every arm, the fixed arm's batched search is the env with preset=(p1, p2),
the confidence interval is Student's t (scipy), bad input is named; compare_ppo gives every arm
the same runs (seeds, env-steps, backend) on the task's options (Periodic2DOF at 1.25 Hz), seen
through an executor that records the runs instead of training them; search_fixed_presets_ppo
runs one PPO run per grid pair on seed 100, keeps the pair with the best metric (by the metric's
direction) and trains the evaluation seeds on it, and its runs are seeded (a tiny real training
repeated gives the search's metric bit for bit)."""

import concurrent.futures

import numpy as np
import pytest

from asr.envs import TRAIN_DEFAULTS
from asr.envs.throw import PRESET_HI, PRESET_LO, Throw
from asr.experiments import stiffness
from asr.rl import task_class
from tests.conftest import require

TASK = "asr/Throw-v0"
TINY = dict(seeds=(0, 1), restarts=2, iterations=2, population=4)


def _env(strategy, preset=None, n=1):
    return task_class(TASK)(n, **stiffness.strategy_kwargs(strategy, preset))


def _stiffness_trace(env, preset_actions, steps=8):
    """(steps, N, 2) stiffness (N m/rad) under fixed equilibria and the given preset actions."""
    env.reset(seed=0)
    out = []
    for k in range(steps):
        n = env.num_envs
        a = np.column_stack([np.full((n, 2), 0.3 * k / steps), preset_actions[k], np.full(n, -1.0)])
        out.append(env.step(a)[4]["stiffness"].copy())
    return np.array(out)


def test_strategy_kwargs_build_the_arms():
    assert stiffness.strategy_kwargs("rigid") == {"actuator": "rigid"}
    assert stiffness.strategy_kwargs("variable") == {"actuator": "qbmove", "preset": None}
    assert stiffness.strategy_kwargs("fixed", (0.1, 0.7)) == {
        "actuator": "qbmove",
        "preset": [0.1, 0.7],
    }
    rigid = _env("rigid")
    s = _stiffness_trace(rigid, np.full((8, 1, 2), 0.4))
    assert rigid.actuator == "rigid" and np.allclose(s, 2000.0)  # the stiff transmission
    variable = _env("variable")
    act = np.array([[0.0, 0.0, 0.15, 0.65, -1.0]])
    assert np.allclose(variable.refs(act)[0, :, 1], [0.15, 0.65])  # presets are actions


def test_fixed_presets_are_held_per_joint_and_per_sub_env():
    rng = np.random.default_rng(3)
    fixed = _env("fixed", (0.1, 0.7))
    fixed.reset(seed=0)
    b = fixed.sim.batch  # the motors start at eq -+ preset, per joint
    assert np.allclose(b.field("th1")[0], [0.1, 0.7]) and np.allclose(
        b.field("th2")[0], [-0.1, -0.7]
    )
    act = np.array([[0.0, 0.0, 0.8, 0.0, -1.0]])
    assert np.allclose(fixed.refs(act)[0, :, 1], [0.1, 0.7])  # the preset actions are ignored
    random_presets = rng.uniform(PRESET_LO, PRESET_HI, (8, 1, 2))
    s1 = _stiffness_trace(fixed, random_presets)
    s2 = _stiffness_trace(_env("fixed", (0.1, 0.7)), np.zeros((8, 1, 2)))
    np.testing.assert_array_equal(s1, s2)
    swapped = _stiffness_trace(_env("fixed", (0.7, 0.1)), np.zeros((8, 1, 2)))
    assert not np.allclose(s1, swapped)
    # one preset row per sub-env in one batch: each row is its own single env, bit for bit
    rows = Throw(2, preset=np.array([[0.1, 0.7], [0.7, 0.1]]))
    both = _stiffness_trace(rows, np.tile(random_presets, (1, 2, 1)))
    np.testing.assert_array_equal(both[:, 0], s1[:, 0])
    np.testing.assert_array_equal(both[:, 1], swapped[:, 0])
    # the step's stiffness is the qbmove Advanced's closed form at the step's clamped
    # deflections (docs/models.md: tau_i = -k_i sinh(a_i phi_i), so
    # sigma = sum k_i a_i cosh(a_i phi_i))
    fixed.reset(seed=0)
    info = fixed.step(act)[4]
    for j in range(2):
        k1, a1, k2, a2 = (float(b.get_param(j, n)[0]) for n in ("k1", "a1", "k2", "a2"))
        d1, d2 = b.field("defl1")[0, j], b.field("defl2")[0, j]
        sigma = k1 * a1 * np.cosh(a1 * d1) + k2 * a2 * np.cosh(a2 * d2)
        assert info["stiffness"][0, j] == pytest.approx(sigma, rel=1e-12)
    assert info["stiffness"][0, 1] > info["stiffness"][0, 0]  # the stiffer preset, 0.7 rad


@pytest.fixture(scope="module")
def tiny():
    return stiffness.compare_cem(TASK, **TINY)


def test_tiny_comparison_is_reproducible_and_fair(tiny):
    again = stiffness.compare_cem(TASK, **TINY)
    assert again["runs"] == tiny["runs"]
    budget = 2 * 2 * 4 * 1  # restarts x iterations x population x episodes
    assert tiny["settings"]["budget_episodes_per_seed"] == budget
    assert tiny["episodes"] == {s: 2 * budget for s in stiffness.STRATEGIES}
    for strategy, runs in tiny["runs"].items():
        assert [r["seed"] for r in runs] == [0, 1]
        for r in runs:  # the held-out throw is the best restart's (the task is deterministic)
            assert r["metric"] == pytest.approx(max(r["restart_returns"]), abs=1e-12)
        summary = tiny["summary"][strategy]
        assert summary["n"] == 2 and summary["best"] == max(r["metric"] for r in runs)
    # the fixed arm's batched search (one preset row per sub-env) is the env with preset=(p1, p2)
    ev = stiffness.Evaluator(TASK, "fixed", stiffness.OPEN_LOOP[TASK])
    for r in tiny["runs"]["fixed"]:
        p = r["presets"]
        assert all(PRESET_LO <= x <= PRESET_HI for x in p)
        env = _env("fixed", p)
        env.reset(seed=0)
        distance = 0.0
        for a in ev.actions(np.array(r["theta"])):
            distance += float(env.step(a[None])[1][0])
        assert distance == pytest.approx(r["metric"], abs=1e-12)


def test_confidence_interval_is_students_t(tiny):
    t = require("scipy.stats").t
    for s in tiny["summary"].values():
        v = np.array(s["per_seed"])
        half = t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
        assert s["mean"] == pytest.approx(v.mean(), rel=1e-12)
        assert s["ci95"] == pytest.approx(half, rel=1e-6, abs=1e-12)
    fake = dict(
        metric=dict(key="m", name="m", unit="m", better="lower"),
        settings=dict(total_steps=10),
        runs={"rigid": [{"metric": x} for x in (1.0, 2.0, 4.0, 7.0)]},
    )
    s = stiffness.summarize(fake)["rigid"]
    assert s["ci95"] == pytest.approx(t.ppf(0.975, 3) * np.std([1, 2, 4, 7], ddof=1) / 2)
    assert (s["best"], s["worst"], s["budget"]) == (1.0, 7.0, 10)  # lower is better here


class RecordingExecutor(concurrent.futures.Executor):
    """Answers each training run at once, its final metric the run's number (1, 2, ...),
    keeping the run's train() keywords in `runs` (nothing trains)."""

    def __init__(self):
        self.runs = []

    def submit(self, fn, kwargs):
        self.runs.append(kwargs)
        done = concurrent.futures.Future()
        steps = kwargs["total_steps"]
        done.set_result(dict(final_metric=float(len(self.runs)), curve=[dict(steps=steps)]))
        return done


def test_ppo_arms_get_the_same_runs_on_the_task_options():
    periodic, at = "asr/Periodic2DOF-v0", {"frequency": 1.25}
    rec = RecordingExecutor()
    res = stiffness.compare_ppo(
        periodic, seeds=(0, 1, 2), fixed_preset=(0.2, 0.5), task_kwargs=at, executor=rec
    )
    registered = TRAIN_DEFAULTS[periodic]["total_steps"]
    assert registered == 204_800
    assert len(rec.runs) == 9
    arms = [
        {"actuator": "rigid"},
        {"actuator": "qbmove", "preset": [0.2, 0.5]},
        {"actuator": "qbmove", "preset": None},
    ]
    for k, run in enumerate(rec.runs):  # rigid, fixed, variable; seeds 0, 1, 2 in each
        arm = arms[k // 3]
        assert run == dict(
            task=periodic,
            algo="sb3",
            total_steps=registered,
            seed=k % 3,
            threads=1,
            env_kwargs=dict(at, **arm),
        )
    assert res["settings"]["task_kwargs"] == at and res["settings"]["total_steps"] == registered
    for i, strategy in enumerate(stiffness.STRATEGIES):
        runs = res["runs"][strategy]
        assert [r["seed"] for r in runs] == [0, 1, 2]
        assert [r["metric"] for r in runs] == [3.0 * i + 1, 3.0 * i + 2, 3.0 * i + 3]
        assert res["summary"][strategy]["budget"] == registered
        assert all(r["env_steps"] == registered for r in runs)


def test_difference_is_welchs_interval():
    stats = require("scipy.stats")
    a, b = [1.2, 1.5, 1.4, 1.6], [1.0, 1.45, 1.3]
    res = dict(runs={"variable": [{"metric": x} for x in a], "fixed": [{"metric": x} for x in b]})
    d, half = stiffness.difference(res)
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert d - half == pytest.approx(ci.low, rel=1e-6) and d + half == pytest.approx(
        ci.high, rel=1e-6
    )


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="strategy: got 'soft'"):
        stiffness.strategy_kwargs("soft")
    with pytest.raises(ValueError, match=r"preset: got \(0.1, 0.9\).*\[0, 0.8\] rad"):
        stiffness.strategy_kwargs("fixed", (0.1, 0.9))
    with pytest.raises(ValueError, match="preset"):
        stiffness.strategy_kwargs("fixed", 0.3)  # one per joint
    with pytest.raises(ValueError, match=r"preset: got \(0.1, 0.9\) \(0.9 rad\).*\[0, 0.8\]"):
        Throw(1, preset=(0.1, 0.9))
    with pytest.raises(ValueError, match=r"preset: got shape \(3,\)"):
        Throw(1, preset=(0.1, 0.2, 0.3))
    with pytest.raises(TypeError, match="preset: got True"):
        Throw(1, preset=True)
    with pytest.raises(ValueError, match="strategy: got 'stiff'"):
        stiffness.compare_cem(TASK, ("rigid", "stiff"), **TINY)
    with pytest.raises(ValueError, match="population: got 1"):
        stiffness.compare_cem(TASK, seeds=(0,), population=1)


def test_knot_profiles():
    knots = np.array([[[0.0, 1.0, 0.0, -1.0]]])  # (P, A, K)
    t = np.array([0.125, 1.125, 0.875, 0.5])
    periodic = stiffness.interp_knots(np.repeat(knots, 4, axis=0), t, 1.0, periodic=True)
    np.testing.assert_allclose(periodic[:, 0], [0.5, 0.5, -0.5, 0.0], atol=1e-15)
    # not periodic: knots at 0, 1/3, 2/3, 1 s, constant after
    once = stiffness.interp_knots(np.repeat(knots, 3, axis=0), np.array([0.5, 1.0, 7.0]), 1.0)
    np.testing.assert_allclose(once[:, 0], [0.5, -1.0, -1.0], atol=1e-15)
    # the release entry: low before t_r, high from the env step that ends at or after it
    env = Throw(1)
    policy = stiffness.KnotPolicy(env, "rigid", n_knots=4, t_knots=0.6)
    theta = np.full((1, policy.dim), 0.5)  # t_r = 0.05 + 0.95 / 2 = 0.525 s
    rel = [policy.actions(theta, np.array([k * 0.01]))[0, 4] for k in (50, 51, 52)]
    assert rel == [-1.0, -1.0, 1.0] and policy.dim == 2 * 4 + 1  # the step 0.52-0.53 s


class PresetExecutor(RecordingExecutor):
    """A RecordingExecutor whose final metric is the run's squared distance (rad^2) of its
    fixed presets from `best`, plus 1e-3 x its seed (nothing trains)."""

    def __init__(self, best):
        super().__init__()
        self.best = np.asarray(best)

    def submit(self, fn, kwargs):
        self.runs.append(kwargs)
        p = np.asarray(kwargs["env_kwargs"]["preset"])
        metric = float(np.sum((p - self.best) ** 2) + 1e-3 * kwargs["seed"])
        done = concurrent.futures.Future()
        done.set_result(dict(final_metric=metric, curve=[dict(steps=kwargs["total_steps"])]))
        return done


@pytest.mark.parametrize("task", ["asr/Periodic2DOF-v0", TASK])  # lower / higher is better
def test_fixed_preset_search_picks_the_grid_pair_with_the_best_metric(task):
    cem_pair = (0.417, 0.225)
    grid = stiffness.preset_grid(extra=[cem_pair, (0.4, 0.4)])  # (0.4, 0.4): already in it
    assert len(grid) == 10 and grid[0] == (0.2, 0.2) and grid[1] == (0.2, 0.4)
    assert grid[-1] == cem_pair and len(set(grid)) == 10
    at = {"frequency": 1.25} if task != TASK else {}
    lower = task != TASK
    rec = PresetExecutor((0.4, 0.6) if lower else (0.2, 0.2))
    res = stiffness.search_fixed_presets_ppo(
        task, grid, search_steps=5000, task_kwargs=at, executor=rec
    )
    registered = TRAIN_DEFAULTS[task]["total_steps"]
    search, evaluation = rec.runs[:10], rec.runs[10:]
    for pair, run in zip(grid, search):  # one run per pair, all on the search's seed 100
        assert run["seed"] == stiffness.SEARCH_SEED == 100 and run["total_steps"] == 5000
        assert run["env_kwargs"] == dict(at, actuator="qbmove", preset=list(pair))
    metrics = [r["metric"] for r in res["search"]["grid"]]
    # lower is better: the pair nearest (0.4, 0.6); higher: the farthest from (0.2, 0.2)
    chosen = (0.4, 0.6) if lower else (0.6, 0.6)
    assert res["search"]["chosen"] == list(chosen) == res["settings"]["fixed_preset"]
    assert res["search"]["metric"] == (min(metrics) if lower else max(metrics))
    assert res["search"]["env_steps"] == 10 * 5000
    # then the evaluation seeds 0, 1, 2 at the registered budget on the chosen pair
    assert [r["seed"] for r in evaluation] == [0, 1, 2]
    for run in evaluation:
        assert run["total_steps"] == registered
        assert run["env_kwargs"] == dict(at, actuator="qbmove", preset=list(chosen))
    assert list(res["runs"]) == ["fixed"] and res["summary"]["fixed"]["n"] == 3
    with pytest.raises(ValueError, match="grid: empty"):
        stiffness.search_fixed_presets_ppo(task, [], executor=rec)
    with pytest.raises(TypeError, match=r"keywords: got \['fixed_preset'\], valid: seeds, "):
        stiffness.search_fixed_presets_ppo(task, grid, fixed_preset=(0.2, 0.2), executor=rec)
    with pytest.raises(ValueError, match=r"preset: got \(0.2, 0.9\)"):
        stiffness.preset_grid((0.2,), [(0.2, 0.9)])


def test_fixed_preset_search_trains_seeded():
    """Real PPO at a tiny budget (2 sub-envs, one 32-step update, one held-out episode):
    the search keeps the pair of the lower metric, and a run of it again with the search's
    seed reproduces the search's metric bit for bit."""
    require("stable_baselines3")
    from asr.rl import train

    task, at = "asr/Periodic2DOF-v0", {"frequency": 2.5}
    tiny = dict(num_envs=2, n_steps=16, batch_size=32, n_epochs=1)
    tiny.update(eval_every=0, final_eval_episodes=1, tensorboard=False)
    grid = [(0.0, 0.0), (0.4, 0.4)]
    res = stiffness.search_fixed_presets_ppo(
        task, grid, seeds=(0,), total_steps=32, task_kwargs=at, hyperparameters=tiny
    )
    metrics = [r["metric"] for r in res["search"]["grid"]]
    assert np.all(np.isfinite(metrics)) and metrics[0] != metrics[1]
    k = int(np.argmin(metrics))
    assert res["search"]["chosen"] == list(grid[k])
    kw = dict(at, **stiffness.strategy_kwargs("fixed", grid[k]))
    again = train(task, "sb3", 32, seed=100, env_kwargs=kw, **tiny)
    assert float(again.final_metric) == metrics[k]
    assert res["runs"]["fixed"][0]["seed"] == 0 and np.isfinite(res["runs"]["fixed"][0]["metric"])
