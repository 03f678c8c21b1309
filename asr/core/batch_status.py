"""The batch's per-instance failure status: which instances the C core (or an engine, through
stop) froze, at which joint and step and why, and the checks that report them. asr.Batch inherits
it; its arrays are written by C during a step.
"""

import numpy as np

from asr.common import validate as V
from asr.common.serial import BatchLock, serialised
from asr.common.validate import CData, IntArray
from asr.core.errors import SimulationError, status_text
from asr.core.ffi import ffi


class InstanceStatus:
    """The (N,) status arrays C writes (code, failing joint, failing step) and their reports."""

    _lock: BatchLock  # the owner's: serialised methods take it

    def _init_status(self, n: int) -> CData:
        """Zero statuses for n instances; returns an asr_status_arrays* pointing C at them."""
        self._code = np.zeros(n, dtype=np.intc)
        self._bad_joint = np.full(n, -1, dtype=np.intc)
        self._bad_step = np.full(n, -1, dtype=np.longlong)
        self._status_view = V.locked_view(self._code)  # only C writes the statuses
        status = ffi.new("asr_status_arrays*")
        status.code = ffi.cast("int*", ffi.from_buffer(self._code, require_writable=True))
        status.joint = ffi.cast("int*", ffi.from_buffer(self._bad_joint, require_writable=True))
        status.step = ffi.cast("long long*", ffi.from_buffer(self._bad_step, require_writable=True))
        return status

    @property
    def status(self) -> IntArray:
        """(N,) int status per instance, read-only: 0 running, else the C status that froze
        it."""
        return self._status_view

    @serialised
    def errors(self) -> list[dict[str, int | str]]:
        """One dict per frozen instance: instance, joint, step, code and reason."""
        return [
            {
                "instance": int(i),
                "joint": int(self._bad_joint[i]),
                "step": int(self._bad_step[i]),
                "code": int(self._code[i]),
                "reason": status_text(self._code[i]),
            }
            for i in np.flatnonzero(self._code)
        ]

    @serialised
    def stop(self, instance: int, step: int, code: int) -> None:
        """Freeze `instance` for a failure found outside the core (e.g. by the link engine) as
        the core freezes one: status `code`, joint -1, `step`; zero torque until it is reset. An
        instance already frozen keeps its first error."""
        if not self._code[instance]:
            self._code[instance], self._bad_joint[instance] = code, -1
            self._bad_step[instance] = step

    @serialised
    def check(self, hint: str = "") -> None:
        """Raise SimulationError for the first frozen instance, if any."""
        bad = np.flatnonzero(self._code)
        if bad.size:
            i = int(bad[0])
            raise SimulationError(
                i,
                int(self._bad_joint[i]),
                int(self._bad_step[i]),
                self._code[i],
                more=bad.size - 1,
                hint=hint,
            )

    @serialised
    def check_frozen(self, on_error: str, what: str) -> None:
        """With on_error 'raise', refuse to run while instances stay frozen from an earlier
        call: they would silently return zeros. SimulationError names them and the fix."""
        if on_error != "raise" or not self._code.any():
            return
        bad = np.flatnonzero(self._code)
        shown = ", ".join(map(str, bad[:8])) + (", ..." if bad.size > 8 else "")
        self.check(
            hint=f"{what} refused: instance(s) [{shown}] stopped in an earlier call and "
            f"stay frozen (zero torque, zero results) until reset(instances=...) clears "
            f"them; on_error='flag' runs the others"
        )
