"""Learning on asr's robots: iterative learning control (iterative_learning) and the Gymnasium
registration of asr's tasks (gym_registry; the tasks are asr.envs, PPO is asr.rl)."""

from asr.learning.iterative_learning import ILCResult, ilc

__all__ = ["ILCResult", "ilc"]
