"""The checks of robot.toml's values (asr.robots.robot): one validator per kind of value (names,
file names, numbers, arrays, pairs, models, modes, parameter tables), the schema of each kind of
table ({key: (validator, required)}) and checked_entries, which checks one table against its
schema; robot.py reads the schemas and calls checked_entries.

A validator raises _Invalid saying what is wrong with the value; checked_entries has the caller's
file object turn that into its error naming the file and the entry (asr.robots.robot's
RobotFileError).
"""

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, Protocol

from asr.core.models import models as model_specs

# ---------------------------------------------------------------- one validator per kind of value
# Each takes a value read from TOML and returns it converted, or raises _Invalid saying what is
# wrong; checked_entries() adds the file and the entry.


class _Invalid(Exception):
    """What is wrong with one value."""


# a validator: a TOML value in, the value converted out (the schemas mix their kinds)
_Validator = Callable[[Any], Any]


class _Fails(Protocol):
    """The caller's file object: fail(entry, problem) raises its error naming the file."""

    def fail(self, entry: str, problem: str) -> NoReturn: ...


def shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _string_of(what: str) -> Callable[[object], str]:
    """A validator of non-empty strings described as `what` in errors."""

    def check(value: object) -> str:
        if not isinstance(value, str) or not value.strip() or "\0" in value:
            raise _Invalid(f"expected {what} (string), got {shown(value)}")
        return value

    return check


_name = _string_of("a name")
_file_name = _string_of("a file name")


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"expected a string, got {shown(value)}")
    return value


def _table(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(f"expected a table, got {shown(value)}")
    return value


def _tables(value: object) -> list[dict[str, Any]]:
    """A non-empty array of tables ([[...]] entries)."""
    if not isinstance(value, list) or not value or not all(isinstance(v, dict) for v in value):
        raise _Invalid(f"expected one or more tables ([[...]] entries), got {shown(value)}")
    return value


def _number(value: object, allow_inf: bool = False) -> float:
    """A real number (booleans are not numbers); NaN never, inf only where allowed."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _Invalid(f"expected a number, got {shown(value)}")
    x = float(value)
    if math.isnan(x):
        raise _Invalid("got nan (not a number)")
    if math.isinf(x) and not allow_inf:
        raise _Invalid(f"expected a finite number, got {x!r}")
    return x


def _numbers(value: object, length: int | None = None) -> tuple[float, ...]:
    """An array of finite numbers (of `length` entries when given), as a tuple."""
    if not isinstance(value, list) or (length is not None and len(value) != length):
        size = "" if length is None else f" {length}"
        raise _Invalid(f"expected an array of{size} numbers, got {shown(value)}")
    out = []
    for k, x in enumerate(value):
        try:
            out.append(_number(x))
        except _Invalid as exc:
            raise _Invalid(f"entry {k}: {exc}") from None
    return tuple(out)


def _pairs(value: object) -> tuple[tuple[float, ...], ...]:
    """An array of [a, b] pairs of finite numbers, as a tuple of tuples."""
    if not isinstance(value, list):
        raise _Invalid(f"expected an array of [a, b] pairs, got {shown(value)}")
    out = []
    for k, pair in enumerate(value):
        try:
            out.append(_numbers(pair, 2))
        except _Invalid as exc:
            raise _Invalid(f"row {k}: {exc}") from None
    return tuple(out)


def _model(value: object) -> str:
    if not isinstance(value, str) or value not in model_specs():
        raise _Invalid(f"unknown model {shown(value)}; valid: {', '.join(model_specs())}")
    return value


def _mode(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"expected an operation mode (integer 0-6), got {shown(value)}")
    if not 0 <= value <= 6:
        raise _Invalid(f"got {value}, valid modes 0-6")
    return value


def _params(value: object) -> dict[str, float]:
    """{asr parameter name: number}; names and ranges are the model's (checked by _joint)."""
    table = _table(value)
    for name, x in table.items():
        try:
            _number(x, allow_inf=True)  # inf: e.g. i_max = inf, no current limit
        except _Invalid as exc:
            raise _Invalid(f"{name}: {exc}") from None
    return {name: float(x) for name, x in table.items()}


# ---------------------------------------------------------------- the tables of robot.toml
# {key: (validator, required)} of each kind of table.

TOP_KEYS: dict[str, tuple[_Validator, bool]] = {
    "name": (_name, False),
    "description": (_text, False),
    "default_variant": (_name, False),
    "variants": (_table, True),
}
VARIANT_KEYS: dict[str, tuple[_Validator, bool]] = {
    "mjcf": (_file_name, True),
    "joints": (_tables, True),
    "initial": (_table, False),
    "sdf": (_file_name, False),
    "interaction": (_table, False),
}
JOINT_KEYS: dict[str, tuple[_Validator, bool]] = {
    "name": (_name, True),
    "model": (_model, True),
    "mode": (_mode, True),
    "params": (_params, False),
}
INITIAL_KEYS: dict[str, tuple[_Validator, bool]] = {
    "q": (_numbers, False),
    "refs": (_pairs, False),
    "first_view": (_numbers, False),
}
# MJCF names: the controlled site (the tool frame), the F/T sensor's site and its force and torque
# sensors, and the site whose frame is the base frame F_b (default: the world frame)
INTERACTION_KEYS: dict[str, tuple[_Validator, bool]] = {
    "site": (_name, True),
    "sensor_site": (_name, True),
    "force_sensor": (_name, True),
    "torque_sensor": (_name, True),
    "base": (_name, False),
}


def checked_entries(
    table: Mapping[str, Any],
    schema: Mapping[str, tuple[_Validator, bool]],
    toml: _Fails,
    section: str,
) -> dict[str, Any]:
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
    out: dict[str, Any] = {}
    for key, value in table.items():
        try:
            out[key] = schema[key][0](value)
        except _Invalid as exc:
            toml.fail(f"{section} {key}".strip(), str(exc))
    return out
