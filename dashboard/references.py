"""Equilibrium reference generators and stiffness presets of the dashboard's joints (pure
functions; the runner applies them). The presets are those the package defines with each
model (asr.models()[name].preset); the minimum-jerk profile is asr.references.min_jerk."""
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
        raise ControlError(f"preset {joint}: got {value:g}, valid range "
                           f"[{spec['lo']:g}, {spec['hi']:g}] {spec['unit']} for model "
                           f"{model}")


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
