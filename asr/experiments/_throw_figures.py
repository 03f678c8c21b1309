"""Figures of the learned throws (asr.experiments.throw_ppo): distances per strategy, the three
throws side by side over time (stiffness profile, link speeds against the motors' limit, spring
and link energies), the energy accounts, and the balls' flights."""

import numpy as np

from asr.envs.throw import MOTOR_VEL_MAX, landing_distance

STRATEGIES = ("variable", "best fixed", "rigid")
COLOURS = {"variable": "#d62728", "best fixed": "#1f77b4", "rigid": "#7f7f7f"}


def comparison_text(res):
    """The comparison in words, for titles: the best throw of each strategy and the means over
    seeds. The best throws come first: the ratio of the means alone hides that the best fixed
    preset's best throw is the longest (one of its seeds failed, which pulls its mean down)."""
    d = {n: res["distances"][n] for n in STRATEGIES if n in res["distances"]}
    best = " / ".join(f"{n} {max(v):.3f}" for n, v in d.items())
    mean = " / ".join(f"{np.mean(v):.3f}" for v in d.values())
    return f"best throws (m): {best}; means over {len(d['variable'])} seeds: {mean}"


def distance_figure(res):
    """Mean distance per strategy with its spread over seeds (m)."""
    import plotly.graph_objects as go

    names = list(res["distances"])
    fig = go.Figure(
        go.Bar(
            x=names,
            y=[np.mean(res["distances"][n]) for n in names],
            error_y=dict(type="data", array=[np.std(res["distances"][n]) for n in names]),
            marker_color=[COLOURS.get(n, "#9467bd") for n in names],
        )
    )
    fig.update_layout(
        title=f"Distance thrown, PPO, mean and spread over seeds; {comparison_text(res)}",
        yaxis_title="distance (m)",
    )
    return fig


def time_figure(throws):
    """The three throws over time until their release: presets, link stiffness, link speeds
    with the motors' speed limit, spring energy, link kinetic energy."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    titles = (
        "preset p_j (rad)",
        "link stiffness sigma_j (N m/rad)",
        "link speed |qd_j| (rad/s); dashed: the motors' limit",
        "spring energy U (J)",
        "link kinetic energy (J)",
    )
    fig = make_subplots(rows=5, cols=1, shared_xaxes=True, subplot_titles=titles)
    for name in STRATEGIES:
        tr, c = throws[name], COLOURS[name]
        for j, dash in ((0, None), (1, "dot")):
            line = dict(color=c, dash=dash)
            if name != "rigid":
                fig.add_trace(
                    go.Scatter(x=tr["t"], y=tr["preset"][:, j], name=f"{name} p{j + 1}", line=line),
                    row=1,
                    col=1,
                )
                fig.add_trace(
                    go.Scatter(
                        x=tr["t"], y=tr["stiffness"][:, j], name=f"{name} sigma{j + 1}", line=line
                    ),
                    row=2,
                    col=1,
                )
            fig.add_trace(
                go.Scatter(
                    x=tr["t"], y=np.abs(tr["qd"][:, j]), name=f"{name} |qd{j + 1}|", line=line
                ),
                row=3,
                col=1,
            )
        fig.add_trace(
            go.Scatter(x=tr["t"], y=tr["spring"], name=f"{name} U", line=dict(color=c)),
            row=4,
            col=1,
        )
        fig.add_trace(
            go.Scatter(x=tr["t"], y=tr["link_kinetic"], name=f"{name} KE", line=dict(color=c)),
            row=5,
            col=1,
        )
    fig.add_hline(y=MOTOR_VEL_MAX, line_dash="dash", line_color="black", row=3, col=1)
    fig.update_xaxes(title_text="t (s), until each release", row=5, col=1)
    fig.update_layout(height=1200, title="The three throws side by side")
    return fig


def account_figure(throws):
    """Energy account at the release (J) per strategy."""
    import plotly.graph_objects as go

    rows = (
        ("delivered", "work delivered to the springs"),
        ("spring_peak", "peak spring energy"),
        ("spring_released", "spring energy released before the release"),
        ("link_kinetic_at_release", "link kinetic energy at the release"),
        ("link_potential_gain", "link potential energy gained"),
        ("link_damping", "joint damping and friction"),
    )
    fig = go.Figure()
    for name in STRATEGIES:
        acc = throws[name]["account"]
        fig.add_trace(
            go.Bar(
                x=[text for _, text in rows],
                y=[acc[key] for key, _ in rows],
                name=name,
                marker_color=COLOURS[name],
            )
        )
    fig.update_layout(barmode="group", title="Energy account until the release", yaxis_title="J")
    return fig


def flight_figure(throws, g=9.81):
    """The balls' flights (x, z) from the release to the ground."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name in STRATEGIES:
        p, v = np.asarray(throws[name]["release_pos"]), np.asarray(throws[name]["release_vel"])
        t_f = (v[1] + np.sqrt(v[1] ** 2 + 2 * g * p[1])) / g
        t = np.linspace(0.0, t_f, 60)
        x, z = p[0] + v[0] * t, p[1] + v[1] * t - 0.5 * g * t * t
        d = float(landing_distance(p, v, g))
        fig.add_trace(
            go.Scatter(x=x, y=z, name=f"{name}: {d:.2f} m", line=dict(color=COLOURS[name]))
        )
    fig.update_layout(
        title="The balls' flights from the release", xaxis_title="x (m)", yaxis_title="z (m)"
    )
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig


