"""The throttled log of rejected ROS commands, shared by asr's live nodes (asr.ros.node_core).

A rejection is logged at most once per WARN_PERIOD_S for each (topic, reason): a NaN sent
0.3 s after a 1e300 on the same topic is a second mistake and gets its own line, while a flood
of the same mistake gives one line per period. Rejections held back are counted, and the next
line of that (topic, reason) says how many ("N similar rejections suppressed").

The reason's key is its text with numbers and quoted strings blanked (`expected 2 values, got
3` and `got 5` are one reason; `= 1e+300: valid range ...` and `= nan: not finite` two), so a
peer that varies the value does not get a line per message; at most MAX_KEYS keys are kept
(the oldest go first, their count logged), so a peer that invents names cannot grow the node.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

WARN_PERIOD_S = 1.0  # a (topic, reason) is logged at most once per this many seconds
MAX_KEYS = 1024  # (topic, reason) pairs remembered
# numbers (1, -0.5, 1e+300, 6.28319) and quoted strings ('elbow') in a reason's text
_VARIABLE = re.compile(r"'[^']*'|\"[^\"]*\"|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


# the largest serialised message a command topic takes (asr.ros.ros2_node, asr.ros.node): its
# valid values (8 bytes each) plus LAYOUT_BYTES for the header, sequence lengths and a layout,
# and NAME_BYTES per joint name; a longer one is rejected by its length, never deserialised
LAYOUT_BYTES = 1024
NAME_BYTES = 256


def max_bytes(values: int, joints: int) -> int:
    """The most bytes a valid message of `values` float64s and `joints` joint names takes."""
    return LAYOUT_BYTES + 8 * values + NAME_BYTES * joints


class MessageSize(int):
    """A rejected message's length, bytes, as its log line shows it (instead of its values)."""

    def __repr__(self) -> str:
        return f"a message of {int(self)} bytes"


def loggable(value: Any, limit: int = 8) -> str:
    """The repr of a rejected value, bounded: a sequence (a message's array, which a peer may
    make as long as it likes) shows its first `limit` values and its length."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return repr(value)
    n = len(value)
    head = ", ".join(
        repr(float(v)) if isinstance(v, (int, float)) else repr(v) for v in value[:limit]
    )
    return f"[{head}{', ...' if n > limit else ''}] ({n} value{'s' if n != 1 else ''})"


def reason_key(why: str) -> str:
    """The reason of a rejection without its variable parts (numbers, quoted strings)."""
    return _VARIABLE.sub("#", why)


class RejectionLog:
    """Counts rejections and writes one line per (topic, reason) per WARN_PERIOD_S through
    `log` (callable(str), or None: counted only). Thread-safe (callback threads). clock: the
    seconds the throttle reads (time.monotonic; a test may step its own).

    Attributes: rejected (every rejection), suppressed (those not logged)."""

    def __init__(
        self,
        log: Callable[[str], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.clock = clock
        self.rejected = 0
        self.suppressed = 0
        # {(topic, reason key): [time.monotonic() last logged, rejections suppressed since]}
        self._keys: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def reject(self, what: str, value: Any, why: str) -> None:
        """Count one rejection of a command on topic `what` (value `value`, reason `why`) and
        log it unless its (topic, reason) was logged less than WARN_PERIOD_S ago."""
        now = self.clock()
        lines = []
        with self._lock:
            self.rejected += 1
            key = (what, reason_key(why))
            entry = self._keys.get(key)
            if entry is not None and now - entry[0] < WARN_PERIOD_S:
                entry[1] += 1
                self.suppressed += 1
                return
            held = 0 if entry is None else int(entry[1])
            self._keys[key] = [now, 0]
            self._keys.move_to_end(key)
            while len(self._keys) > MAX_KEYS:
                (old_what, _), (_, n) = self._keys.popitem(last=False)
                if n:
                    lines.append(f"asr: {suppressed_text(n)} on {old_what} (no longer tracked)")
            note = f" ({suppressed_text(held)} since the last line)" if held else ""
            lines.append(
                f"asr: rejected {what} = {loggable(value)}: {why}; the last valid command is "
                f"kept{note}"
            )
        if self.log is not None:
            for line in lines:
                self.log(line)


def suppressed_text(n: float) -> str:
    """'N similar rejection(s) suppressed'."""
    n = int(n)
    return f"{n} similar rejection{'s' if n != 1 else ''} suppressed"


__all__ = [
    "RejectionLog",
    "MessageSize",
    "loggable",
    "max_bytes",
    "reason_key",
    "WARN_PERIOD_S",
    "MAX_KEYS",
    "LAYOUT_BYTES",
    "NAME_BYTES",
]
