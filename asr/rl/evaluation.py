"""A training folder's policy evaluated and exported: what `asr eval` and `asr export-onnx` run.

evaluate(run_dir, episodes=10, *, seed=None, onnx=None, threads=1, env=None) -> Evaluation runs
the deterministic policy of a training folder (asr.rl.train / `asr train --out DIR`, either
backend), its torch model or an ONNX file exported from it, for `episodes` episodes of the
folder's task with the folder's env_kwargs (config.json), each key of `env` (a dict) replacing
the folder's (a distribution training did not see, e.g. env={"randomization": "standard"} for a
policy trained without randomisation: asr.envs.Randomization): one vector env of `episodes`
sub-envs, sub-env k reset with seed + k (default seed: EVAL_SEED_BASE = 10^9, the held-out
seeds of training's own evaluation), each driven until its episode ends (terminated or
truncated). Per episode:

- return: the sum of the task's step rewards up to and including the step that ends it (the
  reward's unit: rad for the reach tasks, -|q - target| less a stiffness cost per step; m for
  Throw, the distance thrown on the release step),
- length: its env-steps,
- metric: the task's own metric (asr.rl.task_metric, what config.json's final_eval and the
  tasks' infos report: the final joint error |q - target| in rad for the tasks with targets, the
  distance thrown in m for Throw), read at the step that ends the episode, before any reset.

With the default seed and `episodes` equal to the folder's final_eval_episodes, the metric's mean
is config.json's final_eval metric. Means come with a 95 % confidence interval of Student's t
(t_interval): over episodes that differ only in what their seeds draw (targets, start states);
for a task that draws nothing (Throw) every episode is the same and the interval is a point.

export_checked(run_dir, path, *, envs=8, tolerance=1e-5, seed=None, threads=1) -> ExportCheck
writes the policy as ONNX (asr.rl.onnx_policy.export_onnx) and checks it against the torch policy
before the file appears at `path`: both act on every observation of one episode of `envs`
sub-envs driven by the torch policy; an ONNX action farther than `tolerance` (action units, rad)
from the torch action raises RuntimeError and leaves nothing at `path`.

Folders are read as data (asr.rl.load_checkpoint, asr.rl._safe_load): no code from them runs.
Errors name the argument (run_dir, episodes, onnx, ...), the value and what was expected; a
missing package of the extra [rl] is a ModuleNotFoundError naming the extra
(asr.common.optional)."""

import dataclasses
import inspect
import json
import math
import os
import tempfile

import numpy as np

from asr.common.files import current_version
from asr.rl._config import MODEL_FILES, task_class
from asr.rl._results import EVAL_SEED_BASE, load_checkpoint, read_config, task_metric
from asr.rl.onnx_policy import OnnxPolicy, export_onnx, needs_extra_rl

CONFIDENCE = 0.95  # of the intervals reported
CONFIG_FILE = "config.json"


# ---------------------------------------------------------------- statistics


def _t_cdf(x, df):
    """P(T <= x) for Student's t with df degrees of freedom (x >= 0): 1/2 plus the density
    integrated over [0, x] by Simpson's rule on 4096 intervals."""
    n = 4096
    u = np.linspace(0.0, x, n + 1)
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    f = np.exp(log_c - (df + 1) / 2 * np.log1p(u * u / df))
    w = np.ones(n + 1)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return 0.5 + float(np.dot(w, f)) * (x / n) / 3.0


def t_quantile(p, df):
    """The p-quantile of Student's t distribution with df > 0 degrees of freedom, for
    0.5 <= p < 1 (bisection on _t_cdf to 1e-12; e.g. t_quantile(0.975, 9) = 2.2622)."""
    if not 0.5 <= p < 1.0:
        raise ValueError(f"p: got {p!r}, valid range [0.5, 1)")
    if not df > 0:
        raise ValueError(f"df: got {df!r}, valid: > 0")
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _t_cdf(mid, df) < p else (lo, mid)
    return 0.5 * (lo + hi)


