"""asr's actuators coupled to MuJoCo Warp: `nworld` worlds of a robot, entirely on a Warp device.

MjwSim mirrors asr.Sim with the MuJoCo engine (asr.engines.mujoco, csrc/engine/engine.c): the
robot (robots/<name>/robot.toml, its variant) gives the MJCF and the actuated joints, one
asr.warp.WarpBatch steps the actuators of every world. Each step, on the device, with no host
round trip:

1. gather: the link state of the actuated joints, q = d.qpos[:, qpos_adr], qd = d.qvel[:,
   dof_adr] (N, J), at the start of the step (what mj_step1 leaves them: the state before the
   step);
2. the actuators' step (WarpBatch.launch_step) from that state and the step's references;
3. scatter: the joint torques into d.qfrc_applied[:, dof_adr], held over the step (the explicit
   coupling of asr.Sim: the torque of a step comes from the state at its start);
4. mujoco_warp.step, then the step's records.

asr.Sim splits MuJoCo's step into mj_step1 / mj_step2 around the actuators; MuJoCo Warp's step
computes the same with the torques written before it, for the integrators asr.Sim accepts (Euler
and implicitfast: the applied forces enter the step once, at its start state).

Precision: MuJoCo Warp computes in float32 only (its arrays are float32); the actuators run in
`dtype` ("float32", default, or "float64"), the link state cast to it and the torques cast back.

On CUDA the whole rollout is one sequence of kernel launches; `rollout(..., capture=True)`
records it once as a CUDA graph (wp.ScopedCapture) and replays it while the same buffers are
given again.
"""

from collections.abc import Iterable, Mapping
from typing import Any

import mujoco
import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.optional import need
from asr.core.batch_inputs import FIELDS, check_record
from asr.core.errors import SimulationError
from asr.robots.robot import Robot, joint_addresses, load_robot
from asr.warp.batch import WarpBatch
from asr.warp.runtime import device as warp_device
from asr.warp.runtime import warp

# recorded by default: the link state after the step and the joint torque applied over it
DEFAULT_RECORD = ("q", "qd", "tau_joint")
# the integrators asr.Sim couples with (asr.engines.mujoco.Engine): the applied forces enter once
_INTEGRATORS = ("Euler", "implicitfast")
_DTYPES = ("float32", "float64")
_KERNELS: dict[str, Any] = {}


def _mjw() -> Any:
    """The mujoco_warp module (the extra [warp])."""
    warp()
    return need("mujoco_warp", "warp", "asr.warp.mujoco")


