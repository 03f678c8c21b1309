"""The held-out metrics tasks declare: each task class names its own as the class attribute
`metric` (a TaskMetric), which asr.rl's task_metric, evaluation, training and the dashboard read.

A metric's value(env) -> (N,) is read at the env step that ends sub-env i's episode (terminated
or truncated, before any reset), from the env's state then."""

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class TaskMetric:
    """A task's held-out metric: key (a name for files), name, unit (SI), better ("lower" or
    "higher"), text (what config.json says of it) and value(env) -> (N,) in that unit."""

    key: str
    name: str
    unit: str
    better: str
    text: str
    value: Callable[[Any], np.ndarray]


def _final_joint_error(env):
    # q (N, J) and target (N, J), or (N,) for one joint: each sub-env against its own target
    n = env.num_envs
    return np.linalg.norm(env.q.reshape(n, -1) - env.target.reshape(n, -1), axis=1)


def _distance_thrown(env):
    return np.array(env.distance, dtype=float)


def _penalised(env):
    return np.array(env.metric_value(), dtype=float)


FINAL_ERROR = TaskMetric(
    "final_error_rad",
    "final joint error",
    "rad",
    "lower",
    "mean final joint error (rad): norm of q - target at the end of a held-out episode, "
    "deterministic policy",
    _final_joint_error,
)
DISTANCE = TaskMetric(
    "distance_m",
    "distance thrown",
    "m",
    "higher",
    "mean distance thrown (m): the ball's landing x of a held-out episode (0 without a "
    "release), deterministic policy",
    _distance_thrown,
)
ARRIVAL_TIME = TaskMetric(
    "arrival_time_s",
    "arrival time",
    "s",
    "lower",
    "mean arrival time (s) of a held-out episode, deterministic policy: the time from which the "
    "tip stays within 0.01 m of its target on the plate and touching it to the episode's end "
    "(the episode's length if it does not), plus 1 s per N of the peak contact force beyond "
    "50 N (asr.envs.impact)",
    _penalised,
)
ENERGY_PER_CYCLE = TaskMetric(
    "energy_per_cycle_j",
    "motor energy per cycle",
    "J",
    "lower",
    "mean positive mechanical work of the motors per cycle (J) over the measured cycles of a "
    "held-out episode, deterministic policy, plus 100 J/rad times the RMS tracking error "
    "beyond 0.05 rad (asr.envs.periodic)",
    _penalised,
)

__all__ = ["TaskMetric", "FINAL_ERROR", "DISTANCE", "ARRIVAL_TIME", "ENERGY_PER_CYCLE"]
