"""Throwing with variable stiffness ([Braun2012]) on asr's 2-DOF qbmove Advanced arm.

    python -m asr.experiments.throw --out DIR

writes DIR/throw.html (distance per strategy, learned equilibrium and preset profiles, link
stiffness and spring energy over time) and prints a table. Task: asr/Throw-v0 (asr.envs.throw:
vertical arm, ball released from the tip, reward the ballistic distance to the ground z = 0).

Policy class (the same for every strategy): open loop, per joint the equilibrium eq_j(t) and the
preset p_j(t) piecewise linear through N_KNOTS knots evenly spaced over [0, T_KNOTS], constant
after, plus the release time t_r in [T_RELEASE_MIN, T_MAX] (the ball leaves at the end of the
first 10 ms env step that ends at or after t_r). Parameters are normalised to [0, 1] and
optimised by a cross-entropy method over the batch (cem(): diagonal Gaussian, clipped samples,
elites refit, the best candidate so far kept, so the result never gets worse).

Strategies:
(b) fixed preset: p_j(t) = P for each P of FIXED_PRESETS across the qbmove Advanced preset range,
    eq knots and t_r learned; all presets in ONE asr batch (population x presets instances);
    the best P is reported as "best fixed".
(a) variable stiffness: eq and preset knots and t_r learned, initialised from the best fixed
    preset's solution (preset knots at P) and refined with the same CEM in one batch.
(c) rigid: each link driven by its joint's two motors on one shaft through a stiff transmission
    (asr.envs.throw.rigid_robot: 12 N m, the same 6 rad/s limit), eq knots = the shafts'
    position references, t_r learned; its own batch (another actuator model).
Every arm has the same motors: 6 N m and 6 rad/s each (asr.envs.throw).

Spring energy (docs/models.md, qbmove Advanced): U = sum over joints and springs of
(k_i / a_i) (cosh(a_i phi_i) - 1) with phi_i the clamped deflections defl1, defl2; replay()
also computes it from the elastic torques, (k/a)(sqrt(1 + (tau_el/k)^2) - 1), and as the work
integral -int tau_el d(defl) (trapezoid over the 1 ms steps), as a bookkeeping check.

Result (python -m asr.experiments.throw, defaults: 30 iterations x 32 candidates, about 50 s):

| strategy | distance (m) | peak U (J) | U at release (J) | release speed (m/s) |
| --- | --- | --- | --- | --- |
| variable | 1.309 | 0.545 | 0.384 | 3.19 |
| best fixed (preset 0) | 1.266 | 0.517 | 0.348 | 3.14 |
| rigid | 0.835 | 0 | 0 | 2.32 |
| fixed 0.2 / 0.4 / 0.6 / 0.8 | 1.188 / 1.159 / 1.192 / 1.248 | 0.55 / 0.56 / 0.56 / 0.56 | | |

Reading it. The springs beat the rigid arm by 57 %: the motors stop at 6 rad/s, the rigid
links with them, while the qbmove links outrun their motors on the energy their springs
stored. Variable stiffness adds 3.4 % over the best fixed preset, but it starts from that
preset's solution (so it cannot lose) while each fixed preset, the same on both joints, gets
one CEM run of this small budget: the figures bound nothing. Every preset reaches about the
same peak spring energy (0.52-0.56 J), yet that does not bound the distance, which depends on
how much of it the wind-up turns into link speed at the release: 4 restarts of 60 iterations x
64 candidates per preset reach 1.565 m at 0.6 rad and 1.463 m at 0 rad, peak spring
energy 0.58 J (benchmarks/throw_fixed_search.py). The closed-loop version with PPO, its
energy account and the same three arms: asr.experiments.throw_ppo.
"""

import os
import time

import numpy as np

from asr.envs.throw import (
    EQ_LIMIT,
    PRESET_HI,
    PRESET_LO,
    RELEASE_THRESHOLD,
    Throw,
    spring_energy_from_torque,
)
from asr.experiments import command_line, write_html
from asr.experiments._throw_energy import replay_actions
from asr.experiments.stiffness import cem, interp_knots

N_KNOTS = 4
T_KNOTS = 0.6  # s, last knot
T_MAX = 1.0  # s, episode time limit (Throw: 100 env steps of 10 ms)
T_RELEASE_MIN = 0.05  # s
FIXED_PRESETS = (0.0, 0.2, 0.4, 0.6, 0.8)  # rad, across [PRESET_LO, PRESET_HI]


