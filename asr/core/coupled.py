"""A batch's actuators coupled to a link engine and run in one C call (asr_batch_rollout_controlled,
csrc/engine/asr_engine.h), with an optional controller's hooks inside the loop, and optionally
chosen entries of the engine's positions recorded after every step (asr_qpos_recorder, which
runs the controller inside it).

rollout_coupled is the one way asr.Sim (or any other composition of a Batch, an engine and a
controller) runs: it checks every input once (references, external and feed-forward torques,
the step length, frozen instances), runs the C rollout with the engine's struct and the
controller's, and raises or flags what went wrong. Nothing outside asr.core needs the batch's C
handle.
"""

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.validate import CData, FloatArray
from asr.core.batch import Batch
from asr.core.batch_inputs import (
    Series,
    _record_buffer,
    as_series,
    check_on_error,
    check_record,
    per_step,
    record_indices,
    window,
)
from asr.core.errors import SimulationError
from asr.core.ffi import ffi, lib

# refs as a function of the first step index of a window: refs(t0) -> (N, J, 2)
RefsAt = Callable[[int], npt.ArrayLike]
# a controller's hooks for the window of k steps from step t0: a context manager giving an
# asr_controller* valid inside it
HooksAt = Callable[[int, int], AbstractContextManager[CData]]


class CoupledEngine(Protocol):
    """What rollout_coupled needs of a link engine (asr.engines.base.LinkEngine has it): its C
    struct (an asr_engine*), its time step (s), and two Python hooks around each C call."""

    dt: float
    c_engine: CData

    def run_start(self) -> Any: ...
    def check_run(self, before: Any, batch: Batch, steps: int, on_error: str) -> None: ...


def rollout_coupled(
    batch: Batch,
    engine: CoupledEngine,
    steps: int,
    refs: npt.ArrayLike | RefsAt,
    *,
    tau_ext: npt.ArrayLike | None = None,
    tau_ff: npt.ArrayLike | None = None,
    every: int = 1,
    record: str | Iterable[str] = ("tau_joint",),
    on_error: str = "raise",
    controller: HooksAt | None = None,
    what: str = "rollout",
    refs_name: str = "refs(t0)",
    hint: Callable[[int, int], str] | None = None,
    record_qpos: npt.ArrayLike | None = None,
    qpos_size: int = 0,
) -> dict[str, FloatArray]:
    """`steps` steps of the engine's dt, the batch's actuators coupled to the engine in C.

    refs: (N, steps, J, 2) per step, (N, J, 2) or (J, 2) held, or a function refs(t0) ->
        (N, J, 2) called every `every` steps (t0: the step index), each window then its own C
        call. tau_ext: external link torques, tau_ff: feed-forward motor torques; each None,
        (N, J) held or (N, steps, J), N m. record: state field names recorded after every step.
        controller: hooks(t0, k) for each window (see HooksAt), None: no controller.
        what, refs_name: the caller's name and that of its refs function in messages.
        hint(instance, joint): the likely cause of an instance that diverged in this rollout,
        for its SimulationError (asr.Sim: the explicit coupling's limit).
        record_qpos: (n,) int addresses in each instance's engine positions (qpos, qpos_size
        entries: [0, qpos_size) valid), recorded in C after every step (e.g. a free base's
        position m and quaternion w x y z, which no state field holds); None: none.
        Returns {field: (N, steps, J)}, with record_qpos also "qpos": (N, steps, n) float64,
        qpos[adr] as it is after each step (the engine's units: m, rad, quaternion).
        on_error: 'raise' (SimulationError for the first instance that stopped, and before
        running while instances stay frozen) or 'flag' (see Batch.status)."""
    check_on_error(on_error)
    steps = V.positive_int(steps, "steps", hi=2**31 - 1)
    fields = check_record(record)
    n, nj = batch.n_instances, batch.n_joints
    dt = batch.check_dt(engine.dt)
    ext = None if tau_ext is None else per_step(tau_ext, "tau_ext", n, steps, nj)
    ff = None if tau_ff is None else per_step(tau_ff, "tau_ff", n, steps, nj)
    if ff is not None:
        batch.check_ff(ff[0].reshape(-1, nj))
    adr = None if record_qpos is None else qpos_addresses(record_qpos, qpos_size)
    batch.check_frozen(on_error, what)
    out = np.empty((len(fields), n, steps, nj))
    qout = None if adr is None else np.empty((n, steps, adr.size))
    run = _Run(batch, engine, dt, fields, on_error, controller, hint, adr, qpos_size)
    if callable(refs):
        every = V.positive_int(every, "every")
        for t0 in range(0, steps, every):
            k = min(every, steps - t0)
            r = V.broadcast_input(refs(t0), refs_name, (n, nj, 2))
            q = None if qout is None else qout[:, t0 : t0 + k]
            run(t0, k, (r, 0), window(ext, t0), window(ff, t0), out[:, :, t0 : t0 + k], q)
    else:
        run(0, steps, per_step(refs, "refs", n, steps, nj, (2,)), ext, ff, out, qout)
    res = {f: out[k] for k, f in enumerate(fields)}
    if qout is not None:
        res["qpos"] = qout
    return res


