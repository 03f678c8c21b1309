"""MuJoCo's warnings of a Sim's instances, reported through asr's per-instance statuses.

MuJoCo does not stop on a bad state. mj_step1 / mj_step2 find NaN, inf or huge positions,
velocities or accelerations (mjWARN_BADQPOS / BADQVEL / BADQACC), print a WARNING, reset the data
(mj_resetData, which also zeroes every warning counter before counting this one) and go on from
the model's rest pose; bad controls (mjWARN_BADCTRL) they zero. Without a check a run would carry
on with status 0 and only MuJoCo's printout would tell. Sim counts the warnings around every
rollout (Watch) and freezes each instance MuJoCo reset, as the core freezes a non-finite state
(ASR_ERR_NONFINITE: SimulationError, or the status with on_error='flag').

The other warnings mean an instance's physics was incomplete, its state still valid: contacts or
constraints dropped because MuJoCo's buffer was full (mjWARN_CONTACTFULL / CNSTRFULL) or a mass
matrix that is not positive definite (mjWARN_INERTIA). Those are reported as a RuntimeWarning
naming the instances; they run on.
"""

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Counts = npt.NDArray[np.int64]

# (MuJoCo warning, what it means) of the warnings that reset an instance's state or zero its
# inputs, then of those that leave it running with incomplete physics
RESET = (
    ("BADQPOS", "NaN, inf or huge joint positions"),
    ("BADQVEL", "NaN, inf or huge joint velocities"),
    ("BADQACC", "unstable (NaN, inf or huge) accelerations"),
    ("BADCTRL", "NaN, inf or huge actuator controls"),
)
INCOMPLETE = (
    ("CONTACTFULL", "contact buffer full: contacts dropped"),
    ("CNSTRFULL", "constraint buffer full: constraints dropped"),
    ("INERTIA", "a mass matrix that is not positive definite"),
)


class Watch:
    """The warning counters (MjData.warning) of each instance's MjData, in RESET + INCOMPLETE
    order. start() before a run, finish() after it: the counts the run added."""

    def __init__(self, datas: Sequence[Any]) -> None:
        import mujoco

        kinds = [
            int(getattr(mujoco.mjtWarning, f"mjWARN_{name}")) for name, _ in RESET + INCOMPLETE
        ]
        self._stats = [[d.warning[k] for k in kinds] for d in datas]  # live views
        self._shape = (len(datas), len(kinds))

    def _counts(self) -> Counts:
        return np.array([[w.number for w in ws] for ws in self._stats], dtype=np.int64).reshape(
            self._shape
        )

    def start(self) -> Counts:
        """The counts before a run. Set counters are zeroed for the run: a reset zeroes them all
        and counts 1, so a count compared with the one before would miss a repeated warning."""
        before = self._counts()
        for i, k in zip(*np.nonzero(before)):
            self._stats[i][k].number = 0
        return before

    def finish(self, before: Counts) -> Counts:
        """(N, K) counts the run added; each counter is left at its total (before + run), as
        MuJoCo keeps it, for code that reads MjData.warning."""
        new = self._counts()
        for i, k in zip(*np.nonzero(before + new)):
            self._stats[i][k].number = int(before[i, k] + new[i, k])
        return new


def describe(counts: Iterable[int], names: Sequence[tuple[str, str]]) -> str:
    """'what (mjWARN_X)' of each warning with a non-zero count, joined."""
    return "; ".join(f"{text} (mjWARN_{name})" for n, (name, text) in zip(counts, names) if n)
