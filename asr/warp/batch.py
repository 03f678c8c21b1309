"""WarpBatch: N instances x J actuator joints stepped by Warp kernels (asr.warp.joint), on any Warp
device, in float64 or float32, mirroring asr.Batch.

Every check is the C core's: a WarpBatch holds an asr.Batch of the same joints (its `cpu`) that
validates joints, modes, parameters and reset inputs exactly as asr.Batch does; its parameters are
copied to the device after every change. The device holds the state (N, J, n_fields) in the
batch's float type, the parameters, and the status arrays; `launch_step` runs a step on device
arrays without a host synchronisation or an allocation (graph-capturable on CUDA), which the
MuJoCo Warp coupling and the Newton drive call; `step` is the host convenience (NumPy in and out).

Statuses are asr.Batch's (asr.Batch.status, on_error='flag'): a NaN/inf input or reference stops
only its instance, which then applies zero torque until reset. Not on Warp yet: user compliance
models (asr.register_model), threads and the SIMD choice (CPU-core settings), rollout.
"""

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.validate import FloatArray, IntArray
from asr.core.batch import FIELDS, MOTOR_SCHEMES, Batch, Joint, check_on_error
from asr.core.errors import SimulationError
from asr.core.ffi import lib
from asr.warp import joint, springs
from asr.warp.runtime import device as warp_device
from asr.warp.runtime import warp

wp = warp()

DTYPES: dict[str, Any] = {"float64": wp.float64, "float32": wp.float32}
_NUMPY = {"float64": np.float64, "float32": np.float32}


def _check_dtype(dtype: object) -> str:
    name = getattr(dtype, "__name__", dtype) if not isinstance(dtype, str) else dtype
    if isinstance(dtype, type) and issubclass(dtype, np.floating):
        name = np.dtype(dtype).name
    if not isinstance(name, str) or name not in DTYPES:
        raise ValueError(f"dtype: got {dtype!r}, valid: {', '.join(DTYPES)}")
    return str(name)


