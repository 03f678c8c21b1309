"""The fair comparison of stiffness strategies: rigid, fixed and variable stiffness on one task,
every arm given the same optimiser, the same budget, restarts and seeds ([Braun2012]).

A task is a registered Gymnasium id (asr/Throw-v0, ...) whose class takes the keywords `actuator`
and `preset`; the strategies ("arms") are those keywords (strategy_kwargs):

- "rigid": actuator="rigid" (the same motors driving each link through a stiff transmission;
  preset actions ignored);
- "fixed": actuator="qbmove", preset=(p1, p2): one preset per joint (rad), held throughout; the
  optimiser searches p1 and p2 with the rest of the open-loop parameters;
- "variable": actuator="qbmove", preset=None: the presets are actions.

The episode's metric is the task's own (asr.rl.task_metric: the distance thrown for Throw, ...).

Optimiser (a), the open-loop reference (compare_cem): the cross-entropy method (cem()) over an
open-loop policy class (KnotPolicy): per joint the equilibrium, and for the variable arm the
preset, piecewise linear through n_knots knots evenly spaced over [0, t_knots], constant after;
the fixed arm's two presets as two more parameters; a task's `release` entry as a release time
(period: knots over one cycle, the profiles repeating, for a periodic task).
Per seed, `restarts` independent searches (groups of one batch) of `iterations` x `population`
candidates, each candidate run on `episodes` episodes (the same episode seeds for every candidate
and every arm): a fixed budget of restarts x iterations x population x episodes episodes per seed,
the same for every arm. A seed's result is its best restart's best candidate, run on
`eval_episodes` held-out episodes (seeds EVAL_SEED_BASE + k). With many restarts this is the
optimal-control reference: an estimate of the best each arm can do open loop (an estimate from
below of the arm's true open-loop optimum; what a closed-loop learner on a deterministic task
should reach).

Optimiser (b), PPO (compare_ppo): asr.rl.train with the task's registered defaults
(asr.envs.TRAIN_DEFAULTS), the same total env-steps and seeds per arm; the fixed arm holds the
presets that the open-loop reference found best (its best seed's p1, p2), or, with
search_fixed_presets_ppo, the pair of a grid whose PPO run (seed SEARCH_SEED) scored best: presets
chosen for the closed-loop learner, at the cost of one more PPO run per pair.

summarize(): per arm the mean of the per-seed metric with its 95 % confidence interval over
seeds (asr.rl.evaluation.t_interval, Student's t), the best seed, n seeds and the budget;
difference(): variable - fixed with Welch's interval; table(): the markdown table. Measured:
benchmarks/bench_stiffness.py, docs/learning.md ("The throw, and stiffness compared fairly").

The batched search of the fixed arm needs the task to take one preset row per sub-env
(preset of shape (num_envs, 2), as asr.envs.throw.Throw does); for a task that does not, each
candidate runs in an env of its own (the same result, slower).
"""

import inspect
import os

import numpy as np

from asr.envs import TRAIN_DEFAULTS
from asr.envs.throw import PRESET_HI, PRESET_LO
from asr.rl import task_class, task_metric
from asr.rl.evaluation import EVAL_SEED_BASE, t_interval, t_quantile

STRATEGIES = ("rigid", "fixed", "variable")
T_RELEASE_MIN = 0.05  # s, the earliest release time of a task with a release entry
# the open-loop policy class per task (KnotPolicy keywords); others: DEFAULT_KNOTS knots over
# the whole episode
OPEN_LOOP = {"asr/Throw-v0": {"n_knots": 4, "t_knots": 0.6}}
DEFAULT_KNOTS = 6


# ------------------------------------------------------------ strategies


