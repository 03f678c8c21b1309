"""The RL tasks a client may name (PROTOCOL.md "RL"): the registered asr env ids, each task's
vector env class and held-out metric, and the error of an RL value out of range. Shared by the
training manager (dashboard/rl.py), the policy watcher (dashboard/policy_watch.py), the runs
history (dashboard/rl_runs.py) and the RL routes; imports neither torch nor the trainer."""

import importlib

from asr.learning.gym_registry import ENVS

TASKS = tuple(ENVS)  # the registered asr env ids: the only tasks a client names


class RLInputError(ValueError):
    """A value out of the server's RL limits, or a policy that does not fit its task (-> 422,
    naming the field)."""


def task_class(task):
    """The vector env class of a registered task id."""
    module, _, name = ENVS[task][1].partition(":")
    return getattr(importlib.import_module(module), name)


def metric_info(task):
    """{"name", "unit", "better"} of the task's held-out metric (asr.rl's task_metric: the
    curve's `metric` column)."""
    from asr.rl import task_metric  # no torch: the metric's definition only

    m = task_metric(task_class(task))
    return {"name": m.name, "unit": m.unit, "better": m.better}


def watchable_tasks():
    """The tasks whose class imports (every registered task watches through its own env)."""
    out = []
    for task in TASKS:
        try:
            task_class(task)
        except Exception:  # noqa: BLE001 - a task that does not import cannot be watched
            continue
        out.append(task)
    return out
