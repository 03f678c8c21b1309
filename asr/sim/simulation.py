"""Whole robots: a link engine integrates the links, asr's C core the actuators, many instances
at once.

A Sim composes three parts: a link engine (asr.engines: MuJoCo on the robot's MJCF, or Gazebo's
physics on its SDF), the actuator batch (asr.Batch) and optionally a controller (any
asr.sim.Controller, e.g. interaction control, asr.Admittance). For every instance and step the C
core runs the engine's first step half -> actuator update from the link state -> joint torques
into the engine's applied forces -> the second step half, the controller's hooks around them, in
C over native threads with the GIL released (asr.core.coupled.rollout_coupled: the inputs are
checked there once and run in one call).

Coupling error: the actuator torque of a step is computed from the state at its start and held
over the step (explicit coupling); the engine's Euler step then integrates the links. The error
is first order in the time step, like MuJoCo's own Euler integrator, and grows with the spring
stiffness: a spring of stiffness k on a link of inertia I is integrated stably while
dt < 2 / sqrt(k / I) and accurately well below it. Choose the engine's timestep accordingly.
"""

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from asr import engines
from asr.common import validate as V
from asr.common.serial import BatchLock, serialised
from asr.common.validate import CData, FloatArray
from asr.core.batch import Batch, window
from asr.core.batch_inputs import Series
from asr.core.coupled import HooksAt, RefsAt, rollout_coupled
from asr.core.models import compliance
from asr.engines.base import IndexArray, LinkEngine, SceneGeometry, mapping
from asr.engines.mujoco import MUJOCO_FIELDS
from asr.robots.robot import Robot, load_robot
from asr.sim.controller import BoundController, Controller, empty_record

DEFAULT_RECORD = ("q", "qd", "th1", "th2", "tau_joint", "stiffness")

# Link engines: MuJoCo (the robot's MJCF) or Gazebo's physics with DART (its SDF;
# asr.engines.gz_shim).
ENGINES = tuple(engines.ENGINES)

# refs as a callable: refs(sim, t) -> (N, J, 2) references
RefsFn = Callable[["Sim", int], npt.ArrayLike]


