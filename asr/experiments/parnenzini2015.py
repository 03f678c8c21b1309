"""[Parnenzini2015] (Parnenzini et al., the 2015 qbmove Gazebo plugin): one qbmove module tracking a
sine and stepping at several stiffness presets (figs. 2, 3), and the assemblies of fig. 4, a 3R
arm and a 12-module snake, running the published snake gait.

    python -m asr.experiments.parnenzini2015 --out DIR

Actuator: asr model `qbmove` (docs/models.md sec. 1) in mode 6: references (equilibrium q_e,
preset s), motors commanded to q_e +/- s (clamped at 3.1497 rad), each driven by the PD at 1 kHz
through the voltage drive (PWM dead zone 0.3, saturation, 8 V, Kt 0.8, Kb 0.3, R 2.3), with the
motors' static friction (0.8 N m) and the output shaft's (0.01 N m); springs k sinh(a phi) with
k = 0.022 N m, a = 6.85 1/rad (stiffness 2 a k cosh(a s) at rest: 0.301 N m/rad at s = 0).

(i) Single module (figs. 2, 3). The paper validates a bare module against a Simulink model and
gives neither the load, nor A and w, nor the value of "HIGH". Our rig, written at run time as a
temporary robot folder (`rig_robot`): the module housing fixed, its output flange (0.05 kg, the
plate of robots/qbmove_3r) carrying a 0.1 kg load 0.089 m from the axis (one module spacing),
inertia 9.4e-4 kg m^2 about the axis; the axis vertical, so gravity does not load the joint
(a soft module under gravity would only show its sag); joint damping 0.01 N m s/rad (a choice:
some dissipation besides the 0.01 N m shaft friction, light enough to leave the soft module
underdamped). Presets s = 0 (the paper's soft tracking case), 0.3 rad (its soft step case) and
HIGH = 0.6 rad: the largest round preset whose spring pretension k sinh(a s) = 0.67 N m stays
below the motors' static friction (0.8 N m; a motor is then not back-driven by its own spring)
and well within the drive's stall torque (Kt/R 8 V = 2.78 N m); stiffness 9.2 N m/rad, 30 times
that of s = 0. Tests, from rest at q = 0 with the motors at +/- s:

- tracking: q_e(t) = A sin(w t), A = 0.5 rad, w = 2 pi rad/s (1 Hz, below the soft rig's
  natural frequency sqrt(0.301 / 9.4e-4) = 18 rad/s, where the spring's deflection under the
  load's inertia is visible), 5 s; error measured from t = 1 s (RMS, max, and the amplitude and
  phase lag of the response's fundamental);
- step: q_e = 0.7 rad from t = 0, 2 s: rise time (10 -> 90 % of 0.7 rad), overshoot over the
  final value, settling time into +/- 2 % of the step around the final value, final error.

(ii) Assemblies (fig. 4), robots/qbmove_3r and robots/qbmove_snake, preset s = 0.3 rad, 5 s from
their [initial] state, the gait of the plugin's published snake (talker.cc): module i (0-based,
joint i + 1) gets q_e,i(t) = A_i sin(w t + i phi), w = 4.71 rad/s, A = 60 deg on the pitch
joints (the "vertical" modules, whose shafts are horizontal) and 20 deg on the yaw joints; the
phase between consecutive modules phi = 2 pi / 6 = pi / 3 (the talker's pi / lambda with
lambda = 3 and no extra phase; our choice, the paper publishes none). The 3R arm runs in both
variants: `vertical` (all joints pitch, A = 60 deg, under gravity) and `horizontal` (all yaw,
A = 20 deg). Checked: asr statuses, MuJoCo's warnings (unstable accelerations, contact
overflows, ...), finite states, bounds on joint angles, velocities and motor angles, and for
the snake the net horizontal displacement of its centre of mass (mujoco's subtree centre of
mass of the head, sampled every 0.1 s). Horizontal momentum conservation makes that
displacement a measure of locomotion: without floor friction no internal motion could move the
centre of mass horizontally.

Results (`python -m asr.experiments.parnenzini2015`, about 1-2 s). Single module:

| s | stiffness | track RMS / max | amplitude | lag | overshoot | settling | 0.7 - q |
| --- | --- | --- | --- | --- | --- | --- | --- |
| 0 | 0.38 | 0.158 / 0.272 | 0.497 | 25.2 deg | 0.374 | 0.58 s | 0.047 |
| 0.3 | 1.21 | 0.092 / 0.160 | 0.480 | 14.4 deg | 0.341 | 0.60 s | 0.043 |
| 0.6 (HIGH) | 8.2 | 0.069 / 0.095 | 0.472 | 10.8 deg | 0.100 | 0.32 s | 0.027 |

(s, angles and errors in rad, stiffness in N m/rad: its mean over the tracking; the last three
columns are the step's)

The stiff module tracks better (less than half the RMS error and the lag of s = 0) and
settles faster with a quarter of the overshoot; rise times are alike (34-44 ms, set by the
motors). Every case ends short of its reference, by the PWM dead
zone and the motors' static friction: a motor stops once the PD's command no longer overcomes
0.8 N m (plus its spring's pull), i.e. within (0.3 + 0.7 R tau_fs / (Kt 8 V)) / kp = 0.048 rad
of its reference for an unloaded motor; the motors also trail the sine by up to 0.08-0.1 rad,
which bounds how well even the stiff module tracks.

Assemblies, 5 s of gait, s = 0.3: 3R vertical / 3R horizontal / snake: statuses 0, no MuJoCo
warnings, max |q| 1.33 / 0.52 / 0.98 rad, max |qd| 13.0 / 3.6 / 11.5 rad/s, max |th| 1.30 /
0.60 / 1.30 rad, mean RMS deviation from the gait 0.33 / 0.15 / 0.24 rad; the snake's centre
of mass moves 0.219 m (dx = -0.219 m, towards the head: head first; dy = 0.006 m; path
0.37 m), its height staying between 0.033 and 0.076 m.
"""