def qpos_addresses(value: npt.ArrayLike, qpos_size: int) -> npt.NDArray[np.intc]:
    """record_qpos checked: a C int array (n,) of addresses in [0, qpos_size) (TypeError for
    anything but a 1-D sequence of ints, ValueError naming the first address out of range)."""
    adr = np.asarray(value)
    if adr.ndim != 1 or (adr.size and not np.issubdtype(adr.dtype, np.integer)):
        raise TypeError(
            f"record_qpos: expected a 1-D sequence of int addresses into qpos, got {value!r}"
        )
    bad = adr[(adr < 0) | (adr >= qpos_size)]
    if bad.size:
        raise ValueError(
            f"record_qpos: address {int(bad[0])} outside qpos, valid range "
            f"[0, {qpos_size - 1}] (the engine's {qpos_size} position entries per instance)"
        )
    return np.ascontiguousarray(adr, dtype=np.intc)


@contextmanager
def _recording(
    inner: AbstractContextManager[CData], adr: npt.NDArray[np.intc], qpos_size: int, out: FloatArray
) -> Iterator[CData]:
    """The asr_controller* of asr_qpos_recorder recording qpos[adr] into out (N, k, n) for one
    C call of k steps, with inner's controller (ffi.NULL: none) run inside it."""
    buf = out if out.flags.c_contiguous else np.empty(out.shape)
    c_adr = ffi.from_buffer("int[]", adr)
    c_buf = ffi.from_buffer("double[]", buf)
    with inner as ctl:
        rec = ffi.new("asr_qpos_record*")
        rec.inner, rec.nq, rec.n, rec.adr, rec.record = ctl, qpos_size, adr.size, c_adr, c_buf
        c_ctl = ffi.new("asr_controller*")
        lib.asr_qpos_recorder(rec, c_ctl)  # ASR_OK: neither is NULL
        yield c_ctl
    if buf is not out:
        out[...] = buf


def with_batch(batch: Batch, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """fn(the batch's C handle, *args) under the batch's lock: a C function of another part that
    reads the batch (e.g. asr_ic_init, asr_ic_solve_ik of csrc/interaction), called without the
    caller holding the handle. what: the call's name in a refusal from inside a callback."""
    with batch.lock:
        return batch.lock.run_c(what, fn, batch._b, *args)


class _Run:
    """One C call of rollout_coupled: a window of k steps from t0 with its inputs."""

    def __init__(
        self,
        batch: Batch,
        engine: CoupledEngine,
        dt: float,
        fields: tuple[str, ...],
        on_error: str,
        controller: HooksAt | None,
        hint: Callable[[int, int], str] | None,
        qpos_adr: npt.NDArray[np.intc] | None,
        qpos_size: int,
    ) -> None:
        self.batch, self.engine, self.dt, self.fields = batch, engine, dt, fields
        self.on_error, self.controller, self.hint = on_error, controller, hint
        self.qpos_adr, self.qpos_size = qpos_adr, qpos_size

    def __call__(
        self,
        t0: int,
        k: int,
        refs: Series,
        ext: Series | None,
        ff: Series | None,
        out: FloatArray,
        qout: FloatArray | None,
    ) -> None:
        b = self.batch
        b.check_refs_per_step(refs, "refs")
        buf = out if out.flags.c_contiguous else np.empty(out.shape)
        keep: list[CData] = []
        before = self.engine.run_start()
        hooks = nullcontext(ffi.NULL) if self.controller is None else self.controller(t0, k)
        if qout is not None and self.qpos_adr is not None and self.qpos_adr.size:
            hooks = _recording(hooks, self.qpos_adr, self.qpos_size, qout)
        with hooks as ctl:
            st: int = b.lock.run_c(
                "rollout",
                lib.asr_batch_rollout_controlled,
                b._b,
                self.engine.c_engine,
                ctl,
                k,
                self.dt,
                as_series(refs, keep),
                as_series(ext, keep),
                as_series(ff, keep),
                len(self.fields),
                ffi.from_buffer("int[]", record_indices(self.fields)),
                _record_buffer(buf, self.fields),
            )
        if buf is not out:
            out[...] = buf
        try:
            b.finish_run(st, self.on_error)
        except SimulationError as exc:
            if self.hint is None or exc.code != lib.ASR_ERR_DIVERGED:
                raise
            raise SimulationError(
                exc.instance,
                exc.joint,
                exc.step,
                exc.code,
                more=len(b.errors()) - 1,
                hint=self.hint(exc.instance, exc.joint),
            ) from None
        self.engine.check_run(before, b, k, self.on_error)


__all__ = ["rollout_coupled", "qpos_addresses", "with_batch", "CoupledEngine", "RefsAt", "HooksAt"]
