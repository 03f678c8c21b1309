"""Throwing with variable stiffness learned closed-loop ([Braun2012]): PPO on asr/Throw-v0.

    python -m asr.experiments.throw_ppo --out DIR

trains PPO (asr.rl.train, closed-loop: the policy sees q, qd and t every 10 ms and sets the
equilibria, the presets and the release) on three arms with the same motors (6 N m, 6 rad/s
each, asr.envs.throw):

- variable: the qbmove Advanced arm, stiffness (presets) and equilibria as actions;
- fixed P: the same arm with its presets held at P, for each P of FIXED_PRESETS (the sweep); the
  best P's policy is "best fixed";
- rigid: each link driven by its two motors on one shaft (asr.envs.throw.rigid_robot).

Every strategy gets the same PPO settings (THROW_PPO) and budget, and several seeds (the sweep
trains the first seed of every preset; the best preset then gets the other seeds). A policy's
throw is its deterministic action sequence (the task has no random element: every held-out
episode is the same throw), replayed at 1 ms with its energy account (replay_actions). DIR gets
the training folders, one ONNX policy per strategy (its best seed), summary.json and
throw_ppo.html.

Figures: distance mean and spread over seeds per strategy, the ratios of the means
(vsa_vs_best_fixed, vsa_vs_rigid), the energy account of each strategy's best throw.

Also offered, for figure scripts and notebooks of the committed results (summary.json):
replay_actions(actions, actuator, preset), a throw's action sequence (T, 5) replayed at 1 ms on
asr.Sim with its energy account; figures(res), the page's figures (STRATEGIES: the three arms
they compare); overview_figure(res), the README's one picture of the comparison.
"""

import json
import os
import tempfile
import time

import numpy as np

from asr.envs import TRAIN_DEFAULTS
from asr.envs.throw import Throw
from asr.experiments import command_line, run_and_report, write_html
from asr.experiments._throw_energy import replay_actions
from asr.experiments._throw_figures import STRATEGIES, figures, overview_figure

TASK = "asr/Throw-v0"
FIXED_PRESETS = (0.0, 0.2, 0.4, 0.6, 0.8)  # rad, across the qbmove Advanced preset range
SEEDS = (0, 1, 2)
# the throw's PPO: Throw's registered training defaults (asr.envs.TRAIN_DEFAULTS: undiscounted,
# the reward being the episode's one distance; rollouts of 128 env steps per sub-env, at least
# one whole 1 s episode), the policy started at Throw.policy_init
TOTAL_STEPS = TRAIN_DEFAULTS[TASK]["total_steps"]  # env steps per run: about 100 s on one core
NUM_ENVS = TRAIN_DEFAULTS[TASK]["num_envs"]
THROW_PPO = dict(TRAIN_DEFAULTS[TASK]["hyperparameters"])
STRATEGY_KWARGS = {"variable": {}, "rigid": {"actuator": "rigid"}}


def _fixed(p):
    return f"fixed {p:g}"


def _runs(strategies, seeds, total_steps, algo):
    return [
        dict(
            task=TASK,
            algo=algo,
            total_steps=total_steps,
            num_envs=NUM_ENVS,
            seed=int(seed),
            env_kwargs=kwargs,
            **THROW_PPO,
        )
        for kwargs in strategies
        for seed in seeds
    ]


def policy_actions(result, env_kwargs):
    """The deterministic throw of a trained policy (asr.rl.TrainResult): its actions (T, 5)
    until the release (or the time limit) and the distance the env gives (m)."""
    env = Throw(1, **env_kwargs)
    obs, _ = env.reset(seed=0)
    actions, distance = [], 0.0
    while True:
        a = np.asarray(result.predict(obs), dtype=float)
        a = np.clip(a, env.single_action_space.low, env.single_action_space.high)
        actions.append(a[0])
        obs, r, term, trunc, _ = env.step(a)
        distance += float(r[0])
        if term[0] or trunc[0]:
            return np.array(actions), distance