def strategy_kwargs(strategy, preset=None):
    """The task keywords of an arm: {"actuator": "rigid"}, {"actuator": "qbmove", "preset":
    [p1, p2]} (fixed: preset (2,) rad, one per joint, each in [PRESET_LO, PRESET_HI]) or
    {"actuator": "qbmove", "preset": None} (variable). ValueError naming a bad strategy or
    preset and the valid ones."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy: got {strategy!r}, valid: {', '.join(STRATEGIES)}")
    if strategy == "rigid":
        if preset is not None:
            raise ValueError(f"preset: got {preset!r}, the rigid arm has none (None)")
        return {"actuator": "rigid"}
    if strategy == "variable":
        if preset is not None:
            raise ValueError(f"preset: got {preset!r}, the variable arm's are actions (None)")
        return {"actuator": "qbmove", "preset": None}
    lo, hi = PRESET_LO, PRESET_HI
    p = np.asarray(preset if preset is not None else np.nan, dtype=np.float64)
    if p.shape != (2,) or not np.all((p >= lo) & (p <= hi)):
        raise ValueError(
            f"preset: got {preset!r}, the fixed arm needs (p1, p2), one per joint, each in "
            f"[{lo:g}, {hi:g}] rad"
        )
    return {"actuator": "qbmove", "preset": [float(p[0]), float(p[1])]}


# ------------------------------------------------------------ the open-loop policy class


def interp_knots(knots, t, t_knots, periodic=False):
    """Piecewise-linear profiles (P, A) at times t (P,) s from knots (P, A, K) evenly spaced over
    [0, t_knots] s, constant after the last (exact where neighbouring knots are equal); with
    periodic, K knots over one period t_knots, at 0, t_knots / K, ..., the profile repeating
    (from the last knot back to the first)."""
    n = knots.shape[-1]
    idx = np.arange(knots.shape[0])
    if periodic:
        s = np.mod(t / t_knots, 1.0) * n
        k = np.minimum(s.astype(int), n - 1)
        w = (s - k)[:, None]
        a = knots[idx, :, k]
        return a + w * (knots[idx, :, (k + 1) % n] - a)
    s = np.clip(t / t_knots, 0.0, 1.0) * (n - 1)
    k = np.minimum(s.astype(int), n - 2)
    w = (s - k)[:, None]
    a = knots[idx, :, k]
    return a + w * (knots[idx, :, k + 1] - a)


class KnotPolicy:
    """The open-loop policy class of a task (an env instance: its ACTION names, action space,
    env_dt and episode length) for one strategy. theta (P, dim) in [0, 1] holds, in order:
    n_knots knots of each equilibrium entry, for "variable" n_knots knots of each preset entry,
    for "fixed" one preset per preset entry, and one release time per `release` entry (in
    [T_RELEASE_MIN, episode length] s: the entry is at its low bound before, at its high bound
    from the env step that ends at or after it). Knots span each entry's action range, evenly
    spaced over [0, t_knots] s (default: the episode), or with period (s) over one period, the
    profiles repeating (a periodic task)."""

    def __init__(self, env, strategy, n_knots=DEFAULT_KNOTS, t_knots=None, period=None):
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy: got {strategy!r}, valid: {', '.join(STRATEGIES)}")
        if isinstance(n_knots, bool) or not isinstance(n_knots, (int, np.integer)) or n_knots < 2:
            raise ValueError(f"n_knots: got {n_knots!r}, valid: an int >= 2")
        names = [name for name, _ in env.ACTION]
        self.eq = [i for i, n in enumerate(names) if n.startswith("equilibrium")]
        self.pre = [i for i, n in enumerate(names) if n.startswith("preset")]
        self.release = [i for i, n in enumerate(names) if n == "release"]
        other = sorted(set(range(len(names))) - set(self.eq + self.pre + self.release))
        if other:
            raise ValueError(
                f"task: {type(env).__name__}'s action entries {[names[i] for i in other]} are "
                "not equilibrium*, preset* or release: no open-loop policy class for them"
            )
        self.strategy, self.n_knots = strategy, int(n_knots)
        self.dt = float(env.env_dt)
        self.t_end = env.max_episode_steps * self.dt  # s, the episode's length
        self.periodic = period is not None
        if self.periodic and t_knots is not None:
            raise ValueError(f"t_knots: got {t_knots!r} with period {period!r}: give one")
        t_knots = period if self.periodic else t_knots
        self.t_knots = self.t_end if t_knots is None else float(t_knots)
        if not 0.0 < self.t_knots:
            raise ValueError(f"t_knots / period: got {t_knots!r}, valid: > 0 s")
        self.low = np.asarray(env.single_action_space.low, dtype=np.float64)
        self.high = np.asarray(env.single_action_space.high, dtype=np.float64)
        self.knotted = self.eq + (self.pre if strategy == "variable" else [])
        self.n_fixed = len(self.pre) if strategy == "fixed" else 0
        k = len(self.knotted) * self.n_knots
        self.dim = k + self.n_fixed + len(self.release)
        self._slices = (slice(0, k), slice(k, k + self.n_fixed), slice(k + self.n_fixed, None))

    def presets(self, theta):
        """(P, n_pre) the fixed arm's presets (rad) of candidates theta (P, dim)."""
        theta = np.clip(np.atleast_2d(theta), 0.0, 1.0)
        lo, hi = self.low[self.pre], self.high[self.pre]
        return lo + (hi - lo) * theta[:, self._slices[1]]

    def actions(self, theta, t):
        """Actions (P, act_dim) at env-step start times t (P,) s for candidates theta (P, dim),
        inside the action space (the entries an arm ignores held at their range's middle, or at
        the fixed arm's presets)."""
        theta = np.clip(np.atleast_2d(theta), 0.0, 1.0)
        p = theta.shape[0]
        a = np.tile(0.5 * (self.low + self.high), (p, 1))
        lo, hi = self.low[self.knotted], self.high[self.knotted]
        u = theta[:, self._slices[0]].reshape(p, len(self.knotted), self.n_knots)
        knots = lo[None, :, None] + (hi - lo)[None, :, None] * u
        t = np.asarray(t, dtype=np.float64)
        a[:, self.knotted] = interp_knots(knots, t, self.t_knots, self.periodic)
        if self.n_fixed:
            a[:, self.pre] = self.presets(theta)
        if self.release:
            t_r = T_RELEASE_MIN + (self.t_end - T_RELEASE_MIN) * theta[:, self._slices[2]]
            on = (np.asarray(t)[:, None] + self.dt) >= t_r - 1e-12
            a[:, self.release] = np.where(on, self.high[self.release], self.low[self.release])
        return np.clip(a, self.low, self.high)


