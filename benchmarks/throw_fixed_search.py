"""How far the throw's fixed-preset arm reaches with a longer open-loop search than the default
of asr.experiments.throw (one CEM run of 30 iterations x 32 candidates per preset): each preset,
held the same on both joints, gets RESTARTS independent CEM runs of ITERATIONS x POPULATION
candidates (the policy class, the env and the CEM of asr.experiments.throw, one asr batch).

    .venv/bin/python benchmarks/throw_fixed_search.py [--out JSON]

writes benchmarks/results/throw_fixed_search.json: per preset the best distance of each restart
(m), the best throw replayed at 1 ms (m) and its peak spring energy (J). It checks whether the
PPO comparison's distances (benchmarks/results/throw_ppo) are the arm's limit; the fair
comparison of every arm under one optimiser and budget is a separate, larger benchmark."""

import argparse
import json
import os
import time

import numpy as np

from asr.envs.throw import Throw
from asr.experiments.throw import OpenLoop, cem, evaluate_with_presets, replay

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "results", "throw_fixed_search.json")
PRESETS = (0.0, 0.6)  # rad: the best presets of the open-loop (0) and PPO (0.6) sweeps
RESTARTS, ITERATIONS, POPULATION, SEED = 4, 60, 64, 1


def run(presets=PRESETS, restarts=RESTARTS, iterations=ITERATIONS, population=POPULATION):
    t0 = time.perf_counter()
    rng = np.random.default_rng(SEED)
    groups = np.repeat(np.asarray(presets, dtype=float), restarts)
    policy = OpenLoop(preset=0.0)
    env = Throw(len(groups) * population, threads=1)
    per_candidate = np.repeat(groups, population)
    best, best_r, _ = cem(
        lambda th: evaluate_with_presets(env, policy, th, per_candidate),
        policy.dim,
        len(groups),
        iterations,
        population,
        rng=rng,
    )
    out = dict(restarts=restarts, iterations=iterations, population=population, seed=SEED)
    for k, p in enumerate(presets):
        rows = slice(k * restarts, (k + 1) * restarts)
        r = best_r[rows]
        i = k * restarts + int(np.argmax(r))
        tr = replay(OpenLoop(preset=float(p)), best[i], "qbmove")
        out[f"preset_{p:g}"] = dict(
            restart_best_m=[float(x) for x in r],
            replayed_best_m=float(tr["distance"]),
            peak_spring_energy_J=float(np.max(tr["energy"])),
        )
    out["wall_s"] = time.perf_counter() - t0
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    res = run()
    print(json.dumps(res, indent=1))
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
