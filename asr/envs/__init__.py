"""Gymnasium environments on asr robots, batched: gymnasium.make_vec("asr/<Task>-v0", num_envs=N)
gives an AsrVectorEnv whose N sub-envs step in one C call; gymnasium.make("asr/<Task>-v0") one
sub-env as a gymnasium.Env.

Tasks (asr.envs.tasks): asr/EquilibriumTracking-v0 (1-DOF qbmove Advanced pendulum, mode 3),
asr/Reach2DOF-v0 (2-DOF qbmove Advanced arm, horizontal, mode 6). Trainer: asr.envs.cem.

register_envs() is gymnasium's plugin entry point (group "gymnasium.envs", see setup.cfg) and
runs when asr.envs is imported; it is idempotent.
"""
import gymnasium

ENVS = {
    "asr/EquilibriumTracking-v0": ("asr.envs.tasks:EquilibriumTrackingEnv",
                                   "asr.envs.tasks:EquilibriumTracking"),
    "asr/Reach2DOF-v0": ("asr.envs.tasks:Reach2DOFEnv", "asr.envs.tasks:Reach2DOF"),
}


def register_envs():
    """Register asr's environments with gymnasium (again: no-op)."""
    for env_id, (entry, vector_entry) in ENVS.items():
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(id=env_id, entry_point=entry, vector_entry_point=vector_entry,
                           disable_env_checker=False)


register_envs()

from asr.envs.tasks import EquilibriumTracking, Reach2DOF  # noqa: E402
from asr.envs.vector import AsrEnv, AsrVectorEnv, vecenv_steps_per_s  # noqa: E402

__all__ = ["register_envs", "ENVS", "AsrVectorEnv", "AsrEnv", "EquilibriumTracking", "Reach2DOF",
           "vecenv_steps_per_s"]
