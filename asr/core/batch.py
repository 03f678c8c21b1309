"""The batch: N instances x J compliant joints stepped together in C.

Every parameter is a scalar shared by all instances or an array with one value per instance, so
one batch is a parameter sweep. The state is one NumPy block (N, J, n_fields) owned here and
written by C, one contiguous record per joint; its fields are exposed as read-only (N, J)
strided views, never copies.

This module holds the Batch class; the C name tables (FIELDS, MODES, ...), Joint and the input
checks it shares with asr.Sim live in asr.core.batch_inputs and are imported from here, as before.
"""

from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.serial import BatchLock, serialised
from asr.common.validate import CData, FloatArray, IntArray
from asr.core.batch_inputs import (
    FIELD_DOCS,
    FIELD_UNITS,
    FIELDS,
    MODES,
    MOTOR_SCHEMES,
    ON_ERROR,
    SIMD_KERNELS,
    Joint,
    Series,
    _as_joint,
    _check_simd_cap,
    _record_buffer,
    as_series,
    check_feed_forward,
    check_mode,
    check_on_error,
    check_record,
    check_step_length,
    param_refusal,
    per_step,
    record_indices,
    window,
)
from asr.core.batch_status import InstanceStatus
from asr.core.errors import raise_for_status
from asr.core.ffi import ffi, lib
from asr.core.models import ModelSpec, check_ref2, get_model
from asr.core.state_fields import StateFields

__all__ = [
    "as_series",
    "Batch",
    "check_mode",
    "check_on_error",
    "check_record",
    "FIELD_DOCS",
    "FIELD_UNITS",
    "FIELDS",
    "Joint",
    "MODES",
    "MOTOR_SCHEMES",
    "ON_ERROR",
    "per_step",
    "record_indices",
    "SIMD_KERNELS",
    "window",
]


