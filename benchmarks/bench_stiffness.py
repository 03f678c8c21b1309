"""Stiffness benchmark (`make bench-stiffness`): rigid, fixed and variable stiffness compared
fairly on each task, every arm given the same optimiser, budget, restarts and seeds
(asr.experiments.stiffness).

    .venv/bin/python benchmarks/bench_stiffness.py [--quick] [--out JSON] [--workers N]

Per task (asr/Throw-v0, and asr/Impact2DOF-v0, asr/Periodic2DOF-v0 where registered), the table
strategy x optimiser of the task's metric per seed: mean, 95 % confidence interval over seeds
(Student's t), best, seeds, budget.

- cem: the open-loop reference, CEM over knot profiles with `restarts` searches per seed, each of
  iterations x population candidates on `episodes` episodes (the same budget for every arm),
  the best restart's candidate evaluated on held-out episodes;
- ppo: asr.rl.train with the task's registered defaults (asr.envs.TRAIN_DEFAULTS), the same
  env-steps and seeds per arm; the fixed arm holds the presets of the open-loop reference's best
  seed, or on Periodic2DOF the pair that PPO itself scored best among a 3 x 3 grid
  (SEARCH_VALUES: the hand-tuned best preset at the frequency and its neighbours 0.2 rad apart,
  per joint) plus the open-loop reference's pair
  (stiffness.search_fixed_presets_ppo: 10 more PPO runs of the registered budget on seed 100,
  so that arm gets more optimisation than the others; the search's figures are stored under
  the PPO result's settings.fixed_search, and the earlier fixed arm on the open-loop
  reference's presets as "ppo_cem_preset"). --fixed-only runs just that searched fixed arm,
  the other arms read from the results file.

Throw also gets the energy account of each arm's best open-loop throw (replayed at 1 ms,
asr.experiments.throw_ppo.replay_actions: peak spring energy, link kinetic energy at the release).

Writes benchmarks/results/stiffness.json: the machine (CPU, versions), the settings, every
seed's result, the summaries and the tables (and under each, variable - fixed with Welch's 95 %
interval). The full run takes longer than 30 minutes on two cores, hence its own target: on the
2-core development host, shared with other jobs (load average 2-13), Throw's CEM took 1504 s
(about 440 s of CPU per core), its PPO runs 821 s at the registered 1 M env-steps per run (561 s
at 500 000, kept in the file as ppo_500000), the other cases' CEM 1766 s on one worker,
Periodic2DOF's PPO runs (the registered 204 800 env-steps, 9 per frequency) 367 s at 2 Hz and
261 s at 1.25 Hz on two workers, Impact2DOF's (arrival time under a force bound) CEM 415 s and PPO
(the registered 1 024 000, 9 runs) 2556 s on two workers at load 5.2; Periodic2DOF's
searched fixed arm (13 PPO runs, 16 at 2 Hz) 522-665 s per frequency and the whole 1 Hz and
2.5 Hz cases 1145 s and 904 s on one worker (load 3-7);
--quick runs the same code at a small budget in a few minutes (4 min for Throw there) and writes
nothing unless --out is given. Cases run separately share the file
(each case keeps its own run's figures); --ppo-only reruns PPO on the stored CEM reference,
--rewrite recomputes the tables (a case run with --ppo-only keeps its CEM reference's run
figures as "cem_run"). Benchmarks report; they do not assert."""

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from bench_mujoco_plugin import machine  # noqa: E402
from results_file import write_results  # noqa: E402