import os
import shutil
import sys
import tempfile
import time

import numpy as np

import asr
from asr.experiments import command_line, run_and_report
from asr.experiments import write_html as write_figures

S_SOFT, S_MEDIUM, S_HIGH = 0.0, 0.3, 0.6  # rad, presets
PRESETS = (S_SOFT, S_MEDIUM, S_HIGH)
TRACK_A, TRACK_W = 0.5, 2 * np.pi  # rad, rad/s
TRACK_DURATION, TRACK_SKIP = 5.0, 1.0  # s
STEP, STEP_DURATION = 0.7, 2.0  # rad, s
LOAD_MASS, LOAD_ARM, RIG_DAMPING = 0.1, 0.089, 0.01
GAIT_W = 4.71  # rad/s
GAIT_PITCH, GAIT_YAW = np.radians(60.0), np.radians(20.0)
GAIT_PHI = 2 * np.pi / 6  # rad, between consecutive modules
GAIT_PRESET = 0.3  # rad
GAIT_DURATION = 5.0  # s
CHUNK = 100  # steps between centre-of-mass samples
# stability bounds of the assemblies (rad, rad/s): no joint turns half a revolution, no link
# spins at 50 rad/s (the references peak at 4.9 rad/s, the soft vertical 3R arm swings at up to
# 13 rad/s), no motor passes its command clamp (3.1497 rad) by more than 0.5 rad
Q_BOUND, QD_BOUND, TH_MARGIN = np.pi, 50.0, 0.5
TH_MAX = 3.1497

