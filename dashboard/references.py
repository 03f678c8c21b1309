"""Equilibrium reference generators and stiffness presets of the dashboard's joints (pure
functions; the runner applies them). The presets are those the package defines with each
model (asr.models()[name].preset); the minimum-jerk profile is asr.references.min_jerk."""

import math

import numpy as np

import asr
from asr.references import min_jerk_fraction


class ControlError(ValueError):
    """A control change that is well-formed but not valid for the current robot (-> 422)."""


def preset_spec(model):
    """Stiffness preset of `model` as the package defines it (asr.models()[model].preset): kind
    ("ref": second reference of modes 3/6, in model units; "param": the spring parameter `param`
    set directly; "none"), lo, hi, soft, stiff, unit, meaning."""
    spec = asr.models().get(model)
    return (spec.preset if spec is not None else asr.PresetSpec()).as_dict()


def check_preset(joint, model, value):
    """Raises ControlError unless `value` is in the stiffness preset range of `model` (joint
    `joint`, named in the message)."""
    spec = preset_spec(model)
    if spec["kind"] == "none":
        raise ControlError(f"preset {joint}: model {spec!r} has no stiffness preset")
    if not spec["lo"] <= value <= spec["hi"]:
        raise ControlError(
            f"preset {joint}: got {value:g}, valid range "
            f"[{spec['lo']:g}, {spec['hi']:g}] {spec['unit']} for model "
            f"{model}"
        )


def sim_references(batch, models, modes, eq, presets, torques=None):
    """(N, T, J, 2) Sim references of joints in `modes` (docs/models.md sec. 4) for equilibrium
    references `eq` (N, T, J) rad and presets `presets` (N, J) in each model's preset unit (used
    here when of kind "ref"; "param" presets are the Sim's parameters). Modes 3 / 6: (eq,
    preset); 2 / 5: the model's reference map to the motor angles (rad) with the joint's
    parameters from `batch`; 1: (eq, 0); 0 / 4: the torque commands `torques` (J, 2) (mode 0:
    link torque N m, 0; mode 4: the two motor commands), zero when None."""
    n, T, nj = eq.shape
    refs = np.zeros((n, T, nj, 2))
    for k, model in enumerate(models):
        mode, spec = modes[k], preset_spec(model)
        pre = presets[:, k, None] if spec["kind"] == "ref" else np.zeros((n, 1))
        e = eq[:, :, k]
        if mode in (3, 6):
            refs[:, :, k, 0] = e
            refs[:, :, k, 1] = pre
        elif mode in (2, 5):
            own = (
                {p.name: float(batch.get_param(k, p.name)[0]) for p in asr.models()[model].params}
                if model in asr.models()
                else {}
            )
            th1, th2 = asr.reference_map(model, e, np.broadcast_to(pre, e.shape), **own)
            refs[:, :, k, 0] = th1
            refs[:, :, k, 1] = th2
        elif mode == 1:
            refs[:, :, k, 0] = e
        elif torques is not None:  # modes 0 and 4: the torque commands, held
            refs[:, :, k, 0] = torques[k][0]
            refs[:, :, k, 1] = torques[k][1] if mode == 4 else 0.0
    return refs


# the modes whose inputs are torques, not an equilibrium (docs/models.md sec. 4)
TORQUE_MODES = (0, 4)
DEFAULT_GENERATOR = {
    "kind": "hold",
    "amplitude": 0.0,
    "frequency": 0.5,
    "frequency_end": 2.0,
    "period": 5.0,
    "offset": 0.0,
    "torque": 0.0,
    "torque2": 0.0,
}


def generator(**values):
    """A complete reference generator: DEFAULT_GENERATOR with `values`."""
    return dict(DEFAULT_GENERATOR, **values)


def torque_range(mode, params):
    """(lo, hi, unit) of the torque inputs of a joint in `mode` with parameters `params`
    ({name: value}): mode 0 the link torque within link_tau_max (the request's +-100 N m where
    it is infinite); mode 4 the motor command within tau_max, or [-1, 1] with the voltage drive
    (drive = 1: a normalised PWM command); None in the other modes."""
    if mode == 0:
        lim = params.get("link_tau_max", math.inf)
        lim = 100.0 if not math.isfinite(lim) else min(lim, 100.0)
        return -lim, lim, "N m"
    if mode == 4:
        if params.get("drive", 0) >= 1:
            return -1.0, 1.0, "(normalised PWM command)"
        lim = min(params.get("tau_max", 100.0), 100.0)
        return -lim, lim, "N m"
    return None


def check_torques(joint, mode, gen, params):
    """Raises ControlError unless the torque inputs of generator `gen` of `joint` are within
    torque_range(mode, params) (checked in the torque modes only, where they are used)."""
    rng = torque_range(mode, params)
    if rng is None:
        return
    lo, hi, unit = rng
    for field in ("torque", "torque2") if mode == 4 else ("torque",):
        v = float(gen.get(field, 0.0))
        if not lo <= v <= hi:
            raise ControlError(
                f"reference {joint}.{field}: got {v:g}, valid range [{lo:g}, {hi:g}] {unit} "
                f"in mode {mode}"
            )


def reference_values(gen, t):
    """Equilibrium reference (rad) of generator `gen` (dict) at times t (s since it was set)."""
    kind, a, off = gen["kind"], gen["amplitude"], gen["offset"]
    t = np.asarray(t, dtype=float)
    if kind == "hold":
        return np.full(t.shape, off)
    if kind == "step":
        return np.where(t >= 0, off + a, off)
    if kind == "sine":
        return off + a * np.sin(2 * np.pi * gen["frequency"] * t)
    if kind == "chirp":
        T = gen["period"]
        tt = np.mod(t, T)
        f0, f1 = gen["frequency"], gen["frequency_end"]
        return off + a * np.sin(2 * np.pi * (f0 * tt + (f1 - f0) * tt * tt / (2 * T)))
    if kind == "minjerk":
        return off + a * min_jerk_fraction(t, gen["period"])
    raise ControlError(f"reference kind: got {kind!r}, valid: step, sine, chirp, minjerk, hold")


# the server's first view (robot3d; PROTOCOL.md "First view"): a slow sine on every joint
FIRST_VIEW_AMPLITUDE = 0.35  # rad, about the initial equilibrium
FIRST_VIEW_FREQUENCY = 0.3  # Hz: a swing every 3.3 s, visible within a few seconds


def first_view_motion(joint_names, offsets, models):
    """The start configuration of the dashboard: ({joint: sine generator about offsets[k] rad},
    compare presets). The presets are [soft, stiff] of the joints' stiffness preset when every
    joint with a preset has the same model preset (the compare view sets one value on all of
    them), else [] (one instance)."""
    reference = {
        name: generator(
            kind="sine",
            amplitude=FIRST_VIEW_AMPLITUDE,
            frequency=FIRST_VIEW_FREQUENCY,
            offset=float(offset),
        )
        for name, offset in zip(joint_names, offsets)
    }
    specs = [preset_spec(m) for m in models]
    pairs = {(s["soft"], s["stiff"]) for s in specs if s["kind"] != "none"}
    presets = [float(v) for v in pairs.pop()] if len(pairs) == 1 else []
    return reference, presets