from asr.experiments import stiffness  # noqa: E402
from asr.experiments.throw_ppo import replay_actions  # noqa: E402
from asr.learning.gym_registry import ENVS  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "results", "stiffness.json")
# the cases: a task id, its options (task_kwargs), the open-loop policy class (policy: KnotPolicy
# keywords; None: asr.experiments.stiffness.OPEN_LOOP's), the CEM's seeds, restarts,
# iterations, population, episodes per candidate and held-out episodes (cem), PPO's seeds and
# env-steps per run (ppo; None: not run). Periodic2DOF at its four frequencies, periodic
# knot profiles (8 knots per cycle); its fixed arm's presets searched with PPO (fixed_search:
# the per-joint values of stiffness.preset_grid, plus the open-loop reference's best pair;
# without it the fixed arm holds the open-loop reference's best pair).
THROW = "asr/Throw-v0"
# Periodic2DOF's frequencies (Hz, in the order they run) and the per-joint preset values (rad) of
# the fixed arm's PPO search: the best fixed preset of the open-loop drives tuned by hand in the
# task's tests (docs/learning.md, "Tasks": 0.4 rad at 1.25 and 2 Hz, 0.6 at 1 Hz; at 2.5 Hz none
# tracked within the bound, 0.8 needing least) and its neighbours 0.2 rad apart, within [0, 0.8];
# SEARCH_EXTRA: more pairs where the best of the first search lay on the grid's edge inside the
# preset range (2 Hz: p1 = 0.6 rad, so p1 = 0.8 rad is tried too)
SEARCH_EXTRA = {2.0: ((0.8, 0.2), (0.8, 0.4), (0.8, 0.6))}
SEARCH_VALUES = {
    2.0: (0.2, 0.4, 0.6),
    1.25: (0.2, 0.4, 0.6),
    1.0: (0.4, 0.6, 0.8),
    2.5: (0.4, 0.6, 0.8),
}
FULL = [
    dict(
        name=THROW,
        task=THROW,
        cem=dict(seeds=(0, 1, 2, 3, 4), restarts=4, iterations=40, population=32, eval_episodes=1),
        ppo=dict(seeds=(0, 1, 2), total_steps=None),  # the registered 1 M
    ),
    dict(
        name="asr/Impact2DOF-v0",
        task="asr/Impact2DOF-v0",
        cem=dict(
            seeds=(0, 1, 2), restarts=2, iterations=15, population=32, episodes=2, eval_episodes=16
        ),
        ppo=dict(seeds=(0, 1, 2), total_steps=None),  # the registered 1 024 000
    ),
    *[
        dict(
            name=f"asr/Periodic2DOF-v0 f={f:g} Hz",
            task="asr/Periodic2DOF-v0",
            task_kwargs={"frequency": f},
            policy={"n_knots": 8, "period": 1.0 / f},
            cem=dict(seeds=(0, 1, 2), restarts=2, iterations=15, population=32, eval_episodes=1),
            ppo=dict(seeds=(0, 1, 2), total_steps=None),  # the registered 204 800
            fixed_search=dict(values=values, extra=SEARCH_EXTRA.get(f, ())),
        )
        for f, values in SEARCH_VALUES.items()
    ],
]
QUICK_CEM = dict(seeds=(0, 1, 2), restarts=2, iterations=8, population=32)
QUICK_PPO = dict(seeds=(0, 1), total_steps=40_960)
QUICK_SEARCH = dict(values=(0.2, 0.6))


def cases(quick, names=None):
    """The cases to run (FULL, or at QUICK_CEM / QUICK_PPO's budget), those of registered tasks
    whose name or task id is in names (None: all)."""
    out = []
    for c in FULL:
        if c["task"] not in ENVS or (names and not ({c["name"], c["task"]} & set(names))):
            continue
        c = dict(c)
        if quick:
            c["cem"] = dict(c["cem"], **QUICK_CEM)
            c["ppo"] = dict(QUICK_PPO) if c.get("ppo") else None
            if c.get("fixed_search"):
                c["fixed_search"] = dict(QUICK_SEARCH)
        out.append(c)
    return out


def _cem_job(case, strategy, seed):
    kw = {k: v for k, v in case["cem"].items() if k != "seeds"}
    return stiffness.compare_cem(
        case["task"],
        (strategy,),
        seeds=(seed,),
        task_kwargs=case.get("task_kwargs"),
        policy_kwargs=case.get("policy"),
        **kw,
    )


def merged(parts):
    """One compare_cem() result from the per-(strategy, seed) ones (runs in seed order)."""
    res = dict(parts[0], runs={}, episodes={})
    for p in parts:
        for strategy, runs in p["runs"].items():
            res["runs"].setdefault(strategy, []).extend(runs)
            res["episodes"][strategy] = res["episodes"].get(strategy, 0) + p["episodes"][strategy]
    for runs in res["runs"].values():
        runs.sort(key=lambda r: r["seed"])
    seeds = {r["seed"] for p in parts for runs in p["runs"].values() for r in runs}
    res["settings"] = dict(res["settings"], seeds=sorted(seeds))
    res["summary"] = stiffness.summarize(res)
    return res


def throw_energy(cem):
    """Energy account (J) of each arm's best open-loop throw, replayed at 1 ms."""
    out = {}
    policy = stiffness.OPEN_LOOP[THROW]
    for strategy, runs in cem["runs"].items():
        best = max(runs, key=lambda r: r["metric"])
        ev = stiffness.Evaluator(THROW, strategy, policy)
        actions = ev.actions(np.array(best["theta"]))
        kw = stiffness.strategy_kwargs(strategy, best.get("presets"))
        tr = replay_actions(actions, kw["actuator"], kw.get("preset"))
        acc = tr["account"]
        out[strategy] = dict(
            seed=best["seed"],
            distance_m=float(tr["distance"]),
            spring_peak_J=acc["spring_peak"],
            spring_at_release_J=acc["spring_at_release"],
            link_kinetic_at_release_J=acc["link_kinetic_at_release"],
            release_speed_m_s=acc["release_speed"],
            release_time_s=acc["release_time"],
            peak_link_speed_rad_s=acc["peak_link_speed"],
            presets_rad=best.get("presets"),
        )
    return out