class OpenLoop:
    """The open-loop policy class. theta (P, dim) in [0, 1]: eq knots of both joints
    (2 N_KNOTS), preset knots (2 N_KNOTS, only when variable), t_r (1). preset: None (variable)
    or a fixed preset (rad) for every candidate."""

    def __init__(self, preset=None):
        self.preset = preset
        self.dim = 2 * N_KNOTS * (2 if preset is None else 1) + 1

    def decode(self, theta):
        """(eq (P, 2, K) rad, preset (P, 2, K) rad, t_r (P,) s)."""
        theta = np.clip(np.atleast_2d(theta), 0.0, 1.0)
        p = theta.shape[0]
        eq = -EQ_LIMIT + 2 * EQ_LIMIT * theta[:, : 2 * N_KNOTS].reshape(p, 2, N_KNOTS)
        if self.preset is None:
            pre = PRESET_LO + (PRESET_HI - PRESET_LO) * theta[:, 2 * N_KNOTS : 4 * N_KNOTS]
            pre = pre.reshape(p, 2, N_KNOTS)
        else:
            pre = np.full((p, 2, N_KNOTS), float(self.preset))
        t_r = T_RELEASE_MIN + (T_MAX - T_RELEASE_MIN) * theta[:, -1]
        return eq, pre, t_r

    def encode_preset(self, theta_fixed, preset):
        """A variable-policy theta equal to the fixed-preset policy theta_fixed at `preset`."""
        theta_fixed = np.atleast_2d(theta_fixed)
        u = (preset - PRESET_LO) / (PRESET_HI - PRESET_LO)
        pre = np.full((theta_fixed.shape[0], 2 * N_KNOTS), u)
        return np.concatenate([theta_fixed[:, :-1], pre, theta_fixed[:, -1:]], axis=1)


def actions(policy, theta, t):
    """Throw actions (P, 5) at env-step start times t (P,) for candidates theta."""
    eq, pre, t_r = policy.decode(theta)
    dt = Throw.frame_skip * 1e-3
    release = np.where(t + dt >= t_r - 1e-12, 1.0, -1.0)
    a = np.concatenate(
        [interp_knots(eq, t, T_KNOTS), interp_knots(pre, t, T_KNOTS), release[:, None]], axis=1
    )
    return np.clip(a, Throw.single_action_space.low, Throw.single_action_space.high)


def evaluate(env, policy, theta, trace=False):
    """Distance of each candidate (one sub-env each: env.num_envs == len(theta)); with trace,
    also per-step stiffness (P, T, 2), spring energy (P, T), eq and preset (P, T, 2) up to
    each release (NaN after)."""
    n = env.num_envs
    if theta.shape[0] != n:
        raise ValueError(f"theta: {theta.shape[0]} candidates, env has num_envs = {n}")
    env.reset(seed=0)
    dist = np.zeros(n)
    done = np.zeros(n, dtype=bool)
    tr = {
        k: [] for k in ("stiffness", "spring_energy", "eq", "preset", "release_pos", "release_vel")
    }
    k = 0
    while not done.all():
        a = actions(policy, theta, np.full(n, k * env.env_dt))
        _, r, term, trunc, info = env.step(a)
        dist = np.where(done, dist, r + dist)
        if trace:
            nan = np.where(done, np.nan, 1.0)
            tr["stiffness"].append(info["stiffness"] * nan[:, None])
            tr["spring_energy"].append(info["spring_energy"] * nan)
            tr["eq"].append(a[:, :2] * nan[:, None])
            tr["preset"].append(a[:, 2:4] * nan[:, None])
            tr["release_pos"].append(np.where((term & ~done)[:, None], info["release_pos"], np.nan))
            tr["release_vel"].append(np.where((term & ~done)[:, None], info["release_vel"], np.nan))
        done |= term | trunc
        k += 1
    if not trace:
        return dist
    out = {key: np.stack(v, axis=1) for key, v in tr.items()}
    out["release_pos"] = np.nanmax(np.nan_to_num(out["release_pos"], nan=-np.inf), axis=1)
    out["release_vel"] = np.nanmax(np.nan_to_num(out["release_vel"], nan=-np.inf), axis=1)
    out["t"] = np.arange(k) * env.env_dt
    out["distance"] = dist
    return out