def _kernels(dtype: str) -> Any:
    """The gather / scatter / record kernels for actuators in `dtype`, made once per dtype."""
    if dtype in _KERNELS:
        return _KERNELS[dtype]
    wp = warp()
    real = wp.float32 if dtype == "float32" else wp.float64

    @wp.kernel(module="unique")
    def gather(
        qpos: wp.array2d(dtype=wp.float32),  # type: ignore[valid-type]
        qvel: wp.array2d(dtype=wp.float32),  # type: ignore[valid-type]
        qpos_adr: wp.array(dtype=wp.int32),  # type: ignore[valid-type]
        dof_adr: wp.array(dtype=wp.int32),  # type: ignore[valid-type]
        q: wp.array2d(dtype=real),  # type: ignore[valid-type]
        qd: wp.array2d(dtype=real),  # type: ignore[valid-type]
    ) -> None:
        i, j = wp.tid()
        q[i, j] = real(qpos[i, qpos_adr[j]])
        qd[i, j] = real(qvel[i, dof_adr[j]])

    @wp.kernel(module="unique")
    def scatter(
        tau: wp.array2d(dtype=real),  # type: ignore[valid-type]
        dof_adr: wp.array(dtype=wp.int32),  # type: ignore[valid-type]
        qfrc: wp.array2d(dtype=wp.float32),  # type: ignore[valid-type]
    ) -> None:
        i, j = wp.tid()
        qfrc[i, dof_adr[j]] = wp.float32(tau[i, j])

    @wp.kernel(module="unique")
    def take_refs(
        refs: wp.array4d(dtype=real),  # type: ignore[valid-type]
        t: int,
        out: wp.array3d(dtype=real),  # type: ignore[valid-type]
    ) -> None:
        i, j, k = wp.tid()
        out[i, j, k] = refs[i, t, j, k]

    @wp.kernel(module="unique")
    def take(
        values: wp.array3d(dtype=real),  # type: ignore[valid-type]
        t: int,
        out: wp.array2d(dtype=real),  # type: ignore[valid-type]
    ) -> None:
        i, j = wp.tid()
        out[i, j] = values[i, t, j]

    @wp.kernel(module="unique")
    def record_link(
        values: wp.array2d(dtype=wp.float32),  # type: ignore[valid-type]
        adr: wp.array(dtype=wp.int32),  # type: ignore[valid-type]
        t: int,
        out: wp.array3d(dtype=real),  # type: ignore[valid-type]
    ) -> None:
        i, j = wp.tid()
        out[i, t, j] = real(values[i, adr[j]])

    @wp.kernel(module="unique")
    def record_field(
        state: wp.array3d(dtype=real),  # type: ignore[valid-type]
        field: int,
        t: int,
        out: wp.array3d(dtype=real),  # type: ignore[valid-type]
    ) -> None:
        i, j = wp.tid()
        out[i, t, j] = state[i, j, field]

    @wp.kernel(module="unique")
    def set_joints(
        q0: wp.array2d(dtype=real),  # type: ignore[valid-type]
        mask: wp.array(dtype=wp.bool),  # type: ignore[valid-type]
        qpos_adr: wp.array(dtype=wp.int32),  # type: ignore[valid-type]
        qpos: wp.array2d(dtype=wp.float32),  # type: ignore[valid-type]
    ) -> None:
        i, j = wp.tid()
        if mask[i]:
            qpos[i, qpos_adr[j]] = wp.float32(q0[i, j])

    @wp.kernel(module="unique")
    def hold_refs(
        refs: wp.array3d(dtype=real),  # type: ignore[valid-type]
        mask: wp.array(dtype=wp.bool),  # type: ignore[valid-type]
        held: wp.array3d(dtype=real),  # type: ignore[valid-type]
    ) -> None:
        i, j, k = wp.tid()
        if mask[i]:
            held[i, j, k] = refs[i, j, k]

    ks = dict(
        gather=gather,
        scatter=scatter,
        take_refs=take_refs,
        take=take,
        record_link=record_link,
        record_field=record_field,
        set_joints=set_joints,
        hold_refs=hold_refs,
        real=real,
    )
    _KERNELS[dtype] = ks
    return ks


