"""[Mengacci2021] sec. 4.3, fig. 15 (simulation side): iterative learning of
the equilibrium reference of the vertical 2-DOF qbmove Advanced arm with asr.ilc.

    python -m asr.experiments.mengacci2021_ilc --out DIR

writes DIR/mengacci2021_ilc.html (max error per trial, tracking of the last trial against the
reference, learned input), DIR/mengacci2021_ilc.json + DIR/mengacci2021_ilc.<hash>.npz (the
ILCResult) and prints a summary.

Set-up as in the paper: robots/qbmove_arm_2dof `vertical` with the springs identified on the
real arm (robot.toml, in the formula's terms, see the robot README), mode 6, preset 0.2 rad on
both joints; desired link trajectory q_ref(t) = fifth-order minimum-jerk 0 -> 0.8 rad in 20 s on
both joints (sampled at the 1 ms time step, sample k at t = (k + 1) ms); initial input
eq_0 = q_ref; update eq_n = eq_{n-1} + K_off(n) e_{n-1}, e = q_ref - q, K_off(n) = 0.5 exp(-n/10);
stop when max |e| over the 20 s and both joints <= 0.08 rad.

Choice (not in the paper): each trial starts from rest at the learned eq(0): reset, then 3 s held
at (eq(0), 0.2) before the trajectory (asr.ilc module doc), as the real arm starts at rest at its
start pose.

Result (python -m asr.experiments.mengacci2021_ilc): 8 trials (max errors 0.835, 0.491, 0.331,
0.234, 0.167, 0.123, 0.092, 0.071 rad, always on joint 1); the paper reports 11.

What this rests on, and how far it carries (`sensitivity()`, printed by the command and checked
by tests/learning/test_ilc.py). The paper gives no link masses or geometry: the arm's are our choice
(robot README). The learning converges only near that choice and only from a settled start, so
"8 trials vs the paper's 11" is not agreement with the paper, only a plausible run of the same
law. Max error over 20 trials at most (best trial, then the last):

| link masses | settle 3 s | settle 0.5 s |
| --- | --- | --- |
| x 0.8 | converges in 7 trials | diverges: 0.180 rad at trial 7, 0.460 at 20 |
| x 1.0 | converges in 8 trials | diverges: 0.251 rad at trial 6, 0.563 at 20 |
| x 1.25 | diverges: 0.230 rad at trial 5, 2.04 at 20 | diverges: 0.238 rad at trial 8, 2.02 at 20 |

- Heavier links (x 1.25): the soft preset cannot hold the arm on the trajectory; after a few
  trials the error grows with every trial.
- Without a settled start (0.5 s) the arm, which rests 0.6 rad below q = 0 at eq = 0, is still
  moving when the trajectory starts; the learned input cannot correct what the start adds
  anew in every trial, and the error grows again after 6-7 trials.
- Joint 1's spring sits on its deflection clamp for most of the final trial (61 % of the samples
  at masses x 1.0, 42 % at x 0.8): the learned motion relies on the clamp, a stand-in for the
  mechanical stop, to transmit torque the spring alone could not.
"""

import os
import time

import numpy as np

import asr
from asr.experiments import command_line
from asr.learning.iterative_learning import ilc
from asr.references import min_jerk

ROBOT, VARIANT = "qbmove_arm_2dof", "vertical"
PRESET = 0.2  # rad, soft
TARGET = 0.8  # rad, both joints
DURATION = 20.0  # s
K_Q = 0.5  # K_off(n) = K_Q exp(-n / 10)
TOL = 0.08  # rad
SETTLE_S = 3.0  # s
MAX_ITER = 50
PAPER_ITERATIONS = 11


def k_off(n):
    """The paper's iteration-dependent gain K_off(n) = 0.5 exp(-n/10)."""
    return K_Q * np.exp(-n / 10.0)


# a label the report prints; mypy does not model attributes set on a function
k_off.description = "K_off(n) = 0.5 exp(-n/10) (Mengacci et al. 2021 sec. 4.3)"  # type: ignore[attr-defined]


