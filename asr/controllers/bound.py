"""The interaction controller bound to a Sim (sim.controller, an asr.sim.BoundController): its C
tables (asr_interaction, csrc/interaction), per-instance state and the FSM's inputs (setpoint,
trajectory, set_references, ...), its record and its rollout input (the external wrench), and its
hooks for the C engine loop. Made by asr.Admittance / asr.DirectForce's bind (asr.Sim calls it);
not by users. docs/interaction.md describes the control."""

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.validate import CData, FloatArray
from asr.controllers.fsm import EVENTS, FSM_STATES, ControllerBusy
from asr.controllers.mujoco_site import (
    check_engine,
    fill_engine_part,
    gravity_torques,
    sensors_at_rest,
)
from asr.controllers.statics import holding_deflection
from asr.core.batch import Batch, as_series
from asr.core.batch_inputs import Series
from asr.core.coupled import with_batch
from asr.core.errors import raise_for_status
from asr.core.ffi import ffi, lib
from asr.engines.base import LinkEngine
from asr.robots.robot import Robot

log = logging.getLogger("asr.controllers.interaction")

# What a controlled rollout records besides the joint fields: {name: (columns, unit)}, in the C
# record's order (ASR_IC_NREC values per instance and step).
RECORD = {
    "x_d": (3, "m"),
    "x_c": (3, "m"),
    "x_m": (3, "m"),
    "f_d": (3, "N"),
    "f_e": (3, "N"),
    "tau_e": (3, "N m"),
    "fsm": (1, ""),
    "ik_ok": (1, ""),
}


def _axes(value: npt.ArrayLike, name: str, n: int, positive: bool) -> FloatArray:
    """(N, 3) float array of a per-axis gain: finite, > 0 (positive) or >= 0."""
    arr = V.broadcast_input(value, name, (n, 3))
    bad = ~(arr > 0) if positive else ~(arr >= 0)
    if bad.any():
        rel = "> 0" if positive else ">= 0"
        what = "positive definite" if positive else "positive semi-definite"
        raise ValueError(
            f"{name}: got {V.num(arr[bad][0])}; the diagonal matrix must be {what} "
            f"(every entry {rel})"
        )
    return arr


def _positive(value: object, name: str, allow_zero: bool = False) -> float:
    """A finite scalar > 0 (>= 0 with allow_zero) as float."""
    x = V.real_array(value, name)
    if x.ndim != 0 or not np.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        rel = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}: got {value!r}, valid range: a finite number {rel}")
    return float(x)


class SimView(Protocol):
    """What the controller reads of the asr.Sim it is bound to (asr.sim stands above this
    package and is not imported here)."""

    @property
    def robot(self) -> Robot: ...
    @property
    def batch(self) -> Batch: ...
    @property
    def n_instances(self) -> int: ...
    @property
    def n_joints(self) -> int: ...
    @property
    def dt(self) -> float: ...
    @property
    def q(self) -> FloatArray: ...


class Law(Protocol):
    """The settings of a control law the controller runs (asr.controllers.laws: Admittance,
    DirectForce)."""

    law: int | None
    max_offset: npt.ArrayLike
    frame: str
    setpoint_tol: float
    setpoint_vel_tol: float

    @property
    def sensor(self) -> Any: ...
    @property
    def ik(self) -> Any: ...
    def gains(self) -> dict[str, tuple[npt.ArrayLike, str, bool]]: ...