RIG_XML = """<!-- qbmove_1dof (asr.experiments.parnenzini2015): one 2015 qbmove module, housing
     fixed, output flange (0.05 kg) carrying a {load:g} kg load {arm:g} m from the axis; axis
     vertical (gravity does not load the joint); damping {damping:g} N m s/rad; torques from asr
     via qfrc_applied -->
<mujoco model="qbmove_1dof">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.001" integrator="Euler" gravity="0 0 -9.81"/>
  <default>
    <geom contype="0" conaffinity="0"/>
  </default>
  <worldbody>
    <geom name="module" type="box" size="0.033 0.033 0.033" mass="0.4" rgba="0.25 0.25 0.25 1"/>
    <body name="link">
      <joint name="joint1" type="hinge" axis="0 0 1" damping="{damping!r}" armature="0"/>
      <geom name="flange" type="box" pos="0.0445 0 0.036" size="0.0445 0.02 0.003" mass="0.05"/>
      <geom name="load" type="sphere" pos="{arm!r} 0 0.036" size="0.015" mass="{load!r}"/>
    </body>
  </worldbody>
</mujoco>
"""

RIG_TOML = """# Written by asr.experiments.parnenzini2015: one 2015 qbmove module (mode 6),
# a small load.
name = "qbmove_1dof"
description = "one 2015 qbmove module, small load, horizontal (Parnenzini et al. 2015 figs. 2-3)"
default_variant = "rig"

[variants.rig]
mjcf = "rig.xml"

[[variants.rig.joints]]
name = "joint1"
model = "qbmove"
mode = 6
params = { k = 0.022, a = 6.85 }

[variants.rig.initial]
q = [0.0]
refs = [[0.0, 0.0]]
"""


# ---------------------------------------------------------------- (i) one module


def rig_robot(folder, load=LOAD_MASS, arm=LOAD_ARM, damping=RIG_DAMPING):
    """Write the 1-DOF qbmove rig as a robot folder under `folder`; returns its asr.Robot."""
    dst = os.path.join(folder, "qbmove_1dof")
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "rig.xml"), "w") as f:
        f.write(RIG_XML.format(load=float(load), arm=float(arm), damping=float(damping)))
    with open(os.path.join(dst, "robot.toml"), "w") as f:
        f.write(RIG_TOML)
    return asr.load_robot(dst)


def _rig_run(robot, q_e, presets):
    """One instance per preset, from rest at q = 0 with the motors at +/- s; q_e (n,) per step."""
    presets = np.asarray(presets, float)
    n_i = presets.size
    sim = asr.Sim(robot, n_i)
    n = q_e.size
    refs = np.empty((n_i, n, 1, 2))
    refs[..., 0, 0] = q_e
    refs[..., 0, 1] = presets[:, None]
    sim.reset(q0=np.zeros((n_i, 1)), refs=np.stack([np.zeros(n_i), presets], -1)[:, None, :])
    out = sim.rollout(n, refs, record=("q", "qd", "th1", "th2", "stiffness", "tau_link"))
    res = {f: v[:, :, 0] for f, v in out.items()}
    res["status"] = sim.batch.status.copy()
    res["t"] = (np.arange(n) + 1) * sim.dt  # the state recorded after each step
    return res


def fundamental(t, x, w):
    """Amplitude and phase (rad) of x's component at w: x ~ amp sin(w t + phase)."""
    X = np.stack([np.sin(w * t), np.cos(w * t)], 1)
    c = np.linalg.lstsq(X, x, rcond=None)[0]
    return float(np.hypot(*c)), float(np.arctan2(c[1], c[0]))


def tracking(
    robot, presets=PRESETS, A=TRACK_A, w=TRACK_W, duration=TRACK_DURATION, skip=TRACK_SKIP
):
    """Sine tracking per preset; metrics from t = skip on."""
    n = int(round(duration / 1e-3))
    q_e = A * np.sin(w * np.arange(n) * 1e-3)  # reference held over each 1 ms step
    res = _rig_run(robot, q_e, presets)
    t = res["t"]
    target = A * np.sin(w * t)
    sel = t >= skip
    res["q_e"], res["metrics"] = target, []
    for i, s in enumerate(presets):
        e = res["q"][i, sel] - target[sel]
        amp, phase = fundamental(t[sel], res["q"][i, sel], w)
        res["metrics"].append(
            {
                "s": float(s),
                "rms": float(np.sqrt(np.mean(e**2))),
                "max": float(np.abs(e).max()),
                "amp": amp,
                "lag_deg": float(-np.degrees(phase)),
                "stiffness": float(np.mean(res["stiffness"][i, sel])),
            }
        )
    return res