# ------------------------------------------------------------ the search


def cem(
    evaluate_fn,
    dim,
    groups,
    iterations,
    population,
    *,
    init_mean=None,
    init_std=0.3,
    min_std=0.02,
    elite_frac=0.2,
    rng=None,
):
    """CEM of `groups` independent searches of `population` candidates each, all evaluated in
    one call evaluate_fn(theta (groups * population, dim)) -> returns. The first candidate of
    every group at iteration 0 is init_mean itself, and the best candidate so far is kept.
    Returns (best theta (groups, dim), best return (groups,), curve (iterations, groups) of the
    best so far)."""
    rng = np.random.default_rng(0) if rng is None else rng
    mean = np.full((groups, dim), 0.5) if init_mean is None else np.array(init_mean, float)
    std = np.broadcast_to(np.asarray(init_std, float), (groups, dim)).copy()
    n_elite = max(2, int(round(elite_frac * population)))
    best = np.array(mean)
    best_r = np.full(groups, -np.inf)
    curve = []
    for it in range(int(iterations)):
        theta = np.clip(
            mean[:, None] + std[:, None] * rng.standard_normal((groups, population, dim)), 0.0, 1.0
        )
        theta[:, 0] = mean if it == 0 else best
        r = np.asarray(evaluate_fn(theta.reshape(-1, dim))).reshape(groups, population)
        for g in range(groups):
            order = np.argsort(r[g])[::-1]
            if r[g, order[0]] > best_r[g]:
                best_r[g], best[g] = r[g, order[0]], theta[g, order[0]]
            elite = theta[g, order[:n_elite]]
            mean[g] = elite.mean(axis=0)
            std[g] = np.maximum(elite.std(axis=0), min_std)
        curve.append(best_r.copy())
    return best, best_r, np.array(curve)