class Batch(StateFields, InstanceStatus):
    """N instances x J joints of compliant actuators.

    joints: a sequence of asr.Joint (or model names, or dicts with 'model', 'mode' and
        parameter keys); joints may use different models and modes.
    n_instances: N. threads: native worker threads (results do not depend on it; 1 with a
        Python-implemented model, see `threads`).
    max_substep: longest motor integration sub-step, s (each step is split into
        ceil(dt / max_substep) sub-steps; the update is stable for any sub-step).
    motor_scheme: "euler" (default) or "trapezoid", see MOTOR_SCHEMES.

    Threads: calls on one batch are serialised by its lock (see `lock`), so any number of
    Python threads may share it; the state views (batch.q, ...) are live and change under a
    reader while another thread steps. Calls from inside the batch's own running step (a Python
    model's callback), and in a child forked mid-call, raise RuntimeError (see asr.common.serial).
    A failed instance is frozen (zero torque) until reset(instances=...); meanwhile step and
    rollout with on_error='raise' refuse to run (SimulationError naming it).
    """

    def __init__(
        self,
        joints: Sequence[Joint | str | dict[str, Any]] | Joint | str | dict[str, Any],
        n_instances: int = 1,
        *,
        threads: int = 1,
        max_substep: float = 1e-3,
        motor_scheme: str = "euler",
    ) -> None:
        if isinstance(joints, (str, Joint, dict)):
            joints = [joints]
        if not isinstance(joints, (list, tuple)):
            raise TypeError(
                f"joints: expected a sequence of asr.Joint, model names or dicts, "
                f"got {type(joints).__name__} {joints!r}"
            )
        joint_list = [_as_joint(j, k) for k, j in enumerate(joints)]
        if not joint_list:
            raise ValueError("joints: need at least one joint")
        self._lock = BatchLock()  # reentrant: a locked method may call another
        _check_simd_cap()
        self._n_instances = V.positive_int(n_instances, "n_instances", hi=2**31 - 1)
        self._n_joints = len(joint_list)
        self._models = [get_model(j.model) for j in joint_list]
        self._specs = tuple(m.spec for m in self._models)
        modes = [
            check_mode(
                6 if j.mode is None and s.nmotor else 0 if j.mode is None else j.mode,
                s,
                f"joints[{k}].",
            )
            for k, (j, s) in enumerate(zip(joint_list, self.specs))
        ]
        self._modes: IntArray = np.array(modes, dtype=np.intc)
        n, nj = self.n_instances, self.n_joints
        self._state = np.zeros((n, nj, lib.ASR_NFIELD))  # one contiguous record per joint
        status = self._init_status(n)
        self._bound = [m.bind() for m in self._models]  # a Python model's errors stay this batch's
        defs = ffi.new("const asr_model_def*[]", [b.cdef for b in self._bound])
        out = ffi.new("asr_batch**")
        st = lib.asr_batch_create(
            out,
            n,
            nj,
            defs,
            ffi.from_buffer("int[]", self._modes),
            ffi.from_buffer("double[]", self._state, require_writable=True),
            status[0],
        )
        raise_for_status(st, "Batch")
        self._b = ffi.gc(out[0], lib.asr_batch_destroy)
        self._python_models = [b for b in self._bound if b.python is not None]
        # live views that cannot be made writable: only C writes the state and statuses
        state = V.locked_view(self._state)
        self._views = {f: state[..., k] for k, f in enumerate(FIELDS)}
        for k, j in enumerate(joint_list):
            self.set_params(k, **j.params)
        self.threads = threads
        self.max_substep = max_substep
        self.motor_scheme = motor_scheme

    # ------------------------------------------------------------ configuration

    @property
    def n_instances(self) -> int:
        """N, the number of instances (fixed)."""
        return self._n_instances

    @property
    def n_joints(self) -> int:
        """J, the number of joints (fixed)."""
        return self._n_joints

    @property
    def specs(self) -> tuple[ModelSpec, ...]:
        """The compliance model of each joint, a (J,) tuple of asr.ModelSpec."""
        return self._specs

    @property
    def lock(self) -> BatchLock:
        """The batch's reentrant lock. Every call takes it; hold it (`with batch.lock:`) to make
        several calls one unit that no other thread's call comes between."""
        return self._lock

    @property
    def threads(self) -> int:
        """Native worker threads step and rollout use: the count set (1 to 1024), except 1 in a
        batch with a Python-implemented model (it holds the GIL; extra threads would only wait
        for it), whatever was asked for."""
        return self._threads

    @threads.setter
    @serialised
    def threads(self, n: int) -> None:
        count = V.positive_int(n, "threads", hi=1024)
        effective = 1 if self._python_models else count
        raise_for_status(lib.asr_batch_set_threads(self._b, effective), "threads")
        self._threads = effective

    @property
    def simd(self) -> str:
        """The instruction set the C step runs on: "avx512", "avx2" or "baseline", the widest
        this CPU has; the environment variable ASR_SIMD (one of those names) caps it for batches
        created after it is set. Results are the same bits on every one."""
        return str(ffi.string(lib.asr_batch_simd(self._b)).decode())

    @property
    def max_substep(self) -> float:
        """Longest motor integration sub-step, s."""
        return self._max_substep

    @max_substep.setter
    @serialised
    def max_substep(self, h: float) -> None:
        step = V.positive_float(h, "max_substep")
        raise_for_status(lib.asr_batch_set_max_substep(self._b, step), "max_substep")
        self._max_substep = step

    @property
    def motor_scheme(self) -> str:
        """Motor sub-step scheme: "euler" or "trapezoid" (see MOTOR_SCHEMES)."""
        return self._motor_scheme

    @motor_scheme.setter
    @serialised
    def motor_scheme(self, name: str) -> None:
        if not isinstance(name, str) or name not in MOTOR_SCHEMES:
            raise ValueError(f"motor_scheme: got {name!r}, valid: {', '.join(MOTOR_SCHEMES)}")
        raise_for_status(
            lib.asr_batch_set_motor_scheme(self._b, MOTOR_SCHEMES[name]), "motor_scheme"
        )
        self._motor_scheme = name

    @property
    def modes(self) -> IntArray:
        """Operation mode of each joint, (J,) int (a copy; use set_mode to change)."""
        return np.copy(self._modes)

    @serialised
    def set_mode(self, joint: int, mode: int) -> None:
        """Change the operation mode of `joint` (0-6, see asr.core.batch.MODES)."""
        j = self._joint_index(joint)
        m = check_mode(mode, self.specs[j], f"joint {j}: ")
        raise_for_status(lib.asr_batch_set_mode(self._b, j, m), "set_mode")
        self._modes[j] = m

    def _joint_index(self, joint: int) -> int:
        return V.positive_int(joint, "joint", lo=0, hi=self.n_joints - 1)

    def _param_index(self, j: int, name: str) -> int:
        names = [p.name for p in self.specs[j].all_params]
        if name not in names:
            raise ValueError(
                f"joint {j} ({self.specs[j].name}): unknown parameter {name!r}; "
                f"valid: {', '.join(names)}"
            )
        return names.index(name)

    @serialised
    def set_param(self, joint: int, name: str, value: npt.ArrayLike) -> None:
        """Set parameter `name` of `joint`: a scalar shared by every instance or an (N,) array,
        one value per instance. Takes effect at the next step."""
        j = self._joint_index(joint)
        k = self._param_index(j, name)
        v = V.real_array(value, name)
        if v.ndim == 0 or v.size == 1:
            v = v.reshape(1)
        elif v.shape != (self.n_instances,):
            raise ValueError(
                f"joint {j} {name}: expected a scalar or shape ({self.n_instances},), got {v.shape}"
            )
        bad = ffi.new("int*", -1)
        st = lib.asr_batch_set_param(self._b, j, k, ffi.from_buffer("double[]", v), v.size, bad)
        if st == lib.ASR_ERR_RANGE and bad[0] >= 0:
            raise ValueError(param_refusal(self.specs[j], j, k, v, bad[0], self.get_param))
        raise_for_status(st, f"joint {j} {name}")

    @serialised
    def set_params(self, joint: int, **params: npt.ArrayLike) -> None:
        """Set several parameters of `joint` (see set_param), all or none: when one is refused,
        those set before it get their previous values back (set again in reverse order, so
        every intermediate state is one that was already valid) and the error is raised."""
        done = []
        try:
            for name, value in params.items():
                old = self.get_param(joint, name)
                self.set_param(joint, name, value)
                done.append((name, old))
        except BaseException:
            for name, old in reversed(done):
                self.set_param(joint, name, old[0] if np.all(old == old[0]) else old)
            raise

    @serialised
    def get_param(self, joint: int, name: str) -> FloatArray:
        """Parameter `name` of `joint` for every instance, (N,) array (a copy)."""
        j = self._joint_index(joint)
        k = self._param_index(j, name)
        out = np.empty(self.n_instances)
        raise_for_status(
            lib.asr_batch_get_param(
                self._b, j, k, ffi.from_buffer("double[]", out, require_writable=True)
            ),
            "get_param",
        )
        return out

    # ------------------------------------------------------------ state

    def __setattr__(self, name: str, value: object) -> None:
        if name in FIELDS:  # a property without a setter would say only "has no setter"
            raise AttributeError(
                f"{name}: Batch's state fields are read-only views of the C core's state; "
                "start from other values with reset(q0=..., refs=...)"
            )
        super().__setattr__(name, value)

    def __getattr__(self, name: str) -> FloatArray:
        views: dict[str, FloatArray] | None = self.__dict__.get("_views")
        if views is not None and name in views:
            return views[name]
        raise AttributeError(
            f"{type(self).__name__!s} has no attribute {name!r}; state fields: " + ", ".join(FIELDS)
        )

    def field(self, name: str) -> FloatArray:
        """Read-only (N, J) view of state field `name` (see asr.core.batch.FIELD_DOCS)."""
        if not isinstance(name, str) or name not in self._views:
            raise ValueError(f"field: unknown state field {name!r}; valid: {', '.join(FIELDS)}")
        return self._views[name]

    @property
    @serialised
    def step_count(self) -> int:
        """Steps taken since the last reset."""
        return int(lib.asr_batch_step_count(self._b))

    # ------------------------------------------------------------ stepping

    def _shape(self, *tail: int) -> tuple[int, ...]:
        return (self.n_instances, self.n_joints) + tail

    @serialised
    def reset(
        self,
        q0: npt.ArrayLike = 0.0,
        refs: npt.ArrayLike | None = None,
        *,
        instances: npt.ArrayLike | None = None,
    ) -> None:
        """Zero the state and statuses; link angles q0 (N, J), rad; motors where refs
        (N, J, 2) put them in the joint's mode, else at zero deflection. instances: reset only
        these (a sequence of indices; q0 and refs still have the whole batch's shape), leaving
        the others and the step count alone."""
        q = V.broadcast_input(q0, "q0", self._shape())
        r = None
        if refs is not None:
            r = V.broadcast_input(refs, "refs", self._shape(2))
            self.check_refs(r, "refs")
        qp = ffi.from_buffer("double[]", q)
        rp = ffi.from_buffer("double[]", r) if r is not None else ffi.NULL
        if instances is None:
            st = self._lock.run_c("reset", lib.asr_batch_reset, self._b, qp, rp)
        else:
            idx = V.instance_indices(instances, self.n_instances)
            st = self._lock.run_c(
                "reset",
                lib.asr_batch_reset_instances,
                self._b,
                idx.size,
                ffi.from_buffer("int[]", idx),
                qp,
                rp,
            )
        self._raise_python()
        raise_for_status(st, "reset")

    def _raise_python(self) -> None:
        for m in self._python_models:
            m.raise_pending()

    @serialised
    def step(
        self,
        q: npt.ArrayLike,
        qd: npt.ArrayLike,
        refs: npt.ArrayLike,
        dt: float,
        *,
        tau_ext: npt.ArrayLike | None = None,
        tau_ff: npt.ArrayLike | None = None,
        on_error: str = "raise",
    ) -> FloatArray:
        """Advance every instance by dt (s) given link angles q and velocities qd (N, J), rad and
        rad/s, references refs (N, J, 2) (units per mode), optional external link torques
        tau_ext and feed-forward motor torques tau_ff (N, J), N m. Inputs broadcast.
        Returns the joint torques to apply, a read-only (N, J) view of field tau_joint, N m.
        on_error: 'raise' (SimulationError when an instance stops, and before stepping while
        instances stay frozen from an earlier call) or 'flag' (see status)."""
        check_on_error(on_error)
        h = self.check_dt(dt)
        qa = V.broadcast_input(q, "q", self._shape())
        qda = V.broadcast_input(qd, "qd", self._shape())
        ra = V.broadcast_input(refs, "refs", self._shape(2))
        self.check_refs(ra, "refs")
        ext = ff = ffi.NULL
        if tau_ext is not None:
            ext_a = V.broadcast_input(tau_ext, "tau_ext", self._shape())
            ext = ffi.from_buffer("double[]", ext_a)
        if tau_ff is not None:
            ff_a = V.broadcast_input(tau_ff, "tau_ff", self._shape())
            self.check_ff(ff_a)
            ff = ffi.from_buffer("double[]", ff_a)
        self.check_frozen(on_error, "step")
        st = self._lock.run_c(
            "step",
            lib.asr_batch_step,
            self._b,
            h,
            ffi.from_buffer("double[]", qa),
            ffi.from_buffer("double[]", qda),
            ffi.from_buffer("double[]", ra),
            ext,
            ff,
        )
        self.finish_run(st, on_error)
        return self._views["tau_joint"]

    @serialised
    def rollout(
        self,
        steps: int,
        dt: float,
        refs: npt.ArrayLike,
        q: npt.ArrayLike = 0.0,
        qd: npt.ArrayLike = 0.0,
        *,
        tau_ext: npt.ArrayLike | None = None,
        record: str | Iterable[str] = ("tau_joint",),
        out: FloatArray | None = None,
        on_error: str = "raise",
    ) -> dict[str, FloatArray]:
        """Run `steps` steps in one C call (threads started once), the link fixed at q, qd or
        following a prescribed trajectory.

        Layout, instance first (shared with Sim.rollout): every input is held over the rollout
        or given per step, refs: (N, J, 2) or (N, steps, J, 2); q, qd: (N, J) or (N, steps, J),
        rad and rad/s; tau_ext: None, (N, J) or (N, steps, J), N m. record: state field names
        copied after every step. out: optional float64 C-contiguous (len(record), N, steps, J)
        array. Returns {field: (N, steps, J) array} (views into out). on_error: as for step."""
        check_on_error(on_error)
        n_steps = V.positive_int(steps, "steps", hi=2**31 - 1)
        h = self.check_dt(dt)
        fields = check_record(record)
        n, nj = self.n_instances, self.n_joints
        rs = per_step(refs, "refs", n, n_steps, nj, (2,))
        self.check_refs_per_step(rs, "refs")
        qs = per_step(q, "q", n, n_steps, nj)
        qds = per_step(qd, "qd", n, n_steps, nj)
        ext = None if tau_ext is None else per_step(tau_ext, "tau_ext", n, n_steps, nj)
        shape = (len(fields), n, n_steps, nj)
        if out is None:
            out = np.empty(shape)
        V.output_array(out, "out", shape)
        idx = record_indices(fields)
        keep: list[CData] = []
        self.check_frozen(on_error, "rollout")
        st = self._lock.run_c(
            "rollout",
            lib.asr_batch_rollout,
            self._b,
            n_steps,
            h,
            as_series(qs, keep),
            as_series(qds, keep),
            as_series(rs, keep),
            as_series(ext, keep),
            len(fields),
            ffi.from_buffer("int[]", idx),
            _record_buffer(out, fields),
        )
        self.finish_run(st, on_error)
        return {f: out[r] for r, f in enumerate(fields)}

    # ------------------------------------------------------------ engine interface
    # The checks and the status handling asr.core.coupled.rollout_coupled (a batch coupled to a
    # link engine and a controller, asr.Sim's rollout) shares with step and rollout.

    @serialised
    def check_refs(self, refs: FloatArray, name: str) -> None:
        """Second references bounded by a parameter (AwAS-II: the pivot position, valid in
        [0, L)), in the modes that use them. refs: (..., J, 2); name: for the message."""
        for j, spec in enumerate(self.specs):
            if spec.preset.below_param is None or self._modes[j] < 2:
                continue
            check_ref2(
                spec,
                refs[..., j, 1],
                self.get_param(j, spec.preset.below_param),
                f"{name}[..., {j}, 1]",
            )

    def check_refs_per_step(self, series: Series, name: str) -> None:
        """check_refs for a per_step (array, stride_t): (N, J, 2) held or (N, steps, J, 2)."""
        arr, stride_t = series
        self.check_refs(arr if stride_t == 0 else np.moveaxis(arr, 1, 0), name)

    def check_ff(self, tau_ff: FloatArray) -> None:
        """Feed-forward motor torques (M, J), N m: nonzero only on single-motor joints."""
        check_feed_forward(self.specs, tau_ff)

    def check_dt(self, dt: float) -> float:
        """A step length dt, s, that max_substep splits into at most ASR_MAX_SUBSTEPS motor
        sub-steps; returns it as a float."""
        return check_step_length(dt, self._max_substep)

    @serialised
    def finish_run(self, st: int, on_error: str) -> None:
        """After a C step or rollout with status st: raise a Python model's pending error, a
        batch-wide failure, and with on_error 'raise' the first frozen instance's."""
        self._raise_python()
        if st in (lib.ASR_ERR_NULL, lib.ASR_ERR_NOMEM) or (
            st == lib.ASR_ERR_RANGE and not self._code.any()
        ):
            raise_for_status(st, "step")
        if st != lib.ASR_OK and on_error == "raise":
            self.check()

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "a Batch cannot be pickled (C state, a lock of this process). Save what "
            "rebuilds it: joints, modes, n_instances, each get_param, and the state "
            "fields you need (np.array(batch.field(name))); reset a new one to them"
        )

    def __repr__(self) -> str:
        joints = ", ".join(f"{s.name}/mode {m}" for s, m in zip(self.specs, self._modes))
        return f"Batch(n_instances={self.n_instances}, joints=[{joints}])"