def _train_all(runs, executor, out_root, offset):
    from asr.rl import train_many

    for k, run in enumerate(runs):
        run["out_dir"] = os.path.join(out_root, f"run-{offset + k}")
    return train_many(runs, executor=executor)


def run(
    total_steps=TOTAL_STEPS,
    seeds=SEEDS,
    presets=FIXED_PRESETS,
    algo="sb3",
    executor=None,
    out_dir=None,
):
    """The comparison. executor: None (runs one after another) or a concurrent.futures /
    dask executor of processes (asr.rl.train_many). Returns a dict: distances {strategy: [m per
    seed]}, mean / std per strategy, best_preset, ratios vsa_vs_best_fixed and vsa_vs_rigid
    (ratios of the mean distances), throws {variable, best fixed, rigid: replay_actions() of the
    best seed, with "actions" and "env_kwargs"}, sweep {preset: distance of the first seed},
    wall_s, and the settings."""
    from asr.rl import load_checkpoint

    t0 = time.perf_counter()
    seeds = tuple(int(s) for s in seeds)
    presets = tuple(float(p) for p in presets)
    out_root = out_dir or tempfile.mkdtemp(prefix="asr-throw-ppo-")
    os.makedirs(out_root, exist_ok=True)
    first = [{"preset": p} for p in presets]
    batch1 = _runs(first, seeds[:1], total_steps, algo)
    batch1 += _runs(STRATEGY_KWARGS.values(), seeds, total_steps, algo)
    done = _train_all(batch1, executor, out_root, 0)
    sweep = {p: done[k]["final_metric"] for k, p in enumerate(presets)}
    best_preset = max(sweep, key=sweep.get)
    batch2 = _runs([{"preset": best_preset}], seeds[1:], total_steps, algo)
    done += _train_all(batch2, executor, out_root, len(batch1)) if batch2 else []
    by_strategy = {}
    for summary in done:
        kw = summary["config"]["env_kwargs"]
        name = "rigid" if kw.get("actuator") == "rigid" else "variable"
        name = _fixed(kw["preset"]) if "preset" in kw else name
        by_strategy.setdefault(name, []).append(summary)
    by_strategy["best fixed"] = by_strategy[_fixed(best_preset)]
    distances = {k: [s["final_metric"] for s in v] for k, v in by_strategy.items()}
    throws = {}
    for name in ("variable", "best fixed", "rigid"):
        best = max(by_strategy[name], key=lambda s: s["final_metric"])
        kw = best["config"]["env_kwargs"]
        actions, _ = policy_actions(load_checkpoint(best["out_dir"]), kw)
        throws[name] = dict(replay_actions(actions, **_replay_kwargs(kw)), actions=actions)
        throws[name].update(env_kwargs=kw, out_dir=best["out_dir"])
    mean = {k: float(np.mean(v)) for k, v in distances.items()}
    return dict(
        distances=distances,
        mean=mean,
        std={k: float(np.std(v)) for k, v in distances.items()},
        sweep=sweep,
        best_preset=best_preset,
        vsa_vs_best_fixed=_ratio(mean["variable"], mean["best fixed"]),
        vsa_vs_rigid=_ratio(mean["variable"], mean["rigid"]),
        throws=throws,
        seeds=seeds,
        presets=presets,
        total_steps=total_steps,
        num_envs=NUM_ENVS,
        hyperparameters=dict(THROW_PPO),
        algo=algo,
        out_dir=out_root,
        wall_s=time.perf_counter() - t0,
    )


def _ratio(a, b):
    """a / b, NaN where the baseline threw nowhere (b <= 0: no ratio means anything)."""
    return a / b if b > 0 else float("nan")


def _replay_kwargs(env_kwargs):
    return {"actuator": env_kwargs.get("actuator", "qbmove"), "preset": env_kwargs.get("preset")}


