"""MuJoCo as asr's link engine: the robot's MJCF, one MjData per instance.

For every instance and step: mj_step1 -> actuator update from the link state -> joint torques
into qfrc_applied -> mj_step2, all in C over native threads with the GIL released. The core is
given only the addresses of mj_step1 / mj_step2 and of each instance's qpos, qvel and
qfrc_applied, so it does not compile against a MuJoCo version, and no global MuJoCo callback is
installed (several robots can run in one process).
"""

import ctypes
import glob
import os
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.validate import CData, FloatArray
from asr.core.errors import SimulationError
from asr.core.ffi import ffi, lib
from asr.engines import _mujoco_warnings as mj_warnings
from asr.engines.base import (
    IndexArray,
    LinkEngine,
    SceneGeometry,
    c_engine_struct,
    mapping,
)
from asr.engines.mujoco_scene import Scene
from asr.robots.robot import joint_addresses

if TYPE_CHECKING:
    from asr.core.batch import Batch
    from asr.robots.robot import Robot

FREE_POSE = 7  # a free joint's qpos entries: position (3,) m, unit quaternion w x y z (4,)
# MuJoCo model fields a sweep may vary per instance: {field: the object kind it is indexed by}.
MUJOCO_FIELDS = {
    "body_mass": "body",
    "dof_damping": "joint",
    "dof_frictionloss": "joint",
    "geom_friction": "geom",
}


def _mujoco() -> Any:
    """The mujoco module (it has no type stubs: Any)."""
    try:
        import mujoco
    except ImportError as exc:  # pragma: no cover - mujoco is a dependency
        raise ImportError("asr.Sim needs the mujoco package (pip install mujoco)") from exc
    return mujoco


_FNS: dict[str, Any] = {}


def _function(name: str, ctype: str) -> CData:
    """The address of libmujoco's `name` (the library the Python bindings loaded) as ctype."""
    if "handle" not in _FNS:
        folder = os.path.dirname(_mujoco().__file__)
        libs = sorted(glob.glob(os.path.join(folder, "libmujoco*")))
        if not libs:
            raise ImportError(f"no libmujoco shared library next to the mujoco package in {folder}")
        _FNS["handle"] = ctypes.CDLL(libs[0])  # already loaded by the bindings: the same library
    if name not in _FNS:
        address = ctypes.cast(getattr(_FNS["handle"], name), ctypes.c_void_p).value
        _FNS[name] = ffi.cast(ctype, address)
    return _FNS[name]


def step_functions() -> tuple[CData, CData]:
    """Addresses of mj_step1 and mj_step2."""
    return _function("mj_step1", "asr_engine_fn"), _function("mj_step2", "asr_engine_fn")


def kinematics_functions() -> tuple[CData, CData, CData]:
    """Addresses of mj_kinematics, mj_comPos and mj_jacSite (the interaction controller's
    inverse kinematics)."""
    return (
        _function("mj_kinematics", "asr_engine_fn"),
        _function("mj_comPos", "asr_engine_fn"),
        _function("mj_jacSite", "asr_site_jac_fn"),
    )


def _ptr(arr: FloatArray, offset: int = 0) -> CData:
    return ffi.cast("double*", arr.ctypes.data) + offset


