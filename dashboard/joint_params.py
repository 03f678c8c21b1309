"""A joint's compliance-model parameters on the live Sim's batch (dashboard/session.py): a
control's values checked against each model's ranges and the cross-parameter rule asr checks
(pos_min < pos_max), set in an order whose every intermediate state is valid, and read back
(instance 0, or per instance compacted to one value when all are equal)."""

import numpy as np

from .errors import short
from .references import ControlError


def compact(values):
    """A parameter's (N,) values as one float when they are all equal."""
    values = np.asarray(values, dtype=float)
    return float(values.flat[0]) if np.all(values == values.flat[0]) else values


def params_of(batch, k):
    """{name: value} of joint k's parameters (instance 0)."""
    return {p.name: float(batch.get_param(k, p.name)[0]) for p in batch.specs[k].all_params}


def set_params(batch, k, values):
    """Set joint k's parameters {name: value}. The motor limits go in an order whose every
    intermediate state is valid (pos_min < pos_max), given that the old and the new pair
    both are: pos_min first to the lower of old and new, then pos_max, then pos_min."""
    values = dict(values)
    if "pos_min" in values and "pos_max" in values:
        batch.set_param(
            k, "pos_min", compact(np.minimum(batch.get_param(k, "pos_min"), values["pos_min"]))
        )
        batch.set_param(k, "pos_max", values.pop("pos_max"))
    for p, v in values.items():
        batch.set_param(k, p, v)


def _number(joint, p, v):
    """A parameter's value as a float; ControlError naming it for a non-number."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ControlError(f"params {joint}.{p}: expected a number, got {short(v)}")
    try:
        return float(v)
    except OverflowError:
        raise ControlError(f"params {joint}.{p}: got {short(v)}, too large for a float") from None


def _check_limits(batch, k, joint, new):
    """pos_min < pos_max with the other bound as it will be (ControlError naming both)."""
    if "pos_min" not in new and "pos_max" not in new:
        return
    lo = new.get("pos_min", batch.get_param(k, "pos_min"))
    hi = new.get("pos_max", batch.get_param(k, "pos_max"))
    if not np.all(np.less(lo, hi)):
        p = "pos_max" if "pos_max" in new else "pos_min"
        raise ControlError(
            f"params {joint}.{p}: got {new[p]:g}, valid range: pos_min < pos_max (they would "
            f"be {np.max(lo):g} and {np.min(hi):g})"
        )


def check_params(batch, joint_index, given):
    """{joint: {param: float}} of a control's params `given` ({joint: {param: value | None}}),
    each checked against its model's range, and the cross-parameter rule asr checks too
    (pos_min < pos_max, with the other bound as it will be). joint_index(name): the joint's
    index (ControlError naming the robot's joints for an unknown one)."""
    params = {}
    for joint, values in (given or {}).items():
        k = joint_index(joint)
        spec = batch.specs[k]
        for p, v in values.items():
            if v is None:
                continue
            v = _number(joint, p, v)
            spec.param(p).check(v, f"params {joint}: ")
            params.setdefault(joint, {})[p] = v
        _check_limits(batch, k, joint, params.get(joint, {}))
    return params