def t_interval(values, confidence=CONFIDENCE):
    """(mean, half width) of values (n,): the confidence interval of the mean, mean +- t s /
    sqrt(n), t the (1 + confidence) / 2 quantile of Student's t with n - 1 degrees of freedom and
    s the sample standard deviation (n - 1 in its denominator). Half width NaN for n = 1."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("values: empty, expected at least one value")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence: got {confidence!r}, valid range (0, 1)")
    mean = float(np.mean(x))
    if x.size == 1:
        return mean, math.nan
    s = float(np.std(x, ddof=1))
    return mean, t_quantile((1.0 + confidence) / 2.0, x.size - 1) * s / math.sqrt(x.size)


# ---------------------------------------------------------------- arguments


def _check_count(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: got {value!r}, valid: an int >= 1")
    return int(value)


def _check_seed(seed):
    if seed is None:
        return EVAL_SEED_BASE
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: got {seed!r}, valid: an int >= 0 (episode k uses seed + k)")
    return int(seed)


def _path(name, value, what):
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}: expected {what} path, got {type(value).__name__}")
    return os.fspath(value)


def check_run_dir(run_dir):
    """run_dir as a str, checked to be a training folder before anything heavy is imported:
    ValueError naming it and what it lacks (the folder, config.json, the backend's model)."""
    run_dir = _path("run_dir", run_dir, "a training folder")
    expected = "a training folder (asr train --out DIR)"
    if not os.path.lexists(run_dir):
        raise ValueError(f"run_dir: {run_dir!r} does not exist; expected {expected}")
    if not os.path.isdir(run_dir):
        raise ValueError(f"run_dir: {run_dir!r} is not a folder; expected {expected}")
    files = current_version(run_dir)
    if not os.path.lexists(os.path.join(files, CONFIG_FILE)):
        raise ValueError(
            f"run_dir: {run_dir!r} is not a training folder: it has no {CONFIG_FILE} "
            f"({expected} holds {CONFIG_FILE}, curve.json and the model: "
            f"{' or '.join(MODEL_FILES.values())})"
        )
    config = read_config(run_dir, files)
    backend = config.get("backend", "sb3")
    model = MODEL_FILES[backend]
    if not os.path.lexists(os.path.join(files, model)):
        raise ValueError(
            f"run_dir: {run_dir!r} has no {model} (the model of its {backend} backend): a "
            "training that has not finished its first PPO update, or a damaged folder"
        )
    return run_dir


# ---------------------------------------------------------------- episodes


def _episodes(act, cls, env_kwargs, seeds, threads, keep_obs=False):
    """Run one episode per seed, every sub-env at once, with act(obs (N, obs_dim)) -> (N,
    act_dim). Returns (returns (N,), lengths (N,) env-steps, metric (N,) in the task metric's
    unit, observations (M, obs_dim) the policy saw before each episode ended, or None)."""
    metric = task_metric(cls)
    n = len(seeds)
    env = cls(n, threads=threads, **env_kwargs)
    try:
        returns, value = np.zeros(n), np.full(n, np.nan)
        lengths = np.zeros(n, dtype=np.int64)
        ended = np.zeros(n, dtype=bool)
        seen = []
        obs, _ = env.reset(seed=list(seeds))
        for _ in range(env.max_episode_steps):
            if keep_obs:
                seen.append(obs[~ended].copy())
            action = np.asarray(act(obs), dtype=np.float64)
            obs, reward, term, trunc, _ = env.step(action)
            if env.sim.batch.status.any():
                env.sim.batch.check()  # SimulationError naming the instance
            running = ~ended
            returns[running] += reward[running]
            lengths[running] += 1
            now = (term | trunc) & running
            if now.any():
                value[now] = metric.value(env)[now]
                ended |= now
            if ended.all():
                break
    finally:
        env.close()
    if not ended.all():
        raise RuntimeError(
            f"{cls.__name__}: {int((~ended).sum())} episodes did not end within "
            f"max_episode_steps = {env.max_episode_steps}"
        )
    return returns, lengths, value, (np.concatenate(seen) if keep_obs else None)


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """What evaluate returns. Arrays have shape (episodes,), episode k from seed + k: returns
    (sum of the task's step rewards, the reward's unit), lengths (env-steps), metric (the task's
    metric, metric_unit: final joint error in rad, or distance thrown in m). policy: "torch" or
    "onnx" (then onnx: the file's path). metric_better: "lower" or "higher". env_kwargs: the
    task's keyword arguments the episodes ran with (the folder's, with evaluate's `env`)."""

    run_dir: str
    task: str
    backend: str
    policy: str
    onnx: str | None
    seed: int
    env_kwargs: dict
    returns: np.ndarray
    lengths: np.ndarray
    metric: np.ndarray
    metric_key: str
    metric_name: str
    metric_unit: str
    metric_better: str

    @property
    def episodes(self):
        return int(self.returns.shape[0])

    def summary(self, confidence=CONFIDENCE):
        """{"return": (mean, half width), "metric": (mean, half width)}: t_interval's."""
        return {
            "return": t_interval(self.returns, confidence),
            "metric": t_interval(self.metric, confidence),
        }

    def to_dict(self):
        """The evaluation as JSON data (a NaN, the half width of one episode, as null)."""
        s = self.summary()

        def stat(mean, half):
            ci = None if math.isnan(half) else [mean - half, mean + half]
            return {"mean": mean, "ci95": ci, "ci95_half_width": None if ci is None else half}

        return {
            "run_dir": self.run_dir,
            "task": self.task,
            "backend": self.backend,
            "policy": self.policy,
            "onnx": self.onnx,
            "episodes": self.episodes,
            "seeds": [self.seed, self.seed + self.episodes - 1],
            "env_kwargs": self.env_kwargs,
            "returns": self.returns.tolist(),
            "lengths": self.lengths.tolist(),
            "return": stat(*s["return"]),
            "metric": {
                "key": self.metric_key,
                "name": self.metric_name,
                "unit": self.metric_unit,
                "better": self.metric_better,
                "values": [None if math.isnan(v) else v for v in self.metric.tolist()],
                **stat(*s["metric"]),
            },
        }

    def to_json(self):
        return json.dumps(self.to_dict(), indent=1)

    def report(self):
        """The text `asr eval` prints: a line per episode, then the means with their 95 %
        confidence intervals."""
        metric = f"{self.metric_name} ({self.metric_unit})"
        policy = "torch policy" if self.onnx is None else f"ONNX policy {self.onnx}"
        lines = [
            f"{self.run_dir}: {self.task}, {self.backend} backend, {policy}, deterministic; "
            f"{self.episodes} episodes, seeds {self.seed}..{self.seed + self.episodes - 1}; "
            f"env {json.dumps(self.env_kwargs, sort_keys=True)}",
            f"{'episode':>7}  {'seed':>12}  {'length':>6}  {'return':>14}  {metric}",
        ]
        for k in range(self.episodes):
            lines.append(
                f"{k:>7}  {self.seed + k:>12}  {int(self.lengths[k]):>6}  "
                f"{self.returns[k]:>14.6f}  {self.metric[k]:.6g}"
            )
        s = self.summary()
        for name, (mean, half), unit in (
            ("return", s["return"], ""),
            (self.metric_name, s["metric"], f" {self.metric_unit}"),
        ):
            ci = "(one episode: no interval)" if math.isnan(half) else f"+- {half:.6g}{unit}"
            lines.append(f"mean {name}: {mean:.6g}{unit} {ci} (95 % CI, Student's t)")
        return "\n".join(lines)


def evaluate(run_dir, episodes=10, *, seed=None, onnx=None, threads=1, env=None):
    """Evaluation of the deterministic policy of the training folder run_dir (its torch model,
    or the ONNX file `onnx` exported from it) on `episodes` episodes of its task with its
    env_kwargs, those named in `env` ({keyword: value}) replaced, episode k from seed + k (None:
    EVAL_SEED_BASE, the held-out seeds of training's evaluation); see the module doc. threads:
    the vector env's threads. ValueError naming the argument for a bad one (a keyword the task
    does not take, or a bad value, named by the task); SimulationError when the physics fails."""
    if env is None:
        env = {}
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        raise TypeError(f"env: got {env!r}, expected a dict of the task's keyword arguments")
    episodes = _check_count("episodes", episodes)
    threads = _check_count("threads", threads)
    seed = _check_seed(seed)
    if onnx is not None:
        onnx = _path("onnx", onnx, "an ONNX file")
        if not os.path.isfile(onnx):
            raise ValueError(f"onnx: {onnx!r} is not a file; expected an ONNX policy file")
    with needs_extra_rl("asr.rl.evaluate"):
        run_dir = check_run_dir(run_dir)
        res = load_checkpoint(run_dir)
        task = res.config["task"]
        cls = task_class(task)
        act = res.predict if onnx is None else _onnx_policy(onnx, cls, task)
        _check_env_keywords(env, cls)
        env_kwargs = {**(res.config.get("env_kwargs") or {}), **env}
        returns, lengths, value, _ = _episodes(
            act, cls, env_kwargs, _seeds(seed, episodes), threads
        )
    m = task_metric(cls)
    return Evaluation(
        run_dir=run_dir,
        task=task,
        backend=res.config.get("backend", "sb3"),
        policy="torch" if onnx is None else "onnx",
        onnx=onnx,
        seed=seed,
        env_kwargs=env_kwargs,
        returns=returns,
        lengths=lengths,
        metric=value,
        metric_key=m.key,
        metric_name=m.name,
        metric_unit=m.unit,
        metric_better=m.better,
    )


def _check_env_keywords(env, cls):
    """ValueError naming a key of `env` that the task class cannot take, and the ones it can:
    the keywords of its __init__ and, where that passes **kwargs on, of its bases' (the first
    parameter, the sub-env count, and threads are evaluate's own)."""
    valid, open_ended = [], True
    for klass in cls.__mro__:
        if not open_ended or "__init__" not in vars(klass) or klass is object:
            continue
        params = list(inspect.signature(klass.__init__).parameters.values())[2:]  # self, n
        valid += [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
        open_ended = any(p.kind is p.VAR_KEYWORD for p in params)
    if open_ended:
        return  # a class that takes any keyword: the task itself names a bad one
    valid = [k for k in dict.fromkeys(valid) if k != "threads"]
    for key in env:
        if key not in valid:
            raise ValueError(
                f"env: {key!r} is not a keyword of {cls.__name__}; valid: {', '.join(valid)}"
            )


def _seeds(seed, n):
    return [seed + k for k in range(n)]


def _onnx_policy(path, cls, task):
    """OnnxPolicy of `path` for task class cls: ValueError naming onnx when the file is not an
    asr policy, is one of another task or does not fit the task's sizes."""
    try:
        policy = OnnxPolicy(path)
    except ValueError as exc:
        raise ValueError(f"onnx: {exc}") from None
    other = policy.metadata.get("task_id")
    if other and other != task:
        raise ValueError(
            f"onnx: {path!r} is a policy of {other}, the training folder's task is {task}"
        )
    try:
        return policy.check_task(cls)
    except ValueError as exc:
        raise ValueError(f"onnx: {exc}") from None


# ---------------------------------------------------------------- export


@dataclasses.dataclass(frozen=True)
class ExportCheck:
    """What export_checked returns: path (the ONNX file written), task, backend, observations
    (how many observations both policies acted on), max_abs_diff (max |ONNX action - torch
    action| over them and the action's entries, in the action's units, rad), tolerance."""

    path: str
    task: str
    backend: str
    observations: int
    max_abs_diff: float
    tolerance: float


def export_checked(run_dir, path, *, envs=8, tolerance=1e-5, seed=None, threads=1):
    """Write the deterministic policy of the training folder run_dir as the ONNX file `path`
    (asr.rl.onnx_policy.export_onnx), checked against the torch policy: both act on the
    observations of one episode of `envs` sub-envs (sub-env k from seed + k, None:
    EVAL_SEED_BASE) driven by the torch policy. The file is written beside `path` and renamed
    to it only when the largest difference is within `tolerance` (action units); else
    RuntimeError and `path` is left as it was. Returns ExportCheck."""
    path = _path("path", path, "an ONNX file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"path: {path!r}: its folder {folder!r} does not exist")
    if os.path.isdir(path):
        raise ValueError(f"path: {path!r} is a folder; expected the ONNX file to write")
    envs = _check_count("envs", envs)
    threads = _check_count("threads", threads)
    seed = _check_seed(seed)
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float))
        or not (0 < tolerance < math.inf)
    ):
        raise ValueError(f"tolerance: got {tolerance!r}, valid: a finite number > 0")
    with needs_extra_rl("asr.rl.export_checked"):
        res = load_checkpoint(check_run_dir(run_dir))
        task = res.config["task"]
        cls = task_class(task)
        kwargs = res.config.get("env_kwargs") or {}
        *_, obs = _episodes(res.predict, cls, kwargs, _seeds(seed, envs), threads, True)
        # beside path, named unlike atomic_write's temporaries (a writer of path removes those)
        name = f".{os.path.basename(path)}.unchecked-"
        fd, tmp = tempfile.mkstemp(prefix=name, suffix=".onnx", dir=folder)
        os.close(fd)
        try:
            export_onnx(res.model, tmp, vec_normalize=res.vecnormalize, task=cls, env_kwargs=kwargs)
            onnx_actions = OnnxPolicy(tmp, env=cls)(obs).astype(np.float64)
            diff = float(np.max(np.abs(onnx_actions - res.predict(obs))))
            if not diff <= tolerance:
                raise RuntimeError(
                    f"{path}: not written: the ONNX policy's actions differ from the torch "
                    f"policy's by up to {diff:.3g} on {len(obs)} observations, more than "
                    f"tolerance = {tolerance:g}"
                )
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return ExportCheck(
        path, task, res.config.get("backend", "sb3"), int(len(obs)), diff, float(tolerance)
    )


__all__ = [
    "evaluate",
    "Evaluation",
    "export_checked",
    "ExportCheck",
    "check_run_dir",
    "t_interval",
    "t_quantile",
    "CONFIDENCE",
]