class Evaluator:
    """Runs candidates of one arm of a task: run(theta (P, dim), seeds (E,)) -> (returns (P, E),
    the sum of each episode's rewards; metric (P, E), the task's metric read at the step that
    ends the episode). Every candidate's E sub-envs are reset with `seeds`. episodes counts the
    episodes run so far (the budget spent)."""

    def __init__(self, task, strategy, policy_kwargs=None, task_kwargs=None, threads=1):
        self.task, self.strategy = task, strategy
        self.cls = task_class(task)
        self.metric = task_metric(self.cls)
        self.task_kwargs = dict(task_kwargs or {})
        self.threads = int(threads)
        strategy_kwargs(strategy, (0.0, 0.0) if strategy == "fixed" else None)
        self.kwargs = {"actuator": "qbmove" if strategy != "rigid" else "rigid"}
        probe = self._env(1, None)
        self.policy = KnotPolicy(probe, strategy, **(policy_kwargs or {}))
        self.max_steps = probe.max_episode_steps
        probe.close()
        self.batched = strategy != "fixed" or _takes_preset_rows(self.cls, self.task_kwargs)
        self._cache = {}
        self.episodes = 0

    def _env(self, n, presets):
        kw = dict(self.task_kwargs, **self.kwargs)
        if self.strategy == "fixed":
            kw["preset"] = presets
        return self.cls(n, threads=self.threads, **kw)

    def run(self, theta, seeds):
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        seeds = [int(s) for s in np.atleast_1d(seeds)]
        p, e = theta.shape[0], len(seeds)
        per_env = np.repeat(theta, e, axis=0)
        if self.strategy != "fixed":
            env = self._cache.get(p * e)
            if env is None:
                env = self._cache[p * e] = self._env(p * e, None)
            out = self._episodes(env, per_env, seeds * p)
        elif self.batched:
            env = self._env(p * e, self.policy.presets(per_env))
            out = self._episodes(env, per_env, seeds * p)
            env.close()
        else:  # one env per candidate: the task takes one preset pair for all its sub-envs
            parts = []
            for k in range(p):
                env = self._env(e, self.policy.presets(theta[k])[0])
                parts.append(self._episodes(env, per_env[k * e : (k + 1) * e], seeds))
                env.close()
            out = tuple(np.concatenate(x) for x in zip(*parts))
        self.episodes += p * e
        return out[0].reshape(p, e), out[1].reshape(p, e)

    def _episodes(self, env, theta, seeds):
        """(returns (N,), metric (N,)) of one episode per sub-env, candidate theta[i] on
        sub-env i, reset with seeds[i]."""
        n = env.num_envs
        env.reset(seed=list(seeds))
        returns, metric = np.zeros(n), np.full(n, np.nan)
        ended = np.zeros(n, dtype=bool)
        for k in range(self.max_steps):
            a = self.policy.actions(theta, np.full(n, k * self.policy.dt))
            _, r, term, trunc, _ = env.step(a)
            returns[~ended] += np.asarray(r, dtype=np.float64)[~ended]
            now = (term | trunc) & ~ended
            if now.any():
                metric[now] = np.asarray(self.metric.value(env), dtype=np.float64)[now]
                ended |= now
            if ended.all():
                break
        return returns, metric

    def actions(self, theta):
        """The action sequence (T, act_dim) of one candidate theta (dim,) over one episode of
        a deterministic task (T: the episode's env steps, to its end)."""
        env = self._env(1, None if self.strategy != "fixed" else self.policy.presets(theta)[0])
        env.reset(seed=0)
        out = []
        for k in range(self.max_steps):
            a = self.policy.actions(theta, np.array([k * self.policy.dt]))
            out.append(a[0])
            _, _, term, trunc, _ = env.step(a)
            if term[0] or trunc[0]:
                break
        env.close()
        return np.array(out)


def _takes_preset_rows(cls, task_kwargs):
    """Whether task class cls takes one preset row per sub-env (preset of shape (N, 2))."""
    lo, hi = PRESET_LO, PRESET_HI
    try:
        env = cls(2, preset=np.array([[lo, lo], [hi, hi]]), **task_kwargs)
    except (TypeError, ValueError):
        return False
    env.close()
    return True


def _check_count(name, value, low=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name}: got {value!r}, valid: an int >= {low}")
    return int(value)