class Sim:
    """N instances of a robot: engine links + asr actuators.

    robot: an asr.Robot or a robot name (see asr.load_robot). n_instances: N.
    params: {joint name or index: {asr parameter: scalar or (N,) array}} on top of the robot's.
    mujoco_params: {field: {object name: scalar or (N,) array}} for the MuJoCo model fields in
        MUJOCO_FIELDS (body_mass kg, dof_damping N m s/rad, dof_frictionloss N m, geom_friction
        (3,) or (N, 3)); instances then get their own model copies.
    threads, max_substep, motor_scheme: as for asr.Batch.
    controller: any asr.sim.Controller, run in C inside every rollout step; e.g. asr.Admittance
        or asr.DirectForce: interaction control ([Storiale2022]) writing the joints' first
        references (see asr.controllers.interaction and `controller`; needs the robot's
        [interaction] block).
    engine: "mujoco" (default) or "gazebo": gz-physics with DART on the robot's SDF file
        (Robot.sdf; see asr.engines.gz_shim), one DART world per instance, the time step the SDF's
        max_step_size; models and datas are then empty and mujoco_params is refused (see
        asr.engines for the engines).

    Threads: a Sim shares its batch's lock (see `lock`): calls from several Python threads run
    one at a time, each whole. Its structure (robot, models, datas, addresses, batch) is fixed
    at construction and exposed read-only; the MjModel / MjData objects themselves may be read
    and edited between calls (hold `sim.lock` when other threads use the Sim).
    """

    def __init__(
        self,
        robot: Robot | str | os.PathLike[str],
        n_instances: int = 1,
        *,
        params: Mapping[str | int, Mapping[str, npt.ArrayLike]] | None = None,
        mujoco_params: Mapping[str, Mapping[str, npt.ArrayLike]] | None = None,
        threads: int = 1,
        max_substep: float = 1e-3,
        motor_scheme: str = "euler",
        variant: str | None = None,
        engine: str = "mujoco",
        controller: Controller | None = None,
    ) -> None:
        engines.check(engine)
        if controller is not None and not isinstance(controller, Controller):
            raise TypeError(
                "controller: expected an asr.sim.Controller (an object with bind(sim, engine), "
                f"e.g. asr.Admittance or asr.DirectForce), got {type(controller).__name__}"
            )
        self._robot: Robot = robot if isinstance(robot, Robot) else load_robot(robot, variant)
        self._n_instances: int = V.positive_int(n_instances, "n_instances", hi=2**31 - 1)
        self._engine: LinkEngine = engines.create(
            engine, self.robot, self.n_instances, mujoco_params
        )
        self._batch = Batch(
            [j.joint() for j in self.robot.joints],
            self.n_instances,
            threads=threads,
            max_substep=max_substep,
            motor_scheme=motor_scheme,
        )
        self._lock: BatchLock = self._batch.lock
        for joint, values in mapping(params, "params").items():
            self.batch.set_params(self._joint_index(joint), **mapping(values, f"params[{joint!r}]"))
        self._controller: BoundController | None = None
        if controller is not None:
            self._controller = controller.bind(self, self._engine)
        self._held_refs = np.zeros((self.n_instances, self.n_joints, 2))
        self.reset()

    def __reduce__(self) -> tuple[Any, ...]:
        raise TypeError(
            "a Sim cannot be pickled: its engine data and actuator batch live in C and its lock "
            "belongs to this process. Save what rebuilds it instead: the robot (name, variant), "
            "n_instances, params and mujoco_params, and the state you need (sim.q, sim.qd, the "
            "batch's fields); a new Sim reset to the saved q0 and references continues from "
            "there"
        )

    # ------------------------------------------------------------ set-up (read-only)

    @property
    def robot(self) -> Robot:
        """The asr.Robot simulated."""
        return self._robot

    @property
    def n_instances(self) -> int:
        """N, the number of instances."""
        return self._n_instances

    @property
    def n_joints(self) -> int:
        """J, the number of actuated joints."""
        return len(self.robot.joints)

    @property
    def controller(self) -> Any:
        """The controller bound to this Sim (what the controller's bind returned, an
        asr.sim.BoundController with its own interface; interaction control:
        asr.controllers.interaction.Interaction: setpoint, trajectory, set_references, fsm,
        ...), or None."""
        return self._controller

    @property
    def engine(self) -> str:
        """The link engine's name: "mujoco" or "gazebo" (see asr.engines)."""
        return self._engine.name

    @property
    def dt(self) -> float:
        """The MJCF timestep (Gazebo: the SDF's max_step_size), s: the length of one step."""
        return self._engine.dt

    @property
    def qpos_adr(self) -> npt.NDArray[np.intp]:
        """(J,) int, read-only: each actuated joint's address in the engine's generalized
        positions (MuJoCo: MjData.qpos)."""
        return self._engine.public_adr[0]

    @property
    def dof_adr(self) -> npt.NDArray[np.intp]:
        """(J,) int, read-only: each actuated joint's address in the engine's generalized
        velocities and forces (MuJoCo: MjData.qvel / qfrc_applied)."""
        return self._engine.public_adr[1]

    @property
    def models(self) -> tuple[Any, ...]:
        """(N,) tuple of mujoco.MjModel, one per instance (the same object when shared): the
        MuJoCo engine's own models, an escape hatch for users' experiments (the engine-neutral
        q, qd, gravity, site_state, body_state and the 3-D view's geometry and poses serve most
        needs); empty with engine='gazebo'."""
        return self._engine.models

    @property
    def datas(self) -> tuple[Any, ...]:
        """(N,) tuple of mujoco.MjData, one per instance: the MuJoCo engine's own data, an escape
        hatch for users (see models); empty with engine='gazebo'."""
        return self._engine.datas

    @property
    def batch(self) -> Batch:
        """The asr.Batch of the actuators (N instances x J joints)."""
        return self._batch

    @property
    def lock(self) -> BatchLock:
        """The lock every call takes (the batch's); hold it (`with sim.lock:`) to make several
        calls, or direct edits of models and datas, one unit no other thread comes between."""
        return self._lock

    def _joint_index(self, joint: str | int) -> int:
        names = self.robot.joint_names
        if isinstance(joint, str):
            if joint not in names:
                raise ValueError(
                    f"params: unknown joint {joint!r}; actuated joints: {', '.join(names)}"
                )
            index: int = names.index(joint)
        else:
            index = V.positive_int(joint, "params joint index", lo=0, hi=len(names) - 1)
        return index

    # ------------------------------------------------------------ state

    @serialised
    def reset(
        self,
        q0: npt.ArrayLike | None = None,
        refs: npt.ArrayLike | None = None,
        *,
        instances: npt.ArrayLike | None = None,
    ) -> None:
        """Reset the engine and the actuators. q0: link angles (N, J) or (J,), rad (default: the
        robot's initial q, else the model's qpos0); refs: (N, J, 2) or (J, 2) references that
        place the motors (default: the robot's initial refs, else zero deflection).
        instances: reset only these instances (indices), the others keep running.
        With engine='gazebo' the default q0 is the SDF's joint positions, velocities are zeroed."""
        shape = (self.n_instances, self.n_joints)
        if q0 is None and self.robot.initial_q is not None:
            q0 = self.robot.initial_q
        if refs is None and self.robot.initial_refs is not None:
            refs = self.robot.initial_refs
        q = None if q0 is None else V.broadcast_input(q0, "q0", shape)
        self._engine.check_q0(q)
        idx: IndexArray | None = None
        if instances is not None:
            idx = V.instance_indices(instances, self.n_instances)
        self._engine.reset(q, idx)
        self.batch.reset(self.q, refs, instances=idx)
        self._hold_refs(refs, idx)
        if self._controller is not None:
            self._controller.reset(idx)

    def _hold_refs(self, refs: npt.ArrayLike | None, instances: IndexArray | None) -> None:
        """The references a controlled rollout without refs uses: those of the last step, or
        after a reset the reset's (the robot's initial ones; zero without)."""
        shape = (self.n_instances, self.n_joints, 2)
        if refs is not None:
            held = V.broadcast_input(refs, "refs", shape)
            index = slice(None) if instances is None else list(instances)
            self._held_refs[index] = held[index]

    @property
    @serialised
    def q(self) -> FloatArray:
        """Link angles of the actuated joints, (N, J), rad (a copy)."""
        return self._engine.q()

    @property
    @serialised
    def qd(self) -> FloatArray:
        """Link velocities of the actuated joints, (N, J), rad/s (a copy)."""
        return self._engine.qd()

    @property
    @serialised
    def time(self) -> float:
        """Simulated time of instance 0, s."""
        return self._engine.time()

    @property
    @serialised
    def gravity(self) -> FloatArray:
        """(3,) gravitational acceleration in the world frame, m/s^2 (a copy; MuJoCo: the
        MJCF's option gravity). NotImplementedError with engine='gazebo'."""
        return self._engine.gravity()

    @serialised
    def site_state(self, name: str, instance: int = 0) -> tuple[FloatArray, FloatArray]:
        """The site `name` of instance `instance` now: world position (3,) m and linear
        velocity (3,) m/s (MuJoCo: a site of the MJCF; ValueError for an unknown name).
        NotImplementedError with engine='gazebo'."""
        return self._engine.site_state(self._instance(instance), name)

    @serialised
    def body_state(self, name: str, instance: int = 0) -> tuple[FloatArray, FloatArray]:
        """As site_state, for the frame of the body `name` (MuJoCo: a body of the MJCF, its
        xpos). NotImplementedError with engine='gazebo'."""
        return self._engine.body_state(self._instance(instance), name)

    @serialised
    def joint_friction(self, instance: int = 0) -> FloatArray:
        """(J,) static friction of the actuated joints in the engine, N m (MuJoCo: the model's
        dof_frictionloss). NotImplementedError with engine='gazebo'."""
        return self._engine.joint_friction(self._instance(instance))

    # ------------------------------------------------------------ the 3-D view

    @serialised
    def scene_geometry(self) -> SceneGeometry:
        """The robot's visible shapes as triangle meshes in their own frames (MuJoCo: its
        geoms; see asr.engines.base.SceneGeometry). NotImplementedError with engine='gazebo'."""
        return self._engine.scene_geometry()

    @serialised
    def geom_poses(self, instance: int = 0) -> FloatArray:
        """(G, 12) world poses of scene_geometry's shapes in instance `instance` now: position
        (3,) m, then rotation (9,) row-major. NotImplementedError with engine='gazebo'."""
        return self._engine.geom_poses(self._instance(instance))

    @property
    def free_base_adr(self) -> npt.NDArray[np.integer[Any]]:
        """(7 F,) int: the addresses in the engine's generalized positions (MjData.qpos) of the
        poses of the robot's F free joints (a free base: position (3,) m, unit quaternion w x y z
        (4,) each), in joint order, for Sim.rollout's record_qpos and geom_poses_at's base; empty
        for a robot without a free joint (and with engine='gazebo')."""
        return self._engine.free_base_adr()

    @serialised
    def geom_poses_at(
        self, q: npt.ArrayLike, instance: int = 0, base: npt.ArrayLike | None = None
    ) -> FloatArray:
        """geom_poses with the actuated joints at link angles q (J,) rad and, if given, the free
        joints at base (7 F,) (free_base_adr's entries: positions m, quaternions), the rest of
        the instance as it is now (which is left untouched). ValueError for another shape or a
        non-finite value. NotImplementedError with engine='gazebo'."""
        angles = V.real_array(q, "q")
        if angles.shape != (self.n_joints,):
            raise ValueError(f"q: expected shape ({self.n_joints},), got {angles.shape}")
        if not np.all(np.isfinite(angles)):
            raise ValueError(f"q: got {angles.tolist()}, valid: finite link angles (rad)")
        if base is None:
            return self._engine.geom_poses_at(self._instance(instance), angles)
        pose = V.real_array(base, "base")
        n = self.free_base_adr.size
        if pose.shape != (n,):
            raise ValueError(
                f"base: expected shape ({n},) (7 per free joint of the robot), got {pose.shape}"
            )
        if not np.all(np.isfinite(pose)):
            raise ValueError(f"base: got {pose.tolist()}, valid: finite positions (m), quaternions")
        return self._engine.geom_poses_at(self._instance(instance), angles, pose)

    def _instance(self, instance: int) -> int:
        """instance, checked as an index of this Sim's instances."""
        return V.positive_int(instance, "instance", lo=0, hi=self.n_instances - 1)

    # ------------------------------------------------------------ stepping

    @serialised
    def rollout(
        self,
        steps: int,
        refs: npt.ArrayLike | RefsFn | None = None,
        *,
        tau_ext: npt.ArrayLike | None = None,
        tau_ff: npt.ArrayLike | None = None,
        every: int = 1,
        record: str | Iterable[str] = DEFAULT_RECORD,
        on_error: str = "raise",
        record_qpos: npt.ArrayLike | None = None,
        **inputs: npt.ArrayLike,
    ) -> dict[str, npt.NDArray[Any]]:
        """Simulate `steps` steps of the MJCF timestep.

        refs: (N, steps, J, 2) per step, (N, J, 2) or (J, 2) held, or a callable
            refs(sim, t) -> (N, J, 2) evaluated in Python every `every` steps (t: step index).
            With a controller, the controller writes the first references and refs gives the
            second (e.g. the stiffness preset); default: the references of the last step.
        tau_ext: external link torques, tau_ff: feed-forward motor torques (gravity compensation
            of single-motor joints in modes 5-6, [Kamedula2016] eq. 4); each None, (N, J) held or
            (N, steps, J), N m.
        inputs: the controller's rollout inputs (its `inputs`); interaction control:
            wrench_ext, an external wrench on the tool's body, (6,) / (N, 6) held or
            (N, steps, 6): force N and torque N m, world frame, at the body's centre of mass.
        record: state fields recorded after every step: q and qd are the link state at the end of
            the step, torques (tau_joint, tau_link, ...) those applied over it, motor fields at
            its end. Returns {field: (N, steps, J)}; with a controller also its record's fields
            (interaction control: asr.controllers.interaction.RECORD's x_d, x_c, x_m (N, steps,
            3) m in the base frame, f_d, f_e (N, steps, 3) N and tau_e (N, steps, 3) N m along
            the task axes, fsm (N, steps) state index, ik_ok (N, steps) bool).
        record_qpos: (n,) int addresses into each instance's engine positions (MjData.qpos,
            [0, model.nq) valid; Gazebo: the J joint angles), recorded in C after every step
            within the same call: e.g. a free joint's 7 entries (jnt_qposadr + 0..6: position m,
            unit quaternion w x y z), which no state field holds. Returns them as "qpos":
            (N, steps, n) float64, bit for bit what instance i's MjData.qpos[adr] reads after each
            step of one-step rollouts. None (default): not recorded.
        """
        ctl = self._controller
        inputs = {k: v for k, v in inputs.items() if v is not None}
        for name in inputs:
            if ctl is None or name not in ctl.inputs:
                takes = ", ".join(ctl.inputs) if ctl is not None and ctl.inputs else "none"
                raise ValueError(
                    f"{name}: needs a controller that takes it (this Sim's controller "
                    f"inputs: {takes}); it is no argument of Sim.rollout itself"
                )
        if refs is None:
            if ctl is None:
                raise TypeError("refs: required without a controller (N, J, 2 references)")
            refs = self._held_refs
        run_refs: npt.ArrayLike | RefsAt
        if callable(refs):
            fn = refs
            run_refs = lambda t: fn(self, t)  # noqa: E731 (refs(sim, t) for the core's refs(t))
        else:
            run_refs = refs
        with self._controlled(steps, inputs) as (hooks, ctl_record):
            res = rollout_coupled(
                self.batch,
                self._engine,
                steps,
                run_refs,
                tau_ext=tau_ext,
                tau_ff=tau_ff,
                every=every,
                record=record,
                on_error=on_error,
                controller=hooks,
                what="Sim.rollout",
                refs_name="refs(sim, t)",
                hint=self.coupling_limit,
                record_qpos=record_qpos,
                qpos_size=0 if record_qpos is None else self._engine.qpos_size(),
            )
        self._held_refs = np.stack([self.batch.field("ref1"), self.batch.field("ref2")], axis=-1)
        if ctl is not None and ctl_record is not None:
            res.update(ctl.results(ctl_record))
        return res

    @contextlib.contextmanager
    def _controlled(
        self, steps: int, inputs: Mapping[str, npt.ArrayLike]
    ) -> Iterator[tuple[HooksAt | None, FloatArray | None]]:
        """(the controller's hooks per window for rollout_coupled, its record (N, steps, C)), or
        (None, None) without a controller; the inputs checked once here."""
        ctl = self._controller
        if ctl is None:
            yield None, None
            return
        steps = V.positive_int(steps, "steps", hi=2**31 - 1)
        series = ctl.check_inputs(steps, inputs)
        full = empty_record(ctl, self.n_instances, steps)
        assert full is not None

        @contextlib.contextmanager
        def hooks(t0: int, k: int) -> Iterator[CData]:
            part = full[:, t0 : t0 + k]
            buf = part if part.flags.c_contiguous else np.empty(part.shape)
            now: dict[str, Series] = {}
            for name, s in series.items():
                w = window(s, t0)
                now[name] = w if w is not None else s
            with ctl.hooks(now, buf) as c_hooks:
                yield c_hooks
            if buf is not part:
                part[...] = buf

        yield hooks, full

    def step(
        self,
        refs: npt.ArrayLike | RefsFn | None = None,
        *,
        tau_ext: npt.ArrayLike | None = None,
        tau_ff: npt.ArrayLike | None = None,
        record: str | Iterable[str] = DEFAULT_RECORD,
        on_error: str = "raise",
        record_qpos: npt.ArrayLike | None = None,
        **inputs: npt.ArrayLike,
    ) -> dict[str, npt.NDArray[Any]]:
        """One step; returns {field: (N, J)} after it (with a controller also its fields;
        inputs: the controller's, as for rollout; record_qpos: "qpos" (N, n), as for
        rollout)."""
        res = self.rollout(
            1,
            refs,
            tau_ext=tau_ext,
            tau_ff=tau_ff,
            every=1,
            record=record,
            on_error=on_error,
            record_qpos=record_qpos,
            **inputs,
        )
        return {f: v[:, 0] for f, v in res.items()}

    @serialised
    def coupling_limit(self, instance: int, joint: int) -> str:
        """Why an instance may have diverged: its spring's stiffness at zero load (the motors
        where they are now) against the link's inertia about the joint, as omega dt, which the
        explicit coupling needs below 2. Returns a sentence naming the joint and the fix."""
        i = V.positive_int(instance, "instance", lo=0, hi=self.n_instances - 1)
        j = V.positive_int(joint, "joint", lo=0, hi=self.n_joints - 1)
        spec = self.batch.specs[j]
        name = self.robot.joint_names[j]
        if spec.nmotor == 0:
            return f"joint {name!r} is rigid: check its link PID gains and torques"
        th1, th2 = self.batch.th1[i, j], self.batch.th2[i, j]
        q0 = th1 if spec.nmotor == 1 else 0.5 * (th1 + th2)
        params = {p.name: self.batch.get_param(j, p.name)[i] for p in spec.params}
        k = float(compliance(spec.name, q0, th1, th2, **params).stiffness)
        inertia = self._engine.link_inertia(i, j)
        if inertia is None:
            return (
                f"joint {name!r}: stiffness {k:.4g} N m/rad; the explicit coupling is stable "
                "while dt < 2 sqrt(I / k) for the link inertia I about the joint: lower "
                f"{self._engine.timestep_name} (now {self.dt:g} s) or the stiffness"
            )
        if not k > 0:
            return f"joint {name!r} has no stiffness at zero load: check its parameters"
        w = np.sqrt(k / inertia)
        return (
            f"joint {name!r}: stiffness {k:.4g} N m/rad on a link inertia of "
            f"{inertia:.4g} kg m^2 gives omega dt = {w * self.dt:.3g} (the explicit "
            f"coupling is stable below 2): lower {self._engine.timestep_name} below "
            f"{2 / w:.3g} s or the stiffness"
        )


__all__ = ["Sim", "MUJOCO_FIELDS"]
