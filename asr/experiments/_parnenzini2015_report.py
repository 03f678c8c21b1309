"""[Parnenzini2015] (asr.experiments.parnenzini2015): the figures (figs. 2-4) and the summary
table of run()'s result."""

import numpy as np

from asr.experiments import write_html as write_figures
from asr.experiments._parnenzini2015_gait import GAIT_PHI, GAIT_PITCH, GAIT_PRESET, GAIT_W, GAIT_YAW
from asr.experiments._parnenzini2015_rig import STEP, TRACK_A, TRACK_SKIP, TRACK_W

PRESET_COLOURS = ("#1f77b4", "#ff7f0e", "#d62728")


def module_figure(res, every=2):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    tr, st = res["tracking"], res["step"]
    fig = make_subplots(
        rows=2,
        cols=2,
        vertical_spacing=0.1,
        horizontal_spacing=0.08,
        subplot_titles=(
            "fig. 2: tracking q_e = 0.5 sin(2 pi t)",
            "fig. 3: step of q_e to 0.7 rad",
            "tracking error q - q_e",
            "motor angles th1, th2",
        ),
    )
    fig.add_trace(
        go.Scatter(
            x=tr["t"][::every],
            y=tr["q_e"][::every],
            name="reference",
            line=dict(color="black", dash="dash"),
        ),
        1,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=st["t"][::every],
            y=np.full(st["t"].size, STEP)[::every],
            name="reference",
            showlegend=False,
            line=dict(color="black", dash="dash"),
        ),
        1,
        2,
    )
    for i, s in enumerate(res["presets"]):
        c = PRESET_COLOURS[i % len(PRESET_COLOURS)]
        lab = f"s = {s:g} rad"
        fig.add_trace(
            go.Scatter(
                x=tr["t"][::every],
                y=tr["q"][i, ::every],
                name=lab,
                legendgroup=lab,
                line=dict(color=c),
            ),
            1,
            1,
        )
        fig.add_trace(
            go.Scatter(
                x=st["t"][::every],
                y=st["q"][i, ::every],
                name=lab,
                legendgroup=lab,
                showlegend=False,
                line=dict(color=c),
            ),
            1,
            2,
        )
        fig.add_trace(
            go.Scatter(
                x=tr["t"][::every],
                y=(tr["q"][i] - tr["q_e"])[::every],
                name=lab,
                legendgroup=lab,
                showlegend=False,
                line=dict(color=c),
            ),
            2,
            1,
        )
        for f, dash in (("th1", None), ("th2", "dot")):
            fig.add_trace(
                go.Scatter(
                    x=st["t"][::every],
                    y=st[f][i, ::every],
                    name=f"{lab} {f}",
                    legendgroup=lab,
                    showlegend=False,
                    line=dict(color=c, dash=dash),
                ),
                2,
                2,
            )
    for r, cc in ((1, 1), (1, 2), (2, 1), (2, 2)):
        fig.update_xaxes(title_text="time (s)", row=r, col=cc)
        fig.update_yaxes(title_text="rad", row=r, col=cc)
    fig.update_layout(
        title="Parnenzini et al. 2015: one qbmove module (mode 6, voltage drive, "
        "friction), 0.1 kg at 0.089 m, horizontal",
        height=850,
        width=1300,
    )
    return fig


def gait_figure(res, every=5):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    g = res["gaits"]
    fig = make_subplots(
        rows=2,
        cols=2,
        vertical_spacing=0.1,
        horizontal_spacing=0.08,
        subplot_titles=(
            "3R arm, vertical: q (solid) vs q_e (dashed)",
            "3R arm, horizontal: q vs q_e",
            "snake: joints 1-4, q vs q_e",
            "snake: centre of mass path (x, y), m",
        ),
    )
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")
    for (r, c), name, joints in (
        ((1, 1), "arm3r_vertical", range(3)),
        ((1, 2), "arm3r_horizontal", range(3)),
        ((2, 1), "snake", range(4)),
    ):
        gr = g[name]
        for j in joints:
            col = palette[j % len(palette)]
            fig.add_trace(
                go.Scatter(
                    x=gr["t"][::every],
                    y=gr["q"][::every, j],
                    name=f"{name} joint{j + 1}",
                    line=dict(color=col),
                ),
                r,
                c,
            )
            fig.add_trace(
                go.Scatter(
                    x=gr["t"][::every],
                    y=gr["q_e"][::every, j],
                    showlegend=False,
                    name=f"{name} joint{j + 1} q_e",
                    line=dict(color=col, dash="dash"),
                ),
                r,
                c,
            )
        fig.update_xaxes(title_text="time (s)", row=r, col=c)
        fig.update_yaxes(title_text="rad", row=r, col=c)
    com = g["snake"]["com"]
    fig.add_trace(
        go.Scatter(
            x=com[:, 0],
            y=com[:, 1],
            mode="lines+markers",
            name="snake CoM",
            marker=dict(size=3),
            line=dict(color="black"),
        ),
        2,
        2,
    )
    fig.update_xaxes(title_text="x (m)", row=2, col=2)
    fig.update_yaxes(title_text="y (m)", scaleanchor="x4", row=2, col=2)
    fig.update_layout(
        title="Parnenzini et al. 2015 fig. 4: gait A sin(4.71 t + i pi/3), 60 deg "
        "pitch / 20 deg yaw, s = 0.3 rad",
        height=900,
        width=1300,
    )
    return fig