def search(evaluator, seed, restarts, iterations, population, episodes, eval_episodes):
    """One seed of one arm: `restarts` CEM searches in one batch, each of iterations x
    population candidates on `episodes` episodes (seeds drawn from `seed`, the same for every
    arm). Returns a dict: seed, restart_returns (restarts,) (the best mean return of each),
    theta (the best restart's best candidate), presets (the fixed arm's, rad), metric and
    return (means over eval_episodes held-out episodes), episodes (the search's)."""
    train_seeds = np.random.default_rng([seed, 45]).integers(0, 2**31 - 1, episodes)
    spent = evaluator.episodes
    best, best_r, _ = cem(
        lambda th: evaluator.run(th, train_seeds)[0].mean(axis=1),
        evaluator.policy.dim,
        restarts,
        iterations,
        population,
        rng=np.random.default_rng(seed),
    )
    spent = evaluator.episodes - spent
    k = int(np.argmax(best_r))
    ret, met = evaluator.run(best[k], EVAL_SEED_BASE + np.arange(eval_episodes))
    out = dict(
        seed=int(seed),
        restart_returns=[float(x) for x in best_r],
        theta=[float(x) for x in best[k]],
        metric=float(np.mean(met)),
        metric_std=float(np.std(met)),
        ret=float(np.mean(ret)),
        episodes=int(spent),
    )
    if evaluator.strategy == "fixed":
        out["presets"] = [float(x) for x in evaluator.policy.presets(best[k])[0]]
    return out


def compare_cem(
    task,
    strategies=STRATEGIES,
    *,
    seeds=(0, 1, 2),
    restarts=4,
    iterations=30,
    population=32,
    episodes=1,
    eval_episodes=1,
    task_kwargs=None,
    policy_kwargs=None,
    threads=1,
):
    """The open-loop reference of every arm (module doc): {"task", "optimiser": "cem",
    "metric": {key, name, unit, better}, "settings", "runs": {strategy: [search() per seed]},
    "episodes": {strategy: episodes the searches ran}, "summary": summarize()}.
    policy_kwargs: KnotPolicy's (default OPEN_LOOP's for the task, else DEFAULT_KNOTS over the
    episode); task_kwargs: task options beside the strategy's (e.g. a frequency)."""
    strategies = _check_strategies(strategies)
    seeds = [_check_count("seeds", s, 0) for s in seeds]
    if not seeds:
        raise ValueError("seeds: empty, expected at least one seed")
    for name, value in (
        ("restarts", restarts),
        ("iterations", iterations),
        ("population", population),
        ("episodes", episodes),
        ("eval_episodes", eval_episodes),
    ):
        _check_count(name, value, 2 if name == "population" else 1)
    policy_kwargs = dict(OPEN_LOOP.get(task, {}) if policy_kwargs is None else policy_kwargs)
    runs, spent, metric = {}, {}, None
    for strategy in strategies:
        ev = Evaluator(task, strategy, policy_kwargs, task_kwargs, threads)
        metric = ev.metric
        runs[strategy] = [
            search(ev, s, restarts, iterations, population, episodes, eval_episodes) for s in seeds
        ]
        spent[strategy] = sum(r["episodes"] for r in runs[strategy])
    settings = dict(
        seeds=seeds,
        restarts=restarts,
        iterations=iterations,
        population=population,
        episodes=episodes,
        eval_episodes=eval_episodes,
        budget_episodes_per_seed=restarts * iterations * population * episodes,
        policy=policy_kwargs,
        task_kwargs=dict(task_kwargs or {}),
    )
    res = dict(
        task=task,
        optimiser="cem",
        metric=_metric_dict(metric),
        settings=settings,
        runs=runs,
        episodes=spent,
    )
    res["summary"] = summarize(res)
    return res


def _check_strategies(strategies):
    strategies = tuple(strategies)
    for s in strategies:
        if s not in STRATEGIES:
            raise ValueError(f"strategy: got {s!r}, valid: {', '.join(STRATEGIES)}")
    if not strategies:
        raise ValueError(f"strategies: empty, expected some of {', '.join(STRATEGIES)}")
    return strategies


def _metric_dict(metric):
    return dict(key=metric.key, name=metric.name, unit=metric.unit, better=metric.better)


