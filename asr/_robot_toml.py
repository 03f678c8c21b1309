"""The checks of robot.toml's values (asr.robot): one validator per kind of value (names, file
names, numbers, arrays, pairs, models, modes, parameter tables), the schema of each kind of table
({key: (validator, required)}) and _entries, which checks one table against its schema.

A validator raises _Invalid saying what is wrong with the value; _entries has the caller's file
object turn that into its error naming the file and the entry (asr.robot's RobotFileError).
"""

import math
import numbers

from asr.models import models as model_specs

# ---------------------------------------------------------------- one validator per kind of value
# Each takes a value read from TOML and returns it converted, or raises _Invalid saying what is
# wrong; _entries() adds the file and the entry.


class _Invalid(Exception):
    """What is wrong with one value."""


def _shown(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _string_of(what):
    """A validator of non-empty strings described as `what` in errors."""

    def check(value):
        if not isinstance(value, str) or not value.strip() or "\0" in value:
            raise _Invalid(f"expected {what} (string), got {_shown(value)}")
        return value

    return check


_name = _string_of("a name")
_file_name = _string_of("a file name")


def _text(value):
    if not isinstance(value, str):
        raise _Invalid(f"expected a string, got {_shown(value)}")
    return value


def _table(value):
    if not isinstance(value, dict):
        raise _Invalid(f"expected a table, got {_shown(value)}")
    return value


def _tables(value):
    """A non-empty array of tables ([[...]] entries)."""
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        raise _Invalid(f"expected one or more tables ([[...]] entries), got {_shown(value)}")
    return value


def _number(value, allow_inf=False):
    """A real number (booleans are not numbers); NaN never, inf only where allowed."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _Invalid(f"expected a number, got {_shown(value)}")
    value = float(value)
    if math.isnan(value):
        raise _Invalid("got nan (not a number)")
    if math.isinf(value) and not allow_inf:
        raise _Invalid(f"expected a finite number, got {value!r}")
    return value


def _numbers(value, length=None):
    """An array of finite numbers (of `length` entries when given), as a tuple."""
    if not isinstance(value, list) or (length is not None and len(value) != length):
        size = "" if length is None else f" {length}"
        raise _Invalid(f"expected an array of{size} numbers, got {_shown(value)}")
    out = []
    for k, x in enumerate(value):
        try:
            out.append(_number(x))
        except _Invalid as exc:
            raise _Invalid(f"entry {k}: {exc}") from None
    return tuple(out)


def _pairs(value):
    """An array of [a, b] pairs of finite numbers, as a tuple of tuples."""
    if not isinstance(value, list):
        raise _Invalid(f"expected an array of [a, b] pairs, got {_shown(value)}")
    out = []
    for k, pair in enumerate(value):
        try:
            out.append(_numbers(pair, 2))
        except _Invalid as exc:
            raise _Invalid(f"row {k}: {exc}") from None
    return tuple(out)


def _model(value):
    if not isinstance(value, str) or value not in model_specs():
        raise _Invalid(f"unknown model {_shown(value)}; valid: {', '.join(model_specs())}")
    return value


def _mode(value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"expected an operation mode (integer 0-6), got {_shown(value)}")
    if not 0 <= value <= 6:
        raise _Invalid(f"got {value}, valid modes 0-6")
    return value


def _params(value):
    """{asr parameter name: number}; names and ranges are the model's (checked by _joint)."""
    for name, x in _table(value).items():
        try:
            _number(x, allow_inf=True)  # inf: e.g. i_max = inf, no current limit
        except _Invalid as exc:
            raise _Invalid(f"{name}: {exc}") from None
    return {name: float(x) for name, x in value.items()}


# ---------------------------------------------------------------- the tables of robot.toml
# {key: (validator, required)} of each kind of table.

_TOP = {
    "name": (_name, False),
    "description": (_text, False),
    "default_variant": (_name, False),
    "variants": (_table, True),
}
_VARIANT = {
    "mjcf": (_file_name, True),
    "joints": (_tables, True),
    "initial": (_table, False),
    "sdf": (_file_name, False),
    "interaction": (_table, False),
}
_JOINT = {
    "name": (_name, True),
    "model": (_model, True),
    "mode": (_mode, True),
    "params": (_params, False),
}
_INITIAL = {"q": (_numbers, False), "refs": (_pairs, False), "first_view": (_numbers, False)}
# MJCF names: the controlled site (the tool frame), the F/T sensor's site and its force and torque
# sensors, and the site whose frame is the base frame F_b (default: the world frame)
_INTERACTION = {
    "site": (_name, True),
    "sensor_site": (_name, True),
    "force_sensor": (_name, True),
    "torque_sensor": (_name, True),
    "base": (_name, False),
}


def _entries(table, schema, toml, section):
    """The entries of `table` checked and converted by `schema`: no unknown keys, the required
    ones present. `section` names the table in errors ('' for the top level)."""
    unknown = [k for k in table if k not in schema]
    if unknown:
        toml.fail(
            section, f"unknown keys: {', '.join(map(repr, unknown))}; allowed: {', '.join(schema)}"
        )
    for key, (_, required) in schema.items():
        if required and key not in table:
            toml.fail(section, f"missing key {key!r}")
    out = {}
    for key, value in table.items():
        try:
            out[key] = schema[key][0](value)
        except _Invalid as exc:
            toml.fail(f"{section} {key}".strip(), str(exc))
    return out
