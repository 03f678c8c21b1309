"""Gymnasium environments on asr robots, batched: gymnasium.make_vec("asr/<Task>-v0", num_envs=N)
gives an AsrVectorEnv whose N sub-envs step in one C call; gymnasium.make("asr/<Task>-v0") one
sub-env as a gymnasium.Env.

Tasks (asr.envs.tasks): asr/EquilibriumTracking-v0 (1-DOF qbmove Advanced pendulum, mode 3),
asr/Reach2DOF-v0 (2-DOF qbmove Advanced arm, horizontal, mode 6). asr.envs.throw: asr/Throw-v0
(2-DOF qbmove Advanced arm, vertical, mode 6: throw a ball, reward the distance [Braun2012]).
Trainer: asr.envs.cem.

`import asr` registers the ids (asr.learning.gym_registry: at once, or right after gymnasium's
import
when gymnasium is not imported yet); register_envs() does it by hand and is idempotent. It is
also gymnasium's plugin entry point (group "gymnasium.envs", see setup.cfg), which Gymnasium
before 1.0 loaded.
"""

from asr.common.optional import need

need("gymnasium", "rl", "asr.envs")

from asr.learning.gym_registry import ENVS, register_envs  # noqa: E402

register_envs()

from asr.envs.tasks import EquilibriumTracking, Reach2DOF  # noqa: E402
from asr.envs.throw import Throw  # noqa: E402
from asr.envs.vector import AsrEnv, AsrVectorEnv, vecenv_steps_per_s  # noqa: E402

__all__ = [
    "register_envs",
    "ENVS",
    "AsrVectorEnv",
    "AsrEnv",
    "EquilibriumTracking",
    "Reach2DOF",
    "Throw",
    "vecenv_steps_per_s",
]