def best_fixed_presets(res):
    """The presets (p1, p2) (rad) of the fixed arm's best seed in a compare_cem() result."""
    runs = res["runs"]["fixed"]
    higher = res["metric"]["better"] == "higher"
    pick = max if higher else min
    return tuple(pick(runs, key=lambda r: r["metric"])["presets"])


# ------------------------------------------------------------ PPO


def _ppo_job(task, algo, total_steps, seed, threads, task_kwargs, arm, hyperparameters):
    """train()'s keywords of one PPO run: env_kwargs the task's options and the arm's."""
    return dict(
        task=task,
        algo=algo,
        total_steps=total_steps,
        seed=seed,
        threads=threads,
        env_kwargs=dict(task_kwargs or {}, **arm),
        **(hyperparameters or {}),
    )


def compare_ppo(
    task,
    strategies=STRATEGIES,
    *,
    seeds=(0, 1, 2),
    total_steps=None,
    fixed_preset=None,
    algo="sb3",
    task_kwargs=None,
    threads=1,
    executor=None,
    out_root=None,
    hyperparameters=None,
):
    """PPO on every arm (asr.rl.train_many: the task's registered defaults, total_steps
    env-steps per run, None: the registered default), seeds `seeds`; the fixed arm holds
    fixed_preset (p1, p2) rad (e.g. best_fixed_presets() of the open-loop reference, or
    search_fixed_presets_ppo()'s). The metric of a run is its final held-out evaluation
    (config's final_eval_episodes episodes). hyperparameters: train() keywords beside the
    registered defaults, the same for every run (None: none; e.g. a test's small num_envs).
    Returns the dict compare_cem() returns, with runs {strategy: [{seed, metric, ret: None,
    env_steps}]} and settings {seeds, total_steps, algo, fixed_preset}."""
    from asr.rl import train_many  # torch: only for PPO

    strategies = _check_strategies(strategies)
    seeds = [_check_count("seeds", s, 0) for s in seeds]
    metric = task_metric(task_class(task))
    if total_steps is None:
        total_steps = TRAIN_DEFAULTS.get(task, {}).get("total_steps")
    jobs, keys = [], []
    for strategy in strategies:
        kw = strategy_kwargs(strategy, fixed_preset if strategy == "fixed" else None)
        for s in seeds:
            jobs.append(
                _ppo_job(task, algo, total_steps, s, threads, task_kwargs, kw, hyperparameters)
            )
            keys.append((strategy, s))
    done = train_many(jobs, executor=executor, out_root=out_root)
    runs = {s: [] for s in strategies}
    for (strategy, s), d in zip(keys, done):
        steps = d["curve"][-1]["steps"] if d.get("curve") else None
        runs[strategy].append(
            dict(seed=s, metric=float(d["final_metric"]), ret=None, env_steps=steps)
        )
    res = dict(
        task=task,
        optimiser="ppo",
        metric=_metric_dict(metric),
        settings=dict(
            seeds=seeds,
            total_steps=total_steps,
            algo=algo,
            fixed_preset=None if fixed_preset is None else [float(p) for p in fixed_preset],
            task_kwargs=dict(task_kwargs or {}),
        ),
        runs=runs,
    )
    res["summary"] = summarize(res)
    return res


SEARCH_SEED = 100  # the fixed-preset search's PPO seed: not one of the evaluation seeds 0, 1, 2
SEARCH_VALUES = (0.2, 0.4, 0.6)  # rad, per joint: search_fixed_presets_ppo's default grid


def preset_grid(values=SEARCH_VALUES, extra=()):
    """Preset pairs (p1, p2) rad: every pair of `values` (the first joint's varying slowest),
    then the pairs in `extra` not already in it (e.g. the open-loop reference's best); each
    preset in [PRESET_LO, PRESET_HI]."""
    pairs = [(float(a), float(b)) for a in values for b in values]
    pairs += [tuple(float(x) for x in e) for e in extra if tuple(map(float, e)) not in pairs]
    for p in pairs:
        strategy_kwargs("fixed", p)  # range check, naming the bad pair
    return pairs