def fixed_searched(case, cem, pool, say, ppo_kw):
    """The fixed arm of a case with fixed_search: stiffness.search_fixed_presets_ppo over
    preset_grid(values) plus the open-loop reference's best pair and the case's extra pairs,
    wall_s its wall time."""
    t0 = time.perf_counter()
    grid = stiffness.preset_grid(
        case["fixed_search"]["values"],
        [stiffness.best_fixed_presets(cem), *case["fixed_search"].get("extra", ())],
    )
    res = stiffness.search_fixed_presets_ppo(
        case["task"], grid, task_kwargs=case.get("task_kwargs"), executor=pool, **ppo_kw
    )
    res["wall_s"] = time.perf_counter() - t0
    s = res["search"]
    say(
        f"{case['name']}: fixed presets searched ({len(grid)} PPO runs, seed {s['seed']}): "
        f"{s['chosen']} ({s['metric']:.3f}); with its {len(res['runs']['fixed'])} seeds "
        f"{res['wall_s']:.0f} s"
    )
    return res


def with_searched_fixed(ppo, fixed):
    """One compare_ppo() result: ppo's rigid and variable arms (ppo's wall_s and run, if any,
    kept: theirs), the searched fixed arm (its search under settings' fixed_search, its wall
    time as fixed_wall_s)."""
    runs = {s: ppo["runs"][s] for s in stiffness.STRATEGIES if s != "fixed" and s in ppo["runs"]}
    runs["fixed"] = fixed["runs"]["fixed"]
    settings = dict(
        ppo["settings"],
        fixed_preset=fixed["settings"]["fixed_preset"],
        fixed_search=fixed["search"],
        fixed_arm="presets searched with PPO (stiffness.search_fixed_presets_ppo)",
    )
    res = dict(ppo, runs=runs, settings=settings, fixed_wall_s=fixed.get("wall_s"))
    res.pop("label", None)  # a stored ppo_cem_preset's: its fixed arm is replaced here
    res["summary"] = stiffness.summarize(res)
    return res


def run_case(case, pool, say, skip_ppo=False, ppo_steps=None, cem=None, stored_ppo=None):
    """One case: the CEM reference (or `cem`, a stored one: PPO only), then PPO; with
    stored_ppo (a stored compare_ppo() result) and the case's fixed_search, only the searched
    fixed arm runs, beside stored_ppo's rigid and variable arms (stored_ppo itself kept as
    "ppo_cem_preset", its fixed arm on the open-loop reference's presets)."""
    task = case["task"]
    t0 = time.perf_counter()
    if cem is None:
        jobs = [
            pool.submit(_cem_job, case, strategy, seed)
            for strategy in stiffness.STRATEGIES
            for seed in case["cem"]["seeds"]
        ]
        cem = merged([j.result() for j in jobs])
        cem["wall_s"] = time.perf_counter() - t0
        say(f"{case['name']}: CEM done in {cem['wall_s']:.0f} s")
    out = {"metric": cem["metric"], "cem": cem}
    results = [cem]
    if case.get("ppo") and not skip_ppo:
        t0 = time.perf_counter()
        ppo_kw = dict(case["ppo"])
        if ppo_steps is not None:
            ppo_kw["total_steps"] = ppo_steps
        search = case.get("fixed_search")
        if stored_ppo is not None:  # the searched fixed arm beside the stored arms
            ppo = with_searched_fixed(stored_ppo, fixed_searched(case, cem, pool, say, ppo_kw))
            stored_ppo = dict(stored_ppo, label="ppo, the CEM's presets")
            out["ppo_cem_preset"] = stored_ppo
            results.append(stored_ppo)
        else:
            ppo = stiffness.compare_ppo(
                task,
                ("rigid", "variable") if search else stiffness.STRATEGIES,
                fixed_preset=None if search else stiffness.best_fixed_presets(cem),
                task_kwargs=case.get("task_kwargs"),
                executor=pool,
                **ppo_kw,
            )
            ppo["wall_s"] = time.perf_counter() - t0
            if search:
                ppo = with_searched_fixed(ppo, fixed_searched(case, cem, pool, say, ppo_kw))
            say(f"{case['name']}: PPO done in {time.perf_counter() - t0:.0f} s")
        out["ppo"] = ppo
        results.insert(1, ppo)
    if task == THROW:
        out["energy"] = throw_energy(cem)
    out["table"] = stiffness.table(results)
    m = cem["metric"]
    say(f"\n{case['name']} ({m['name']}, {m['unit']}, {m['better']} is better)\n{out['table']}\n")
    return out