class Interaction:
    """The controller bound to a Sim (sim.controller): the C tables, per-instance state, and the
    FSM's inputs. Created by the law's bind (asr.Sim(..., controller=law)) with the Sim's link
    engine (MuJoCo: what the controller reads and moves); not by users.

    As an asr.sim.BoundController: record is RECORD, inputs ("wrench_ext",) (an external wrench
    on the tool body), reset the INIT event, hooks the C controller (asr_ic_controller)."""

    record = RECORD
    inputs = ("wrench_ext",)

    def __init__(self, sim: SimView, engine: LinkEngine, controller: Law) -> None:
        mj_engine = check_engine(engine)
        names = dict(sim.robot.interaction or ())
        if not names:
            raise ValueError(
                f"controller: robot {sim.robot.name!r} ({sim.robot.variant}) has no "
                "[variants.<v>.interaction] block naming its tool site and F/T "
                "sensor (see robots/README.md)"
            )
        if sim.n_joints > lib.ASR_IC_MAX_JOINTS:
            raise ValueError(
                f"controller: the robot has {sim.n_joints} actuated joints, at most "
                f"{lib.ASR_IC_MAX_JOINTS} are supported"
            )
        modes = sim.batch.modes
        for j, mode in enumerate(modes):
            if mode not in (1, 3, 6):
                raise ValueError(
                    f"controller: joint {sim.robot.joint_names[j]!r} is in mode "
                    f"{mode}; interaction control commands link positions or "
                    "equilibria: modes 1, 3 or 6"
                )
        self._sim, self._engine, self.spec, self.names = sim, mj_engine, controller, names
        self._dt = sim.dt
        self._keep: list[CData] = []
        self._traj_keep: list[FloatArray | None] = [None] * sim.n_instances
        self._config = ffi.new("asr_ic_config[]", sim.n_instances)
        self._state = ffi.new("asr_ic_state[]", sim.n_instances)
        self._fill_config(controller)
        self._ic = self._tables()

    # ------------------------------------------------------------ set-up

    def _fill_config(self, c: Law) -> None:
        n, s = self._sim.n_instances, c.sensor
        gains = {k: _axes(v, label, n, pos) for k, (v, label, pos) in c.gains().items()}
        offset = _axes(c.max_offset, "max_offset", n, True)
        period = 1
        if s.rate is not None:
            rate = _positive(s.rate, "sensor.rate")
            period = max(1, int(round(1.0 / (rate * self._dt))))
        cutoff = _positive(s.cutoff, "sensor.cutoff", allow_zero=True)
        noise = (
            _positive(s.noise_force, "sensor.noise_force", allow_zero=True),
            _positive(s.noise_torque, "sensor.noise_torque", allow_zero=True),
        )
        tols = (
            _positive(c.setpoint_tol, "setpoint_tol"),
            _positive(c.setpoint_vel_tol, "setpoint_vel_tol"),
        )
        for i in range(n):
            cfg = self._config[i]
            cfg.law = c.law
            for field in ("mass", "damping", "stiffness", "force_kp", "force_ki"):
                values = gains.get(field)  # the other law's fields: any valid value, unused
                setattr(cfg, field, list(values[i]) if values is not None else [1.0] * 3)
            cfg.max_offset = list(offset[i])
            cfg.task_frame_tool = int(c.frame == "tool")
            cfg.sensor_period = period
            cfg.cutoff = cutoff
            cfg.noise_force, cfg.noise_torque = noise
            cfg.setpoint_tol, cfg.setpoint_vel_tol = tols

    def _tables(self) -> CData:
        """The asr_interaction struct: the engine's part (asr.controllers.mujoco_site), the
        inverse kinematics' settings, the per-instance config, state and trajectories."""
        sim = self._sim
        ic = ffi.new("asr_interaction*")
        self._keep.append(ic)
        base_pos, base_mat = fill_engine_part(ic, self._engine, self.names, self._keep)
        ic.base_pos, ic.base_mat = list(base_pos), list(base_mat)
        self.base_pos, self.base_mat = base_pos, base_mat.reshape(3, 3)
        k = self.spec.ik
        ic.ik_max_iter = V.positive_int(k.max_iter, "ik.max_iter")
        ic.ik_orientation = int(bool(k.orientation))
        ic.ik_tol_pos = _positive(k.tol_position, "ik.tol_position")
        ic.ik_tol_rot = _positive(k.tol_rotation, "ik.tol_rotation")
        ic.ik_damping = _positive(k.damping, "ik.damping", allow_zero=True)
        ic.config, ic.state = self._config, self._state
        self._traj_ptrs = ffi.new("double*[]", sim.n_instances)
        self._traj_len = ffi.new("long long[]", sim.n_instances)
        ic.traj, ic.traj_len = self._traj_ptrs, self._traj_len
        return ic

    # ------------------------------------------------------------ FSM inputs

    def reset(self, instances: npt.ArrayLike | None = None) -> None:
        """After Sim.reset of these instances (None: all): the INIT event."""
        self.init(instances)

    def init(self, instances: npt.ArrayLike | None = None) -> None:
        """The INIT event: STATIC at the present pose, the sensor's present reading as its bias
        (Sim.reset sends it)."""
        seed = self.spec.sensor.seed
        for i in self._instances(instances):
            self._traj_ptrs[i], self._traj_len[i], self._traj_keep[i] = ffi.NULL, 0, None
            with sensors_at_rest(self._engine, i):
                st = with_batch(
                    self._sim.batch,
                    "controller init",
                    lib.asr_ic_init,
                    self._engine.c_engine,
                    self._ic,
                    i,
                    (int(seed) + i) % 2**64,
                )
            if st != lib.ASR_OK:
                raise_for_status(st, "controller init")

    def _instances(self, instances: npt.ArrayLike | None) -> range | V.IntArray:
        n = self._sim.n_instances
        return range(n) if instances is None else V.instance_indices(instances, n)

    def _accept(self, event: str, instances: npt.ArrayLike | None) -> list[int]:
        """The instances, after checking every one accepts `event` (else ControllerBusy)."""
        idx = list(self._instances(instances))
        busy = [i for i in idx if lib.asr_ic_transition(self._state[i].fsm, EVENTS[event]) < 0]
        if busy:
            states = sorted({FSM_STATES[self._state[i].fsm] for i in busy})
            msg = (
                f"{event.replace('_', ' ')} rejected: instances {busy[:10]} are in state "
                f"{'/'.join(states)} (a setpoint or trajectory is running; no other input is "
                "accepted until it ends)"
            )
            log.warning(msg)
            raise ControllerBusy(msg)
        return idx

    def setpoint(
        self,
        q: npt.ArrayLike | None = None,
        *,
        position: npt.ArrayLike | None = None,
        orientation: npt.ArrayLike | None = None,
        duration: float | None = None,
        speed: float = 0.5,
        tolerance: float | None = None,
        start: npt.ArrayLike | None = None,
        instances: npt.ArrayLike | None = None,
    ) -> None:
        """Independent joint control to a setpoint (the SETPOINT_RECEIVED event): joint angles q
        ((J,) or (N, J), rad), or a tool position (3,) / (N, 3) in F_b (m) with an orientation
        (3, 3) world rotation (default: the present one) solved by inverse kinematics (an
        unreachable pose is a ValueError). The references move linearly over `duration` s
        (default: the largest joint change / speed rad/s); SETPOINT_REACHED follows once every
        joint is within setpoint_tol and setpoint_vel_tol (after the move), then the static law
        runs from there with the sensor bias removed and a zero force reference. tolerance (rad):
        this setpoint's setpoint_tol (default the controller's), e.g. to allow the spring
        deflection of the gravity_equilibria sent as q. start ((J,) or (N, J), rad): where the
        references move from (default: the present link angles; an elastic arm's equilibria in
        effect, else its links drop by their sag at the first step)."""
        idx = self._accept("setpoint_received", instances)
        tol = _positive(self.spec.setpoint_tol if tolerance is None else tolerance, "tolerance")
        n, nj = self._sim.n_instances, self._sim.n_joints
        if (q is None) == (position is None):
            raise ValueError("setpoint: give either q (joint angles) or position (a tool pose)")
        q_now = self._sim.q
        if position is None:
            goal = V.broadcast_input(q, "q", (n, nj))
        else:
            goal = self._solve_pose(position, orientation, idx, q_now)
        q_from = q_now if start is None else V.broadcast_input(start, "start", (n, nj))
        speed = _positive(speed, "speed")
        if duration is not None:
            duration = _positive(duration, "duration", allow_zero=True)
        for i in idx:
            st = self._state[i]
            move = (
                duration
                if duration is not None
                else float(np.max(np.abs(goal[i] - q_from[i])) / speed)
            )
            st.q_start[0:nj] = list(q_from[i])
            st.q_goal[0:nj] = list(goal[i])
            st.move_time, st.k = move, 0
            self._config[i].setpoint_tol = tol
            st.fsm = lib.asr_ic_transition(st.fsm, EVENTS["setpoint_received"])

    def gravity_equilibria(self, q: npt.ArrayLike, presets: npt.ArrayLike) -> FloatArray:
        """Equilibria (J,) rad whose springs hold MuJoCo's gravity torques at rest at link angles
        q (J,) rad with presets (J,) (the second references, rad; modes 3 and 6; mode 1 joints: q
        itself): a setpoint to them brings the links of an elastic arm to q instead of sagging
        below it (compare the link angles with `tolerance` >= the largest |eq - q|)."""
        nj = self._sim.n_joints
        q = V.broadcast_input(q, "q", (nj,))
        pre = V.broadcast_input(presets, "presets", (nj,))
        torques = gravity_torques(self._engine, q)
        eq = q.copy()
        for j, joint in enumerate(self._sim.robot.joints):
            if joint.mode != 1:
                g = float(torques[j])
                eq[j] += holding_deflection(joint.model, joint.params, float(pre[j]), g)
        result: FloatArray = eq
        return result

    def _solve_pose(
        self,
        position: npt.ArrayLike,
        orientation: npt.ArrayLike | None,
        idx: list[int],
        q_now: FloatArray,
    ) -> FloatArray:
        n = self._sim.n_instances
        x = V.broadcast_input(position, "position", (n, 3))
        goal: FloatArray = q_now.copy()
        for i in idx:
            R = (
                np.array(list(self._state[i].R_d)).reshape(3, 3)
                if orientation is None
                else V.broadcast_input(orientation, "orientation", (3, 3))
            )
            q, ok = self.solve_ik(x[i], R, q0=q_now[i], instance=i)
            if not ok:
                raise ValueError(
                    f"position: {x[i].tolist()} m (instance {i}) is not reachable "
                    "by inverse kinematics with that orientation"
                )
            goal[i] = q
        return goal

    def solve_ik(
        self,
        position: npt.ArrayLike,
        orientation: npt.ArrayLike | None = None,
        *,
        q0: npt.ArrayLike | None = None,
        instance: int = 0,
    ) -> tuple[FloatArray, bool]:
        """Joint angles (J,) putting the tool at position (3,) in F_b with orientation (3, 3)
        (world; None: position only), from q0 (default: the present angles), and whether the
        damped least squares converged (with ik.max_iter iterations and its tolerances)."""
        i = V.instance_indices([instance], self._sim.n_instances)[0]
        x = V.broadcast_input(position, "position", (3,))
        q = np.array(
            self._sim.q[i] if q0 is None else V.broadcast_input(q0, "q0", (self._sim.n_joints,)),
            dtype=float,
        )
        R = (
            None
            if orientation is None
            else np.ascontiguousarray(V.broadcast_input(orientation, "orientation", (3, 3)))
        )
        qbuf = ffi.new("double[]", q.tolist())
        ok = with_batch(
            self._sim.batch,
            "solve_ik",
            lib.asr_ic_solve_ik,
            self._engine.c_engine,
            self._ic,
            i,
            ffi.new("double[]", x.tolist()),
            ffi.NULL if R is None else ffi.new("double[]", R.ravel().tolist()),
            qbuf,
        )
        return np.array(list(qbuf)), ok == 1

    def trajectory(
        self,
        times: npt.ArrayLike,
        positions: npt.ArrayLike,
        forces: npt.ArrayLike | None = None,
        *,
        instances: npt.ArrayLike | None = None,
    ) -> None:
        """A workspace trajectory (the TRAJECTORY_RECEIVED event; the paper's
        FollowWorkspaceTrajectory goal): times (K,) s from now, strictly increasing, the first
        >= 0; positions (K, 3) or (N, K, 3) in F_b, m; forces (K, 3) or (N, K, 3) along the task
        axes, N (default zero). Sampled every step by linear interpolation (held before the first
        time); TRAJECTORY_COMPLETED after the last, then the static law holds its end."""
        idx = self._accept("trajectory_received", instances)
        t = V.real_array(times, "times")
        if t.ndim != 1 or t.size < 1 or not np.all(np.isfinite(t)) or t[0] < 0:
            raise ValueError(
                f"times: expected a 1-D array of finite times >= 0 s, got shape {t.shape}"
            )
        if np.any(np.diff(t) <= 0):
            k = int(np.flatnonzero(np.diff(t) <= 0)[0])
            raise ValueError(
                f"times: must increase strictly; times[{k + 1}] = {t[k + 1]!r} s "
                f"follows times[{k}] = {t[k]!r} s"
            )
        x = self._per_instance(positions, "positions", t.size)
        f = self._per_instance(
            np.zeros((t.size, 3)) if forces is None else forces, "forces", t.size
        )
        steps = int(np.floor(t[-1] / self._dt + 1e-9)) + 1
        ts = np.arange(steps) * self._dt
        for i in idx:
            samples = np.empty((steps, 6))
            for a in range(3):
                samples[:, a] = np.interp(ts, t, x[i, :, a])
                samples[:, 3 + a] = np.interp(ts, t, f[i, :, a])
            samples = np.ascontiguousarray(samples)
            self._traj_keep[i] = samples
            self._traj_ptrs[i] = ffi.cast("double*", samples.ctypes.data)
            self._traj_len[i] = steps
            st = self._state[i]
            st.k = 0
            st.fsm = lib.asr_ic_transition(st.fsm, EVENTS["trajectory_received"])

    def _per_instance(self, value: npt.ArrayLike, name: str, k: int) -> FloatArray:
        arr = V.real_array(value, name)
        n = self._sim.n_instances
        if arr.ndim == 2:
            arr = np.broadcast_to(arr, (n,) + arr.shape)
        return V.finite_array(arr, name, (n, k, 3))

    def set_references(
        self,
        position: npt.ArrayLike | None = None,
        force: npt.ArrayLike | None = None,
        *,
        instances: npt.ArrayLike | None = None,
    ) -> None:
        """New fixed references of the static law (STATIC only: no event): position (3,) or
        (N, 3) in F_b, m; force (3,) or (N, 3) along the task axes, N."""
        idx = list(self._instances(instances))
        busy = [i for i in idx if self._state[i].fsm != lib.ASR_FSM_STATIC]
        if busy:
            msg = (
                f"set_references rejected: instances {busy[:10]} are not in the static "
                "state (a setpoint or trajectory is running)"
            )
            log.warning(msg)
            raise ControllerBusy(msg)
        n = self._sim.n_instances
        x = None if position is None else V.broadcast_input(position, "position", (n, 3))
        f = None if force is None else V.broadcast_input(force, "force", (n, 3))
        for i in idx:
            if x is not None:
                self._state[i].x_d = list(x[i])
            if f is not None:
                self._state[i].f_d = list(f[i])

    def remove_bias(self, instances: npt.ArrayLike | None = None) -> None:
        """Take the sensor's present filtered reading as its bias (as at a setpoint)."""
        for i in self._instances(instances):
            self._state[i].bias = list(self._state[i].filtered)

    # ------------------------------------------------------------ state

    def _field(self, name: str) -> FloatArray:
        return np.array([list(getattr(self._state[i], name)) for i in range(self._sim.n_instances)])

    @property
    def fsm(self) -> tuple[str, ...]:
        """FSM state per instance, (N,) names of FSM_STATES."""
        return tuple(FSM_STATES[self._state[i].fsm] for i in range(self._sim.n_instances))

    @property
    def ik_failures(self) -> npt.NDArray[Any]:
        """Steps whose inverse kinematics did not converge (the command held), (N,)."""
        return np.array([self._state[i].ik_fail for i in range(self._sim.n_instances)])

    @property
    def q_c(self) -> FloatArray:
        """The joint references commanded now (link angles or equilibria), (N, J), rad."""
        nj = self._sim.n_joints
        return np.array([list(self._state[i].q_c)[:nj] for i in range(self._sim.n_instances)])

    @property
    def x_d(self) -> FloatArray:
        """Position references now, (N, 3), F_b, m."""
        return self._field("x_d")

    @property
    def x_m(self) -> FloatArray:
        """Tool positions at the last step's start, (N, 3), F_b, m."""
        return self._field("x_m")

    @property
    def f_d(self) -> FloatArray:
        """Force references now, (N, 3), task frame, N."""
        return self._field("f_d")

    @property
    def f_e(self) -> FloatArray:
        """Last force on the environment, (N, 3), task frame, N."""
        return self._field("f_e")

    @property
    def task_frame(self) -> FloatArray:
        """The task frame's axes in the world, (N, 3, 3) (columns)."""
        return self._field("R_task").reshape(-1, 3, 3)

    # ------------------------------------------------------------ the rollout

    def check_inputs(self, steps: int, inputs: Mapping[str, npt.ArrayLike]) -> dict[str, Series]:
        """The rollout's wrench_ext, an external wrench on the tool body ((6,) / (N, 6) held or
        (N, steps, 6); force N then torque N m, world frame, at the body's centre of mass), as
        (array, time stride); {} without one."""
        if inputs.get("wrench_ext") is None:
            return {}
        n = self._sim.n_instances
        arr = V.real_array(inputs["wrench_ext"], "wrench_ext")
        if arr.ndim == 3:
            return {"wrench_ext": (V.finite_array(arr, "wrench_ext", (n, steps, 6)), 6)}
        return {"wrench_ext": (V.broadcast_input(arr, "wrench_ext", (n, 6)), 0)}

    @contextlib.contextmanager
    def hooks(self, inputs: Mapping[str, Series], record: FloatArray) -> Iterator[CData]:
        """The controller's hooks for the engine loop (an asr_controller*) over one C rollout
        with the external wrench inputs["wrench_ext"] ((array, stride_t); none without it),
        recording into `record` (C-contiguous (N, steps, ASR_IC_NREC))."""
        keep: list[CData] = []
        hooks = ffi.new("asr_controller*")
        lib.asr_ic_controller(self._ic, hooks)
        self._ic.wrench = as_series(inputs.get("wrench_ext"), keep)
        self._ic.record = ffi.cast("double*", _record(record).ctypes.data)
        try:
            yield hooks
        finally:
            self._ic.wrench = as_series(None, keep)
            self._ic.record = ffi.NULL

    def results(self, record: FloatArray) -> dict[str, npt.NDArray[Any]]:
        """{name: array} of a rollout's record (split_record)."""
        return split_record(record)


def _record(ic_out: npt.NDArray[Any] | None) -> npt.NDArray[Any]:
    """The controller record of a controlled rollout (asr.Sim always passes one)."""
    if ic_out is None:
        raise ValueError("a controlled rollout records into ic_out; got None")
    return ic_out


def split_record(ic_out: npt.NDArray[Any] | None) -> dict[str, npt.NDArray[Any]]:
    """{name: array} of a (N, steps, ASR_IC_NREC) controller record (RECORD's layout)."""
    out, k = {}, 0
    for name, (cols, _) in RECORD.items():
        part = _record(ic_out)[:, :, k : k + cols]
        out[name] = part[..., 0].copy() if cols == 1 else part.copy()
        k += cols
    out["fsm"] = out["fsm"].astype(np.int8)
    out["ik_ok"] = out["ik_ok"].astype(bool)
    return out


__all__ = ["Interaction", "RECORD", "SimView", "Law", "split_record"]