def reference(dt):
    """(T, 2) q_ref of both joints, T = DURATION / dt samples at t = (k + 1) dt."""
    T = int(round(DURATION / dt))
    t = (np.arange(T) + 1) * dt
    q = min_jerk(t, 0.0, TARGET, DURATION)
    return np.stack([q, q], axis=1)


def run(max_iter=MAX_ITER, settle_s=SETTLE_S, progress=False, threads=1):
    """The sec. 4.3 ILC; returns the asr.ILCResult."""
    sim = asr.Sim(ROBOT, 1, variant=VARIANT, threads=threads)
    return ilc(
        sim,
        reference(sim.dt),
        schedule=k_off,
        preset=PRESET,
        tol=TOL,
        max_iter=max_iter,
        settle_s=settle_s,
        progress=progress,
    )


def sensitivity(mass_scales=(0.8, 1.0, 1.25), settle=(3.0, 0.5), max_iter=20, threads=1):
    """The ILC with both links' masses scaled (one instance per scale, one batch) and each
    settling time. Returns rows {mass_scale, settle_s, converged, iterations, final_error,
    best_error, best_trial, clamp_fraction_joint1}: max errors in rad, the best trial's and the
    last one's; clamp fraction: share of the final trial's samples with joint 1's spring at its
    deflection clamp."""
    rows = []
    scales = np.asarray(mass_scales, dtype=float)
    base = asr.load_robot(ROBOT, VARIANT).mj_model()
    links = ("link1", "link2")
    masses = {b: scales * float(base.body(b).mass[0]) for b in links}
    for settle_s in settle:
        sim = asr.Sim(
            ROBOT,
            len(scales),
            variant=VARIANT,
            threads=threads,
            mujoco_params={"body_mass": masses},
        )
        res = ilc(
            sim,
            reference(sim.dt),
            schedule=k_off,
            preset=PRESET,
            tol=TOL,
            max_iter=max_iter,
            settle_s=settle_s,
        )
        clamped = _final_trial_clamps(sim, res, settle_s)
        for i, scale in enumerate(scales):
            errors = res.errors[: res.iterations[i], i]
            rows.append(
                dict(
                    mass_scale=float(scale),
                    settle_s=float(settle_s),
                    converged=bool(res.converged[i]),
                    iterations=int(res.iterations[i]),
                    final_error=float(res.final_error[i]),
                    best_error=float(errors.min()),
                    best_trial=int(errors.argmin()) + 1,
                    clamp_fraction_joint1=float(clamped[i, :, 0].mean()),
                )
            )
    return rows


def _final_trial_clamps(sim, res, settle_s):
    """Replays every instance's last input as asr.ilc runs a trial; (N, T, J) bool, a spring of
    the joint at its deflection clamp."""
    presets = np.full((sim.n_instances, sim.n_joints), PRESET)
    first = np.stack([res.input[:, 0], presets], axis=-1)
    sim.reset(None, first)
    if settle_s:
        sim.rollout(int(round(settle_s / sim.dt)), first, record=())
    refs = np.stack([res.input, np.broadcast_to(presets[:, None], res.input.shape)], axis=-1)
    return sim.rollout(res.input.shape[1], refs, record=("clamped",))["clamped"] > 0


def sensitivity_table(rows):
    lines = [
        f"{'masses':>7}  {'settle (s)':>10}  {'converged':>9}  {'trials':>6}  "
        f"{'best max|e| (trial)':>19}  {'last max|e|':>11}  {'joint 1 clamped':>15}"
    ]
    for r in rows:
        best = f"{r['best_error']:.3f} ({r['best_trial']})"
        lines.append(
            f"{'x ' + format(r['mass_scale'], 'g'):>7}  {r['settle_s']:>10g}  "
            f"{str(r['converged']):>9}  {r['iterations']:>6}  {best:>19}  "
            f"{r['final_error']:>11.3f}  {100 * r['clamp_fraction_joint1']:>14.0f}%"
        )
    return "\n".join(lines)


