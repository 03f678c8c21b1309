"""What a training run leaves: TrainResult, the training folder read back (load_checkpoint), the
held-out evaluation of a policy (evaluate_policy) and the learning curve's figure. The folder's
layout and its atomic writes are described in asr.rl.training."""

import dataclasses
import os

import numpy as np

from asr.common.files import current_version
from asr.common.optional import need
from asr.envs.metrics import FINAL_ERROR, TaskMetric
from asr.rl._config import ALGOS, BACKENDS, task_class
from asr.rl._safe_load import folder_file, json_writer, read_json

EVAL_SEED_BASE = 1_000_000_000
# every file a training folder may hold (sb3: model.zip, vecnormalize.json; rsl_rl: model.pt;
# vecnormalize.pkl: the pickle of earlier versions, refused, asr.rl._safe_load)
FILES = (
    "model.zip",
    "vecnormalize.json",
    "vecnormalize.pkl",
    "model.pt",
    "config.json",
    "curve.json",
)


def task_metric(task_cls):
    """The held-out metric a task class declares as its class attribute `metric`
    (asr.envs.metrics.TaskMetric: the final joint error of the tasks with targets, the distance
    thrown of Throw, the arrival time of Impact, the motor energy per cycle of Periodic).
    ValueError naming the task when it declares none."""
    metric = getattr(task_cls, "metric", None)
    if not isinstance(metric, TaskMetric):
        raise ValueError(
            f"task: {task_cls.__name__} declares no held-out metric (the class attribute "
            f"`metric`, an asr.envs.metrics.TaskMetric; got {metric!r})"
        )
    return metric


@dataclasses.dataclass
class TrainResult:
    """A trained (or loaded) policy: model (the sb3 backend's SB3 PPO, or the rsl_rl backend's
    asr.rl._rsl_rl_policy.RslRlPolicy), vecnormalize (SB3 VecNormalize, its statistics frozen for
    inference; None for rsl_rl, whose actor normalises its input itself), config (config.json's
    dict), curve (curve.json's rows),
    final_error_rad (mean final joint error on the final held-out targets of a task with
    targets; None if not evaluated or for another task), out_dir (None if nothing was written),
    final_metric (the final held-out value of the task's metric, task_metric: the final joint
    error in rad, or the distance thrown in m for Throw; None if not evaluated)."""

    model: object
    vecnormalize: object
    config: dict
    curve: list
    final_error_rad: float | None = None
    out_dir: str | None = None
    final_metric: float | None = None

    @property
    def metric(self):
        """The task's held-out metric (TaskMetric: name, unit, better)."""
        return task_metric(task_class(self.config["task"]))

    def predict(self, obs, deterministic=True):
        """Actions (clipped to the action space) for raw observations (N, obs_dim)."""
        obs = _normalized(self.vecnormalize, np.asarray(obs, dtype=np.float64))
        return self.model.predict(obs, deterministic=deterministic)[0]

    def evaluate(self, episodes=256, threads=1):
        """Mean of the task's metric (self.metric: final joint error, rad, or distance thrown,
        m) of the deterministic policy on `episodes` held-out episodes."""
        cls = task_class(self.config["task"])
        return float(
            np.mean(
                evaluate_policy(
                    self.model,
                    self.vecnormalize,
                    cls,
                    episodes,
                    threads,
                    self.config.get("env_kwargs") or {},
                )
            )
        )

    def figure(self):
        """The learning curve as a Plotly figure (return and metric against env-steps)."""
        return curve_figure(self.curve, title=f"PPO on {self.config['task']}", metric=self.metric)


def curve_figure(curve, title="learning curve", metric=None):
    """Plotly figure of curve rows: mean episode return (left axis) and the task metric (right
    axis; metric: its TaskMetric, default the final joint error, on a log scale) against
    env-steps."""
    need("plotly", "plots", "the learning curve figure")
    import plotly.graph_objects as go

    metric = metric or FINAL_ERROR
    label = f"{metric.name} ({metric.unit})"
    steps = [r["steps"] for r in curve]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=steps, y=[r["return"] for r in curve], name="mean return", mode="lines+markers"
        )
    )
    if any(r.get("metric") is not None for r in curve):
        pts = [(r["steps"], r["metric"]) for r in curve if r.get("metric") is not None]
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in pts],
                y=[p[1] for p in pts],
                name=f"{metric.name} ({metric.unit}, held-out)",
                yaxis="y2",
                mode="lines+markers",
            )
        )
    fig.update_layout(
        title=title,
        xaxis_title="env-steps",
        yaxis_title="mean episode return",
        yaxis2=dict(
            title=label,
            overlaying="y",
            side="right",
            type="log" if metric is FINAL_ERROR else "linear",
        ),
    )
    return fig


def _normalized(vecnormalize, obs):
    return obs if vecnormalize is None else vecnormalize.normalize_obs(obs)


