"""asr.Sim: a Batch of actuators composed with a link engine (asr.engines) and optionally a
controller, stepped together in C (simulation)."""

from asr.sim.simulation import DEFAULT_RECORD, ENGINES, MUJOCO_FIELDS, Sim

__all__ = ["Sim", "DEFAULT_RECORD", "ENGINES", "MUJOCO_FIELDS"]