def search_fixed_presets_ppo(task, grid, *, search_seed=SEARCH_SEED, search_steps=None, **ppo):
    """The fixed arm with presets chosen by PPO itself: one PPO run per preset pair of `grid`
    ((G, 2) rad, e.g. preset_grid()), each with seed search_seed (100: the same seed for every
    pair, so the pairs differ by their presets only, and not an evaluation seed) for
    search_steps env-steps (None: total_steps); the pair whose run's final held-out metric
    (config's final_eval_episodes episodes) is best, by the metric's direction (the first such
    pair on a tie), is then trained with `seeds` for total_steps env-steps (None: the task's
    registered default), as compare_ppo() trains every arm. ppo: compare_ppo()'s keywords
    (seeds, total_steps, algo, task_kwargs, threads, executor, out_root, hyperparameters; its
    defaults), the same for the search's runs (out_root: the search's runs in run-<k>, the
    evaluation's in fixed/run-<k>).

    Budget: the search adds G x search_steps env-steps (G runs) to the fixed arm's
    len(seeds) x total_steps, so this fixed arm gets more optimisation than the rigid and
    variable arms of compare_ppo() (benchmarks/bench_stiffness.py's Periodic2DOF cases: G = 10
    pairs at the registered budget and 3 seeds, 13 runs against the other arms' 3, 4.3x their
    env-steps; at 2 Hz G = 13, 5.3x); a comparison built on it must say so, and report the
    search's own figures (res["search"]).

    Returns compare_ppo()'s dict for the arm "fixed" (settings' fixed_preset: the chosen pair)
    with res["search"] = {seed, total_steps (per run), env_steps (the search's sum), grid:
    [{preset (2,) rad, metric, env_steps}] in grid order, chosen (2,) rad, metric (the chosen
    run's)}. ValueError naming an empty grid or a preset out of [PRESET_LO, PRESET_HI]."""
    from asr.rl import train_many  # torch: only for PPO

    grid = [tuple(float(x) for x in np.asarray(p, dtype=np.float64).ravel()) for p in grid]
    if not grid:
        raise ValueError("grid: empty, expected at least one preset pair (p1, p2) rad")
    kws = [strategy_kwargs("fixed", p) for p in grid]
    search_seed = _check_count("search_seed", search_seed, 0)
    params = inspect.signature(compare_ppo).parameters.values()
    o = {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}
    valid = [n for n in o if n != "fixed_preset"]  # the search chooses the fixed arm's presets
    unknown = sorted(set(ppo) - set(valid))
    if unknown:
        raise TypeError(f"keywords: got {unknown}, valid: {', '.join(valid)}")
    o.update(ppo)
    if o["total_steps"] is None:
        o["total_steps"] = TRAIN_DEFAULTS.get(task, {}).get("total_steps")
    if search_steps is None:
        search_steps = o["total_steps"]
    jobs = [
        _ppo_job(
            task,
            o["algo"],
            search_steps,
            search_seed,
            o["threads"],
            o["task_kwargs"],
            kw,
            o["hyperparameters"],
        )
        for kw in kws
    ]
    done = train_many(jobs, executor=o["executor"], out_root=o["out_root"])
    rows = [
        dict(
            preset=list(p),
            metric=float(d["final_metric"]),
            env_steps=d["curve"][-1]["steps"] if d.get("curve") else None,
        )
        for p, d in zip(grid, done)
    ]
    metric = task_metric(task_class(task))
    values = np.array([r["metric"] for r in rows])
    k = int(np.argmax(values) if metric.better == "higher" else np.argmin(values))
    chosen = grid[k]
    if o["out_root"] is not None:
        o["out_root"] = os.path.join(os.fspath(o["out_root"]), "fixed")
    res = compare_ppo(task, ("fixed",), **dict(o, fixed_preset=chosen))
    res["search"] = dict(
        seed=search_seed,
        total_steps=search_steps,
        env_steps=int(sum(r["env_steps"] or 0 for r in rows)),
        grid=rows,
        chosen=list(chosen),
        metric=rows[k]["metric"],
    )
    return res


# ------------------------------------------------------------ the table


