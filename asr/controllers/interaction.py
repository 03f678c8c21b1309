"""Interaction control on a position interface ([Storiale2022]): admittance and direct force
control, their finite state machine, a force/torque sensor and inverse kinematics, run by the C
core inside the rollout loop (per instance and step, GIL released).

    ctl = asr.Admittance(mass=(1, 1, 0.001), damping=(900, 900, 5000), stiffness=(1300, 1300, 90))
    sim = asr.Sim("ur10", 4, controller=ctl)        # the robot's [interaction] names the sites
    sim.controller.setpoint(q_home)                 # independent joint control, then STATIC
    sim.rollout(3000)
    sim.controller.trajectory(times, positions, forces)
    out = sim.rollout(20000, wrench_ext=...)        # out["f_e"], out["x_c"], out["fsm"], ...

The equations, frames, integration and FSM are in docs/interaction.md. Gains are per task axis,
(3,) shared or (N, 3) per instance (sweeps). Positions are in the base frame F_b (m), forces in
the task frame (N): the tool frame at the last setpoint (frame="tool", the paper's F_e) or the
base frame's axes (frame="base").

This module gathers the public names: the laws and their settings (laws), the FSM (fsm) and the
controller bound to a Sim, sim.controller (bound.Interaction: an asr.sim.BoundController with
its record RECORD and its rollout input wrench_ext).
"""

from asr.controllers.bound import RECORD, Interaction, split_record
from asr.controllers.fsm import EVENTS, FSM_STATES, ControllerBusy, transition
from asr.controllers.laws import FRAMES, Admittance, DirectForce, InverseKinematics, Sensor

__all__ = [
    "Admittance",
    "DirectForce",
    "Sensor",
    "InverseKinematics",
    "ControllerBusy",
    "FSM_STATES",
    "EVENTS",
    "FRAMES",
    "RECORD",
    "Interaction",
    "split_record",
    "transition",
]
