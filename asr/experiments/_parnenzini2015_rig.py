"""[Parnenzini2015] (asr.experiments.parnenzini2015), part (i): one qbmove module on a test rig
written at run time, tracking a sine and stepping at several stiffness presets (figs. 2, 3)."""

import os

import numpy as np

import asr

S_SOFT, S_MEDIUM, S_HIGH = 0.0, 0.3, 0.6  # rad, presets
PRESETS = (S_SOFT, S_MEDIUM, S_HIGH)
TRACK_A, TRACK_W = 0.5, 2 * np.pi  # rad, rad/s
TRACK_DURATION, TRACK_SKIP = 5.0, 1.0  # s
STEP, STEP_DURATION = 0.7, 2.0  # rad, s
LOAD_MASS, LOAD_ARM, RIG_DAMPING = 0.1, 0.089, 0.01

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