def overview_figure(res, g=9.81):
    """One picture of the comparison (the README's): distances with their spread, the balls'
    flights, the presets and the link speeds of the three throws over time."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    throws = res["throws"]
    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=(
            "distance thrown (m), mean and spread over seeds",
            "the best throws' flights (m)",
            "presets p_j (rad), dotted: joint 2",
            "link 1 speed |qd_1| (rad/s), dashed: the motors' 6 rad/s",
        ),
        vertical_spacing=0.12,
    )
    for name in STRATEGIES:
        c, d, tr = COLOURS[name], res["distances"][name], throws[name]
        fig.add_trace(
            go.Bar(
                x=[name],
                y=[np.mean(d)],
                error_y=dict(type="data", array=[np.std(d)]),
                marker_color=c,
                showlegend=False,
            ),
            row=1,
            col=1,
        )
        p, v = np.asarray(tr["release_pos"]), np.asarray(tr["release_vel"])
        t = np.linspace(0.0, (v[1] + np.sqrt(v[1] ** 2 + 2 * g * p[1])) / g, 60)
        fig.add_trace(
            go.Scatter(
                x=p[0] + v[0] * t,
                y=p[1] + v[1] * t - 0.5 * g * t * t,
                name=name,
                line=dict(color=c),
            ),
            row=1,
            col=2,
        )
        if name != "rigid":
            for j, dash in ((0, None), (1, "dot")):
                fig.add_trace(
                    go.Scatter(
                        x=tr["t"],
                        y=tr["preset"][:, j],
                        line=dict(color=c, dash=dash),
                        showlegend=False,
                    ),
                    row=2,
                    col=1,
                )
        fig.add_trace(
            go.Scatter(x=tr["t"], y=np.abs(tr["qd"][:, 0]), line=dict(color=c), showlegend=False),
            row=2,
            col=2,
        )
    fig.add_hline(y=MOTOR_VEL_MAX, line_dash="dash", line_color="black", row=2, col=2)
    fig.update_xaxes(title_text="t (s)", row=2, col=1)
    fig.update_xaxes(title_text="t (s)", row=2, col=2)
    fig.update_layout(
        width=1200,
        height=800,
        title=(
            "asr/Throw-v0, PPO closed-loop, the same 6 N m / 6 rad/s motors<br>"
            f"<sup>{comparison_text(res)}</sup>"
        ),
    )
    return fig


def figures(res):
    """All figures of a comparison (asr.experiments.throw_ppo.run's dict)."""
    throws = res["throws"]
    return [distance_figure(res), flight_figure(throws), time_figure(throws)] + [
        account_figure(throws)
    ]


__all__ = [
    "figures",
    "overview_figure",
    "distance_figure",
    "time_figure",
    "account_figure",
    "flight_figure",
]
