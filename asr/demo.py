"""Seed 000 fig. 7: step responses of four compliant actuators, soft and stiff (`make run`).

    python -m asr.demo --out demo_output

The 1-DOF rig of seed 000 sec. 4.1: a 0.2 kg mass at 0.04 m from the joint axis, under gravity
(9.81 m/s^2), driven by each of sea, awas2, bavs and qbmove_advanced in mode 3 (equilibrium and
preset as kinematic inputs: the motors are ideal position sources). The equilibrium reference
steps from 0 to 0.8 rad at t = 0.5 s; the simulation lasts 3 s.

Conventions and choices of this demo (the paper does not state them):

- The joint turns in a vertical plane and the link angle q is measured from the horizontal, so
  the gravity torque is -m g l cos(q) (largest at q = 0, where the rig starts, horizontal and at
  rest, released at t = 0).
- The link is a point mass: inertia m l^2 = 3.2e-4 kg m^2 about the axis.
- A small link damping of 0.01 N m s/rad (not in the paper) makes the responses settle: every
  case is underdamped, so the oscillation envelope decays as exp(-c t / (2 m l^2)), a factor
  e^-39 over the 2.5 s after the step.
- The link dynamics  m l^2 qdd = tau_joint(q, qd) - m g l cos(q) - c qd  are integrated here in
  Python with semi-implicit Euler at dt = 1e-4 s around asr.Batch.step (the step returns the
  actuator torque for the link state it is given).
- All eight cases run in one batch: 4 joints (one per actuator, each an independent pendulum)
  x 2 instances (soft, stiff). The SEA's behaviour is its spring constant k (a parameter, one
  value per instance); the others' is the preset reference: AwAS-II pivot s (m), BAVS and
  qbmove Advanced preset (rad). Stiffness inputs as in the paper: sea k 200 / 400 N m/rad,
  awas2 s 0.005 / 0.04 m, bavs 0.001 / 0.22 rad, qbmove_advanced 0.2 / 0.6 rad; every other
  parameter at its toolbox default.

Outputs: an HTML figure (plotly, 4 subplots: link angle vs time, soft and stiff, reference
dashed) and a terminal table with each final link angle, its error against the 0.8 rad target
and the static equilibrium computed independently of the C core (the models' closed forms from
shared/models.md, tau_elastic(q) - m g l cos(q) = 0 solved with scipy's brentq, or bisection
without scipy). Soft awas2 and soft qbmove_advanced settle visibly below the target (gravity
deflects the soft spring); the stiff ones reach it.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

import asr

MASS = 0.2            # kg
ARM = 0.04            # m, centre of mass from the joint axis
GRAVITY = 9.81        # m/s^2
INERTIA = MASS * ARM ** 2   # kg m^2, point mass
LINK_DAMPING = 0.01   # N m s/rad (added so the responses settle; not in the paper)
STEP = 0.8            # rad, equilibrium reference after the step
T_STEP = 0.5          # s
DURATION = 3.0        # s
DT = 1e-4             # s

# model, title, stiffness input (name, unit), soft, stiff; the SEA's input is its parameter k,
# the others' the preset reference.
ACTUATORS = (
    ("sea", "SEA", "k", "N m/rad", 200.0, 400.0),
    ("awas2", "AwAS-II", "pivot s", "m", 0.005, 0.04),
    ("bavs", "BAVS", "preset", "rad", 0.001, 0.22),
    ("qbmove_advanced", "qbmove Advanced", "preset", "rad", 0.2, 0.6),
)
BEHAVIOURS = ("soft", "stiff")


def gravity_torque(q):
    """Gravity torque on the link, N m, q measured from the horizontal."""
    return -MASS * GRAVITY * ARM * np.cos(q)


def _batch():
    joints = []
    for model, _, _, _, soft, stiff in ACTUATORS:
        params = {"k": np.array([soft, stiff])} if model == "sea" else {}
        joints.append(asr.Joint(model, mode=3, params=params))
    return asr.Batch(joints, n_instances=len(BEHAVIOURS))


def _presets():
    """(2, 4) preset references: soft, stiff x actuator (0 for the SEA: preset unused)."""
    pre = np.zeros((len(BEHAVIOURS), len(ACTUATORS)))
    for j, (model, _, _, _, soft, stiff) in enumerate(ACTUATORS):
        if model != "sea":
            pre[:, j] = (soft, stiff)
    return pre


def simulate(duration=DURATION, t_step=T_STEP, step=STEP, dt=DT):
    """Integrate the eight pendulums; returns t (n,), q (n, 2, 4) link angles and eq (n,)."""
    b = _batch()
    presets = _presets()
    shape = presets.shape
    refs_before = np.stack([np.zeros(shape), presets], axis=-1)
    refs_after = np.stack([np.full(shape, step), presets], axis=-1)
    n = int(round(duration / dt))
    q = np.zeros(shape)
    qd = np.zeros(shape)
    b.reset(q, refs_before)
    t = np.arange(n + 1) * dt
    qs = np.empty((n + 1,) + shape)
    qs[0] = q
    i_step = int(round(t_step / dt))
    for k in range(n):
        refs = refs_after if k >= i_step else refs_before
        tau = b.step(q, qd, refs, dt)
        qdd = (tau + gravity_torque(q) - LINK_DAMPING * qd) / INERTIA
        qd = qd + dt * qdd
        q = q + dt * qd
        qs[k + 1] = q
    eq = np.where(np.arange(n + 1) >= i_step, step, 0.0)
    return t, qs, eq


# ---------------------------------------------------------------- independent static equilibrium

def _sat(x, m):
    return min(max(x, -m), m)


def elastic_torque(model, q, eq, preset, p):
    """Link torque of `model` at link angle q with the motors at the mapped references (eq,
    preset), from the closed forms of shared/models.md (not the C core). p: parameters."""
    if model == "sea":
        return -p["k"] * _sat(q - eq, p["max_def"])
    if model == "awas2":
        G = (p["L"] / p["r_t"]) * preset / (p["L"] - preset)
        return -p["Ks"] * G * G * math.sin(2.0 * _sat(q - eq, p["max_def"]))
    if model == "bavs":
        k, ke, a, b = p["k"], p["ke"], p["a"], p["b"]
        phi1 = _sat(eq + preset - q, p["max_def"])
        phi2 = _sat(eq - preset - q, p["max_def"])
        return (k * (b * math.exp(ke * phi1) - a * math.exp(-ke * phi1))
                + k * (a * math.exp(ke * phi2) - b * math.exp(-ke * phi2)))
    if model == "qbmove_advanced":
        phi1 = _sat(q - (eq + preset), p["max_def"])
        phi2 = _sat(q - (eq - preset), p["max_def"])
        return -p["k1"] * math.sinh(p["a1"] * phi1) - p["k2"] * math.sinh(p["a2"] * phi2)
    raise ValueError(f"model: no closed form for {model!r}")


def _bisect(f, lo, hi, tol=1e-13):
    flo = f(lo)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        fm = f(mid)
        if (fm > 0) == (flo > 0):
            lo, flo = mid, fm
        else:
            hi = mid
    return 0.5 * (lo + hi)


def static_equilibrium(model, eq, preset, params):
    """The stable rest angle q of the pendulum: tau_elastic(q) - m g l cos(q) = 0 with the net
    torque decreasing through zero, the one nearest eq (grid scan over eq +/- 1.5 rad, then
    brentq, or bisection when scipy is missing)."""
    def f(q):
        return elastic_torque(model, q, eq, preset, params) + float(gravity_torque(q))

    grid = np.linspace(eq - 1.5, eq + 1.5, 3001)
    vals = np.array([f(x) for x in grid])
    idx = np.flatnonzero((vals[:-1] > 0) & (vals[1:] <= 0))
    if idx.size == 0:
        raise RuntimeError(f"{model}: no stable equilibrium within eq +/- 1.5 rad")
    i = idx[np.argmin(np.abs(grid[idx] - eq))]
    lo, hi = grid[i], grid[i + 1]
    if vals[i + 1] == 0.0:
        return float(hi)
    try:
        from scipy.optimize import brentq
    except ImportError:
        return _bisect(f, lo, hi)
    return float(brentq(f, lo, hi, xtol=1e-14, rtol=1e-14))


def _model_params(model, behaviour_index):
    p = {s.name: s.default for s in asr.models()[model].params}
    if model == "sea":
        p["k"] = ACTUATORS[0][4 + behaviour_index]
    return p


# ---------------------------------------------------------------- output

def _figure(t, qs, eq, path, every):
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise SystemExit("asr.demo needs plotly for its figure: install the demo extra, "
                         "e.g. pip install -e '.[demo]' (or pip install plotly)") from None
    titles = [f"{title} ({name}: soft {soft:g} / stiff {stiff:g} {unit})"
              for _, title, name, unit, soft, stiff in ACTUATORS]
    fig = make_subplots(rows=2, cols=2, subplot_titles=titles, shared_xaxes=True,
                        vertical_spacing=0.12)
    colours = {"soft": "#1f77b4", "stiff": "#d62728"}
    ts = t[::every]
    for j in range(len(ACTUATORS)):
        row, col = j // 2 + 1, j % 2 + 1
        for i, beh in enumerate(BEHAVIOURS):
            fig.add_trace(go.Scatter(x=ts, y=qs[::every, i, j], mode="lines", name=beh,
                                     legendgroup=beh, showlegend=j == 0,
                                     line=dict(color=colours[beh])), row=row, col=col)
        fig.add_trace(go.Scatter(x=ts, y=eq[::every], mode="lines", name="reference",
                                 legendgroup="ref", showlegend=j == 0,
                                 line=dict(color="black", dash="dash")), row=row, col=col)
        fig.update_yaxes(title_text="link angle (rad)", row=row, col=col)
        fig.update_xaxes(title_text="time (s)", row=row, col=col)
    fig.update_layout(
        title="Step responses of compliant actuators under gravity, soft vs stiff "
              "(seed 000 fig. 7; 0.2 kg at 0.04 m, mode 3, 0.8 rad step)",
        height=800, width=1200)
    fig.write_html(path, include_plotlyjs=True, full_html=True)


def main(argv=None):
    """Run the demo; returns {'cases': [...], 'html': path, 'wall_s': seconds}."""
    ap = argparse.ArgumentParser(prog="python -m asr.demo", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="demo_output", help="output folder")
    ap.add_argument("--duration", type=float, default=DURATION, help="simulated time, s")
    ap.add_argument("--t-step", type=float, default=T_STEP, help="time of the step, s")
    ap.add_argument("--dt", type=float, default=DT, help="link integration step, s")
    a = ap.parse_args(argv)
    try:  # fail early, before the simulation, if the figure cannot be written
        import plotly  # noqa: F401
    except ImportError:
        raise SystemExit("asr.demo needs plotly for its figure: install the demo extra, "
                         "e.g. pip install -e '.[demo]' (or pip install plotly)") from None
    if not (0.0 < a.t_step < a.duration):
        raise SystemExit(f"--t-step: got {a.t_step}, valid range (0, duration = {a.duration})")

    t0 = time.perf_counter()
    t, qs, eq = simulate(a.duration, a.t_step, STEP, a.dt)
    presets = _presets()
    cases = []
    for j, (model, title, name, unit, soft, stiff) in enumerate(ACTUATORS):
        for i, beh in enumerate(BEHAVIOURS):
            final = float(qs[-1, i, j])
            static = static_equilibrium(model, STEP, presets[i, j], _model_params(model, i))
            cases.append({"model": model, "actuator": title, "behaviour": beh,
                          "input": f"{name} = {(soft, stiff)[i]:g} {unit}",
                          "final": final, "error": STEP - final, "static": static,
                          "final_minus_static": final - static})
    os.makedirs(a.out, exist_ok=True)
    html = os.path.join(a.out, "fig7_step_responses.html")
    _figure(t, qs, eq, html, every=max(1, int(round(1e-3 / a.dt))))
    wall = time.perf_counter() - t0

    print(f"Seed 000 fig. 7: 0.8 rad equilibrium step at t = {a.t_step:g} s, "
          f"{a.duration:g} s simulated, mode 3, 0.2 kg at 0.04 m, gravity, q from the horizontal")
    head = (f"{'actuator':<16} {'behaviour':<6} {'stiffness input':<24} {'final q':>9} "
            f"{'0.8 - q':>9} {'static eq':>10} {'q - static':>11}")
    print(head)
    print("-" * len(head))
    for c in cases:
        print(f"{c['actuator']:<16} {c['behaviour']:<6} {c['input']:<24} {c['final']:9.5f} "
              f"{c['error']:9.5f} {c['static']:10.5f} {c['final_minus_static']:11.2e}")
    print("(angles in rad; static eq: tau_elastic(q) - m g l cos(q) = 0 from the models' closed "
          "forms, independent of the C core)")
    print(f"figure: {html}  ({wall:.1f} s)")
    return {"cases": cases, "html": html, "wall_s": wall}


if __name__ == "__main__":
    main(sys.argv[1:])
