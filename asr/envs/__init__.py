"""Gymnasium environments on asr robots, batched: gymnasium.make_vec("asr/<Task>-v0", num_envs=N)
gives an AsrVectorEnv whose N sub-envs step in one C call; gymnasium.make("asr/<Task>-v0") one
sub-env as a gymnasium.Env.

Tasks (asr.envs.tasks): asr/EquilibriumTracking-v0 (1-DOF qbmove Advanced pendulum, mode 3),
asr/Reach2DOF-v0 (2-DOF qbmove Advanced arm, horizontal, mode 6). asr.envs.throw: asr/Throw-v0
(2-DOF qbmove Advanced arm, vertical, mode 6: throw a ball, reward the distance [Braun2012]).
asr.envs.impact: asr/Impact2DOF-v0 (the Throw's arm reaching a target on a plate fast, its peak
contact force bounded: arrival time [Haddadin2009]). asr.envs.periodic: asr/Periodic2DOF-v0
(the Throw's arm tracking a sinusoid: motor energy per cycle [Vanderborght2013]). Each task
class declares its held-out metric, the class attribute `metric` (asr.envs.metrics.TaskMetric).
Trainer: asr.envs.cem.

TRAIN_DEFAULTS: each registered id's training defaults for asr.rl.train (and `asr train`):
{"num_envs", "total_steps", "hyperparameters": {name: value}}, what the caller leaves out
(asr.rl._config.resolve_defaults; docs/learning.md's table, checked by
tests/rl/test_rl_tensorboard_eval.py). The settings of the documented results:
benchmarks/bench_rl.py (Reach2DOF) and asr.experiments.throw_ppo (Throw) read them from here.

`import asr` registers the ids (asr.learning.gym_registry: at once, or right after gymnasium's
import
when gymnasium is not imported yet); register_envs() does it by hand and is idempotent. It is
also gymnasium's plugin entry point (group "gymnasium.envs", see setup.cfg), which Gymnasium
before 1.0 loaded.
"""

from typing import Any

from asr.common.optional import need

need("gymnasium", "rl", "asr.envs")

from asr.learning.gym_registry import ENVS, register_envs  # noqa: E402

register_envs()

# asr/Reach2DOF-v0: both backends' tuned settings (docs/learning.md, "Measured"): 128 sub-envs x
# 16-step rollouts (2048 samples an update), 10 epochs of 512-sample mini-batches, 3e-3 falling
# linearly to 0 (with a constant rate the held-out error hovers near 0.013 rad), torch on one
# thread (a second one slowed the updates 2x: 28.6 -> 18.4 s of training), 196608 env-steps:
# 0.0066 rad (rsl_rl, seed 0) in 18.3-19.2 s, 4.4-4.6x bare mujoco.rollout's time. One
# 2048-sample mini-batch x 5 epochs costs half as much per env-step (2.4x bare) but needs 589824
# env-steps for 0.0092 rad: 30.9 s, so the faster training is the default. asr/Throw-v0:
# undiscounted (the
# reward is the episode's one distance), rollouts of 128 steps per sub-env (a whole 1 s
# episode at least); the task is deterministic, so one held-out episode is every episode.
# asr/EquilibriumTracking-v0: asr.rl's generic defaults (no tuned settings documented).
# asr/Impact2DOF-v0: one episode per sub-env per rollout (100 env steps), 4 mini-batches,
# discounted at 0.99; not tuned to a published result (sb3, seed 0, 1024000 env-steps: held-out
# arrival time 0.876 s, touching within the force bound; a learning rate of 1e-3 ended at
# 5.83 s, striking beyond it; docs/learning.md, "Tasks where stiffness is known to matter").
# the PPO settings Impact2DOF and Periodic2DOF share (Periodic replaces some, below)
_ARM_TASK_PPO: dict[str, Any] = {
    "n_epochs": 10,
    "learning_rate": 3e-4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "eval_every": 102_400,
    "eval_episodes": 32,
    "final_eval_episodes": 128,
}
TRAIN_DEFAULTS: dict[str, dict[str, Any]] = {
    "asr/EquilibriumTracking-v0": {},
    "asr/Reach2DOF-v0": {
        "num_envs": 128,
        "total_steps": 196_608,
        "hyperparameters": {
            "n_steps": 16,
            "batch_size": 512,
            "n_epochs": 10,
            "learning_rate": 3e-3,
            "lr_decay": 1.0,
            "gamma": 0.95,
            "log_std_init": -1.0,
            "torch_threads": 1,
        },
    },
    "asr/Throw-v0": {
        "num_envs": 64,
        "total_steps": 1_000_000,
        "hyperparameters": {
            "n_steps": 128,
            "batch_size": 2048,
            "n_epochs": 10,
            "learning_rate": 3e-4,
            "gamma": 1.0,
            "gae_lambda": 0.95,
            "eval_every": 81_920,
            "eval_episodes": 1,
            "final_eval_episodes": 1,
        },
    },
    "asr/Impact2DOF-v0": {
        "num_envs": 64,
        "total_steps": 1_024_000,
        "hyperparameters": {
            "n_steps": 100,
            "batch_size": 1600,
            **_ARM_TASK_PPO,
        },
    },
    # asr/Periodic2DOF-v0: rollouts of 50 env steps (one cycle at 2 Hz), 4 mini-batches, rate
    # 1e-3, gamma 0.95; observing q_ref, qd_ref and q - q_ref, 204800 env-steps bring the
    # held-out metric from 10.3 J (holding still) to 0.80-1.04 J per cycle (rsl_rl, seeds 0-2;
    # docs/learning.md, "Tasks where stiffness is known to matter")
    "asr/Periodic2DOF-v0": {
        "num_envs": 64,
        "total_steps": 204_800,
        "hyperparameters": {
            "n_steps": 50,
            "batch_size": 800,
            **_ARM_TASK_PPO,
            "learning_rate": 1e-3,
            "gamma": 0.95,
            "eval_every": 51_200,
        },
    },
}

from asr.envs.impact import Impact  # noqa: E402
from asr.envs.metrics import TaskMetric  # noqa: E402
from asr.envs.periodic import Periodic  # noqa: E402
from asr.envs.randomization import Randomization  # noqa: E402
from asr.envs.tasks import EquilibriumTracking, Reach2DOF  # noqa: E402
from asr.envs.throw import Throw  # noqa: E402
from asr.envs.vector import AsrEnv, AsrVectorEnv, vecenv_steps_per_s  # noqa: E402

__all__ = [
    "register_envs",
    "ENVS",
    "TRAIN_DEFAULTS",
    "AsrVectorEnv",
    "AsrEnv",
    "EquilibriumTracking",
    "Reach2DOF",
    "Throw",
    "Impact",
    "Periodic",
    "TaskMetric",
    "Randomization",
    "vecenv_steps_per_s",
]
