"""[Mengacci2021]'s report: the summary table (text) and the plotly figures of the results of
asr.experiments._mengacci2021_runs."""

import numpy as np

from asr.experiments._mengacci2021_runs import FIG7_PRESETS, SOFT, STIFF, second_order
from asr.references import min_jerk


def _fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def summary(r7, r11, r12, r13, r14, r12_id=None, r13_id=None):
    """The text table of every figure's numbers (figs. 12-13 also for r12_id, r13_id if given)."""
    lines = ["Mengacci et al. 2021 sec. 4.1-4.2 with asr (MuJoCo links, asr actuators)"]
    lines += _table7(r7) + _table11(r11)
    for r12x in [r12] + ([r12_id] if r12_id else []):
        lines += _table12(r12x)
    for r13x in [r13] + ([r13_id] if r13_id else []):
        lines += _table13(r13x)
    lines += _table14(r14)
    return "\n".join(lines)


def _section(title, header, rows):
    """One figure's table: a blank line, its title, the column header, the rows (indented)."""
    return ["", title, "  " + header] + ["  " + r for r in rows]


def _table7(r7):
    header = (
        f"{'actuator':16s} {'case':5s} {'preset':>7s} {'final':>8s} {'static':>8s} "
        f"{'|diff|':>8s} {'tol':>8s} {'0.8-q':>8s} {'peak':>6s}"
    )
    rows = [
        f"{r['variant']:16s} {r['label']:5s} {r['preset']:7.3f} {r['final']:8.5f} "
        f"{r['static']:8.5f} {r['diff']:8.1e} {r['tol']:8.1e} {r['gap']:8.5f} "
        f"{r['peak']:6.3f}"
        for r in r7["rows"]
    ]
    title = (
        f"Fig. 7  1-DOF rig, mode 3, equilibrium step 0 -> {r7['step']} rad "
        "(static: closed form + brentq)"
    )
    return _section(title, header, rows)


def _table11(r11):
    header = (
        f"{'preset':>6s} {'fn':>6s} {'fn_lin':>6s} {'zeta':>6s} {'z_lin':>6s} "
        f"{'f_res':>6s} {'peak':>6s} {'bw-3dB':>7s} {'rms':>7s} | {'ref->q':>7s} "
        f"{'-3dB':>6s} {'motor':>6s} | {'pk link':>7s} {'pk defl':>7s}"
    )
    edge = lambda f: _fmt(f, "6.2f") if f is not None else f">{r11['f1']}"
    rows = [
        f"{p:6.2f} {r['fn']:6.2f} {r['fn_lin']:6.2f} {r['zeta']:6.3f} "
        f"{r['zeta_lin']:6.3f} {_fmt(r['f_res'], '6.2f')} {r['peak_gain']:6.3f} "
        f"{_fmt(r['bandwidth'], '7.2f')} {r['fit_rms']:7.4f} | "
        f"{r['peak_gain_ref_link']:7.3f} "
        f"{edge(r['bw_ref_link']):>6s} {edge(r['bw_motor']):>6s} | "
        f"{r['peak_link']:7.4f} {r['peak_deflection']:7.4f}"
        for p, r in r11["presets"].items()
    ]
    title = (
        f"Fig. 11 1-DOF qbmove Advanced, mode {r11['mode']}, chirp "
        f"{r11['amplitude']} rad {r11['f0']} -> {r11['f1']} Hz in {r11['duration']} s; "
        "joint = link / realised equilibrium (fitted 2nd order), ref->link in band"
    )
    return _section(title, header, rows)


def _table12(r12):
    header = (
        f"{'preset':>6s} {'joint':>5s} {'start':>7s} {'final':>7s} {'error':>7s} "
        f"{'band':>16s} {'over%':>6s} {'t_s5%':>6s} {'half':>4s} {'|qd|end':>8s}"
    )
    rows = []
    for p, r in r12["presets"].items():
        for j, m in enumerate(r["joints"]):
            band = f"[{m['band'][0]:+.3f},{m['band'][1]:+.3f}]"
            rows.append(
                f"{p:6.2f} {j + 1:5d} {m['q0']:7.3f} {m['final']:7.4f} "
                f"{m['error']:+7.4f} {band:>16s} {m['overshoot']:6.1f} "
                f"{m['settling']:6.2f} {m['half_cycles']:4d} {m['qd_end']:8.1e}"
            )
    title = (
        f"Fig. 12 2-DOF arm horizontal, mode 6, steps 0 -> {r12['step']} rad, "
        f"springs {r12['springs']} (joint friction {r12['friction']} N m)"
    )
    return _section(title, header, rows)