class WarpBatch:
    """N instances x J joints of compliant actuators stepped on a Warp device.

    joints, n_instances, max_substep, motor_scheme: as asr.Batch (built-in models only).
    dtype: "float64" (the C core's results: equal bit for bit on Warp's CPU device) or
        "float32" (GPU speed; tests/warp/test_kernels.py states its measured deviation).
    device: a Warp device or its name ("cpu", "cuda:0"); None: Warp's default device.

    Attributes (fixed): n_instances N, n_joints J, specs (the joints' asr.ModelSpec),
    max_substep (s), motor_scheme, dtype (the float type's name) and device (the Warp device).
    """

    def __init__(
        self,
        joints: Sequence[Joint | str | dict[str, Any]] | Joint | str | dict[str, Any],
        n_instances: int = 1,
        *,
        dtype: str = "float64",
        device: object = None,
        max_substep: float = 1e-3,
        motor_scheme: str = "euler",
    ) -> None:
        self.dtype: str = _check_dtype(dtype)
        self.device: Any = warp_device(device)
        self._cpu = Batch(joints, n_instances, max_substep=max_substep, motor_scheme=motor_scheme)
        for k, spec in enumerate(self._cpu.specs):
            if spec.name not in springs.KIND:
                raise ValueError(
                    f"joints[{k}]: model {spec.name!r} is a user (Python or C) compliance model; "
                    f"asr.warp steps only the built-in models ({', '.join(springs.KIND)}) "
                    "(user models are not on Warp yet)"
                )
        self.n_instances: int = self._cpu.n_instances
        self.n_joints: int = self._cpu.n_joints
        self.specs = self._cpu.specs
        self.max_substep: float = self._cpu.max_substep
        self.motor_scheme: str = self._cpu.motor_scheme
        self._F = DTYPES[self.dtype]
        self._np = _NUMPY[self.dtype]
        self._k = joint.build(self._F)
        n, nj, dev = self.n_instances, self.n_joints, self.device
        self._n_param = max(len(s.all_params) for s in self.specs)
        a = self._k.Arrays()

        def per_joint(values: list[int]) -> Any:
            return wp.array(values, dtype=wp.int32, device=dev)

        a.kinds = per_joint([springs.KIND[s.name] for s in self.specs])
        a.nmotors = per_joint([s.nmotor for s in self.specs])
        a.kin_th2 = per_joint([int(s.kinematic_th2) for s in self.specs])
        a.modes = per_joint([int(m) for m in self._cpu.modes])
        a.scheme = int(MOTOR_SCHEMES[self.motor_scheme])
        a.state = wp.zeros((n, nj, lib.ASR_NFIELD), dtype=self._F, device=dev)
        a.code = wp.zeros(n, dtype=wp.int32, device=dev)
        a.bad_joint = wp.full(n, -1, dtype=wp.int32, device=dev)
        a.bad_step = wp.full(n, -1, dtype=wp.int64, device=dev)
        a.count = wp.zeros(1, dtype=wp.int64, device=dev)
        self._a = a
        self._tau_joint = a.state[:, :, lib.ASR_F_TAU_JOINT]  # a strided (N, J) view
        self._zeros = wp.zeros((n, nj), dtype=self._F, device=dev)  # absent tau_ext / tau_ff
        self._all = wp.full(n, True, dtype=wp.bool, device=dev)
        self._upload_params()
        self.reset()

    @property
    def cpu(self) -> Batch:
        """The asr.Batch of the same joints that checks parameters and inputs (its own state
        is not the device's: it is never stepped)."""
        return self._cpu

    @property
    def modes(self) -> IntArray:
        """Operation mode of each joint, (J,) int (a copy; use set_mode to change)."""
        return self._cpu.modes

    def set_mode(self, joint: int, mode: int) -> None:
        """As asr.Batch.set_mode (the same checks); the device's mode table is written in
        place."""
        self._cpu.set_mode(joint, mode)
        self._a.modes.assign(self._cpu.modes.astype(np.int32))

    def _upload_params(self) -> None:
        """The parameters of every joint to the device: (1, J, P) when no parameter varies
        across instances, else (N, J, P); P the most parameters a joint has. Written into the
        same device array while its shape stays (a captured CUDA graph keeps reading it); a
        change between shared and per-instance values allocates a new one."""
        n, nj = self.n_instances, self.n_joints
        rows = []
        for j, spec in enumerate(self.specs):
            rows.append([self._cpu.get_param(j, p.name) for p in spec.all_params])
        varying = any(np.any(v != v[0]) for row in rows for v in row)
        m = n if varying else 1
        table = np.zeros((m, nj, self._n_param), dtype=self._np)
        for j, row in enumerate(rows):
            for k, v in enumerate(row):
                table[:, j, k] = v if varying else v[0]
        old = getattr(self._a, "params", None)
        if old is not None and old.shape == table.shape:
            old.assign(table)
        else:
            self._a.params = wp.array(table, dtype=self._F, device=self.device)
        self._a.prow_stride = 1 if varying else 0

    def set_param(self, joint: int, name: str, value: npt.ArrayLike) -> None:
        """As asr.Batch.set_param (the same checks), then the parameters go to the device."""
        self._cpu.set_param(joint, name, value)
        self._upload_params()

    def set_params(self, joint: int, **params: npt.ArrayLike) -> None:
        """As asr.Batch.set_params (all or none), then the parameters go to the device."""
        self._cpu.set_params(joint, **params)
        self._upload_params()

    def get_param(self, joint: int, name: str) -> FloatArray:
        """Parameter `name` of `joint` for every instance, (N,) float64 (a copy)."""
        return self._cpu.get_param(joint, name)

    # ------------------------------------------------------------ state

    @property
    def state(self) -> Any:
        """The device state, a wp.array3d (N, J, n_fields) of the batch's dtype, fields in
        asr.core.batch.FIELDS order (units in FIELD_DOCS). Live: steps write it."""
        return self._a.state

    def field(self, name: str) -> FloatArray:
        """State field `name` as a NumPy (N, J) array (a copy, the batch's dtype)."""
        if not isinstance(name, str) or name not in FIELDS:
            raise ValueError(f"field: unknown state field {name!r}; valid: {', '.join(FIELDS)}")
        return np.array(self._a.state.numpy()[..., FIELDS.index(name)])

    @property
    def status(self) -> IntArray:
        """(N,) int status per instance (a copy): 0 running, else the C core's status code
        that froze it (as asr.Batch.status)."""
        return self._a.code.numpy().astype(np.intc)

    @property
    def status_arrays(self) -> tuple[Any, Any, Any]:
        """The device status arrays (code int32, failing joint int32, failing step int64),
        each (N,): what errors() reads, for device-side checks."""
        return self._a.code, self._a.bad_joint, self._a.bad_step

    def errors(self) -> list[dict[str, int]]:
        """One dict per frozen instance: instance, joint, step and code (copied from the
        device)."""
        code, bj, bs = self._a.code.numpy(), self._a.bad_joint.numpy(), self._a.bad_step.numpy()
        return [
            {"instance": int(i), "joint": int(bj[i]), "step": int(bs[i]), "code": int(code[i])}
            for i in np.flatnonzero(code)
        ]

    @property
    def step_count(self) -> int:
        """Steps taken since the last full reset (copied from the device)."""
        return int(self._a.count.numpy()[0])

    # ------------------------------------------------------------ reset

    def _shape(self, *tail: int) -> tuple[int, ...]:
        return (self.n_instances, self.n_joints) + tail

    def _host(self, value: npt.ArrayLike, name: str, shape: tuple[int, ...]) -> Any:
        arr = V.real_array(value, name)
        try:
            out = np.broadcast_to(arr, shape)
        except ValueError:
            raise ValueError(f"{name}: shape {arr.shape} does not broadcast to {shape}") from None
        return wp.array(
            np.ascontiguousarray(out, dtype=self._np), dtype=self._F, device=self.device
        )

    def reset(
        self, q0: npt.ArrayLike = 0.0, refs: npt.ArrayLike | None = None, *, mask: Any = None
    ) -> None:
        """As asr.Batch.reset (the same checks): zero the state and statuses, link angles q0
        (N, J), rad, motors where refs (N, J, 2) put them in the joint's mode, else at zero
        deflection. mask: None (every instance, and the step count restarts) or an (N,) bool
        array, NumPy or a Warp device array (then read on the device, no host copy of it):
        only those instances are reset."""
        q = V.broadcast_input(q0, "q0", self._shape())
        r = None if refs is None else V.broadcast_input(refs, "refs", self._shape(2))
        if mask is None:
            self._cpu.reset(q, r)
            dmask = self._all
        elif isinstance(mask, wp.array):
            if mask.shape != (self.n_instances,) or mask.dtype != wp.bool:
                raise ValueError(
                    f"mask: expected a Warp bool array of shape ({self.n_instances},), got "
                    f"{mask.dtype.__name__} {mask.shape}"
                )
            if mask.device != self.device:
                raise ValueError(f"mask: on device {mask.device}, the batch is on {self.device}")
            self._cpu.reset(q, r)  # the checks (the CPU batch's own state is never stepped)
            dmask = mask
        else:
            m = np.asarray(mask)
            if m.shape != (self.n_instances,) or m.dtype != np.bool_:
                raise ValueError(
                    f"mask: expected a bool array of shape ({self.n_instances},), got "
                    f"{m.dtype} {m.shape}"
                )
            self._cpu.reset(q, r, instances=np.flatnonzero(m))
            dmask = wp.array(m, dtype=wp.bool, device=self.device)
        dq = self._host(q, "q0", self._shape())
        dr = self._host(0.0 if r is None else r, "refs", self._shape(2))
        self.launch_reset(dmask, dq, dr, with_refs=r is not None)
        if mask is None:
            self._a.count.zero_()

    def launch_reset(self, mask: Any, q0: Any, refs: Any, *, with_refs: bool = True) -> None:
        """reset of the instances of mask (wp.array (N,) bool) from device arrays q0 (N, J) and
        refs (N, J, 2) of the batch's dtype, without host synchronisation: the device-side
        reset an RL loop calls. No checks but the C core's: a reference that is not finite or
        that the model's map refuses stops the instance (status ASR_ERR_INPUT / ASR_ERR_RANGE)
        instead of raising. The step count is left alone."""
        wp.launch(
            self._k.reset,
            dim=self.n_instances,
            inputs=[self._a, mask, q0, refs, int(with_refs)],
            device=self.device,
        )

    # ------------------------------------------------------------ stepping

    def _substeps(self, dt: float) -> tuple[int, float]:
        h = self._cpu.check_dt(dt)
        nsub = int(math.ceil(h / self.max_substep))
        return nsub, h

    def launch_step(
        self,
        dt: float,
        q: Any,
        qd: Any,
        refs: Any,
        tau_ext: Any = None,
        tau_ff: Any = None,
    ) -> Any:
        """One step from device arrays: q, qd (N, J) wp.array2d of the batch's dtype, rad and
        rad/s; refs (N, J, 2) wp.array3d (units per mode); tau_ext, tau_ff (N, J), N m, or None
        (zero). Returns the device array of joint torques tau_joint, (N, J) N m: a strided view
        of the state (the same array object every call), valid until the next step. No host
        synchronisation, no device allocation: on CUDA it can be captured in a graph (dt is
        then fixed by the capture). Inputs are not checked beyond Warp's types; a NaN/inf
        input stops its instance (status ASR_ERR_INPUT)."""
        nsub, h = self._substeps(dt)
        ext = self._zeros if tau_ext is None else tau_ext
        ff = self._zeros if tau_ff is None else tau_ff
        F = self._F
        wp.launch(
            self._k.step,
            dim=self.n_instances,
            inputs=[self._a, q, qd, refs, ext, ff, F(h), F(h / nsub), nsub],
            device=self.device,
        )
        wp.launch(self._k.count, dim=1, inputs=[self._a], device=self.device)
        return self._tau_joint

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
        """As asr.Batch.step, host arrays in (broadcast), a NumPy (N, J) copy of tau_joint out,
        N m. NaN/inf inputs are allowed: they stop their instance. on_error: 'raise'
        (SimulationError when an instance stops, and before stepping while instances stay
        frozen) or 'flag' (see status)."""
        check_on_error(on_error)
        self._substeps(dt)
        args = [self._host(q, "q", self._shape()), self._host(qd, "qd", self._shape())]
        ra = np.broadcast_to(V.real_array(refs, "refs"), self._shape(2))
        self._cpu.check_refs(np.where(np.isfinite(ra), ra, 0.0), "refs")
        args.append(self._host(ra, "refs", self._shape(2)))
        ext = None if tau_ext is None else self._host(tau_ext, "tau_ext", self._shape())
        ff = None
        if tau_ff is not None:
            ffa = np.broadcast_to(V.real_array(tau_ff, "tau_ff"), self._shape())
            self._cpu.check_ff(np.where(np.isfinite(ffa), ffa, 0.0))
            ff = self._host(ffa, "tau_ff", self._shape())
        if on_error == "raise":
            self._raise_frozen("step: instances stay frozen from an earlier call; reset them")
        out = self.launch_step(dt, args[0], args[1], args[2], ext, ff)
        tau = np.array(out.numpy())
        if on_error == "raise":
            self._raise_frozen("")
        return tau

    def _raise_frozen(self, hint: str) -> None:
        errs = self.errors()
        if errs:
            e = errs[0]
            raise SimulationError(
                e["instance"], e["joint"], e["step"], e["code"], more=len(errs) - 1, hint=hint
            )

    def __repr__(self) -> str:
        joints = ", ".join(f"{s.name}/mode {m}" for s, m in zip(self.specs, self.modes))
        return (
            f"WarpBatch(n_instances={self.n_instances}, joints=[{joints}], dtype={self.dtype}, "
            f"device={self.device})"
        )
