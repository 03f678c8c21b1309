"""Whole robots: MuJoCo integrates the links, asr's C core the actuators, many instances at once.

For every instance and step: mj_step1 -> actuator update from the link state -> joint torques
into qfrc_applied -> mj_step2, all in C over native threads with the GIL released. The core is
given only the addresses of mj_step1 / mj_step2 and of each instance's qpos, qvel and
qfrc_applied, so it does not compile against a MuJoCo version, and no global MuJoCo callback is
installed (several robots can run in one process).

Coupling error: the actuator torque of a step is computed from the state at its start and held
over the step (explicit coupling); MuJoCo's Euler step then integrates the links. The error is
first order in the time step, like MuJoCo's own Euler integrator, and grows with the spring
stiffness: a spring of stiffness k on a link of inertia I is integrated stably while
dt < 2 / sqrt(k / I) and accurately well below it. Choose the MJCF timestep accordingly.
"""
import ctypes
import glob
import os
import warnings
from collections.abc import Mapping


import numpy as np

from asr import _mujoco_warnings as mj_warnings
from asr import _validate as V
from asr._ffi import ffi, lib
from asr._serial import serialised
from asr.batch import Batch, as_series, check_on_error, check_record, per_step, window
from asr.errors import SimulationError
from asr.models import compliance
from asr.robot import Robot, joint_addresses, load_robot

DEFAULT_RECORD = ("q", "qd", "th1", "th2", "tau_joint", "stiffness")

# Link engines: MuJoCo (the robot's MJCF) or Gazebo's physics with DART (its SDF; asr.gazebo).
ENGINES = ("mujoco", "gazebo")

# MuJoCo model fields a sweep may vary per instance: {field: the object kind it is indexed by}.
MUJOCO_FIELDS = {
    "body_mass": "body",
    "dof_damping": "joint",
    "dof_frictionloss": "joint",
    "geom_friction": "geom",
}


def _mujoco():
    try:
        import mujoco
    except ImportError as exc:  # pragma: no cover - mujoco is a dependency
        raise ImportError("asr.Sim needs the mujoco package (pip install mujoco)") from exc
    return mujoco


_STEP_FNS = {}


def _step_functions():
    """Addresses of mj_step1 and mj_step2 in the libmujoco the Python bindings loaded."""
    if not _STEP_FNS:
        mujoco = _mujoco()
        folder = os.path.dirname(mujoco.__file__)
        libs = sorted(glob.glob(os.path.join(folder, "libmujoco*")))
        if not libs:
            raise ImportError(f"no libmujoco shared library next to the mujoco package in {folder}")
        handle = ctypes.CDLL(libs[0])  # already loaded by the bindings: the same library
        for name in ("mj_step1", "mj_step2"):
            _STEP_FNS[name] = ffi.cast("asr_engine_fn", ctypes.cast(getattr(handle, name),
                                                                     ctypes.c_void_p).value)
        _STEP_FNS["handle"] = handle
    return _STEP_FNS["mj_step1"], _STEP_FNS["mj_step2"]


def kinematics_functions():
    """Addresses of mj_kinematics, mj_comPos and mj_jacSite (the interaction controller's
    inverse kinematics) in the libmujoco the Python bindings loaded."""
    _step_functions()
    if "mj_jacSite" not in _STEP_FNS:
        handle = _STEP_FNS["handle"]
        types = {"mj_kinematics": "asr_engine_fn", "mj_comPos": "asr_engine_fn",
                 "mj_jacSite": "asr_site_jac_fn"}
        for name, ctype in types.items():
            _STEP_FNS[name] = ffi.cast(ctype, ctypes.cast(getattr(handle, name),
                                                          ctypes.c_void_p).value)
    return _STEP_FNS["mj_kinematics"], _STEP_FNS["mj_comPos"], _STEP_FNS["mj_jacSite"]