def main(
    quick=False,
    out=None,
    workers=2,
    tasks=None,
    skip_ppo=False,
    ppo_steps=None,
    ppo_only=False,
    fixed_only=False,
    say=print,
):
    """Run the cases (module doc); ppo_only: take each case's CEM reference from `out`;
    fixed_only: also its PPO arms, running only the searched fixed arm (cases with
    fixed_search)."""
    t0 = time.perf_counter()
    stored = {}
    ppo_only = ppo_only or fixed_only
    if ppo_only:
        with open(out) as f:
            stored = json.load(f)["tasks"]
    load = os.getloadavg()[0]
    todo = cases(quick, tasks)
    fig = dict(machine(), quick=bool(quick), load_average_before=load, tasks={})
    fig["workers"] = workers
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        for case in todo:
            t1 = time.perf_counter()
            cem = stored[case["name"]]["cem"] if ppo_only else None
            old_ppo = None
            if fixed_only:
                if not case.get("fixed_search"):
                    raise ValueError(f"--fixed-only: case {case['name']!r} has no fixed_search")
                old = stored[case["name"]]
                old_ppo = old.get("ppo_cem_preset") or old["ppo"]
                old_ppo = dict(old_ppo, run=old_ppo.get("run") or old.get("run"))
            res = run_case(case, pool, say, skip_ppo, ppo_steps, cem, old_ppo)
            fig["tasks"][case["name"]] = res
            res["run"] = dict(
                quick=bool(quick),
                load_average_before=load,
                bench_wall_s=time.perf_counter() - t1,
                workers=workers,
            )
            old = stored.get(case["name"], {})
            if fixed_only and old.get("cem_run"):  # "run" was the stored PPO arms' run
                res["cem_run"] = old["cem_run"]
            elif ppo_only and not fixed_only and old.get("run"):  # the CEM reference's own run
                res["cem_run"] = old.get("cem_run") or old["run"]
            if out:  # each task as it ends: a long run keeps what it finished
                fig["bench_wall_s"] = time.perf_counter() - t0
                write_results(with_other_tasks(fig, out), out, say)
    fig["bench_wall_s"] = time.perf_counter() - t0
    say(
        f"({fig['cpu_count']} CPUs, {workers} worker processes, load average {load:.2f} before; "
        f"benchmark took {fig['bench_wall_s']:.0f} s)"
    )
    return fig


def rewrite(out, say=print):
    """Recompute the summaries and tables of the results file `out` from its per-seed runs
    (after a change to their form, without running anything again)."""
    with open(out) as f:
        fig = json.load(f)
    for name, res in fig["tasks"].items():
        # "ppo", and the PPO runs of other budgets kept beside it ("ppo_<steps>")
        results = [res["cem"]] + [res[k] for k in sorted(res) if k.startswith("ppo")]
        for r in results:
            r["summary"] = stiffness.summarize(r)
        res["table"] = stiffness.table(results)
        say(f"\n{name}\n{res['table']}")
    write_results(fig, out, say)


RUN_KEYS = ("quick", "load_average_before", "bench_wall_s", "workers")


def with_other_tasks(fig, out):
    """fig plus the cases of the results file `out` that this run did not run, each with its
    own run's figures ("run": quick, load average, wall time, workers), so that cases measured
    by separate runs share one file."""
    if not os.path.exists(out):
        return fig
    with open(out) as f:
        old = json.load(f)
    tasks = dict(fig["tasks"])
    for name, res in old.get("tasks", {}).items():
        if name not in tasks:
            tasks[name] = dict(res, run=res.get("run") or {k: old.get(k) for k in RUN_KEYS})
    return dict(fig, tasks=tasks)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small budget, a few minutes")
    ap.add_argument(
        "--out",
        default=None,
        help=f"results file (default {DEFAULT_OUT}; --quick writes only where --out says)",
    )
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument(
        "--task", action="append", help="a case's name or task id (repeatable; default all)"
    )
    ap.add_argument("--skip-ppo", action="store_true", help="the open-loop reference only")
    ap.add_argument("--ppo-steps", type=int, default=None, help="env-steps per PPO run")
    ap.add_argument(
        "--ppo-only", action="store_true", help="PPO only, the CEM reference read from --out"
    )
    ap.add_argument(
        "--fixed-only",
        action="store_true",
        help="only the searched fixed arm (Periodic2DOF), the other arms read from --out",
    )
    ap.add_argument(
        "--rewrite", action="store_true", help="only recompute the summaries and tables of --out"
    )
    a = ap.parse_args()
    if a.rewrite:
        rewrite(a.out or DEFAULT_OUT)
        sys.exit(0)
    main(
        quick=a.quick,
        out=a.out or (None if a.quick else DEFAULT_OUT),
        workers=a.workers,
        tasks=a.task,
        skip_ppo=a.skip_ppo,
        ppo_steps=a.ppo_steps,
        ppo_only=a.ppo_only,
        fixed_only=a.fixed_only,
    )
