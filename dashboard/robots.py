"""The robots a client may name (GET /api/robots): every robot folder of asr.robot_names(),
loaded by name only (allow_path=False), with the errors of those that do not load."""

import asr
from asr.robots.robot import load_robot, robot_names, variant_names

from .errors import public_message
from .references import preset_spec


class NotFound(LookupError):
    """Unknown robot or variant (-> 404)."""


def list_robots():
    """[{name, variants, joints, default_variant, description}] of every robot folder
    (asr.robot_names()). A robot whose robot.toml or default variant does not load (its MJCF
    compiled too) is listed as {name, variants: [], joints: [], error}; a good robot's variants
    that do not load are left out of its variants and named in variant_errors. Errors name the
    robot, never a server path."""
    out = []
    for name in robot_names():
        try:
            out.append(_robot_entry(name))
        except Exception as exc:  # noqa: BLE001 - a broken robot folder is listed with its error
            out.append(
                {"name": name, "variants": [], "joints": [], "error": _robot_error(name, exc)}
            )
    return out


def _robot_entry(name):
    default = load_robot(name, allow_path=False)
    default.mj_model()
    names = variant_names(name, allow_path=False)
    variants, broken = [], {}
    for variant in names:
        try:
            if variant != default.variant:
                load_robot(name, variant, allow_path=False).mj_model()
            variants.append(variant)
        except Exception as exc:  # noqa: BLE001 - listed with its error
            broken[variant] = _robot_error(name, exc)
    entry = {
        "name": name,
        "variants": variants,
        "default_variant": default.variant,
        "description": default.description,
        "joints": [
            {"name": j.name, "model": j.model, "mode": j.mode, "preset_range": preset_spec(j.model)}
            for j in default.joints
        ],
    }
    if broken:
        entry["variant_errors"] = broken
    return entry


def _robot_error(name, exc):
    """The error of a robot that does not load, naming the robot (not its folder's path)."""
    text = public_message(exc)
    return text if text.startswith(f"robot {name!r}") else public_message(f"robot {name!r}: {text}")


def motor_count(model):
    """Motors of a joint model (0 rigid, 1 single-motor SEA, 2 antagonistic); 2 if unknown, so
    that nothing is hidden by mistake."""
    spec = asr.models().get(model)
    return int(spec.nmotor) if spec is not None else 2