def summary(res):
    lines = [
        f"Mengacci et al. 2021 sec. 4.3 ILC, {ROBOT} {VARIANT}, preset {PRESET} rad, "
        f"min-jerk 0 -> {TARGET} rad in {DURATION:g} s, K_off(n) = {K_Q} exp(-n/10), "
        f"tol {TOL} rad",
        f"{'trial':>5}  {'max|e| (rad)':>12}  {'joint 1':>8}  {'joint 2':>8}",
    ]
    for n in range(res.iterations[0]):
        j1, j2 = res.errors_joint[n, 0]
        lines.append(f"{n + 1:>5}  {res.errors[n, 0]:>12.4f}  {j1:>8.4f}  {j2:>8.4f}")
    lines.append(
        f"converged: {bool(res.converged[0])} after {int(res.iterations[0])} trials "
        f"(paper: {PAPER_ITERATIONS}); final max error {res.final_error[0]:.4f} rad; "
        f"ILC wall time {res.wall_s:.2f} s"
    )
    return "\n".join(lines)


def figure(res):
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:  # pragma: no cover
        raise SystemExit(
            "asr.experiments.mengacci2021_ilc needs plotly for its figure (pip install plotly)"
        ) from None
    fig = make_subplots(
        rows=3,
        cols=1,
        subplot_titles=(
            "max |e| per trial (both joints)",
            "last trial: link angle vs reference",
            "learned equilibrium reference eq(t)",
        ),
        vertical_spacing=0.08,
    )
    n = np.arange(1, res.iterations[0] + 1)
    for j in range(2):
        fig.add_trace(
            go.Scatter(
                x=n,
                y=res.errors_joint[: len(n), 0, j],
                mode="lines+markers",
                name=f"joint {j + 1} max |e|",
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=[1, n[-1]],
            y=[TOL, TOL],
            mode="lines",
            name="tolerance",
            line=dict(dash="dash", color="gray"),
        ),
        row=1,
        col=1,
    )
    t = res.time
    step = max(1, len(t) // 2000)
    for j in range(2):
        fig.add_trace(
            go.Scatter(
                x=t[::step],
                y=res.reference[0, ::step, j],
                name=f"q_ref {j + 1}",
                line=dict(dash="dot"),
            ),
            row=2,
            col=1,
        )
        fig.add_trace(
            go.Scatter(x=t[::step], y=res.output[0, ::step, j], name=f"q {j + 1}"), row=2, col=1
        )
        fig.add_trace(
            go.Scatter(x=t[::step] - res.dt, y=res.input[0, ::step, j], name=f"eq {j + 1}"),
            row=3,
            col=1,
        )
    fig.update_xaxes(title_text="trial", row=1, col=1)
    fig.update_yaxes(title_text="rad", row=1, col=1)
    for r in (2, 3):
        fig.update_xaxes(title_text="t (s)", row=r, col=1)
        fig.update_yaxes(title_text="rad", row=r, col=1)
    fig.update_layout(
        height=1000, title="Mengacci et al. 2021 sec. 4.3: ILC on the vertical 2-DOF arm (asr)"
    )
    return fig


def main(out_dir="mengacci2021_ilc_output"):
    """Run the ILC, write out_dir/mengacci2021_ilc.html, .npz, .json; print the summary."""
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    res = run(progress=False)
    total = time.perf_counter() - t0
    figure(res).write_html(
        os.path.join(out_dir, "mengacci2021_ilc.html"), include_plotlyjs=True, full_html=True
    )
    res.save(os.path.join(out_dir, "mengacci2021_ilc"))
    print(summary(res))
    print("sensitivity to the chosen link masses and the settling hold:")
    print(sensitivity_table(sensitivity()))
    print(f"total wall time (set-up included) {total:.2f} s")
    print(f"files: {', '.join(sorted(os.listdir(out_dir)))} in {out_dir}")
    return res


def _cli(argv=None):
    command_line("mengacci2021_ilc", "Mengacci et al. 2021 sec. 4.3 ILC with asr.ilc", main, argv)


if __name__ == "__main__":
    _cli()
