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
  seed.

Throw also gets the energy account of each arm's best open-loop throw (replayed at 1 ms,
asr.experiments.throw_ppo.replay_actions: peak spring energy, link kinetic energy at the release).

Writes benchmarks/results/stiffness.json: the machine (CPU, versions), the settings, every
seed's result, the summaries and the tables. The full run takes longer than 30 minutes on two
cores (about 20 minutes of CEM and the PPO runs), hence its own target; --quick runs the same
code at a small budget in a few minutes (and writes nothing unless --out is given).
Benchmarks report; they do not assert."""

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
TASKS = ("asr/Throw-v0", "asr/Impact2DOF-v0", "asr/Periodic2DOF-v0")
# per task: the CEM's seeds, restarts, iterations, population, episodes per candidate and
# held-out episodes; PPO's seeds and env-steps per run (None: the task's registered default)
FULL = {
    "asr/Throw-v0": dict(
        cem=dict(seeds=(0, 1, 2, 3, 4), restarts=4, iterations=40, population=32, eval_episodes=1),
        ppo=dict(seeds=(0, 1, 2), total_steps=200_000),
    ),
}
FULL_OTHER = dict(
    cem=dict(seeds=(0, 1, 2), restarts=2, iterations=20, population=32, episodes=4),
    ppo=dict(seeds=(0, 1, 2), total_steps=200_000),
)
QUICK = dict(
    cem=dict(seeds=(0, 1, 2), restarts=2, iterations=8, population=32, episodes=1),
    ppo=dict(seeds=(0, 1), total_steps=40_960),
)


def settings(task, quick):
    s = QUICK if quick else FULL.get(task, FULL_OTHER)
    cem = dict(s["cem"])
    if task != "asr/Throw-v0":  # tasks that draw targets: held-out episodes differ
        cem.setdefault("episodes", 4)
        cem.setdefault("eval_episodes", 16)
    return dict(cem=cem, ppo=dict(s["ppo"]))


def _cem_job(task, strategy, seed, cem):
    kw = {k: v for k, v in cem.items() if k != "seeds"}
    return stiffness.compare_cem(task, (strategy,), seeds=(seed,), **kw)


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
    policy = stiffness.OPEN_LOOP["asr/Throw-v0"]
    for strategy, runs in cem["runs"].items():
        best = max(runs, key=lambda r: r["metric"])
        ev = stiffness.Evaluator("asr/Throw-v0", strategy, policy)
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


def run_task(task, quick, pool, say, skip_ppo=False, ppo_steps=None):
    s = settings(task, quick)
    t0 = time.perf_counter()
    jobs = [
        pool.submit(_cem_job, task, strategy, seed, s["cem"])
        for strategy in stiffness.STRATEGIES
        for seed in s["cem"]["seeds"]
    ]
    cem = merged([j.result() for j in jobs])
    cem["wall_s"] = time.perf_counter() - t0
    say(f"{task}: CEM done in {cem['wall_s']:.0f} s")
    out = {"metric": cem["metric"], "cem": cem}
    results = [cem]
    if not skip_ppo:
        t0 = time.perf_counter()
        ppo_kw = dict(s["ppo"])
        if ppo_steps is not None:
            ppo_kw["total_steps"] = ppo_steps
        ppo = stiffness.compare_ppo(
            task, fixed_preset=stiffness.best_fixed_presets(cem), executor=pool, **ppo_kw
        )
        ppo["wall_s"] = time.perf_counter() - t0
        say(f"{task}: PPO done in {ppo['wall_s']:.0f} s")
        out["ppo"] = ppo
        results.append(ppo)
    if task == "asr/Throw-v0":
        out["energy"] = throw_energy(cem)
    out["table"] = stiffness.table(results)
    say(
        f"\n{task} ({cem['metric']['name']}, {cem['metric']['unit']}, {cem['metric']['better']} "
        f"is better)\n{out['table']}\n"
    )
    return out


def main(quick=False, out=None, workers=2, tasks=None, skip_ppo=False, ppo_steps=None, say=print):
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    tasks = [t for t in (tasks or TASKS) if t in ENVS]
    fig = dict(machine(), quick=bool(quick), load_average_before=load, tasks={})
    fig["workers"] = workers
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        for task in tasks:
            fig["tasks"][task] = run_task(task, quick, pool, say, skip_ppo, ppo_steps)
            if out:  # each task as it ends: a long run keeps what it finished
                fig["bench_wall_s"] = time.perf_counter() - t0
                write_results(with_other_tasks(fig, out), out, say)
    fig["bench_wall_s"] = time.perf_counter() - t0
    say(
        f"({fig['cpu_count']} CPUs, {workers} worker processes, load average {load:.2f} before; "
        f"benchmark took {fig['bench_wall_s']:.0f} s)"
    )
    return fig


def with_other_tasks(fig, out):
    """fig plus the tasks of the results file `out` that this run did not run (kept with the
    machine and settings they were measured with, under "kept_tasks")."""
    if not os.path.exists(out):
        return fig
    with open(out) as f:
        old = json.load(f)
    kept = {**old.get("kept_tasks", {})}
    for task, res in old.get("tasks", {}).items():
        kept[task] = dict(
            res, machine={k: v for k, v in old.items() if k not in ("tasks", "kept_tasks")}
        )
    kept = {t: r for t, r in kept.items() if t not in fig["tasks"]}
    return dict(fig, kept_tasks=kept) if kept else fig


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small budget, a few minutes")
    ap.add_argument(
        "--out",
        default=None,
        help=f"results file (default {DEFAULT_OUT}; --quick writes only where --out says)",
    )
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--task", action="append", help="a task id (repeatable; default all)")
    ap.add_argument("--skip-ppo", action="store_true", help="the open-loop reference only")
    ap.add_argument("--ppo-steps", type=int, default=None, help="env-steps per PPO run")
    a = ap.parse_args()
    main(
        quick=a.quick,
        out=a.out or (None if a.quick else DEFAULT_OUT),
        workers=a.workers,
        tasks=a.task,
        skip_ppo=a.skip_ppo,
        ppo_steps=a.ppo_steps,
    )