def replay(policy, theta, actuator="qbmove"):
    """One candidate replayed on asr.Sim at the 1 ms step up to its release
    (asr.experiments.throw_ppo.replay_actions: t (s), q, qd, stiffness, eq, preset, the
    energies and the release), plus energy (the spring energy, J), for the qbmove arm also
    energy_from_torque (from the elastic torques) and energy_work (-int tau_el d defl + U(0),
    the trapezoid rule over the 1 ms steps), and release_step."""
    dt, theta = Throw.frame_skip * 1e-3, np.atleast_2d(theta)
    steps = []
    for k in range(Throw.max_episode_steps):
        steps.append(actions(policy, theta, np.array([k * dt]))[0])
        if steps[-1][4] > RELEASE_THRESHOLD:
            break
    out = replay_actions(np.array(steps), actuator)
    out["energy"] = out["spring"]
    if actuator == "qbmove":
        sp = Throw(1)._springs
        out["energy_from_torque"] = sum(
            spring_energy_from_torque(out["tau_el1"][:, j], out["tau_el2"][:, j], *sp[j])
            for j in range(2)
        )
        # tau_el = -dU/d(defl): U(t) = U(t0) - int tau_el d(defl), trapezoid between steps
        work = 0.0
        for f_tau, f_def in (("tau_el1", "defl1"), ("tau_el2", "defl2")):
            tau, d = out[f_tau], out[f_def]
            work = work - np.concatenate(
                [
                    np.zeros((1, 2)),
                    np.cumsum(0.5 * (tau[1:] + tau[:-1]) * np.diff(d, axis=0), axis=0),
                ]
            ).sum(axis=1)
        out["energy_work"] = out["energy"][0] + work
    out["release_step"] = len(out["t"])
    return out