def _mapping(value, name):
    """value, a mapping (None: empty); TypeError naming the argument otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name}: expected a mapping (dict), got {type(value).__name__} "
                        f"{value!r}")
    return value


class Sim:
    """N instances of a robot: MuJoCo links + asr actuators.

    robot: an asr.Robot or a robot name (see asr.load_robot). n_instances: N.
    params: {joint name or index: {asr parameter: scalar or (N,) array}} on top of the robot's.
    mujoco_params: {field: {object name: scalar or (N,) array}} for the MuJoCo model fields in
        MUJOCO_FIELDS (body_mass kg, dof_damping N m s/rad, dof_frictionloss N m, geom_friction
        (3,) or (N, 3)); instances then get their own model copies.
    threads, max_substep, motor_scheme: as for asr.Batch.
    controller: asr.Admittance or asr.DirectForce: interaction control ([Storiale2022]) run in C
        inside every rollout step, writing the joints' first references (see asr.interaction and
        `controller`); needs the robot's [interaction] block.
    engine: "mujoco" (default) or "gazebo": gz-physics with DART on the robot's SDF file
        (Robot.sdf; see asr.gazebo), one DART world per instance, the time step the SDF's
        max_step_size; models and datas are then empty and mujoco_params is refused.

    Threads: a Sim shares its batch's lock (see `lock`): calls from several Python threads run
    one at a time, each whole. Its structure (robot, models, datas, addresses, batch) is fixed
    at construction and exposed read-only; the MjModel / MjData objects themselves may be read
    and edited between calls (hold `sim.lock` when other threads use the Sim).
    """

    def __init__(self, robot, n_instances=1, *, params=None, mujoco_params=None, threads=1,
                 max_substep=1e-3, motor_scheme="euler", variant=None, engine="mujoco",
                 controller=None):
        if not isinstance(engine, str) or engine not in ENGINES:
            raise ValueError(f"engine: got {engine!r}, valid: {', '.join(map(repr, ENGINES))}")
        self._robot = robot if isinstance(robot, Robot) else load_robot(robot, variant)
        self._n_instances = V.positive_int(n_instances, "n_instances", hi=2**31 - 1)
        self._gz = None
        if engine == "gazebo":
            self._init_gazebo(mujoco_params)
        else:
            self._init_mujoco(mujoco_params)
        self._batch = Batch([j.joint() for j in self.robot.joints], self.n_instances,
                            threads=threads, max_substep=max_substep, motor_scheme=motor_scheme)
        self._lock = self._batch.lock
        for joint, values in _mapping(params, "params").items():
            self.batch.set_params(self._joint_index(joint),
                                  **_mapping(values, f"params[{joint!r}]"))
        self._engine = self._gz.engine if self._gz else self._engine_struct()
        self._controller = None
        if controller is not None:
            if self._gz:
                raise ValueError("controller: interaction control needs MuJoCo's site Jacobians "
                                 "and force sensors; not available with engine='gazebo'")
            from asr.interaction import Interaction
            self._controller = Interaction(self, controller)
        self.reset()

    def _init_gazebo(self, mujoco_params):
        from asr.gazebo import GazeboWorlds

        if mujoco_params:
            raise ValueError("mujoco_params: MuJoCo model fields, not available with "
                             "engine='gazebo' (set masses, damping and friction in the SDF file)")
        sdf = getattr(self.robot, "sdf", None)
        if sdf is None:
            raise ValueError(f"engine='gazebo': robot {self.robot.name!r} ({self.robot.variant}) "
                             "has no SDF file (the 'sdf' entry of its robot.toml variant)")
        self._gz = GazeboWorlds(sdf, self.robot.joint_names, self.n_instances,
                                label=f"robot {self.robot.name!r} ({self.robot.variant})")
        self._gz_q0 = self._gz.q()
        self._dt = self._gz.dt
        self._set_addresses(range(self.n_joints), range(self.n_joints))
        self._mj_models, self._datas = (), ()

    def _init_mujoco(self, mujoco_params):
        mujoco = _mujoco()
        base = self.robot.mj_model()
        self._dt = float(base.opt.timestep)
        if int(base.opt.integrator) not in (int(mujoco.mjtIntegrator.mjINT_EULER),
                                            int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST)):
            raise ValueError(f"{self.robot.mjcf}: integrator must be Euler or implicitfast (the "
                             "mj_step1/mj_step2 split integrates with those only)")
        qpos_adr, dof_adr = joint_addresses(base, self.robot.joint_names, self.robot.mjcf)
        self._set_addresses(qpos_adr, dof_adr)
        self._mj_models = tuple(self._models(base, mujoco_params or {}))
        self._datas = tuple(mujoco.MjData(m) for m in self.models)

    def _set_addresses(self, qpos_adr, dof_adr):
        """Private index arrays (used internally, never handed out) and read-only copies of
        them for the properties: an edited public array cannot redirect an index."""
        self._qpos_adr = np.array(qpos_adr, dtype=np.intp)
        self._dof_adr = np.array(dof_adr, dtype=np.intp)
        self._public_adr = tuple(V.read_only(a, np.intp) for a in (self._qpos_adr, self._dof_adr))

    def __reduce__(self):
        raise TypeError(
            "a Sim cannot be pickled: its MuJoCo data and actuator batch live in C and its lock "
            "belongs to this process. Save what rebuilds it instead: the robot (name, variant), "
            "n_instances, params and mujoco_params, and the state you need (sim.q, sim.qd, the "
            "batch's fields); a new Sim reset to the saved q0 and references continues from "
            "there")

    # ------------------------------------------------------------ set-up (read-only)

    @property
    def robot(self):
        """The asr.Robot simulated."""
        return self._robot

    @property
    def n_instances(self):
        """N, the number of instances."""
        return self._n_instances

    @property
    def n_joints(self):
        """J, the number of actuated joints."""
        return len(self.robot.joints)

    @property
    def controller(self):
        """The interaction controller (asr.interaction.Interaction: setpoint, trajectory,
        set_references, fsm, ...), or None."""
        return self._controller

    @property
    def engine(self):
        """The link engine: "mujoco" or "gazebo"."""
        return "gazebo" if self._gz else "mujoco"

    @property
    def dt(self):
        """The MJCF timestep (Gazebo: the SDF's max_step_size), s: the length of one step."""
        return self._dt

    @property
    def qpos_adr(self):
        """(J,) int, read-only: each actuated joint's address in MjData.qpos."""
        return self._public_adr[0]

    @property
    def dof_adr(self):
        """(J,) int, read-only: each actuated joint's address in MjData.qvel / qfrc_applied."""
        return self._public_adr[1]

    @property
    def models(self):
        """(N,) tuple of mujoco.MjModel, one per instance (the same object when shared); empty
        with engine='gazebo'."""
        return self._mj_models

    @property
    def datas(self):
        """(N,) tuple of mujoco.MjData, one per instance; empty with engine='gazebo'."""
        return self._datas

    @property
    def batch(self):
        """The asr.Batch of the actuators (N instances x J joints)."""
        return self._batch

    @property
    def lock(self):
        """The lock every call takes (the batch's); hold it (`with sim.lock:`) to make several
        calls, or direct edits of models and datas, one unit no other thread comes between."""
        return self._lock

    def _joint_index(self, joint):
        names = self.robot.joint_names
        if isinstance(joint, str):
            if joint not in names:
                raise ValueError(f"params: unknown joint {joint!r}; actuated joints: "
                                 f"{', '.join(names)}")
            return names.index(joint)
        return V.positive_int(joint, "params joint index", lo=0, hi=len(names) - 1)

    def _models(self, base, mujoco_params):
        """One shared model, or one copy per instance when a field varies per instance."""
        mujoco = _mujoco()
        per_instance = []
        for field, values in _mapping(mujoco_params, "mujoco_params").items():
            if field not in MUJOCO_FIELDS:
                raise ValueError(f"mujoco_params: unknown field {field!r}; valid: "
                                 f"{', '.join(MUJOCO_FIELDS)}")
            kind = MUJOCO_FIELDS[field]
            for obj, value in _mapping(values, f"mujoco_params[{field!r}]").items():
                k = mujoco.mj_name2id(base, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), obj)
                if k < 0:
                    raise ValueError(f"mujoco_params[{field!r}]: no {kind} named {obj!r} in "
                                     f"{self.robot.mjcf}")
                index = int(base.jnt_dofadr[k]) if kind == "joint" else k
                arr = V.finite_array(value, f"mujoco_params[{field!r}][{obj!r}]")
                if np.any(arr < 0):
                    raise ValueError(f"mujoco_params[{field!r}][{obj!r}]: got {V.num(arr.min())}, "
                                     "valid range [0, inf)")
                width = getattr(base, field).shape[1] if getattr(base, field).ndim > 1 else 0
                shared_shape = (width,) if width else ()
                if arr.shape == shared_shape:
                    getattr(base, field)[index] = arr
                elif arr.shape == (self.n_instances,) + shared_shape:
                    per_instance.append((field, index, arr))
                else:
                    raise ValueError(f"mujoco_params[{field!r}][{obj!r}]: expected shape "
                                     f"{shared_shape} or {(self.n_instances,) + shared_shape}, "
                                     f"got {arr.shape}")
        if not per_instance:
            return [base] * self.n_instances
        models = []
        for i in range(self.n_instances):
            m = base.__copy__()
            for field, index, arr in per_instance:
                getattr(m, field)[index] = arr[i]
            models.append(m)
        return models

    def _engine_struct(self):
        step1, step2 = _step_functions()
        n = self.n_instances
        keep = self._keep = []

        def table(ctype, values):
            arr = ffi.new(f"{ctype}[]", values)
            keep.append(arr)
            return arr

        e = ffi.new("asr_engine*")
        keep.append(e)
        e.step1, e.step2 = step1, step2
        e.model = table("void*", [ffi.cast("void*", m._address) for m in self.models])
        e.data = table("void*", [ffi.cast("void*", d._address) for d in self.datas])
        e.qpos = table("double*", [ffi.cast("double*", d.qpos.ctypes.data) for d in self.datas])
        e.qvel = table("double*", [ffi.cast("double*", d.qvel.ctypes.data) for d in self.datas])
        e.qfrc = table("double*", [ffi.cast("double*", d.qfrc_applied.ctypes.data)
                                   for d in self.datas])
        e.qpos_adr = table("int", self._qpos_adr.tolist())
        e.dof_adr = table("int", self._dof_adr.tolist())
        assert n == len(self.datas)
        return e

    # ------------------------------------------------------------ state

    @serialised
    def reset(self, q0=None, refs=None, *, instances=None):
        """Reset MuJoCo and the actuators. q0: link angles (N, J) or (J,), rad (default: the
        robot's initial q, else the model's qpos0); refs: (N, J, 2) or (J, 2) references that
        place the motors (default: the robot's initial refs, else zero deflection).
        instances: reset only these instances (indices), the others keep running.
        With engine='gazebo' the default q0 is the SDF's joint positions, velocities are zeroed."""
        if self._gz:
            return self._reset_gazebo(q0, refs, instances)
        mujoco = _mujoco()
        shape = (self.n_instances, self.n_joints)
        if q0 is None and self.robot.initial_q is not None:
            q0 = self.robot.initial_q
        if refs is None and self.robot.initial_refs is not None:
            refs = self.robot.initial_refs
        q = None if q0 is None else V.broadcast_input(q0, "q0", shape)
        if q is not None and np.any(np.abs(q) > mujoco.mjMAXVAL):
            bad = q[np.abs(q) > mujoco.mjMAXVAL][0]
            raise ValueError(f"q0: got {V.num(bad)} rad, valid range [-{mujoco.mjMAXVAL:g}, "
                             f"{mujoco.mjMAXVAL:g}] (MuJoCo resets larger joint positions as a "
                             "blow-up)")
        if instances is not None:
            instances = V.instance_indices(instances, self.n_instances)
        for i in range(self.n_instances) if instances is None else instances:
            m, d = self.models[i], self.datas[i]
            mujoco.mj_resetData(m, d)
            if q is not None:
                d.qpos[self._qpos_adr] = q[i]
            mujoco.mj_forward(m, d)
        self.batch.reset(self.q, refs, instances=instances)
        self._hold_refs(refs, instances)
        if self._controller is not None:
            self._controller.init(instances)

    def _hold_refs(self, refs, instances):
        """The references a controlled rollout without refs uses: those of the last step, or
        after a reset the reset's (the robot's initial ones; zero without)."""
        shape = (self.n_instances, self.n_joints, 2)
        if not hasattr(self, "_held_refs"):
            self._held_refs = np.zeros(shape)
        if refs is not None:
            held = V.broadcast_input(refs, "refs", shape)
            index = slice(None) if instances is None else list(instances)
            self._held_refs[index] = held[index]

    def _reset_gazebo(self, q0, refs, instances):
        if q0 is None and self.robot.initial_q is not None:
            q0 = self.robot.initial_q
        if refs is None and self.robot.initial_refs is not None:
            refs = self.robot.initial_refs
        shape = (self.n_instances, self.n_joints)
        q = self._gz_q0 if q0 is None else V.broadcast_input(q0, "q0", shape)
        if instances is not None:
            instances = V.instance_indices(instances, self.n_instances)
        for i in range(self.n_instances) if instances is None else instances:
            self._gz.set_state(i, q[i], np.zeros(self.n_joints))
        self.batch.reset(self.q, refs, instances=instances)

    @property
    @serialised
    def q(self):
        """Link angles of the actuated joints, (N, J), rad (a copy)."""
        if self._gz:
            return self._gz.q()
        return np.array([d.qpos[self._qpos_adr] for d in self.datas])

    @property
    @serialised
    def qd(self):
        """Link velocities of the actuated joints, (N, J), rad/s (a copy)."""
        if self._gz:
            return self._gz.qd()
        return np.array([d.qvel[self._dof_adr] for d in self.datas])

    @property
    @serialised
    def time(self):
        """Simulated time of instance 0, s."""
        if self._gz:
            return self._gz.time(0)
        return float(self.datas[0].time)

    def _warnings_before(self):
        """MuJoCo's warning counts before a run, per instance (asr._mujoco_warnings.Watch), or
        None with Gazebo."""
        if self._gz:
            return None
        if not hasattr(self, "_watch"):  # live views into each MjData, built once
            self._watch = mj_warnings.Watch(self.datas)
        return self._watch.start()

    # ------------------------------------------------------------ stepping

    @serialised
    def rollout(self, steps, refs=None, *, tau_ext=None, tau_ff=None, every=1,
                record=DEFAULT_RECORD, on_error="raise", wrench_ext=None):
        """Simulate `steps` steps of the MJCF timestep.

        refs: (N, steps, J, 2) per step, (N, J, 2) or (J, 2) held, or a callable
            refs(sim, t) -> (N, J, 2) evaluated in Python every `every` steps (t: step index).
            With a controller, the controller writes the first references and refs gives the
            second (e.g. the stiffness preset); default: the references of the last step.
        tau_ext: external link torques, tau_ff: feed-forward motor torques (gravity compensation
            of single-motor joints in modes 5-6, [Kamedula2016] eq. 4); each None, (N, J) held or
            (N, steps, J), N m.
        wrench_ext (with a controller): an external wrench on the tool's body, (6,) / (N, 6) held
            or (N, steps, 6): force N and torque N m, world frame, at the body's centre of mass.
        record: state fields recorded after every step: q and qd are the link state at the end of
            the step, torques (tau_joint, tau_link, ...) those applied over it, motor fields at
            its end. Returns {field: (N, steps, J)}; with a controller also
            asr.interaction.RECORD's fields: x_d, x_c, x_m (N, steps, 3) m in the base frame,
            f_d, f_e (N, steps, 3) N and tau_e (N, steps, 3) N m along the task axes, fsm
            (N, steps) state index, ik_ok (N, steps) bool.
        """
        check_on_error(on_error)
        steps = V.positive_int(steps, "steps", hi=2**31 - 1)
        record = check_record(record)
        ctl = self._controller
        if refs is None:
            if ctl is None:
                raise TypeError("refs: required without a controller (N, J, 2 references)")
            refs = self._held_refs
        if wrench_ext is not None and ctl is None:
            raise ValueError("wrench_ext: needs a controller (it names the tool body)")
        n, nj = self.n_instances, self.n_joints
        out = np.empty((len(record), n, steps, nj))
        ic_out = np.empty((n, steps, lib.ASR_IC_NREC)) if ctl else None
        ext = None if tau_ext is None else self._per_step(tau_ext, "tau_ext", steps, ())
        ff = None if tau_ff is None else self._per_step(tau_ff, "tau_ff", steps, ())
        wrench = None if wrench_ext is None else ctl.wrench_series(wrench_ext, steps)
        if ff is not None:
            self.batch.check_ff(ff[0].reshape(-1, nj))
        self.batch.check_frozen(on_error, "Sim.rollout")
        if callable(refs):
            every = V.positive_int(every, "every")
            for t0 in range(0, steps, every):
                k = min(every, steps - t0)
                r = V.broadcast_input(refs(self, t0), "refs(sim, t)", (n, nj, 2))
                self._run(k, (r, 0), window(ext, t0), window(ff, t0), record,
                          out[:, :, t0:t0 + k], on_error, window(wrench, t0),
                          None if ic_out is None else ic_out[:, t0:t0 + k])
        else:
            self._run(steps, self._per_step(refs, "refs", steps, (2,)), ext, ff, record, out,
                      on_error, wrench, ic_out)
        res = {f: out[k] for k, f in enumerate(record)}
        self._held_refs = np.stack([self.batch.field("ref1"), self.batch.field("ref2")], axis=-1)
        if ctl is not None:
            from asr.interaction import split_record
            res.update(split_record(ic_out))
        return res

    def step(self, refs=None, *, tau_ext=None, tau_ff=None, record=DEFAULT_RECORD,
             on_error="raise", wrench_ext=None):
        """One step; returns {field: (N, J)} after it (with a controller also its fields)."""
        res = self.rollout(1, refs, tau_ext=tau_ext, tau_ff=tau_ff, record=record,
                           on_error=on_error, wrench_ext=wrench_ext)
        return {f: v[:, 0] for f, v in res.items()}

    def _per_step(self, value, name, steps, tail):
        """(array, time stride in doubles): (N, steps, J, *tail) per step or held (N, J, *tail)."""
        return per_step(value, name, self.n_instances, steps, self.n_joints, tail)

    def _run(self, steps, refs, ext, ff, record, out, on_error, wrench=None, ic_out=None):
        """One C rollout of `steps` steps writing into out (nrecord, N, steps, J) and, with a
        controller, ic_out (N, steps, ASR_IC_NREC) (either maybe a view of a longer record:
        copied back when not contiguous). refs, ext, ff, wrench: (array, stride_t) from
        _per_step (ext, ff and wrench may be None)."""
        self.batch.check_refs_per_step(refs, "refs")
        self.batch.check_dt(self.dt)
        buf = out if out.flags.c_contiguous else np.empty(out.shape)
        keep = []
        before = self._warnings_before()
        series = (as_series(refs, keep), as_series(ext, keep), as_series(ff, keep))
        if self._controller is None:
            st = self.batch.rollout_engine(self._engine, steps, self.dt, *series, record, buf)
        else:
            ic_buf = ic_out if ic_out.flags.c_contiguous else np.empty(ic_out.shape)
            st = self._lock.run_c("rollout", self._controller.rollout_c, self.batch,
                                  self._engine, steps, *series, wrench, record, buf, ic_buf)
            if ic_buf is not ic_out:
                ic_out[...] = ic_buf
        if buf is not out:
            out[...] = buf
        try:
            self.batch.finish_run(st, on_error)
        except SimulationError as exc:
            if exc.code != lib.ASR_ERR_DIVERGED:
                raise
            raise SimulationError(exc.instance, exc.joint, exc.step, exc.code,
                                  more=len(self.batch.errors()) - 1,
                                  hint=self.coupling_limit(exc.instance, exc.joint)) from None
        self._check_mujoco(before, steps, on_error)

    @serialised
    def coupling_limit(self, instance, joint):
        """Why an instance may have diverged: its spring's stiffness at zero load (the motors
        where they are now) against the link's inertia about the joint, as omega dt, which the
        explicit coupling needs below 2. Returns a sentence naming the joint and the fix."""
        mujoco = _mujoco()
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
        if self._gz:
            return (f"joint {name!r}: stiffness {k:.4g} N m/rad; the explicit coupling is stable "
                    "while dt < 2 sqrt(I / k) for the link inertia I about the joint: lower the "
                    f"SDF's max_step_size (now {self.dt:g} s) or the stiffness")
        unit = np.zeros(self.models[i].nv)
        unit[self._dof_adr[j]] = 1.0
        minv = np.zeros_like(unit)         # column of M^-1 at the current configuration
        mujoco.mj_solveM(self.models[i], self.datas[i], minv.reshape(1, -1),
                         unit.reshape(1, -1))
        inertia = 1.0 / minv[self._dof_adr[j]]
        if not k > 0:
            return f"joint {name!r} has no stiffness at zero load: check its parameters"
        w = np.sqrt(k / inertia)
        return (f"joint {name!r}: stiffness {k:.4g} N m/rad on a link inertia of "
                f"{inertia:.4g} kg m^2 gives omega dt = {w * self.dt:.3g} (the explicit "
                f"coupling is stable below 2): lower the MJCF timestep below {2 / w:.3g} s "
                "or the stiffness")

    def _check_mujoco(self, before, steps, on_error):
        """Report MuJoCo's warnings of the run (see asr._mujoco_warnings): each instance MuJoCo
        reset is frozen as a non-finite state (the first raises SimulationError unless
        on_error='flag'); incomplete physics is a RuntimeWarning."""
        if before is None:
            return
        counts = self._watch.finish(before)
        end = self.batch.step_count
        nreset = len(mj_warnings.RESET)
        reset = np.flatnonzero(counts[:, :nreset].any(axis=1))
        for i in reset:
            self.batch.stop(int(i), end - steps, lib.ASR_ERR_NONFINITE)
        incomplete = np.flatnonzero(counts[:, nreset:].any(axis=1))
        if incomplete.size:
            what = mj_warnings.describe(counts[incomplete, nreset:].sum(axis=0),
                                        mj_warnings.INCOMPLETE)
            warnings.warn(f"MuJoCo: {what} in instance(s) {', '.join(map(str, incomplete))} "
                          f"within steps {end - steps}..{end - 1}; their results are not to be "
                          "trusted",
                          RuntimeWarning, stacklevel=4)
        if reset.size and on_error == "raise":
            i = int(reset[0])
            what = mj_warnings.describe(counts[i, :nreset], mj_warnings.RESET)
            raise SimulationError(i, -1, end - steps, lib.ASR_ERR_NONFINITE, more=reset.size - 1,
                                  hint=f"MuJoCo reported {what} within steps {end - steps}.."
                                       f"{end - 1} and reset the instance; check the state "
                                       "written into its MjData, or lower the timestep or the "
                                       "stiffness")

__all__ = ["Sim", "MUJOCO_FIELDS"]
