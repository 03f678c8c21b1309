"""The interaction control laws a user configures (asr.Admittance, asr.DirectForce) with their
force/torque sensor and inverse kinematics settings. Each is an asr.sim.Controller: asr.Sim binds
it to itself and its link engine (bind), which gives the running controller
(asr.controllers.bound.Interaction, sim.controller; docs/interaction.md)."""

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.controllers.bound import Interaction, SimView
from asr.core.ffi import lib
from asr.engines.base import LinkEngine

# the task frame of the force axes: the tool frame at the last setpoint or the base frame's axes
FRAMES = ("tool", "base")

# {C config field: (per-axis value (3,) or (N, 3), name in errors, must be > 0 (else >= 0))}
Gains = dict[str, tuple[npt.ArrayLike, str, bool]]


@dataclasses.dataclass(frozen=True)
class Sensor:
    """The force/torque sensor: sampled at `rate` Hz (None: every step; held between samples),
    white noise of standard deviation noise_force (N) / noise_torque (N m) per axis from a
    generator seeded with seed + instance index, then a first-order low-pass of cutoff Hz (0:
    none)."""

    rate: float | None = None
    cutoff: float = 0.0
    noise_force: float = 0.0
    noise_torque: float = 0.0
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class InverseKinematics:
    """Damped least squares on the engine's site Jacobian: at most max_iter steps per control
    step, converged when the position error <= tol_position (m) and the orientation error <=
    tol_rotation (rad); damping lambda of (J J^T + lambda^2 I). orientation: hold the tool's
    orientation too (6 equations; False: position only, 3)."""

    max_iter: int = 20
    tol_position: float = 1e-6
    tol_rotation: float = 1e-6
    damping: float = 1e-3
    orientation: bool = True


class _Controller:
    """What both laws share: the sensor, IK, frame, offset bound and setpoint tolerances."""

    law: int | None = None  # the C law (ASR_IC_*)

    def __init__(
        self,
        *,
        max_offset: npt.ArrayLike,
        frame: str,
        sensor: Sensor,
        ik: InverseKinematics,
        setpoint_tol: float,
        setpoint_vel_tol: float,
    ) -> None:
        if frame not in FRAMES:
            raise ValueError(f"frame: got {frame!r}, valid: {', '.join(map(repr, FRAMES))}")
        if not isinstance(sensor, Sensor):
            raise TypeError(
                f"sensor: expected asr.controllers.interaction.Sensor, got {type(sensor).__name__}"
            )
        if not isinstance(ik, InverseKinematics):
            raise TypeError(
                "ik: expected asr.controllers.interaction.InverseKinematics, got "
                f"{type(ik).__name__}"
            )
        self.max_offset, self.frame, self.sensor, self.ik = max_offset, frame, sensor, ik
        self.setpoint_tol, self.setpoint_vel_tol = setpoint_tol, setpoint_vel_tol

    def gains(self) -> Gains:
        """The per-axis gains of this law (Gains)."""
        raise NotImplementedError

    def bind(self, sim: SimView, engine: LinkEngine) -> Interaction:
        """This law run by `sim` on its link engine (asr.sim.Controller's bind): checks the robot
        (its [interaction] block, at most ASR_IC_MAX_JOINTS joints in modes 1, 3 or 6), the
        engine (MuJoCo) and the settings, and builds the C controller."""
        return Interaction(sim, engine, self)


class Admittance(_Controller):
    """M_d z'' + K_D z' + K_P z = f_d - f_e, x_c = x_d + z (task frame; [Storiale2022] eq. 1 with
    the sign that makes the contact a restoring spring, see docs/interaction.md).
    mass M_d kg (> 0), damping K_D N s/m (> 0), stiffness K_P N/m (>= 0): (3,) or (N, 3)."""

    law = lib.ASR_IC_ADMITTANCE

    def __init__(
        self,
        mass: npt.ArrayLike,
        damping: npt.ArrayLike,
        stiffness: npt.ArrayLike,
        *,
        max_offset: npt.ArrayLike = 0.5,
        frame: str = "tool",
        sensor: Sensor = Sensor(),
        ik: InverseKinematics = InverseKinematics(),
        setpoint_tol: float = 1e-3,
        setpoint_vel_tol: float = 1e-2,
    ) -> None:
        super().__init__(
            max_offset=max_offset,
            frame=frame,
            sensor=sensor,
            ik=ik,
            setpoint_tol=setpoint_tol,
            setpoint_vel_tol=setpoint_vel_tol,
        )
        self.mass, self.damping, self.stiffness = mass, damping, stiffness

    @classmethod
    def from_damping_ratio(
        cls,
        mass: npt.ArrayLike,
        zeta: npt.ArrayLike,
        stiffness: npt.ArrayLike,
        **kwargs: Any,
    ) -> "Admittance":
        """ros2_controllers' admittance parameters: M x'' + D x' + K x = F with D = 2 zeta
        sqrt(M K) per axis."""
        m = V.real_array(mass, "mass")
        k = V.real_array(stiffness, "stiffness")
        z = V.real_array(zeta, "zeta")
        return cls(mass, 2.0 * z * np.sqrt(np.abs(m) * np.abs(k)), stiffness, **kwargs)

    def gains(self) -> Gains:
        return {
            "mass": (self.mass, "mass", True),
            "damping": (self.damping, "damping", True),
            "stiffness": (self.stiffness, "stiffness", False),
        }


class DirectForce(_Controller):
    """x_c = x_d + K_P f~ + K_I integral(f~) dt along the task axes, f~ = f_d - f_e
    ([Storiale2022] sec. 2.1.2); kp m/N and ki m/(N s) (>= 0; zero on position-controlled axes),
    (3,) or (N, 3); the offset bound max_offset (m) stops the integral (anti-windup)."""

    law = lib.ASR_IC_DIRECT_FORCE

    def __init__(
        self,
        kp: npt.ArrayLike,
        ki: npt.ArrayLike,
        *,
        max_offset: npt.ArrayLike = 0.1,
        frame: str = "tool",
        sensor: Sensor = Sensor(),
        ik: InverseKinematics = InverseKinematics(),
        setpoint_tol: float = 1e-3,
        setpoint_vel_tol: float = 1e-2,
    ) -> None:
        super().__init__(
            max_offset=max_offset,
            frame=frame,
            sensor=sensor,
            ik=ik,
            setpoint_tol=setpoint_tol,
            setpoint_vel_tol=setpoint_vel_tol,
        )
        self.kp, self.ki = kp, ki

    def gains(self) -> Gains:
        return {"force_kp": (self.kp, "kp", False), "force_ki": (self.ki, "ki", False)}