class Engine(LinkEngine):
    """N MuJoCo instances of the robot's MJCF. mujoco_params: {field: {object name: scalar or
    (N,) array}} for MUJOCO_FIELDS; instances then get their own model copies."""

    name, label, timestep_name = "mujoco", "MuJoCo", "the MJCF timestep"

    def __init__(
        self,
        robot: "Robot",
        n_instances: int,
        mujoco_params: Mapping[str, Mapping[str, npt.ArrayLike]] | None = None,
    ) -> None:
        super().__init__(robot, n_instances)
        mujoco = _mujoco()
        base = robot.mj_model()
        self.dt = float(base.opt.timestep)
        if int(base.opt.integrator) not in (
            int(mujoco.mjtIntegrator.mjINT_EULER),
            int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST),
        ):
            raise ValueError(
                f"{robot.mjcf}: integrator must be Euler or implicitfast (the "
                "mj_step1/mj_step2 split integrates with those only)"
            )
        self._set_addresses(*joint_addresses(base, robot.joint_names, robot.mjcf))
        self._models = tuple(self._per_instance_models(base, mujoco_params or {}))
        self._datas = tuple(mujoco.MjData(m) for m in self._models)
        self._watch: mj_warnings.Watch | None = None
        self._scene: Scene | None = None  # the 3-D view's reads, built on first use
        self._keep: list[CData] = []
        self.c_engine = self._engine_struct()

    @property
    def models(self) -> tuple[Any, ...]:
        """(N,) tuple of mujoco.MjModel, one per instance (the same object when shared)."""
        return self._models

    @property
    def datas(self) -> tuple[Any, ...]:
        """(N,) tuple of mujoco.MjData, one per instance."""
        return self._datas

    def _per_instance_models(
        self, base: Any, mujoco_params: Mapping[str, Mapping[str, npt.ArrayLike]]
    ) -> list[Any]:
        """One shared model, or one copy per instance when a field varies per instance."""
        mujoco, n = _mujoco(), self.n_instances
        per_instance: list[tuple[str, int, FloatArray]] = []
        for field, values in mapping(mujoco_params, "mujoco_params").items():
            if field not in MUJOCO_FIELDS:
                raise ValueError(
                    f"mujoco_params: unknown field {field!r}; valid: {', '.join(MUJOCO_FIELDS)}"
                )
            kind = MUJOCO_FIELDS[field]
            for obj, value in mapping(values, f"mujoco_params[{field!r}]").items():
                k = mujoco.mj_name2id(base, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), obj)
                if k < 0:
                    raise ValueError(
                        f"mujoco_params[{field!r}]: no {kind} named {obj!r} in {self._where()}"
                    )
                index = int(base.jnt_dofadr[k]) if kind == "joint" else k
                arr = V.finite_array(value, f"mujoco_params[{field!r}][{obj!r}]")
                if np.any(arr < 0):
                    raise ValueError(
                        f"mujoco_params[{field!r}][{obj!r}]: got {V.num(arr.min())}, "
                        "valid range [0, inf)"
                    )
                width = getattr(base, field).shape[1] if getattr(base, field).ndim > 1 else 0
                shared_shape = (width,) if width else ()
                if arr.shape == shared_shape:
                    getattr(base, field)[index] = arr
                elif arr.shape == (n,) + shared_shape:
                    per_instance.append((field, index, arr))
                else:
                    raise ValueError(
                        f"mujoco_params[{field!r}][{obj!r}]: expected shape "
                        f"{shared_shape} or {(n,) + shared_shape}, got {arr.shape}"
                    )
        if not per_instance:
            return [base] * n
        models: list[Any] = []
        for i in range(n):
            m = base.__copy__()
            for field, index, arr in per_instance:
                getattr(m, field)[index] = arr[i]
            models.append(m)
        return models

    def _engine_struct(self) -> CData:
        d = self._datas
        return c_engine_struct(
            self._keep,
            step_functions(),
            [m._address for m in self._models],
            [x._address for x in d],
            [x.qpos.ctypes.data for x in d],
            [x.qvel.ctypes.data for x in d],
            [x.qfrc_applied.ctypes.data for x in d],
            self._qpos_adr,
            self._dof_adr,
        )

    # ------------------------------------------------------------ state

    def check_q0(self, q: FloatArray | None) -> None:
        top = _mujoco().mjMAXVAL
        if q is not None and np.any(np.abs(q) > top):
            bad = q[np.abs(q) > top][0]
            raise ValueError(
                f"q0: got {V.num(bad)} rad, valid range [-{top:g}, {top:g}] "
                "(MuJoCo resets larger joint positions as a blow-up)"
            )

    def reset(self, q: FloatArray | None, instances: IndexArray | None) -> None:
        mujoco = _mujoco()
        for i in range(self.n_instances) if instances is None else instances:
            m, d = self._models[i], self._datas[i]
            mujoco.mj_resetData(m, d)
            if q is not None:
                d.qpos[self._qpos_adr] = q[i]
            mujoco.mj_forward(m, d)

    def q(self) -> FloatArray:
        return np.array([d.qpos[self._qpos_adr] for d in self._datas])

    def qd(self) -> FloatArray:
        return np.array([d.qvel[self._dof_adr] for d in self._datas])

    def time(self) -> float:
        return float(self._datas[0].time)

    def gravity(self) -> FloatArray:
        return np.array(self._models[0].opt.gravity, dtype=np.float64)

    def site_state(self, i: int, name: str) -> tuple[FloatArray, FloatArray]:
        """From instance i's MjData: site_xpos after mj_kinematics, the velocity J(q) qd with
        mj_jacSite (kinematics recomputed in place: the state itself is not changed)."""
        return self._point_state(i, "site", name)

    def body_state(self, i: int, name: str) -> tuple[FloatArray, FloatArray]:
        """As site_state, for the body's frame: xpos and mj_jacBody."""
        return self._point_state(i, "body", name)

    def _point_state(self, i: int, kind: str, name: str) -> tuple[FloatArray, FloatArray]:
        """Position and J(q) qd of the site or body (kind) `name` of instance i."""
        mujoco = _mujoco()
        m, d = self._models[i], self._datas[i]
        k = int(mujoco.mj_name2id(m, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), name))
        if k < 0:
            raise ValueError(f"{kind}: no {kind} named {name!r} in {self._where()}")
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        jacp = np.zeros((3, m.nv))
        getattr(mujoco, f"mj_jac{kind.capitalize()}")(m, d, jacp, None, k)
        velocity: FloatArray = jacp @ d.qvel
        position = d.site_xpos[k] if kind == "site" else d.xpos[k]
        return np.array(position, dtype=np.float64), velocity

    def _where(self) -> str:
        """The robot and its MJCF file's name, for messages (never the server's folder)."""
        return f"robot {self.robot.name!r} ({os.path.basename(self.robot.mjcf)})"

    def joint_friction(self, i: int) -> FloatArray:
        """The model's dof_frictionloss of each actuated joint (mujoco_params may vary it)."""
        return np.array(self._models[i].dof_frictionloss[self._dof_adr], dtype=np.float64)

    # ------------------------------------------------------------ the 3-D view

    def _scene_reads(self) -> Scene:
        if self._scene is None:
            self._scene = Scene(self._models, self._datas, self._qpos_adr)
        return self._scene

    def scene_geometry(self) -> SceneGeometry:
        """Every visible geom (groups 0-2, not transparent; asr.engines.mujoco_scene)."""
        return self._scene_reads().geometry()

    def geom_poses(self, i: int) -> FloatArray:
        """From instance i's MjData as the last step left it (geom_xpos, geom_xmat)."""
        return self._scene_reads().poses(i)

    def geom_poses_at(
        self, i: int, q: npt.ArrayLike, base: npt.ArrayLike | None = None
    ) -> FloatArray:
        if base is None:
            return self._scene_reads().poses_at(i, q)
        return self._scene_reads().poses_at(i, q, self.free_base_adr(), base)

    def qpos_size(self) -> int:
        """MjModel.nq (every instance's model has the same structure)."""
        return int(self._models[0].nq)

    def free_base_adr(self) -> IndexArray:
        """From instance 0's model: jnt_qposadr of each mjJNT_FREE joint, + 0..6."""
        m = self._models[0]
        free = int(_mujoco().mjtJoint.mjJNT_FREE)
        adr = np.asarray(m.jnt_qposadr, dtype=np.intp)[np.asarray(m.jnt_type) == free]
        out: IndexArray = (adr[:, None] + np.arange(FREE_POSE)).reshape(-1)
        return out

    def link_inertia(self, i: int, j: int) -> float:
        unit = np.zeros(self._models[i].nv)
        unit[self._dof_adr[j]] = 1.0
        minv = np.zeros_like(unit)  # column of M^-1 at the current configuration
        _mujoco().mj_solveM(
            self._models[i], self._datas[i], minv.reshape(1, -1), unit.reshape(1, -1)
        )
        return float(1.0 / minv[self._dof_adr[j]])

    # ------------------------------------------------------------ MuJoCo's warnings

    def run_start(self) -> mj_warnings.Counts:
        """MuJoCo's warning counts before a run, per instance (asr.engines._mujoco_warnings)."""
        if self._watch is None:  # live views into each MjData, built once
            self._watch = mj_warnings.Watch(self._datas)
        return self._watch.start()

    def check_run(
        self, before: mj_warnings.Counts, batch: "Batch", steps: int, on_error: str
    ) -> None:
        """Report MuJoCo's warnings of the run: each instance MuJoCo reset is frozen as a
        non-finite state (the first raises SimulationError unless on_error='flag'); incomplete
        physics is a RuntimeWarning."""
        assert self._watch is not None, "run_start comes first"
        counts = self._watch.finish(before)
        end = batch.step_count
        nreset = len(mj_warnings.RESET)
        reset = np.flatnonzero(counts[:, :nreset].any(axis=1))
        for i in reset:
            batch.stop(int(i), end - steps, lib.ASR_ERR_NONFINITE)
        incomplete = np.flatnonzero(counts[:, nreset:].any(axis=1))
        if incomplete.size:
            what = mj_warnings.describe(
                counts[incomplete, nreset:].sum(axis=0), mj_warnings.INCOMPLETE
            )
            warnings.warn(
                f"MuJoCo: {what} in instance(s) {', '.join(map(str, incomplete))} "
                f"within steps {end - steps}..{end - 1}; their results are not to be "
                "trusted",
                RuntimeWarning,
                stacklevel=4,
            )
        if reset.size and on_error == "raise":
            first = int(reset[0])
            what = mj_warnings.describe(counts[first, :nreset], mj_warnings.RESET)
            raise SimulationError(
                first,
                -1,
                end - steps,
                lib.ASR_ERR_NONFINITE,
                more=reset.size - 1,
                hint=f"MuJoCo reported {what} within steps {end - steps}.."
                f"{end - 1} and reset the instance; check the state "
                "written into its MjData, or lower the timestep or the "
                "stiffness",
            )


__all__ = ["Engine", "MUJOCO_FIELDS", "kinematics_functions", "step_functions"]
