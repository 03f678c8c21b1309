"""asr.Sim: a Batch of actuators composed with a link engine (asr.engines) and optionally a
controller (any asr.sim.Controller: its protocol, mirroring the C asr_controller hooks, is in
asr.sim.controller), stepped together in C (simulation)."""

from asr.sim.controller import BoundController, Controller
from asr.sim.simulation import DEFAULT_RECORD, ENGINES, MUJOCO_FIELDS, Sim

__all__ = [
    "Sim",
    "Controller",
    "BoundController",
    "DEFAULT_RECORD",
    "ENGINES",
    "MUJOCO_FIELDS",
]