def run(
    iterations=30, population=32, presets=FIXED_PRESETS, var_iterations=None, seed=0, threads=1
):
    """The comparison. Returns a dict: fixed {preset: distance}, best_preset, rows (strategy,
    distance, peak spring energy, release speed, ...), theta per strategy, traces (replay()
    of each strategy's best policy), curves, wall_s."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    presets = tuple(float(p) for p in presets)
    var_iterations = iterations if var_iterations is None else int(var_iterations)
    # (b) fixed presets: one batch, one CEM group per preset
    fixed = OpenLoop(preset=0.0)
    env = Throw(len(presets) * population, threads=threads)
    pre_of = np.repeat(np.array(presets), population)

    best_f, best_fr, curve_f = cem(
        lambda th: evaluate_with_presets(env, fixed, th, pre_of),
        fixed.dim,
        len(presets),
        iterations,
        population,
        rng=rng,
    )
    k_best = int(np.argmax(best_fr))
    p_best = presets[k_best]
    # (c) rigid: its own batch
    env_r = Throw(population, actuator="rigid", threads=threads)
    rigid = OpenLoop(preset=0.0)
    best_r, best_rr, curve_r = cem(
        lambda th: evaluate(env_r, rigid, th), rigid.dim, 1, iterations, population, rng=rng
    )
    # (a) variable: initialised from the best fixed preset's policy
    var = OpenLoop(preset=None)
    init = var.encode_preset(best_f[k_best], p_best)
    std = np.full(var.dim, 0.1)
    std[2 * N_KNOTS : 4 * N_KNOTS] = 0.3
    env_v = Throw(population, threads=threads)
    best_v, best_vr, curve_v = cem(
        lambda th: evaluate(env_v, var, th),
        var.dim,
        1,
        var_iterations,
        population,
        init_mean=init,
        init_std=std,
        rng=rng,
    )
    strategies = {
        "variable": (var, best_v[0], "qbmove"),
        "best fixed": (OpenLoop(preset=p_best), best_f[k_best], "qbmove"),
        "rigid": (rigid, best_r[0], "rigid"),
    }
    for p, th in zip(presets, best_f):
        strategies[f"fixed {p:g}"] = (OpenLoop(preset=p), th, "qbmove")
    traces, rows = {}, []
    for name, (pol, th, act) in strategies.items():
        tr = replay(pol, th, act)
        traces[name] = tr
        v = tr["release_vel"]
        rows.append(
            dict(
                strategy=name,
                distance=tr["distance"],
                peak_spring_energy=float(np.max(tr["energy"])),
                spring_energy_at_release=float(tr["energy"][-1]),
                release_speed=float(np.hypot(*v)),
                ball_kinetic_energy_per_kg=float(0.5 * (v @ v)),
                release_time=float(tr["t"][-1]),
                preset_mean=float(np.mean(tr["preset"])) if act == "qbmove" else np.nan,
                stiffness_max=float(np.max(tr["stiffness"])) if act == "qbmove" else np.inf,
            )
        )
    return dict(
        fixed={p: float(d) for p, d in zip(presets, best_fr)},
        best_preset=p_best,
        best_fixed=float(best_fr[k_best]),
        variable=float(best_vr[0]),
        rigid=float(best_rr[0]),
        rows=rows,
        traces=traces,
        theta={k: v[1] for k, v in strategies.items()},
        curves=dict(fixed=curve_f, variable=curve_v[:, 0], rigid=curve_r[:, 0]),
        wall_s=time.perf_counter() - t0,
        iterations=iterations,
        population=population,
    )


def evaluate_with_presets(env, policy, theta, presets):
    """evaluate() of fixed-preset policies whose preset differs per candidate: the rewards (P,)
    (distance thrown, m) of theta (P, policy.dim) run with policy's decoding but each
    candidate's presets held at presets[p] (rad, shape (P,)), so that one batch searches
    several presets at once (run()'s strategy (b), benchmarks/throw_fixed_search.py)."""

    class _PerCandidate(OpenLoop):
        def decode(self, th):
            eq, _, t_r = OpenLoop.decode(policy, th)
            pre = np.broadcast_to(presets[:, None, None], eq.shape).copy()
            return eq, pre, t_r

    per = _PerCandidate(preset=0.0)
    return evaluate(env, per, theta)


def summary(res):
    lines = [
        f"Throw ([Braun2012] task on asr): qbmove_arm_2dof vertical, CEM {res['iterations']} "
        f"iterations x {res['population']} candidates per strategy",
        f"{'strategy':>12}  {'distance (m)':>12}  {'peak U (J)':>10}  {'U at rel. (J)':>13}  "
        f"{'|v| (m/s)':>9}  {'v^2/2 (J/kg)':>12}  {'t_r (s)':>7}  {'mean preset':>11}  "
        f"{'max sigma':>9}",
    ]
    for r in res["rows"]:
        lines.append(
            f"{r['strategy']:>12}  {r['distance']:>12.3f}  {r['peak_spring_energy']:>10.4f}"
            f"  {r['spring_energy_at_release']:>13.4f}  {r['release_speed']:>9.3f}  "
            f"{r['ball_kinetic_energy_per_kg']:>12.3f}  {r['release_time']:>7.3f}  "
            f"{r['preset_mean']:>11.3f}  {r['stiffness_max']:>9.3f}"
        )
    lines.append(f"best fixed preset {res['best_preset']:g} rad; wall time {res['wall_s']:.1f} s")
    return "\n".join(lines)


def figures(res):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = res["rows"]
    f1 = go.Figure(go.Bar(x=[r["strategy"] for r in rows], y=[r["distance"] for r in rows]))
    f1.update_layout(title="Distance thrown per strategy (m)", yaxis_title="m")
    f2 = make_subplots(
        rows=4,
        cols=1,
        shared_xaxes=True,
        subplot_titles=(
            "preset p_j(t) (rad)",
            "link stiffness sigma_j (N m/rad)",
            "spring energy U (J)",
            "equilibrium eq_j(t) (rad)",
        ),
    )
    for name in ("variable", "best fixed"):
        tr = res["traces"][name]
        for j in range(2):
            f2.add_trace(
                go.Scatter(x=tr["t"], y=tr["preset"][:, j], name=f"{name} p{j + 1}"), row=1, col=1
            )
            f2.add_trace(
                go.Scatter(x=tr["t"], y=tr["stiffness"][:, j], name=f"{name} sigma{j + 1}"),
                row=2,
                col=1,
            )
            f2.add_trace(
                go.Scatter(x=tr["t"], y=tr["eq"][:, j], name=f"{name} eq{j + 1}"), row=4, col=1
            )
        f2.add_trace(go.Scatter(x=tr["t"], y=tr["energy"], name=f"{name} U"), row=3, col=1)
    f2.update_xaxes(title_text="t (s), until the release", row=4, col=1)
    f2.update_layout(height=1000, title="Learned variable-stiffness throw vs best fixed preset")
    return [f1, f2]


def main(out_dir="throw_output", **run_kwargs):
    res = run(**run_kwargs)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "throw.html")
    write_html(figures(res), path, "asr: throwing with variable stiffness")
    res["html"] = path
    print(summary(res))
    print(f"figure: {path}")
    return res


def _cli(argv=None):
    command_line(
        "throw", "Throwing with variable stiffness ([Braun2012]) on the qbmove arm", main, argv
    )


if __name__ == "__main__":
    _cli()