def _table13(r13):
    header = (
        f"{'preset':>6s} {'rms':>15s} {'max':>15s} {'mean':>15s} "
        f"{'rms no gravity':>15s} {'mean no grav.':>15s} {'clamp frac':>11s}"
    )
    pair = lambda v, s="7.3f": " ".join(format(x, s) for x in v)
    rows = [
        f"{p:6.2f} {pair(r['rms']):>15s} {pair(r['max']):>15s} "
        f"{pair(r['mean'], '+7.3f'):>15s} {pair(r['rms_horizontal']):>15s} "
        f"{pair(r['mean_horizontal'], '+7.3f'):>15s} "
        f"{pair(r['clamp_fraction'], '5.2f'):>11s}"
        for p, r in r13["presets"].items()
    ]
    title = (
        f"Fig. 13 2-DOF arm vertical, mode 6, eq = 0.8 sin(0.8 t), springs "
        f"{r13['springs']}: q - eq (rad), joints 1 / 2"
    )
    return _section(title, header, rows)


def _table14(r14):
    header = (
        f"{'variant':7s} {'preset':>6s} {'box dx,dy,dz (cm)':>22s} {'|dxy| cm':>9s} "
        f"{'q1 end':>7s} {'max|tau1|':>9s}"
    )
    rows = []
    for v, r in r14["variants"].items():
        dxyz = ",".join(f"{x * 100:+.2f}" for x in r["disp"])
        rows.append(
            f"{v:7s} {r['preset']:6.2f} {dxyz:>22s} {r['horizontal'] * 100:9.2f} "
            f"{r['q1_final']:7.3f} {r['tau1_max']:9.3f}"
        )
    title = (
        f"Fig. 14 5-DOF arm + 2 kg box, joint 1 eq {r14['start']} -> {r14['end']} rad "
        f"(minimum jerk {r14['sweep']} s), {r14['duration']} s"
    )
    return _section(title, header, rows)


_COLORS = {"soft": "#1f77b4", "stiff": "#d62728", SOFT: "#1f77b4", STIFF: "#d62728"}


def _plotly():
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:  # pragma: no cover
        raise SystemExit(
            "asr.experiments.mengacci2021 needs plotly for its figures (pip install plotly)"
        ) from None
    return go, make_subplots


def figures(r7, r11, r12, r13, r14):
    """{name: plotly figure} for the five figures."""
    go, make_subplots = _plotly()
    return {
        "fig7": _fig7(go, make_subplots, r7),
        "fig11": _fig11(go, make_subplots, r11),
        "fig12": _fig12(go, make_subplots, r12),
        "fig13": _fig13(go, make_subplots, r13),
        "fig14": _fig14(go, make_subplots, r14),
    }


def _fig7(go, make_subplots, r7):
    """fig. 7: the step responses of the four actuators, soft and stiff, with the
    closed-form static equilibria."""
    names = list(FIG7_PRESETS)
    f = make_subplots(rows=2, cols=2, subplot_titles=names)
    ref = np.where(r7["t"] >= r7["t_step"], r7["step"], 0.0)
    for k, v in enumerate(names):
        row, col = k // 2 + 1, k % 2 + 1
        f.add_trace(
            go.Scatter(
                x=r7["t"],
                y=ref,
                name="equilibrium ref",
                showlegend=k == 0,
                line=dict(color="black", dash="dot"),
            ),
            row=row,
            col=col,
        )
        for r in (r for r in r7["rows"] if r["variant"] == v):
            c = _COLORS[r["label"]]
            f.add_trace(
                go.Scatter(
                    x=r7["t"],
                    y=r7["traces"][(v, r["label"])],
                    name=r["label"],
                    showlegend=k == 0,
                    line=dict(color=c),
                ),
                row=row,
                col=col,
            )
            f.add_trace(
                go.Scatter(
                    x=[r7["t"][0], r7["t"][-1]],
                    y=[r["static"]] * 2,
                    name="static (closed form)",
                    showlegend=False,
                    line=dict(color=c, dash="dash", width=1),
                ),
                row=row,
                col=col,
            )
    f.update_xaxes(title_text="t (s)")
    f.update_yaxes(title_text="q (rad)")
    f.update_layout(
        title="Mengacci et al. 2021 fig. 7: 1-DOF rig, 0.8 rad step, mode 3 "
        "(dashed: static equilibrium from the closed form)"
    )
    return f