class MjwSim:
    """`nworld` worlds of a robot in MuJoCo Warp with asr's actuators, on one Warp device.

    robot: an asr.Robot or a robot name (see asr.load_robot), variant: its variant (None: the
    default one). nworld: N worlds. params: {joint name or index: {asr parameter: scalar or (N,)
    array}} on top of the robot's. dtype: the actuators' precision, "float32" (default) or
    "float64" (MuJoCo Warp itself is float32). device: a Warp device or its name (None: Warp's
    default). max_substep, motor_scheme: as for asr.Batch. nconmax, njmax: MuJoCo Warp's
    contact and constraint capacities per world (mujoco_warp.put_data; None: its defaults), for
    robots whose contacts overflow them (MuJoCo Warp then prints an overflow warning).

    State lives on the device: `mjw_model`, `mjw_data` (MuJoCo Warp's Model and Data) and
    `batch` (the asr.warp.WarpBatch). q, qd, time and status read it back to the host (a sync:
    for inspection, not inside a loop); rollout's records stay on the device.
    """

    def __init__(
        self,
        robot: Robot | str,
        nworld: int = 1,
        *,
        variant: str | None = None,
        params: Mapping[str | int, Mapping[str, npt.ArrayLike]] | None = None,
        dtype: str = "float32",
        device: Any = None,
        max_substep: float = 1e-3,
        motor_scheme: str = "euler",
        nconmax: int | None = None,
        njmax: int | None = None,
    ) -> None:
        wp, mjw = warp(), _mjw()
        if dtype not in _DTYPES:
            raise ValueError(f"dtype: got {dtype!r}, valid: {', '.join(map(repr, _DTYPES))}")
        self._robot = robot if isinstance(robot, Robot) else load_robot(robot, variant)
        self._n = V.positive_int(nworld, "nworld", hi=2**31 - 1)
        self._dtype = dtype
        self._device = warp_device(device)
        model = self._robot.mj_model()
        integrator = mujoco.mjtIntegrator(int(model.opt.integrator)).name.removeprefix("mjINT_")
        if integrator.lower() not in (i.lower() for i in _INTEGRATORS):
            raise ValueError(
                f"{self._robot.mjcf}: integrator {integrator}, valid: Euler or implicitfast "
                "(asr's coupling applies the torques once per step, as asr.Sim)"
            )
        self._mj_model = model
        self._dt = float(model.opt.timestep)
        qadr, dadr = joint_addresses(model, self._robot.joint_names, self._robot.mjcf)
        self._qpos_adr_np = np.array(qadr, dtype=np.intp)
        self._dof_adr_np = np.array(dadr, dtype=np.intp)
        nj = len(qadr)
        self._k = _kernels(dtype)
        with wp.ScopedDevice(self._device):
            data = mujoco.MjData(model)
            mujoco.mj_forward(model, data)
            self._m = mjw.put_model(model)
            self._sizes = _sizes(nconmax, njmax)
            self._d = mjw.put_data(model, data, nworld=self._n, **self._sizes)
            self._qpos_adr = wp.array(qadr, dtype=wp.int32)
            self._dof_adr = wp.array(dadr, dtype=wp.int32)
            self._q = wp.zeros((self._n, nj), dtype=self._k["real"])
            self._qd = wp.zeros((self._n, nj), dtype=self._k["real"])
            self._refs = wp.zeros((self._n, nj, 2), dtype=self._k["real"])
            self._ext = wp.zeros((self._n, nj), dtype=self._k["real"])
            self._ff = wp.zeros((self._n, nj), dtype=self._k["real"])
            self._q0 = wp.zeros((self._n, nj), dtype=self._k["real"])
            self._mask = wp.zeros(self._n, dtype=wp.bool)
            self._initial_refs = None
            if self._robot.initial_refs is not None:
                init = np.broadcast_to(self._robot.initial_refs, (self._n, nj, 2)).copy()
                self._initial_refs = wp.array(init, dtype=self._k["real"])
        self._batch = WarpBatch(
            [j.joint() for j in self._robot.joints],
            self._n,
            dtype=dtype,
            device=self._device,
            max_substep=max_substep,
            motor_scheme=motor_scheme,
        )
        names = self._robot.joint_names
        for joint, values in _mapping(params, "params").items():
            j = self._joint_index(joint, names)
            self._batch.set_params(j, **_mapping(values, f"params[{joint!r}]"))
        # the last captured rollout: (key, CUDA graph, the arrays it uses)
        self._graph: tuple[tuple[Any, ...], Any, tuple[Any, ...]] | None = None
        self.reset()

    # ------------------------------------------------------------ set-up (read-only)

    @property
    def robot(self) -> Robot:
        """The asr.Robot simulated."""
        return self._robot

    @property
    def nworld(self) -> int:
        """N, the number of worlds."""
        return self._n

    @property
    def n_instances(self) -> int:
        """N, the number of worlds (asr.Sim's name for it)."""
        return self._n

    @property
    def dt(self) -> float:
        """The MJCF timestep, s: the length of one step."""
        return self._dt

    @property
    def n_joints(self) -> int:
        """J, the number of actuated joints."""
        return len(self._robot.joints)

    @property
    def dtype(self) -> str:
        """The actuators' precision: "float32" or "float64" (MuJoCo Warp: float32)."""
        return self._dtype

    @property
    def device(self) -> Any:
        """The Warp device everything runs on."""
        return self._device

    @property
    def batch(self) -> WarpBatch:
        """The asr.warp.WarpBatch of the actuators (N worlds x J joints)."""
        return self._batch

    @property
    def mjw_model(self) -> Any:
        """MuJoCo Warp's Model (device)."""
        return self._m

    @property
    def mjw_data(self) -> Any:
        """MuJoCo Warp's Data of the N worlds (device)."""
        return self._d

    @property
    def qpos_adr(self) -> npt.NDArray[np.intp]:
        """(J,) each actuated joint's address in qpos."""
        return self._qpos_adr_np.copy()

    @property
    def dof_adr(self) -> npt.NDArray[np.intp]:
        """(J,) each actuated joint's address in qvel / qfrc_applied."""
        return self._dof_adr_np.copy()

    @staticmethod
    def _joint_index(joint: str | int, names: tuple[str, ...]) -> int:
        if isinstance(joint, str):
            if joint not in names:
                raise ValueError(
                    f"params: unknown joint {joint!r}; actuated joints: {', '.join(names)}"
                )
            return names.index(joint)
        return V.positive_int(joint, "params joint index", lo=0, hi=len(names) - 1)

    # ------------------------------------------------------------ state

    def reset(
        self,
        q0: npt.ArrayLike | None = None,
        refs: npt.ArrayLike | None = None,
        *,
        mask: npt.ArrayLike | None = None,
    ) -> None:
        """Reset the worlds and their actuators, as asr.Sim.reset. q0: link angles (N, J) or (J,),
        rad (default: the robot's initial q, else the model's qpos0); refs: (N, J, 2) or (J, 2)
        references that place the motors (default: the robot's initial refs, else zero
        deflection). mask: (N,) bool, reset only the worlds where it is true (None: all); the
        others keep running. The link velocities of the reset worlds are zeroed."""
        wp = warp()
        shape = (self._n, self.n_joints)
        if q0 is None and self._robot.initial_q is not None:
            q0 = self._robot.initial_q
        if refs is None and self._robot.initial_refs is not None:
            refs = self._robot.initial_refs
        if mask is None:
            m = np.ones(self._n, dtype=bool)
        else:
            m = np.asarray(mask)
            if m.shape != (self._n,) or m.dtype != np.bool_:
                raise ValueError(
                    f"mask: expected a bool array of shape ({self._n},), got {m.dtype} {m.shape}"
                )
        if q0 is None:
            q = np.tile(self._mj_model.qpos0[self._qpos_adr_np], (self._n, 1))
        else:
            q = V.broadcast_input(q0, "q0", shape)
        top = mujoco.mjMAXVAL  # MuJoCo resets larger joint positions as a blow-up
        if np.any(np.abs(q) > top):
            bad = q[np.abs(q) > top][0]
            raise ValueError(f"q0: got {V.num(bad)} rad, valid range [-{top:g}, {top:g}]")
        r = None if refs is None else V.broadcast_input(refs, "refs", shape + (2,))
        with wp.ScopedDevice(self._device):
            self._mask.assign(m)
            self._q0.assign(q.astype(self._q0.dtype))
            self._reset_worlds(self._mask, self._q0)
            # the actuators start where the engine's links are (float32 angles, as asr.Sim
            # starts them at MuJoCo's qpos); WarpBatch.reset checks q0 and refs as asr.Batch
            q_now = self._d.qpos.numpy()[:, self._qpos_adr_np].astype(np.float64)
            self._batch.reset(q_now, r, mask=None if mask is None else m)
            if r is not None:
                self._refs.assign(np.where(m[:, None, None], r, self._refs.numpy()))

    def launch_reset(self, mask: Any, q0: Any, refs: Any = None) -> None:
        """reset of the worlds of mask from device arrays, with no host synchronisation (the
        device-side reset of an RL loop; capturable on CUDA): mask (N,) Warp bool array, q0
        (N, J) link angles, rad, refs (N, J, 2) references or None (the robot's initial ones,
        else the motors at zero deflection), Warp arrays of the actuators' dtype on this
        device. Nothing is checked
        beyond Warp's types: a reference that is not finite, or one the model refuses, stops
        that world's actuators (status) instead of raising."""
        wp = warp()
        with wp.ScopedDevice(self._device):
            self._reset_worlds(mask, q0)
            shape = (self._n, self.n_joints)
            qpos, qvel = self._d.qpos, self._d.qvel
            inputs = [qpos, qvel, self._qpos_adr, self._dof_adr, self._q, self._qd]
            wp.launch(self._k["gather"], dim=shape, inputs=inputs)
            if refs is None:
                refs = self._initial_refs
            if refs is not None:
                wp.launch(self._k["hold_refs"], dim=shape + (2,), inputs=[refs, mask, self._refs])
            held = self._refs if refs is None else refs
            self._batch.launch_reset(mask, self._q, held, with_refs=refs is not None)

    def _reset_worlds(self, mask: Any, q0: Any) -> None:
        """MuJoCo Warp's reset of the worlds of mask (bool (N,)), the actuated joints at q0
        (N, J), at rest; then its forward pass (positions of every world: the others keep
        their state)."""
        wp, mjw = warp(), _mjw()
        mjw.reset_data(self._m, self._d, reset=mask)
        wp.launch(
            self._k["set_joints"],
            dim=(self._n, self.n_joints),
            inputs=[q0, mask, self._qpos_adr, self._d.qpos],
        )
        mjw.forward(self._m, self._d)

    @property
    def q(self) -> npt.NDArray[np.float64]:
        """Link angles of the actuated joints, (N, J), rad (a host copy)."""
        return self._d.qpos.numpy()[:, self._qpos_adr_np].astype(np.float64)

    @property
    def qd(self) -> npt.NDArray[np.float64]:
        """Link velocities of the actuated joints, (N, J), rad/s (a host copy)."""
        return self._d.qvel.numpy()[:, self._dof_adr_np].astype(np.float64)

    @property
    def time(self) -> npt.NDArray[np.float64]:
        """(N,) simulated time of each world, s (a host copy)."""
        return self._d.time.numpy().astype(np.float64)

    @property
    def status(self) -> npt.NDArray[Any]:
        """(N,) int status per world's actuators, as asr.Batch.status: 0 running, else the C
        status code that froze them (zero torque until reset). A host copy."""
        return np.asarray(self._batch.status)

    # ------------------------------------------------------------ stepping

    def rollout(
        self,
        steps: int,
        refs: Any = None,
        *,
        tau_ext: Any = None,
        tau_ff: Any = None,
        record: str | Iterable[str] = DEFAULT_RECORD,
        out: Mapping[str, Any] | None = None,
        capture: bool = False,
        on_error: str = "raise",
    ) -> dict[str, Any]:
        """Simulate `steps` steps of the MJCF timestep, on the device.

        refs: the references, units per mode: (N, steps, J, 2) per step, (N, J, 2) or (J, 2)
            held; NumPy-like (checked finite, copied to the device once) or a Warp array of the
            actuators' dtype on this device (not read back: a NaN in it stops that world's
            actuators, see status). None: those of the last step (after reset: reset's).
        tau_ext: external link torques, tau_ff: feed-forward motor torques (single-motor joints
            in modes 5-6), as for asr.Sim.rollout; each None (zero), (N, J) held or (N, steps,
            J), N m, NumPy-like (checked) or Warp arrays as refs.
        record: state fields recorded after every step, as asr.Sim.rollout: q and qd the link
            state at the end of the step (rad, rad/s), tau_joint (N m) and the other torques
            those applied over it, motor fields at its end. out: {field: Warp array (N, steps,
            J) of the dtype on this device} to record into (None: new arrays).
        capture: on CUDA, record the rollout as a CUDA graph and launch it; the next rollout
            with the same steps, record and Warp arrays refs and out replays it (NumPy refs or
            out=None give new arrays: a new capture). ValueError on another device.
        on_error: 'raise' (asr.SimulationError after the rollout for the first world whose
            actuators stopped, and before it while some stay frozen: one host read each) or
            'flag' (no host read; see status).
        Returns {field: Warp array (N, steps, J)} on the device (.numpy(), wp.to_torch)."""
        wp = warp()
        steps = V.positive_int(steps, "steps", hi=2**31 - 1)
        if on_error not in ("raise", "flag"):
            raise ValueError(f"on_error: got {on_error!r}, valid: 'raise', 'flag'")
        fields = check_record(record)
        if capture and not self._device.is_cuda:
            raise ValueError(
                f"capture: CUDA graphs need a CUDA device; this MjwSim runs on "
                f"{self._device.alias!r}"
            )
        if on_error == "raise":
            self._check_frozen()
        series = self._series(refs, "refs", steps, (2,))
        ext = self._series(tau_ext, "tau_ext", steps, ())
        ff = self._series(tau_ff, "tau_ff", steps, ())
        records = self._records(fields, steps, out)
        if capture:
            # the last graph is kept with the arrays it reads and writes (so that their memory
            # cannot be reused by others while it may be replayed); replayed when the same
            # arrays come again
            arrays = (series, ext, ff, *(records[f] for f in fields))
            key = (steps, fields, *(_identity(a) for a in arrays))
            if self._graph is None or self._graph[0] != key:
                self._graph = None
                self._warm_up()
                with wp.ScopedDevice(self._device), wp.ScopedCapture() as cap:
                    self._launch(steps, (series, ext, ff), records, fields)
                self._graph = (key, cap.graph, arrays)
            wp.capture_launch(self._graph[1])
        else:
            with wp.ScopedDevice(self._device):
                self._launch(steps, (series, ext, ff), records, fields)
        if on_error == "raise":
            self._check_status()
        return records

    def step(
        self,
        refs: Any = None,
        *,
        tau_ext: Any = None,
        tau_ff: Any = None,
        record: str | Iterable[str] = DEFAULT_RECORD,
        on_error: str = "raise",
    ) -> dict[str, Any]:
        """One step; returns {field: Warp array (N, J)} after it (inputs as for rollout, held:
        (N, J, 2) refs, (N, J) torques)."""
        res = self.rollout(
            1, refs, tau_ext=tau_ext, tau_ff=tau_ff, record=record, on_error=on_error
        )
        return {f: v[:, 0] for f, v in res.items()}

    def _launch(
        self, steps: int, inputs: tuple[Any, Any, Any], records: dict[str, Any], fields: tuple
    ) -> None:
        """The kernel launches of `steps` steps (no host read: capturable). inputs: refs,
        tau_ext, tau_ff on the device (see _series)."""
        wp, mjw, k = warp(), _mjw(), self._k
        shape = (self._n, self.n_joints)
        d, b = self._d, self._batch
        refs, ext, ff = inputs
        for t in range(steps):
            if refs is not None and refs.ndim == 4:
                wp.launch(k["take_refs"], dim=shape + (2,), inputs=[refs, t, self._refs])
            elif refs is not None and t == 0:
                wp.copy(self._refs, refs)
            step_ext, step_ff = ext, ff
            if ext is not None and ext.ndim == 3:
                wp.launch(k["take"], dim=shape, inputs=[ext, t, self._ext])
                step_ext = self._ext
            if ff is not None and ff.ndim == 3:
                wp.launch(k["take"], dim=shape, inputs=[ff, t, self._ff])
                step_ff = self._ff
            wp.launch(
                k["gather"],
                dim=shape,
                inputs=[d.qpos, d.qvel, self._qpos_adr, self._dof_adr, self._q, self._qd],
            )
            tau = b.launch_step(self.dt, self._q, self._qd, self._refs, step_ext, step_ff)
            wp.launch(k["scatter"], dim=shape, inputs=[tau, self._dof_adr, d.qfrc_applied])
            mjw.step(self._m, d)
            for f in fields:
                if f == "q":
                    args = [d.qpos, self._qpos_adr, t, records[f]]
                    wp.launch(k["record_link"], dim=shape, inputs=args)
                elif f == "qd":
                    args = [d.qvel, self._dof_adr, t, records[f]]
                    wp.launch(k["record_link"], dim=shape, inputs=args)
                else:
                    args = [b.state, FIELDS.index(f), t, records[f]]
                    wp.launch(k["record_field"], dim=shape, inputs=args)

    def _warm_up(self) -> None:
        """MuJoCo Warp's kernels are made on their first call: one step of a scratch world
        loads them before a capture (which may not compile)."""
        wp, mjw = warp(), _mjw()
        with wp.ScopedDevice(self._device):
            data = mujoco.MjData(self._mj_model)
            scratch = mjw.put_data(self._mj_model, data, nworld=1, **self._sizes)
            mjw.step(self._m, scratch)
            wp.synchronize_device(self._device)

    def _series(self, value: Any, name: str, steps: int, tail: tuple[int, ...]) -> Any:
        """An input on the device: None, held (N, J, *tail) or per step (N, steps, J, *tail),
        as a Warp array of the actuators' dtype (NumPy-like values checked finite and copied;
        Warp arrays checked for device, dtype and shape only)."""
        wp = warp()
        n, nj = self._n, self.n_joints
        held, per_step = (n, nj, *tail), (n, steps, nj, *tail)
        if value is None:
            return None
        if isinstance(value, wp.array):
            if value.device != self._device:
                raise ValueError(
                    f"{name}: a Warp array on {value.device.alias!r}, expected one on "
                    f"{self._device.alias!r}"
                )
            if value.dtype != self._k["real"]:
                raise ValueError(
                    f"{name}: Warp array of {wp.types.type_repr(value.dtype)}, expected "
                    f"{self._dtype} (the actuators' dtype)"
                )
            if value.shape not in (held, per_step):
                raise ValueError(f"{name}: expected shape {held} or {per_step}, got {value.shape}")
            return value
        arr = V.real_array(value, name)
        if arr.ndim == len(per_step):
            host = V.finite_array(arr, name, per_step)
        else:
            host = V.broadcast_input(arr, name, held)
        if name == "refs":
            self._batch.cpu.check_refs(host, name)
        elif name == "tau_ff":
            self._batch.cpu.check_ff(host.reshape(-1, nj))
        return wp.array(host, dtype=self._k["real"], device=self._device)

    def _records(self, fields: tuple[str, ...], steps: int, out: Any) -> dict[str, Any]:
        wp = warp()
        shape = (self._n, steps, self.n_joints)
        given = dict(_mapping(out, "out"))
        for f in given:
            if f not in fields:
                raise ValueError(f"out: {f!r} is not recorded (record: {', '.join(fields)})")
        res = {}
        for f in fields:
            a = given.get(f)
            if a is None:
                a = wp.empty(shape, dtype=self._k["real"], device=self._device)
            elif (
                not isinstance(a, wp.array)
                or a.shape != shape
                or a.dtype != self._k["real"]
                or a.device != self._device
                or not a.is_contiguous
            ):
                raise ValueError(
                    f"out[{f!r}]: expected a contiguous Warp array of shape {shape} and dtype "
                    f"{self._dtype} on {self._device.alias!r}"
                )
            res[f] = a
        return res

    def _check_frozen(self) -> None:
        errs = self._batch.errors()
        if errs:
            bad = [e["instance"] for e in errs]
            shown = ", ".join(map(str, bad[:8])) + (", ..." if len(bad) > 8 else "")
            self._raise(
                errs,
                f"MjwSim.rollout refused: world(s) [{shown}] stopped in an earlier call and "
                "stay frozen (zero torque) until reset(mask=...) clears them; on_error='flag' "
                "runs the others",
            )

    def _check_status(self) -> None:
        errs = self._batch.errors()
        if errs:
            self._raise(errs, "")

    @staticmethod
    def _raise(errs: list[dict[str, int]], hint: str) -> None:
        e = errs[0]
        raise SimulationError(
            e["instance"], e["joint"], e["step"], e["code"], more=len(errs) - 1, hint=hint
        )


