"""Gazebo's physics as asr's link engine: gz-physics with DART on the robot's SDF file
(Robot.sdf), one DART world per instance, the time step the SDF's max_step_size (the worlds and
the shim that drives them: asr.engines.gz_shim)."""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from asr.common.validate import CData, FloatArray
from asr.engines.base import IndexArray, LinkEngine, c_engine_struct

if TYPE_CHECKING:
    from asr.robots.robot import Robot


class Engine(LinkEngine):
    """N DART worlds of the robot's SDF file; velocities are zeroed at reset and the default
    initial angles are the SDF's joint positions."""

    name, label, timestep_name = "gazebo", "Gazebo", "the SDF's max_step_size"

    def __init__(
        self, robot: "Robot", n_instances: int, mujoco_params: Mapping[str, Any] | None = None
    ) -> None:
        from asr.engines.gz_shim import GazeboWorlds

        super().__init__(robot, n_instances)
        if mujoco_params:
            raise ValueError(
                "mujoco_params: MuJoCo model fields, not available with "
                "engine='gazebo' (set masses, damping and friction in the SDF file)"
            )
        sdf = getattr(robot, "sdf", None)
        if sdf is None:
            raise ValueError(
                f"engine='gazebo': robot {robot.name!r} ({robot.variant}) has no SDF "
                "file (the 'sdf' entry of its robot.toml variant)"
            )
        self._gz = GazeboWorlds(
            sdf, robot.joint_names, n_instances, label=f"robot {robot.name!r} ({robot.variant})"
        )
        self._q0 = self._gz.q()
        assert self._gz.dt is not None, "n_instances >= 1 worlds have a time step"
        self.dt = self._gz.dt
        n_joints = len(robot.joint_names)
        self._set_addresses(range(n_joints), range(n_joints))
        a = self._gz.addresses()
        self._keep: list[CData] = []
        # a world is both the model and the data the shim's step halves take
        self.c_engine = c_engine_struct(
            self._keep,
            a["step"],
            a["world"],
            a["world"],
            a["qpos"],
            a["qvel"],
            a["qfrc"],
            self._qpos_adr,
            self._dof_adr,
        )

    def reset(self, q: FloatArray | None, instances: IndexArray | None) -> None:
        q = self._q0 if q is None else q
        zero = np.zeros(len(self.robot.joint_names))
        for i in range(self.n_instances) if instances is None else instances:
            self._gz.set_state(i, q[i], zero)

    def q(self) -> FloatArray:
        return self._gz.q()

    def qd(self) -> FloatArray:
        return self._gz.qd()

    def time(self) -> float:
        return self._gz.time(0)


__all__ = ["Engine"]