def summary(res):
    lines = [
        "Parnenzini et al. 2015 (i): one qbmove module, 0.1 kg at 0.089 m, horizontal, mode 6",
        f"tracking q_e = {TRACK_A:g} sin({TRACK_W:.4g} t), error from t = {TRACK_SKIP:g} s",
        f"{'s (rad)':>8} {'stiffness':>10} {'RMS err':>9} {'max err':>9} {'amplitude':>10} "
        f"{'lag (deg)':>10}",
    ]
    for m in res["tracking"]["metrics"]:
        lines.append(
            f"{m['s']:8.2f} {m['stiffness']:10.3f} {m['rms']:9.4f} {m['max']:9.4f} "
            f"{m['amp']:10.4f} {m['lag_deg']:10.2f}"
        )
    lines.append(
        f"step of q_e to {STEP:g} rad (settling into +/- 2 % of the step around the final value)"
    )
    lines.append(
        f"{'s (rad)':>8} {'stiffness':>10} {'rise (s)':>9} {'overshoot':>10} "
        f"{'settle (s)':>11} {'final q':>9} {'0.7 - q':>9}"
    )
    for m in res["step"]["metrics"]:
        lines.append(
            f"{m['s']:8.2f} {m['stiffness']:10.3f} {m['rise']:9.3f} "
            f"{m['overshoot']:10.4f} {m['settle']:11.3f} {m['final']:9.4f} "
            f"{m['error']:9.4f}"
        )
    lines.append("")
    lines.append(
        f"Parnenzini et al. 2015 (ii): gait A_i sin({GAIT_W:g} t + i {GAIT_PHI:.4f}), "
        f"pitch {np.degrees(GAIT_PITCH):g} deg, yaw {np.degrees(GAIT_YAW):g} deg, s = "
        f"{GAIT_PRESET:g}, {res['gaits']['snake']['t'][-1]:g} s"
    )
    lines.append(
        f"{'robot':<18} {'status':>6} {'warnings':>9} {'max|q|':>8} {'max|qd|':>8} "
        f"{'max|th|':>8} {'max|tau|':>9} {'RMS track':>10} {'stable':>7}"
    )
    for name, g in res["gaits"].items():
        c = g["checks"]
        lines.append(
            f"{name:<18} {c['status']:6d} {sum(c['mujoco_warnings'].values()):9d} "
            f"{c['max_abs_q']:8.3f} {c['max_abs_qd']:8.3f} {c['max_abs_th']:8.3f} "
            f"{c['max_abs_tau']:9.3f} {float(np.mean(g['rms_tracking'])):10.3f} "
            f"{'yes' if c['stable'] else 'NO':>7}"
        )
    sn = res["gaits"]["snake"]
    lines.append(
        f"snake centre of mass: net displacement {sn['displacement']:.3f} m "
        f"(dx {sn['displacement_xy'][0]:+.3f}, dy {sn['displacement_xy'][1]:+.3f} m), "
        f"path {sn['path_length']:.3f} m, height {sn['com_height'][0]:.3f} .. "
        f"{sn['com_height'][1]:.3f} m"
    )
    lines.append("wall time: " + ", ".join(f"{k} {v:.2f} s" for k, v in res["wall_s"].items()))
    return "\n".join(lines)


def write_html(res, path):
    """Both figures in one self-contained HTML file."""
    figs = res["figures"]
    write_figures([figs["module"], figs["gaits"]], path, "asr: Parnenzini et al. 2015")