def step_response(robot, presets=PRESETS, step=STEP, duration=STEP_DURATION, band=0.02):
    """Step of the equilibrium to `step` at t = 0 per preset."""
    n = int(round(duration / 1e-3))
    res = _rig_run(robot, np.full(n, float(step)), presets)
    t = res["t"]
    res["metrics"] = []
    for i, s in enumerate(presets):
        q = res["q"][i]
        final = float(np.mean(q[t >= duration - 0.1]))
        r10 = t[np.argmax(q >= 0.1 * step)] if (q >= 0.1 * step).any() else np.inf
        r90 = t[np.argmax(q >= 0.9 * step)] if (q >= 0.9 * step).any() else np.inf
        out = np.flatnonzero(np.abs(q - final) > band * step)
        settle = 0.0 if out.size == 0 else float(t[out[-1]]) if out[-1] + 1 < t.size else np.inf
        res["metrics"].append(
            {
                "s": float(s),
                "rise": float(r90 - r10),
                "overshoot": float(q.max() - final),
                "settle": settle,
                "final": final,
                "error": float(step - final),
                "stiffness": float(res["stiffness"][i, -1]),
            }
        )
    return res


# ---------------------------------------------------------------- (ii) assemblies


def gait_amplitudes(robot):
    """A per joint: 60 deg on pitch joints (axis horizontal in the model's rest pose), 20 deg
    on yaw joints (axis vertical)."""
    import mujoco

    m = robot.mj_model()
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    amps = []
    for name in robot.joint_names:
        j = m.joint(name).id
        axis = d.xmat[m.jnt_bodyid[j]].reshape(3, 3) @ m.jnt_axis[j]
        amps.append(GAIT_YAW if abs(axis[2]) > 0.9 else GAIT_PITCH)
    return np.array(amps)