def summarize(res):
    """{strategy: {mean, ci95 (half width; NaN for one seed), best, worst, n, budget, per_seed}}
    of the per-seed metric of a compare_cem() or compare_ppo() result; best by the metric's
    direction; budget: episodes per seed (CEM) or env-steps per run (PPO); with the CEM's
    held-out returns (the objective) also return_mean and return_ci95."""
    higher = res["metric"]["better"] == "higher"
    st = res["settings"]
    budget = st.get("budget_episodes_per_seed", st.get("total_steps"))
    out = {}
    for strategy in sorted(res["runs"], key=lambda s: (STRATEGIES + (s,)).index(s)):
        runs = res["runs"][strategy]
        v = np.array([r["metric"] for r in runs], dtype=np.float64)
        mean, half = t_interval(v)
        out[strategy] = dict(
            mean=mean,
            ci95=half,
            best=float(v.max() if higher else v.min()),
            worst=float(v.min() if higher else v.max()),
            n=int(v.size),
            budget=budget,
            per_seed=[float(x) for x in v],
        )
        if all(r.get("ret") is not None for r in runs):  # CEM: the objective, the mean return
            ret = t_interval([r["ret"] for r in runs])
            out[strategy].update(return_mean=ret[0], return_ci95=ret[1])
    return out


def difference(res, a="variable", b="fixed", confidence=0.95):
    """(mean_a - mean_b, half width) of the per-seed metric of arms a and b in a compare_cem() /
    compare_ppo() result: Welch's interval (unequal variances, Student's t with the
    Welch-Satterthwaite degrees of freedom; the seeds of two arms are independent runs)."""
    x = np.array([r["metric"] for r in res["runs"][a]], dtype=np.float64)
    y = np.array([r["metric"] for r in res["runs"][b]], dtype=np.float64)
    if x.size < 2 or y.size < 2:
        raise ValueError(f"res: arms {a!r} and {b!r} need 2 seeds or more each")
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    diff = float(x.mean() - y.mean())
    if va + vb == 0.0:
        return diff, 0.0
    df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    return diff, t_quantile((1.0 + confidence) / 2.0, df) * float(np.sqrt(va + vb))


def table(results):
    """Markdown table (str) of compare_cem() / compare_ppo() results of one task: strategy x
    optimiser (rigid, fixed, variable), mean +- 95 % CI, best, n, budget; a result's "label"
    (if any) names its rows instead of its optimiser."""
    head = "| optimiser | strategy | mean | 95 % CI | best | seeds | budget | return (mean +- CI) |"
    lines = [head, "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for res in results:
        unit = res["metric"]["unit"]
        what = "episodes/seed" if res["optimiser"] == "cem" else "env-steps/run"
        summary = res["summary"]  # the arms in STRATEGIES' order (a JSON file sorts them)
        order = [s for s in STRATEGIES if s in summary] + [
            s for s in summary if s not in STRATEGIES
        ]
        for strategy in order:
            s = summary[strategy]
            ret = f"{s['return_mean']:.3f} +- {s['return_ci95']:.3f}" if "return_mean" in s else ""
            lines.append(
                f"| {res.get('label', res['optimiser'])} | {strategy} | {s['mean']:.3f} {unit} | "
                f"+- {s['ci95']:.3f} | {s['best']:.3f} | {s['n']} | {s['budget']} {what} | "
                f"{ret} |"
            )
    for res in results:
        if {"variable", "fixed"} <= set(res["runs"]) and min(map(len, res["runs"].values())) > 1:
            d, half = difference(res)
            name = res.get("label", res["optimiser"])
            lines.append(
                f"\n{name}: variable - fixed = {d:+.3f} +- {half:.3f} "
                f"{res['metric']['unit']} (95 % CI, Welch)"
            )
    return "\n".join(lines)


__all__ = [
    "STRATEGIES",
    "OPEN_LOOP",
    "strategy_kwargs",
    "KnotPolicy",
    "interp_knots",
    "cem",
    "Evaluator",
    "search",
    "compare_cem",
    "compare_ppo",
    "best_fixed_presets",
    "preset_grid",
    "search_fixed_presets_ppo",
    "SEARCH_SEED",
    "summarize",
    "difference",
    "table",
]
