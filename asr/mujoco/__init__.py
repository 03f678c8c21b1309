"""asr inside MuJoCo (csrc/mujoco): the engine plugin "asr.actuator" loaded into MuJoCo
(plugin) and robots exported as MJCF that use it (export). Not to be confused with asr's MuJoCo
link engine, asr.engines.mujoco."""

from asr.mujoco.export import export_mjcf

__all__ = ["export_mjcf"]