def export_policies(res, folder):
    """Each strategy's best policy as ONNX (asr.rl.export_onnx): folder/<strategy>.onnx with
    strategy variable, best_fixed, rigid. Returns {strategy: path}."""
    from asr.rl import export_onnx

    os.makedirs(folder, exist_ok=True)
    out = {}
    for name, throw in res["throws"].items():
        path = os.path.join(folder, name.replace(" ", "_") + ".onnx")
        out[name] = export_onnx(throw["out_dir"], path)
    return out


def summary_data(res):
    """The comparison as plain JSON data (no arrays of the traces)."""
    keys = ("distances", "mean", "std", "best_preset", "vsa_vs_best_fixed", "vsa_vs_rigid")
    keys += ("seeds", "presets", "total_steps", "num_envs", "hyperparameters", "algo", "wall_s")
    data = {k: res[k] for k in keys}
    data["sweep"] = {f"{p:g}": d for p, d in res["sweep"].items()}
    data["throws"] = {
        name: dict(
            account=t["account"],
            distance=t["distance"],
            env_kwargs=t["env_kwargs"],
            actions=np.asarray(t["actions"]).tolist(),
        )
        for name, t in res["throws"].items()
    }
    return data


def summary(res):
    lines = [
        f"Throw ([Braun2012] task on asr), PPO closed-loop, {res['total_steps']} env steps per "
        f"run, seeds {list(res['seeds'])}",
        f"{'strategy':>12}  {'mean (m)':>8}  {'std (m)':>7}  per seed (m)",
    ]
    for name, d in res["distances"].items():
        per = " ".join(f"{x:.3f}" for x in d)
        lines.append(f"{name:>12}  {np.mean(d):>8.3f}  {np.std(d):>7.3f}  {per}")
    best = {k: max(v) for k, v in res["distances"].items()}
    lines.append(
        f"best fixed preset {res['best_preset']:g} rad; ratios of the means: variable / best fixed "
        f"{res['vsa_vs_best_fixed']:.3f}, variable / rigid {res['vsa_vs_rigid']:.3f}; of the best "
        f"throws: {_ratio(best['variable'], best['best fixed']):.3f} and "
        f"{_ratio(best['variable'], best['rigid']):.3f}"
    )
    lines.append(f"{'energy (J)':>24}  " + "  ".join(f"{n:>10}" for n in res["throws"]))
    for key in ACCOUNT_ROWS:
        row = "  ".join(f"{t['account'][key]:>10.3f}" for t in res["throws"].values())
        lines.append(f"{key:>24}  {row}")
    return "\n".join(lines)


ACCOUNT_ROWS = (
    "motor_work",
    "delivered",
    "spring_peak",
    "spring_released",
    "spring_at_release",
    "link_kinetic_at_release",
    "link_potential_gain",
    "link_damping",
    "residual",
    "ball_kinetic_per_kg",
    "release_speed",
    "release_time",
)


def _write_html(res, path):
    write_html(figures(res), path, "asr: a throw learned with variable stiffness")


def main(out_dir="throw_ppo_output", **run_kwargs):
    """run() with its training folders in out_dir/runs, then out_dir/throw_ppo.html, the ONNX
    policies in out_dir/policies and out_dir/summary.json."""
    kwargs = dict(run_kwargs, out_dir=os.path.join(out_dir, "runs"))
    res = run_and_report("throw_ppo", run, _write_html, summary, out_dir, kwargs)
    res["onnx"] = export_policies(res, os.path.join(out_dir, "policies"))
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary_data(res), f, indent=1)
    return res


def _cli(argv=None):
    command_line(
        "throw_ppo", "A throw learned closed-loop with variable stiffness (PPO)", main, argv
    )


__all__ = [
    "TASK",
    "FIXED_PRESETS",
    "SEEDS",
    "THROW_PPO",
    "STRATEGIES",
    "run",
    "main",
    "summary",
    "summary_data",
    "policy_actions",
    "export_policies",
    "replay_actions",
    "figures",
    "overview_figure",
]

if __name__ == "__main__":
    _cli()
