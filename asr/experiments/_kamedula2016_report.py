"""[Kamedula2016] sec. 5.1 (asr.experiments.kamedula2016): the figures (fig. 6, left and right)
and the summary table of run()'s result."""

import numpy as np

from asr.experiments import write_html as write_figures
from asr.experiments._kamedula2016_setup import (
    CTRL_PERIOD,
    ENGINE_NAMES,
    PAPER,
    SIGNALS,
    VARIANTS,
)

COLOURS = {
    "reference": "black",
    "coarse": "#1f77b4",
    "fine": "#d62728",
    "k100": "#2ca02c",
    "k188": "#ff7f0e",
    "k500": "#9467bd",
}


def _envelope(t, e, every):
    """Decimate an error trace for plotting, keeping the largest |e| of each bin."""
    n = (e.size // every) * every
    if every <= 1 or n == 0:
        return t, e
    blk = e[:n].reshape(-1, every)
    i = np.abs(blk).argmax(axis=1)
    return t[:n].reshape(-1, every)[np.arange(i.size), i], blk[np.arange(i.size), i]


def _dash(c):
    return "dot" if c == "fine" else "dash"


def step_figure(res, every=2):
    """Fig. 6 left: transmission displacement th - q of the three sets, asr vs reference, and
    the link angle and its error."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    t = res["t_step"] + CTRL_PERIOD  # samples at the end of each tick
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=(
            "transmission displacement th - q (rad)",
            "link angle q (rad)",
            "link angle error asr - reference (rad)",
        ),
    )
    for v in VARIANTS:
        e = res["step"][v]
        name = f"{v} (Kt {res['plants'][v].Kt:g}, Dt {res['plants'][v].Dt:g})"
        ref = e["ref"]
        fig.add_trace(
            go.Scatter(
                x=t[::every],
                y=(ref["th"] - ref["q"])[1:][::every],
                name=f"{name} reference",
                line=dict(color=COLOURS[v]),
            ),
            1,
            1,
        )
        fig.add_trace(
            go.Scatter(
                x=t[::every],
                y=ref["q"][1:][::every],
                showlegend=False,
                name=f"{name} reference",
                line=dict(color=COLOURS[v]),
            ),
            2,
            1,
        )
        for c in res["configs"]:
            fig.add_trace(
                go.Scatter(
                    x=t[::every],
                    y=(e[c]["th"] - e[c]["q"])[::every],
                    name=f"{name} asr {c}",
                    line=dict(color=COLOURS[v], dash=_dash(c)),
                ),
                1,
                1,
            )
            fig.add_trace(
                go.Scatter(
                    x=t[::every],
                    y=e[c]["q"][::every],
                    showlegend=False,
                    name=f"{name} asr {c}",
                    line=dict(color=COLOURS[v], dash=_dash(c)),
                ),
                2,
                1,
            )
            te, ee = _envelope(t, e[c]["q"] - ref["q"][1:], every)
            fig.add_trace(
                go.Scatter(
                    x=te,
                    y=ee,
                    name=f"{name} error {c}",
                    showlegend=False,
                    line=dict(color=COLOURS[v], dash=_dash(c)),
                ),
                3,
                1,
            )
    fig.update_xaxes(title_text="time (s)", row=3, col=1)
    fig.update_layout(
        title="Kamedula et al. 2016 fig. 6 left: 1 rad step, three transmission "
        f"sets; asr on {ENGINE_NAMES[res.get('engine', 'mujoco')]} (dashed: "
        "1 ms step, dotted: 0.1 ms) vs reference "
        "(solid, scipy DOP853); controller 1 kHz",
        height=900,
        width=1200,
    )
    return fig


def tv_figure(res, every=10):
    """Fig. 6 right: positions, motor torques and transmission torques with their errors."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    tv, tk = res["tv"], res["t_tv"]
    t_end = tk + CTRL_PERIOD
    rows = (
        ("q", "link angle q (rad)", t_end),
        ("tau_m", "motor torque tau_m (N m)", tk),
        ("tau_t", "transmission torque tau_t (N m)", tk),
    )
    titles = []
    for s, label, _ in rows:
        titles += [label, f"error of {s} (asr - reference)"]
    fig = make_subplots(
        rows=6,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.03,
        subplot_titles=titles,
        row_heights=[2, 1, 2, 1, 2, 1],
    )
    for k, (s, _, t) in enumerate(rows):
        ref = tv["ref"][s][1:] if s == "q" else tv["ref"][s]
        if s == "q":
            fig.add_trace(
                go.Scatter(
                    x=tk[::every],
                    y=res["qd_tv"][::every],
                    name="q_d",
                    line=dict(color="gray", dash="dashdot"),
                ),
                1,
                1,
            )
        fig.add_trace(
            go.Scatter(
                x=t[::every],
                y=ref[::every],
                name="reference",
                showlegend=k == 0,
                legendgroup="reference",
                line=dict(color=COLOURS["reference"]),
            ),
            2 * k + 1,
            1,
        )
        for c in res["configs"]:
            dt = res["configs"][c]
            fig.add_trace(
                go.Scatter(
                    x=t[::every],
                    y=tv[c][s][::every],
                    name=f"asr {c} ({dt * 1e3:g} ms)",
                    showlegend=k == 0,
                    legendgroup=c,
                    line=dict(color=COLOURS[c], dash=_dash(c)),
                ),
                2 * k + 1,
                1,
            )
            te, ee = _envelope(t, tv[c][s] - ref, every)
            fig.add_trace(
                go.Scatter(
                    x=te,
                    y=ee,
                    name=f"error {c}",
                    showlegend=False,
                    legendgroup=c,
                    line=dict(color=COLOURS[c]),
                ),
                2 * k + 2,
                1,
            )
    fig.update_xaxes(title_text="time (s)", row=6, col=1)
    fig.update_layout(
        title="Kamedula et al. 2016 fig. 6 right: ramp, -1 rad step, chirp (Kt 188, "
        "Dt 0.5); asr vs reference; errors are the largest per 10 ms bin",
        height=1400,
        width=1200,
    )
    return fig


def summary(res):
    """The summary table as text."""
    lines = []
    tv = res["tv"]
    seg = res["segments"]
    eng = ENGINE_NAMES[res.get("engine", "mujoco")]
    lines.append(
        f"Kamedula et al. 2016 sec. 5.1, link engine {eng}, time-varying input (k188): "
        f"ramp 0.1 rad/s from 0 s, -1 rad step at {seg[1]:g} s, chirp from {seg[2]:g} s "
        f"to {res['t_tv'][-1] + 1e-3:g} s; controller 1 kHz"
    )
    head = (
        f"{'config':<28} {'signal':<7} {'max err':>10} {'paper max':>10} {'NMSE':>10} "
        f"{'paper':>9} {'NRMSE':>10} {'fit %':>9}  meets paper (max, NMSE)"
    )
    lines += [head, "-" * len(head)]
    for c, dt in res["configs"].items():
        for s in SIGNALS:
            m, ok = tv["metrics"][c][s], tv["meets"][c][s]
            lines.append(
                f"{c + f' ({eng} {dt * 1e3:g} ms)':<28} {s:<7} {m['max']:10.3e} "
                f"{PAPER[s][0]:10.2e} {m['nmse']:10.3e} {PAPER[s][1]:9.1e} "
                f"{m['nrmse']:10.3e} {m['fit']:9.5f}  "
                f"{'yes' if ok['max'] else 'NO'}, {'yes' if ok['nmse'] else 'NO'}"
            )
    lines.append(
        "max err in rad (q) or N m; NRMSE = RMSE / range of the reference signal; "
        "NMSE = sum e^2 / sum (x_ref - mean)^2, the quantity the paper's 'NRMSE' "
        "figures are compared with (see the module docstring)"
    )
    for c in res["configs"]:
        ok = all(v["max"] and v["nmse"] for v in tv["meets"][c].values())
        lines.append(f"  {c}: {'meets' if ok else 'does NOT meet'} all the paper's figures")
    lines.append("")
    lines.append("Step of 1 rad, three sets: final q, peak q, final and peak |th - q|, q error")
    head = (
        f"{'variant':<8} {'config':<8} {'final q':>9} {'peak q':>8} {'final th-q':>11} "
        f"{'peak |th-q|':>12} {'max err q':>10} {'NMSE q':>10} {'max err tau_m':>14}"
    )
    lines += [head, "-" * len(head)]
    for v in VARIANTS:
        e = res["step"][v]
        rows = [("ref", e["ref"]["q"][1:], e["ref"]["th"][1:], None)]
        rows += [(c, e[c]["q"], e[c]["th"], e["metrics"][c]) for c in res["configs"]]
        for c, q, th, m in rows:
            d = th - q
            tail = (
                f"{m['q']['max']:10.3e} {m['q']['nmse']:10.3e} {m['tau_m']['max']:14.3e}"
                if m
                else ""
            )
            lines.append(
                f"{v:<8} {c:<8} {q[-1]:9.5f} {q.max():8.4f} {d[-1]:11.5f} "
                f"{np.abs(d).max():12.5f} {tail}"
            )
    if "reference_check" in res:
        lines.append(
            f"reference self-check: max |q_DOP853 - q_Radau| over 0.5 s = "
            f"{res['reference_check']:.1e} rad"
        )
    lines.append("wall time: " + ", ".join(f"{k} {v:.2f} s" for k, v in res["wall_s"].items()))
    return "\n".join(lines)


def write_html(res, path):
    """Both figures in one self-contained HTML file."""
    figs = res["figures"]
    write_figures([figs["tv"], figs["step"]], path, "asr: Kamedula et al. 2016 sec. 5.1")