def torque_rollout(
    robot: Robot | str,
    tau: npt.ArrayLike,
    *,
    variant: str | None = None,
    q0: npt.ArrayLike | None = None,
    device: Any = None,
    nconmax: int | None = None,
    njmax: int | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Bare MuJoCo Warp, no actuator: the robot's MJCF in N worlds from link angles q0 ((N, J) or
    (J,) rad; default the robot's initial q, else qpos0) at rest, the joint torques tau (N,
    steps, J), N m, written into qfrc_applied at the actuated joints' dofs before each step (as
    MjwSim and asr.Sim apply asr's). Returns the link state after each step, q (N, steps, J) rad
    and qd rad/s, as float64 copies of MuJoCo Warp's float32. For measuring what MuJoCo Warp
    and MuJoCo differ on the same torques (a host copy of the torques per step: not for speed).
    nconmax, njmax: as for MjwSim."""
    wp, mjw = warp(), _mjw()
    rob = robot if isinstance(robot, Robot) else load_robot(robot, variant)
    model = rob.mj_model()
    qadr, dof = joint_addresses(model, rob.joint_names, rob.mjcf)
    torques = V.finite_array(tau, "tau")
    if torques.ndim != 3 or torques.shape[2] != len(dof) or 0 in torques.shape:
        raise ValueError(f"tau: expected shape (N, steps, {len(dof)}), got {torques.shape}")
    n, steps, nj = torques.shape
    data = mujoco.MjData(model)
    if q0 is None and rob.initial_q is not None:
        q0 = rob.initial_q
    q = None if q0 is None else V.broadcast_input(q0, "q0", (n, nj))
    with wp.ScopedDevice(warp_device(device)):
        mujoco.mj_forward(model, data)
        m = mjw.put_model(model)
        d = mjw.put_data(model, data, nworld=n, **_sizes(nconmax, njmax))
        if q is not None:
            qpos = np.tile(data.qpos, (n, 1))
            qpos[:, qadr] = q
            d.qpos.assign(qpos.astype(np.float32))
            mjw.forward(m, d)
        full = np.zeros((steps, n, model.nv), dtype=np.float32)
        full[:, :, dof] = np.moveaxis(torques, 0, 1)
        frc = wp.array(full, dtype=wp.float32)
        rec_q = wp.zeros((steps, n, model.nq), dtype=wp.float32)
        rec_qd = wp.zeros((steps, n, model.nv), dtype=wp.float32)
        for t in range(steps):
            wp.copy(d.qfrc_applied, frc[t])
            mjw.step(m, d)
            wp.copy(rec_q[t], d.qpos)
            wp.copy(rec_qd[t], d.qvel)
        out_q = np.moveaxis(rec_q.numpy()[:, :, qadr], 0, 1).astype(np.float64)
        out_qd = np.moveaxis(rec_qd.numpy()[:, :, dof], 0, 1).astype(np.float64)
    return out_q, out_qd


def _sizes(nconmax: int | None, njmax: int | None) -> dict[str, int]:
    """put_data's capacity arguments that were given, checked."""
    sizes = {"nconmax": nconmax, "njmax": njmax}
    return {k: V.positive_int(v, k, hi=2**31 - 1) for k, v in sizes.items() if v is not None}


def _mapping(value: Any, name: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name}: expected a mapping, got {type(value).__name__}")
    return value


def _identity(arr: Any) -> tuple[int, int, tuple[int, ...]]:
    """What a captured graph depends on of an array: the object, its memory and its shape."""
    return (0, 0, ()) if arr is None else (id(arr), int(arr.ptr), tuple(arr.shape))


__all__ = ["MjwSim", "DEFAULT_RECORD", "torque_rollout"]