def evaluate_policy(model, vecnormalize, task_cls, episodes, threads=1, env_kwargs=None):
    """The task's metric (task_metric(task_cls): final joint error, rad, or distance thrown,
    m) per held-out episode, shape (episodes,) (model: anything with SB3's predict; vecnormalize:
    its observation normaliser, or None): sub-env k reset with seed EVAL_SEED_BASE + k,
    one episode with the deterministic policy, the metric read at the step that ends it
    (terminated or truncated; the episode's last state, before any autoreset). env_kwargs: the
    task class's keyword arguments the policy was trained with (config.json's env_kwargs)."""
    return evaluate_episodes(model, vecnormalize, task_cls, episodes, threads, env_kwargs)[0]


def evaluate_episodes(model, vecnormalize, task_cls, episodes, threads=1, env_kwargs=None):
    """evaluate_policy's episodes, with their returns: (metric (episodes,), in the metric's
    unit; returns (episodes,), the sum of each episode's rewards, the task's reward units)."""
    metric = task_metric(task_cls)
    env = task_cls(int(episodes), threads=threads, **(env_kwargs or {}))
    out = np.full(env.num_envs, np.nan)
    returns = np.zeros(env.num_envs)
    ended = np.zeros(env.num_envs, dtype=bool)
    obs, _ = env.reset(seed=[EVAL_SEED_BASE + k for k in range(int(episodes))])
    for _ in range(env.max_episode_steps):
        act = model.predict(_normalized(vecnormalize, obs), deterministic=True)[0]
        obs, reward, term, trunc, _ = env.step(act)
        if env.sim.batch.status.any():
            env.sim.batch.check()
        returns[~ended] += np.asarray(reward, dtype=float)[~ended]
        now = (term | trunc) & ~ended
        if now.any():
            out[now] = metric.value(env)[now]
            ended |= now
        if ended.all():
            break
    env.close()
    return out, returns


# ------------------------------------------------------------ files

_json_writer = json_writer  # training.py writes config.json and curve.json with it


def load_checkpoint(out_dir, env=None, device="cpu"):
    """TrainResult of a training folder (config.json, curve.json and the backend's files: sb3's
    model.zip and vecnormalize.json, rsl_rl's model.pt), read as data: no code from the folder
    runs (asr.rl._safe_load). env: the VecEnv to attach (sb3; None: the statistics are loaded
    without one, for inference). A missing, truncated or corrupted file, a pickle, a link
    leading out of the folder raise ValueError naming it. A checkpoint that a trainer running
    on the folder replaces while it is read is read again from the new one."""
    out_dir = os.fspath(out_dir)
    if not os.path.isdir(out_dir):
        raise ValueError(f"out_dir: {out_dir!r} is not a folder")
    for _ in range(20):
        files = current_version(out_dir)  # every file from one checkpoint
        try:
            return _load_version(out_dir, files, env, device)
        except ValueError:
            if current_version(out_dir) == files:
                raise  # the same checkpoint: a real error (else a trainer replaced it: again)
    return _load_version(out_dir, current_version(out_dir), env, device)


def read_config(out_dir, files):
    """config.json of a checkpoint folder, checked to be asr's: ValueError naming it."""
    path, shown = folder_file(out_dir, files, "config.json")
    config = read_json(path, "training configuration", shown)
    if (
        not isinstance(config, dict)
        or config.get("algo") not in ALGOS
        or config.get("backend", "sb3") not in BACKENDS
        or not isinstance(config.get("task"), str)
    ):
        raise ValueError(f"{shown}: not an asr training configuration (no task / algo / backend)")
    hp = config.get("hyperparameters", {})
    if not isinstance(hp, dict):
        raise ValueError(f"{shown}: hyperparameters: expected a JSON object")
    try:
        task_class(config["task"])
    except ValueError as exc:
        raise ValueError(f"{shown}: {exc}") from None
    return config


def _load_version(out_dir, files, env, device):
    # errors name out_dir/<name>: a link into that checkpoint's hidden folder
    config = read_config(out_dir, files)
    path, shown = folder_file(out_dir, files, "curve.json")
    curve = read_json(path, "learning curve", shown)
    if not isinstance(curve, list) or not all(isinstance(r, dict) and "steps" in r for r in curve):
        raise ValueError(f"{shown}: not a list of curve rows")
    from asr.rl._config import validate_hyperparameters

    try:
        hp = validate_hyperparameters(config.get("hyperparameters") or {})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{os.path.join(out_dir, 'config.json')}: {exc}") from None
    if config.get("backend", "sb3") == "rsl_rl":
        from asr.rl._rsl_rl_policy import load_policy as load_rsl_rl

        model, vecnorm = load_rsl_rl(files, out_dir, task_class(config["task"]), hp)
    else:
        from asr.rl._sb3 import load_policy as load_sb3

        model, vecnorm = load_sb3(files, out_dir, config, env, device)
    final_eval = config.get("final_eval") or {}
    if not isinstance(final_eval, dict):
        final_eval = {}
    final = final_eval.get("final_error_rad")
    return TrainResult(
        model, vecnorm, config, curve, final, out_dir, final_eval.get("metric", final)
    )
