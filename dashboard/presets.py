"""The dashboard's soft / stiff presets per robot and joint (PROTOCOL.md "Presets").

Soft is the model's soft preset (asr.models()[model].preset). Stiff is the model's stiff preset
lowered, where needed, to the largest of PROBE_GRID presets evenly spaced from soft to stiff at
which the joint's spring stays off its deflection clamp in the server's first view (the slow sine
of references.first_view_motion about the first view's equilibria, from its start: the robot's
initial state, or rest at robot.toml's initial.first_view) for one period of that sine:
one batched asr.Sim rollout, one instance per candidate preset (every joint of instance i at
the i-th preset of its own model's grid), when a robot is loaded. A stiff preset that presses a
spring on its clamp hides what stiffness does (the torque saturates), so the button should not
choose one. Where even the soft preset reaches the clamp (lowering cannot help: the first view
itself presses the spring on it), the model's stiff preset is kept and the joint is reported as
`clamp_free: false`.
"""

import numpy as np

import asr

from .references import (
    FIRST_VIEW_AMPLITUDE,
    FIRST_VIEW_FREQUENCY,
    preset_spec,
    sim_references,
)

PROBE_GRID = 9  # candidate presets from soft to stiff, both included
PROBE_S = 1.0 / FIRST_VIEW_FREQUENCY  # one period of the first view's sine, s


def first_view_eq(t, eq0):
    """(T, J) equilibrium references (rad) of the first view at times `t` (T,) s about the
    initial equilibria `eq0` (J,) rad (references.first_view_motion's sine)."""
    swing = FIRST_VIEW_AMPLITUDE * np.sin(2 * np.pi * FIRST_VIEW_FREQUENCY * np.asarray(t))
    return np.asarray(eq0, dtype=float)[None, :] + swing[:, None]


def preset_grids(models):
    """(PROBE_GRID, J) candidate presets per joint, soft to stiff (a joint without a preset: 0)."""
    cols = []
    for model in models:
        spec = preset_spec(model)
        lo, hi = (spec["soft"], spec["stiff"]) if spec["kind"] != "none" else (0.0, 0.0)
        cols.append(np.linspace(lo, hi, PROBE_GRID))
    return np.stack(cols, axis=1)


def clamped_per_candidate(robot, models, modes, param_overrides, eq0, threads=1, q0=None):
    """(PROBE_GRID, J) bool: joint j's spring reached its clamp with the j-th column of
    preset_grids(models) in the first view (one rollout of PROBE_S, an instance per row, from
    link angles q0 (J,) rad, default the robot's initial q)."""
    grids = preset_grids(models)
    sim = asr.Sim(robot, PROBE_GRID, threads=threads)
    batch = sim.batch
    for k, model in enumerate(models):
        if modes[k] != batch.modes[k]:
            batch.set_mode(k, modes[k])
        for p, v in param_overrides.get(robot.joints[k].name, {}).items():
            batch.set_param(k, p, v)
        spec = preset_spec(model)
        if spec["kind"] == "param":
            batch.set_param(k, spec["param"], grids[:, k])
    steps = max(1, int(round(PROBE_S / sim.dt)))
    t = sim.dt * np.arange(steps)
    eq = np.broadcast_to(first_view_eq(t, eq0), (PROBE_GRID, steps, len(models)))
    sim.reset(q0=q0, refs=sim_references(batch, models, modes, eq[:, :1], grids)[:, 0])
    out = sim.rollout(steps, sim_references(batch, models, modes, eq, grids), record=("clamped",))
    return np.any(out["clamped"] > 0, axis=1)


def choose_presets(robot, models, modes, param_overrides, eq0, threads=1, q0=None):
    """{joint: {"soft", "stiff", "clamp_free"}} for the joints with a stiffness preset, by the
    rule of the module doc."""
    grids = preset_grids(models)
    clamped = clamped_per_candidate(robot, models, modes, param_overrides, eq0, threads, q0)
    out = {}
    for k, (name, model) in enumerate(zip(robot.joint_names, models)):
        spec = preset_spec(model)
        if spec["kind"] == "none":
            continue
        free = np.flatnonzero(~clamped[:, k])
        stiff = float(grids[free[-1], k]) if free.size else float(spec["stiff"])
        out[name] = {"soft": float(spec["soft"]), "stiff": stiff, "clamp_free": bool(free.size)}
    return out
