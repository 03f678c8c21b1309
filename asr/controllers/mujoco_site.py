"""What the interaction controller needs of its link engine, read from MuJoCo's public data: the
kinematics functions (asr.engines.mujoco.kinematics_functions), each instance's tool site, F/T
sensor and tool body in its MjData, scratch MjData for the inverse kinematics, the sensors'
reading at rest and the gravity torques. The engine offers these through its public interface
(models, datas, public_adr); the controller builds its own C part (asr_interaction's engine
fields) from them, so the engine knows nothing of the controller."""

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from asr.common.validate import CData, FloatArray
from asr.core.ffi import ffi
from asr.engines.base import LinkEngine, c_table
from asr.engines.mujoco import Engine, kinematics_functions


def _mujoco() -> Any:
    """The mujoco module (a dependency of the engine these functions read; no type stubs)."""
    import mujoco

    return mujoco


def check_engine(engine: LinkEngine) -> Engine:
    """engine, when it is MuJoCo's; else the ValueError naming the engine."""
    if not isinstance(engine, Engine):
        raise ValueError(
            "controller: interaction control needs MuJoCo's site Jacobians and force "
            f"sensors; not available with engine={engine.name!r}"
        )
    return engine


def _ptr(arr: FloatArray, offset: int = 0) -> CData:
    return ffi.cast("double*", arr.ctypes.data) + offset


def fill_engine_part(
    ic: CData, engine: Engine, names: Mapping[str, str], keep: list[CData]
) -> tuple[FloatArray, FloatArray]:
    """Fill the engine's part of the asr_interaction ic: the kinematics functions, per-instance
    scratch data for the inverse kinematics, and pointers to the tool site, the F/T sensor and
    the tool body's applied wrench named by `names` (the robot's [interaction] block) in each
    instance's MjData; keep holds the tables alive. Returns the base frame (position (3,),
    rotation (9,), row-major) in the world."""
    mujoco = _mujoco()
    models, d = engine.models, engine.datas
    m0 = models[0]

    def ident(kind: Any, name: str) -> int:
        return int(mujoco.mj_name2id(m0, kind, name))

    def table(ctype: str, values: list[CData]) -> CData:
        return c_table(keep, ctype, values)

    site = ident(mujoco.mjtObj.mjOBJ_SITE, names["site"])
    sensor_site = ident(mujoco.mjtObj.mjOBJ_SITE, names["sensor_site"])
    f_adr = int(m0.sensor_adr[ident(mujoco.mjtObj.mjOBJ_SENSOR, names["force_sensor"])])
    t_adr = int(m0.sensor_adr[ident(mujoco.mjtObj.mjOBJ_SENSOR, names["torque_sensor"])])
    body = int(m0.site_bodyid[site])
    ik = tuple(mujoco.MjData(m) for m in models)
    keep.append(ik)
    ic.kinematics, ic.com_pos, ic.jac_site = kinematics_functions()
    ic.nq, ic.nv, ic.site = m0.nq, m0.nv, site
    ic.ik_data = table("void*", [ffi.cast("void*", x._address) for x in ik])
    ic.ik_qpos = table("double*", [_ptr(x.qpos) for x in ik])
    ic.ik_site_pos = table("double*", [_ptr(x.site_xpos, 3 * site) for x in ik])
    ic.ik_site_mat = table("double*", [_ptr(x.site_xmat, 9 * site) for x in ik])
    ic.site_pos = table("double*", [_ptr(x.site_xpos, 3 * site) for x in d])
    ic.site_mat = table("double*", [_ptr(x.site_xmat, 9 * site) for x in d])
    ic.sensor_mat = table("double*", [_ptr(x.site_xmat, 9 * sensor_site) for x in d])
    ic.sensor_force = table("double*", [_ptr(x.sensordata, f_adr) for x in d])
    ic.sensor_torque = table("double*", [_ptr(x.sensordata, t_adr) for x in d])
    ic.wrench_body = table("double*", [_ptr(x.xfrc_applied, 6 * body) for x in d])
    base_pos, base_mat = np.zeros(3), np.eye(3).ravel()
    if "base" in names:
        mujoco.mj_forward(m0, d[0])
        b = ident(mujoco.mjtObj.mjOBJ_SITE, names["base"])
        base_pos, base_mat = d[0].site_xpos[b].copy(), d[0].site_xmat[b].copy()
    return base_pos, base_mat


@contextlib.contextmanager
def sensors_at_rest(engine: Engine, i: int) -> Iterator[None]:
    """Instance i's sensors read at rest inside the block: inverse dynamics with zero
    accelerations (after a reset's mj_forward the sensors see the arm falling, no joint torque
    applied yet); its forward state is recomputed after."""
    mujoco = _mujoco()
    m, d = engine.models[i], engine.datas[i]
    d.qacc[:] = 0.0
    mujoco.mj_inverse(m, d)
    try:
        yield
    finally:
        mujoco.mj_forward(m, d)


def gravity_torques(engine: Engine, q: FloatArray) -> FloatArray:
    """(J,) the torques gravity puts on the actuated joints at rest at link angles q (J,) rad
    (MuJoCo's qfrc_bias on instance 0's model, computed on scratch data), N m."""
    mujoco = _mujoco()
    model = engine.models[0]
    data = mujoco.MjData(model)
    qpos_adr, dof_adr = engine.public_adr
    data.qpos[qpos_adr] = q
    mujoco.mj_forward(model, data)
    torques: FloatArray = np.array(data.qfrc_bias[dof_adr], dtype=float)
    return torques


__all__ = ["check_engine", "fill_engine_part", "sensors_at_rest", "gravity_torques"]