def gait(
    robot,
    duration=GAIT_DURATION,
    phi=GAIT_PHI,
    w=GAIT_W,
    preset=GAIT_PRESET,
    amps=None,
    chunk=CHUNK,
):
    """Run the gait on `robot` (an asr.Robot) from its [initial] state. Returns the joint
    records (T, J), the references, the centre of mass of the robot's root body every `chunk`
    steps (for a free base), the checks and the wall time."""
    import mujoco

    sim = asr.Sim(robot, 1)
    J, dt = sim.n_joints, sim.dt
    amps = gait_amplitudes(robot) if amps is None else np.asarray(amps, float)
    n = int(round(duration / dt))
    t = np.arange(n) * dt
    q_e = amps * np.sin(w * t[:, None] + np.arange(J) * phi)
    refs = np.empty((1, n, J, 2))
    refs[0, :, :, 0] = q_e
    refs[0, :, :, 1] = preset
    m, data = sim.models[0], sim.datas[0]
    free = any(int(m.jnt_type[k]) == int(mujoco.mjtJoint.mjJNT_FREE) for k in range(m.njnt))
    root = int(m.body_rootid[m.jnt_bodyid[m.joint(robot.joint_names[0]).id]])  # below world
    scratch = mujoco.MjData(m)

    def com():
        scratch.qpos[:] = data.qpos
        mujoco.mj_kinematics(m, scratch)
        mujoco.mj_comPos(m, scratch)
        return scratch.subtree_com[root].copy()

    fields = ("q", "qd", "th1", "th2", "tau_joint")
    rec = {f: np.empty((n, J)) for f in fields}
    coms, t_com = [com()], [0.0]
    t0 = time.perf_counter()
    for k in range(0, n, chunk):
        c = min(chunk, n - k)
        out = sim.rollout(c, refs[:, k : k + c], record=fields)
        for f in fields:
            rec[f][k : k + c] = out[f][0]
        coms.append(com())
        t_com.append((k + c) * dt)
    wall = time.perf_counter() - t0
    coms = np.array(coms)
    warnings = {
        str(mujoco.mjtWarning(i)).split(".")[-1]: int(data.warning[i].number)
        for i in range(len(data.warning))
        if data.warning[i].number
    }
    finite = bool(
        all(np.isfinite(v).all() for v in rec.values())
        and np.isfinite(data.qpos).all()
        and np.isfinite(data.qvel).all()
    )
    checks = {
        "status": int(sim.batch.status[0]),
        "mujoco_warnings": warnings,
        "finite": finite,
        "max_abs_q": float(np.abs(rec["q"]).max()),
        "max_abs_qd": float(np.abs(rec["qd"]).max()),
        "max_abs_th": float(max(np.abs(rec["th1"]).max(), np.abs(rec["th2"]).max())),
        "max_abs_tau": float(np.abs(rec["tau_joint"]).max()),
    }
    checks["bounded"] = bool(
        finite
        and checks["max_abs_q"] < Q_BOUND
        and checks["max_abs_qd"] < QD_BOUND
        and checks["max_abs_th"] < TH_MAX + TH_MARGIN
    )
    checks["stable"] = bool(checks["bounded"] and checks["status"] == 0 and not warnings)
    res = {
        "robot": f"{robot.name}/{robot.variant}",
        "t": t + dt,
        "q_e": q_e,
        "amps": amps,
        "free_base": free,
        "t_com": np.array(t_com),
        "com": coms,
        "checks": checks,
        "wall_s": wall,
        **rec,
    }
    res["rms_tracking"] = np.sqrt(np.mean((rec["q"] - q_e) ** 2, axis=0))
    if free:
        dxy = coms[-1, :2] - coms[0, :2]
        res["displacement"] = float(np.hypot(*dxy))
        res["displacement_xy"] = dxy
        res["path_length"] = float(np.linalg.norm(np.diff(coms[:, :2], axis=0), axis=1).sum())
        res["com_height"] = (float(coms[:, 2].min()), float(coms[:, 2].max()))
    return res


# ---------------------------------------------------------------- experiment


def run(
    track_duration=TRACK_DURATION,
    step_duration=STEP_DURATION,
    gait_duration=GAIT_DURATION,
    figures=True,
):
    """Both parts. Returns {'tracking', 'step': rig results with 'metrics' per preset,
    'gaits': {name: gait()}, 'presets', 'wall_s', 'figures' (if figures)}."""
    wall = {}
    tmp = tempfile.mkdtemp(prefix="asr_parnenzini2015_")
    try:
        rig = rig_robot(tmp)
        t0 = time.perf_counter()
        tr = tracking(rig, duration=track_duration)
        st = step_response(rig, duration=step_duration)
        wall["module"] = time.perf_counter() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    gaits = {}
    for name, variant in (
        ("arm3r_vertical", ("qbmove_3r", "vertical")),
        ("arm3r_horizontal", ("qbmove_3r", "horizontal")),
        ("snake", ("qbmove_snake", None)),
    ):
        gaits[name] = gait(asr.load_robot(*variant), duration=gait_duration)
        wall[name] = gaits[name]["wall_s"]
    res = {"tracking": tr, "step": st, "gaits": gaits, "presets": PRESETS, "wall_s": wall}
    if figures:
        res["figures"] = {"module": module_figure(res), "gaits": gait_figure(res)}
    return res


# ---------------------------------------------------------------- output

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


def main(out_dir="parnenzini2015_output", **run_kwargs):
    """Run, write out_dir/parnenzini2015.html, print the table; returns run()'s dict with 'html'
    and 'total_s'; run_kwargs go to run() (shorter runs)."""
    return run_and_report("parnenzini2015", run, write_html, summary, out_dir, run_kwargs)


def _cli(argv=None):
    command_line("parnenzini2015", __doc__.splitlines()[0], main, argv)


if __name__ == "__main__":
    _cli(sys.argv[1:])