def _fig11(go, make_subplots, r11):
    """fig. 11: the chirp, then |H| and phase of reference -> link and of the joint,
    with the fitted second-order model."""
    f = make_subplots(
        rows=3,
        cols=1,
        subplot_titles=("link angle (chirp of the equilibrium reference)", "|H|", "phase (deg)"),
    )
    for p, r in r11["presets"].items():
        c = _COLORS.get(p, None)
        f.add_trace(
            go.Scatter(x=r["t"], y=r["q"], name=f"q, preset {p}", line=dict(color=c)), row=1, col=1
        )
        f.add_trace(
            go.Scatter(
                x=r["t"],
                y=r["eq"],
                name="eq ref",
                showlegend=p == SOFT,
                line=dict(color="black", width=1, dash="dot"),
            ),
            row=1,
            col=1,
        )
        w = 2 * np.pi * r["F"]
        fit = second_order((r["K"], r["fn"], r["zeta"]), w)
        for H, nm, dash in ((r["Hq"], "ref->link", "solid"), (r["Hj"], "joint", "dot")):
            f.add_trace(
                go.Scatter(x=r["F"], y=np.abs(H), name=f"{nm} {p}", line=dict(color=c, dash=dash)),
                row=2,
                col=1,
            )
            f.add_trace(
                go.Scatter(
                    x=r["F"],
                    y=np.degrees(np.angle(H)),
                    name=f"{nm} {p}",
                    showlegend=False,
                    line=dict(color=c, dash=dash),
                ),
                row=3,
                col=1,
            )
        f.add_trace(
            go.Scatter(
                x=r["F"],
                y=np.abs(fit),
                name=f"fit {p}: fn {r['fn']:.2f} Hz",
                line=dict(color=c, dash="dash", width=1),
            ),
            row=2,
            col=1,
        )
    f.update_xaxes(title_text="t (s)", row=1, col=1)
    f.update_xaxes(title_text="f (Hz)", row=2, col=1)
    f.update_xaxes(title_text="f (Hz)", row=3, col=1)
    f.update_layout(
        title=f"Mengacci et al. 2021 fig. 11: chirp {r11['amplitude']} rad, "
        f"{r11['f0']}-{r11['f1']} Hz, mode {r11['mode']}",
        height=900,
    )
    return f


def _fig12(go, make_subplots, r12):
    """fig. 12: both joints' step responses on the horizontal arm."""
    lines = [(f"preset {p}", r["q"], dict(color=_COLORS.get(p))) for p, r in r12["presets"].items()]
    return _arm_figure(
        go,
        make_subplots,
        r12["t"],
        np.full(len(r12["t"]), r12["step"]),
        lines,
        f"Mengacci et al. 2021 fig. 12: 2-DOF horizontal arm, 0.8 rad steps, "
        f"mode 6, springs {r12['springs']}",
    )


def _fig13(go, make_subplots, r13):
    """fig. 13: both joints on the vertical arm, and the horizontal (no gravity)
    control."""
    lines = []
    for p, r in r13["presets"].items():
        c = _COLORS.get(p)
        lines.append((f"vertical, preset {p}", r["q"], dict(color=c)))
        lines.append(
            (
                f"horizontal (no gravity), preset {p}",
                r["q_horizontal"],
                dict(color=c, dash="dash", width=1),
            )
        )
    return _arm_figure(
        go,
        make_subplots,
        r13["t"],
        r13["eq"],
        lines,
        f"Mengacci et al. 2021 fig. 13: 2-DOF vertical arm, eq = 0.8 sin(0.8 t), "
        f"mode 6, springs {r13['springs']}",
    )


def _arm_figure(go, make_subplots, t, eq, lines, title):
    """The 2-DOF arm's figure: one row per joint with the equilibrium reference eq (n,) and
    each (name, q (n, 2), line style) of `lines`."""
    f = make_subplots(rows=2, cols=1, subplot_titles=("joint 1", "joint 2"))
    for j in range(2):
        f.add_trace(
            go.Scatter(
                x=t,
                y=eq,
                name="eq ref",
                showlegend=j == 0,
                line=dict(color="black", dash="dot"),
            ),
            row=j + 1,
            col=1,
        )
        for name, q, line in lines:
            f.add_trace(
                go.Scatter(x=t, y=q[:, j], name=name, showlegend=j == 0, line=line),
                row=j + 1,
                col=1,
            )
    f.update_xaxes(title_text="t (s)")
    f.update_yaxes(title_text="q (rad)")
    f.update_layout(title=title)
    return f


def _fig14(go, make_subplots, r14):
    """fig. 14: joint 1's sweep and the box displacement."""
    f = make_subplots(
        rows=2, cols=1, subplot_titles=("joint 1 (base yaw)", "box displacement (cm)")
    )
    for v, r in r14["variants"].items():
        c = _COLORS[v]
        eq = min_jerk(r["t"], r14["start"], r14["end"], r14["sweep"])
        f.add_trace(
            go.Scatter(
                x=r["t"],
                y=eq,
                name="eq ref",
                showlegend=v == "soft",
                line=dict(color="black", dash="dot"),
            ),
            row=1,
            col=1,
        )
        f.add_trace(
            go.Scatter(x=r["t"], y=r["q1"], name=f"q1 {v}", line=dict(color=c)), row=1, col=1
        )
        for k, (axis, dash) in enumerate((("x", "dot"), ("y", "solid"))):
            f.add_trace(
                go.Scatter(
                    x=r["t"],
                    y=100 * r["box"][:, k],
                    name=f"box {axis} {v}",
                    line=dict(color=c, dash=dash),
                ),
                row=2,
                col=1,
            )
    f.update_xaxes(title_text="t (s)")
    f.update_layout(
        title="Mengacci et al. 2021 fig. 14: 5-DOF arm pushing a 2 kg box by a base-yaw sweep"
    )
    return f
