"""Trained policies leave asr as ONNX files: export_onnx writes one, OnnxPolicy runs one.

export_onnx(model, path, *, vec_normalize=None, task=None, env_kwargs=None) writes the
deterministic policy of a Stable-Baselines3 PPO (MlpPolicy, Box actions) as one ONNX graph,
input "obs" float32 (batch, obs_dim), output "action" float32 (batch, act_dim):

    x = clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)  # VecNormalize (obs only)
    action = clip(action_net(mlp_extractor.policy_net(features(x))), low, high)  # actor mean

i.e. what `model.predict(vec_normalize.normalize_obs(obs), deterministic=True)` returns, computed
in float32 (the normalisation too: SB3 does it in float64, then the network in float32); low and
high are the task's action Box rounded inwards to float32 (a clipped action is inside the
float64 Box: 0.6 becomes 0.59999996, where SB3's float64 clip gives 0.6). Without
vec_normalize (a model trained without VecNormalize) the normalisation is left out. `model` may
also be a training folder (asr.rl.train / `asr train --out DIR`: model.zip, vecnormalize.json,
config.json), which gives the model, the normaliser and the task; it is read as data
(asr.rl.load_checkpoint: no code from the folder runs). A policy of the rsl_rl backend
(asr.rl._rsl_rl_policy.RslRlPolicy, or a folder trained with algo="rsl_rl": model.pt) exports
as x = (obs - mean) / (std + 0.01) (rsl-rl-lib's EmpiricalNormalization, inside its actor),
action = clip(mlp(x), low, high): what its predict(obs) returns.

The exporter is torch.onnx.export's tracing (TorchScript) exporter, opset OPSET = 20, with a
dynamic batch dimension: the policies are plain MLPs, which it traces in 0.1 s, where the dynamo
exporter took about 10 s from a cold start (each dashboard watch and export runs in a fresh
process); a torch without the tracing exporter gets the dynamo one (needs onnxscript). The file is
written atomically (a temporary file in the same folder, then renamed).

The model's metadata_props (strings; the JSON ones parsed by OnnxPolicy.metadata):
format ("asr.onnx_policy/1"), task (class name), task_id (gymnasium id), robot, variant,
obs_dim, act_dim, observation (JSON [[name, unit], ...] from the task's OBSERVATION), action
(JSON [[name, unit, low, high], ...] from its ACTION and action space), control_period_s (the
env step, frame_skip * dt), obs_normalization (JSON {"clip_obs", "epsilon"} or null),
env_kwargs (JSON {name: value}: the task's keyword arguments the policy was trained with, from a
training folder's config.json and `env_kwargs=`; {} for the defaults), asr_version,
torch_version, source. A file without env_kwargs (written by an older asr) reads as {}: whoever
builds the task from the file (asr.ros.export: a Periodic2DOF node's reference) gets the
task's defaults.

OnnxPolicy(path, env=None) runs such a file with onnxruntime (CPU, one thread by default):
policy(obs) -> actions for (N, obs_dim) -> (N, act_dim) or (obs_dim,) -> (act_dim,);
OnnxPolicy.from_bytes(data) runs a file's bytes (the dashboard gets them from an export child,
so that the server never imports torch); policy.predict(obs) answers as SB3's model.predict.
"""

import contextlib
import io
import json
import os
import warnings

import numpy as np

from asr.common.files import atomic_write
from asr.common.optional import missing_extra, need
from asr.common.version import __version__
from asr.rl._config import MODEL_FILES

FORMAT = "asr.onnx_policy/1"
OPSET = 20  # the ONNX opset of exported policies
CONFIG_FILE = "config.json"
# the modules of the extra [rl] (setup.cfg) that exporting, loading and running a policy import
RL_MODULES = ("torch", "gymnasium", "stable_baselines3", "rsl_rl", "tensordict", "onnx")


@contextlib.contextmanager
def needs_extra_rl(feature):
    """Within it, an ImportError for a missing module of the extra [rl] (RL_MODULES,
    onnxruntime, onnxscript) becomes asr.common.optional.missing_extra's error for `feature`,
    naming the extra and its pip command; any other ImportError passes unchanged."""
    try:
        yield
    except ImportError as exc:
        missing = (getattr(exc, "name", None) or "").split(".")[0]
        if missing in (*RL_MODULES, "onnxruntime", "onnxscript"):
            raise missing_extra(feature, "rl", missing) from exc
        raise


# ---------------------------------------------------------------- tasks


def _task_entries():
    from asr.learning.gym_registry import ENVS

    return {env_id: vector for env_id, (_, vector) in ENVS.items()}


def _import_entry(entry):
    import importlib

    module, name = entry.split(":")
    return getattr(importlib.import_module(module), name)


def resolve_task(task):
    """The asr vector-env task class of `task`: the class itself, its gymnasium id
    ("asr/Reach2DOF-v0") or its class name ("Reach2DOF")."""
    from asr.envs.vector import AsrVectorEnv

    if isinstance(task, type) and issubclass(task, AsrVectorEnv):
        return task
    entries = _task_entries()
    if isinstance(task, str):
        for env_id, entry in entries.items():
            if task in (env_id, entry.split(":")[1]):
                return _import_entry(entry)
    raise ValueError(
        f"task: got {task!r}, valid: an asr.envs task class, or one of "
        f"{sorted(entries)} (or their class names)"
    )


def task_id(cls):
    """The gymnasium id of a task class ('' when it is not registered)."""
    for env_id, entry in _task_entries().items():
        if entry == f"{cls.__module__}:{cls.__name__}":
            return env_id
    return ""


def _spaces_of(env):
    """(observation size, action size, name) of a task class, an asr vector env or a
    gymnasium env."""
    obs = getattr(env, "single_observation_space", None) or getattr(env, "observation_space", None)
    act = getattr(env, "single_action_space", None) or getattr(env, "action_space", None)
    if (
        obs is None
        or act is None
        or getattr(obs, "shape", None) is None
        or getattr(act, "shape", None) is None
    ):
        raise TypeError(
            f"env: expected an asr task class or a gymnasium env with Box spaces, "
            f"got {type(env).__name__}"
        )
    name = env.__name__ if isinstance(env, type) else type(env).__name__
    return int(np.prod(obs.shape)), int(np.prod(act.shape)), name


def _infer_task(obs_space, act_space):
    found = []
    for entry in _task_entries().values():
        try:
            cls = _import_entry(entry)
        except Exception:  # noqa: BLE001 - a task that does not import cannot be the one
            continue
        if (
            cls.single_observation_space.shape == obs_space.shape
            and np.array_equal(cls.single_action_space.low, act_space.low)
            and np.array_equal(cls.single_action_space.high, act_space.high)
        ):
            found.append(cls)
    if len(found) != 1:
        raise ValueError(
            f"task: None, and {len(found)} asr tasks have the model's spaces "
            f"(observation {obs_space.shape}, action {act_space.shape}); give task="
        )
    return found[0]


# ---------------------------------------------------------------- export


def load_training(folder):
    """(model, vec_normalize or None, config dict) of a training folder: an SB3 PPO and its
    VecNormalize, or (rsl_rl backend) an asr.rl._rsl_rl_policy.RslRlPolicy and None, read as data by
    asr.rl.load_checkpoint (no code from the folder runs; a pickle or a link leading out of
    the folder is refused, naming it)."""
    folder = os.fspath(folder)
    if not any(
        os.path.lexists(os.path.join(folder, name)) for name in (*MODEL_FILES.values(), CONFIG_FILE)
    ):
        raise ValueError(
            f"model: {folder!r} is not a training folder (no {CONFIG_FILE}, "
            f"{' or '.join(MODEL_FILES.values())})"
        )
    with needs_extra_rl("asr.rl.export_onnx"):
        from asr.rl._results import load_checkpoint

        res = load_checkpoint(folder)
    return res.model, res.vecnormalize, res.config


def _config_task(config):
    for key in ("task", "task_id", "env_id", "env"):
        if isinstance(config.get(key), str):
            return config[key]
    return None


def _inward(bound, towards):
    """float32 bounds rounded into the float64 Box (0.6 -> 0.59999996, not 0.6000000238), so
    that a float32 action, clipped, is inside the env's float64 action space."""
    b32 = np.asarray(bound, np.float64).astype(np.float32)
    outside = (b32 < bound) if towards > 0 else (b32 > bound)
    return np.where(outside, np.nextafter(b32, np.float32(towards)), b32).astype(np.float32)


def _actor_module(policy, norm, low, high):
    import torch

    class Actor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.features_extractor = policy.pi_features_extractor
            self.policy_net = policy.mlp_extractor.policy_net
            self.action_net = policy.action_net
            self.normalize = norm is not None
            if norm is not None:
                mean, std, clip = norm
                self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
                self.register_buffer("std", torch.as_tensor(std, dtype=torch.float32))
                self.clip = float(clip)
            self.register_buffer("low", torch.as_tensor(_inward(low, np.inf)))
            self.register_buffer("high", torch.as_tensor(_inward(high, -np.inf)))

        def forward(self, obs):
            x = obs
            if self.normalize:
                x = torch.clamp((x - self.mean) / self.std, -self.clip, self.clip)
            a = self.action_net(self.policy_net(self.features_extractor(x)))
            return torch.minimum(torch.maximum(a, self.low), self.high)

    return Actor().eval()


def _sb3_normalisation(vec_normalize, obs_dim):
    """(mean, std, clip) of an SB3 VecNormalize for the graph, or None."""
    if vec_normalize is None:
        return None
    rms = getattr(vec_normalize, "obs_rms", None)
    if (
        not getattr(vec_normalize, "norm_obs", False)
        or rms is None
        or np.shape(rms.mean) != (obs_dim,)
    ):
        raise ValueError(
            f"vec_normalize: expected an SB3 VecNormalize normalising "
            f"observations of size {obs_dim} (norm_obs=True), got "
            f"{type(vec_normalize).__name__}"
        )
    eps = float(vec_normalize.epsilon)
    return (
        np.asarray(rms.mean, np.float64),
        np.sqrt(np.asarray(rms.var, np.float64) + eps),
        float(vec_normalize.clip_obs),
    )


def _sb3_graph(model, vec_normalize, low, high):
    """(actor module, obs_normalization metadata, source) of an SB3 PPO."""
    policy = model.policy
    if getattr(policy, "squash_output", False):
        raise ValueError(
            "model: squash_output=True (gSDE) policies are not supported; valid: "
            "the default Gaussian MlpPolicy"
        )
    norm = _sb3_normalisation(vec_normalize, model.observation_space.shape[0])
    meta = None
    if norm is not None:
        meta = {"clip_obs": norm[2], "epsilon": float(vec_normalize.epsilon)}
    source = f"stable-baselines3 {type(model).__name__}, deterministic actor mean"
    return _actor_module(policy, norm, low, high), meta, source


def _is_rsl_rl(model):
    try:
        from asr.rl._rsl_rl_policy import RslRlPolicy
    except ImportError:  # torch not installed: not one of its policies
        return False
    return isinstance(model, RslRlPolicy)


def _model_spaces(model):
    """(observation Box, action Box) of an SB3 PPO or an rsl_rl policy; TypeError otherwise."""
    from gymnasium import spaces

    if _is_rsl_rl(model):
        obs = spaces.Box(-np.inf, np.inf, (model.obs_dim,), np.float64)
        return obs, spaces.Box(model.low, model.high, dtype=np.float64)
    policy = getattr(model, "policy", None)
    if policy is None or not all(
        hasattr(policy, a) for a in ("mlp_extractor", "action_net", "pi_features_extractor")
    ):
        raise TypeError(
            f"model: expected a Stable-Baselines3 PPO (MlpPolicy), an rsl_rl policy "
            f"(asr.rl.train(algo='rsl_rl').model) or a training folder, got "
            f"{type(model).__name__}"
        )
    return model.observation_space, model.action_space


def export_onnx(model, path, *, vec_normalize=None, task=None, env_kwargs=None):
    """Write the deterministic policy of `model` (an SB3 PPO, an rsl_rl backend's policy, or a
    training folder) with observation normalisation and action clipping as the ONNX file `path`
    (see the module doc). task: the asr task (class, id or name; default: the folder's config,
    else the one task whose spaces are the model's). env_kwargs: the task's keyword arguments
    the policy was trained with (dict of JSON values; a training folder's config.json gives
    them, these replace its keys), recorded in the file's metadata; the task is built with them
    once, so a bad one is refused here. Returns the path. Without a package of the extra [rl]
    (torch, gymnasium, onnx): ModuleNotFoundError naming the extra."""
    for module in ("torch", "gymnasium", "onnx"):
        need(module, "rl", "asr.rl.export_onnx")
    import torch
    from gymnasium import spaces

    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected a file path, got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise ValueError(f"path: got {path!r}, its folder does not exist")
    config = {}
    if isinstance(model, (str, os.PathLike)):
        if vec_normalize is not None:
            raise ValueError(
                "vec_normalize: give None with a training folder (its normalisation is used)"
            )
        model, vec_normalize, config = load_training(model)
    env_kwargs = _env_kwargs(config.get("env_kwargs"), env_kwargs)
    obs_space, act_space = _model_spaces(model)
    if (
        not isinstance(act_space, spaces.Box)
        or not isinstance(obs_space, spaces.Box)
        or len(obs_space.shape) != 1
        or len(act_space.shape) != 1
    ):
        raise ValueError(
            f"model: spaces {obs_space} / {act_space}; valid: 1-D Box observation and action spaces"
        )
    if task is None:
        task = _config_task(config)
    cls = resolve_task(task) if task is not None else _infer_task(obs_space, act_space)
    obs_dim, act_dim = obs_space.shape[0], act_space.shape[0]
    t_obs, t_act, _ = _spaces_of(cls)
    if (t_obs, t_act) != (obs_dim, act_dim):
        raise ValueError(
            f"task: {cls.__name__} has observation size {t_obs} and action size "
            f"{t_act}, the model {obs_dim} and {act_dim}"
        )
    low = np.asarray(cls.single_action_space.low, np.float64)
    high = np.asarray(cls.single_action_space.high, np.float64)
    if not _is_rsl_rl(model):
        actor, norm_meta, source = _sb3_graph(model, vec_normalize, low, high)
        module = model.policy
    else:
        if vec_normalize is not None:
            raise ValueError(
                "vec_normalize: give None with an rsl_rl policy (its actor normalises itself)"
            )
        from asr.rl import _rsl_rl_policy

        bounds = (_inward(low, np.inf), _inward(high, -np.inf))
        actor = _rsl_rl_policy.onnx_actor(model, *bounds)
        norm_meta = _rsl_rl_policy.normalisation_metadata(model)
        source = "rsl-rl-lib PPO, deterministic actor mean"
        module = model.actor
    was_training = module.training
    module.train(False)
    try:
        with torch.no_grad():
            proto = _to_onnx(actor, obs_dim)
    finally:
        module.train(was_training)
    meta = _metadata(cls, obs_dim, act_dim, low, high, norm_meta, source, env_kwargs)
    _write_proto(proto, meta, path)
    return path


def _to_onnx(actor, obs_dim):
    """The ONNX ModelProto of the actor (input obs (batch, obs_dim), output action): torch's
    tracing exporter (0.1 s; torch deprecates it for the dynamo exporter, which took about 10 s
    from a cold start), or the dynamo exporter where a torch no longer has the tracing one."""
    import onnx
    import torch

    buf = io.BytesIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # the tracing exporter's notice
            torch.onnx.export(
                actor,
                (torch.zeros(2, obs_dim),),
                buf,
                dynamo=False,
                input_names=["obs"],
                output_names=["action"],
                dynamic_axes={"obs": {0: "batch"}, "action": {0: "batch"}},
                opset_version=OPSET,
            )
        return onnx.load_from_string(buf.getvalue())
    except (TypeError, AttributeError, NotImplementedError):  # no tracing exporter any more
        program = torch.onnx.export(
            actor,
            (torch.zeros(2, obs_dim),),
            dynamo=True,
            input_names=["obs"],
            output_names=["action"],
            dynamic_shapes={"obs": {0: torch.export.Dim("batch")}},
            opset_version=OPSET,
            verbose=False,
        )
        return program.model_proto


def _env_kwargs(recorded, given):
    """The env_kwargs to record: a training folder's (`recorded`, None without) with `given`'s
    keys replacing its; ValueError naming a value that is not a dict of JSON values."""
    out = {}
    for name, kwargs in (("config.json env_kwargs", recorded), ("env_kwargs", given)):
        if kwargs is None:
            continue
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            raise ValueError(
                f"{name}: got {kwargs!r}, expected a dict of the task's keyword arguments"
            )
        out.update(kwargs)
    try:
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError):
        raise ValueError(
            f"env_kwargs: got {out!r}, expected JSON values (numbers, strings, lists, dicts)"
        ) from None
    return out


def _metadata(cls, obs_dim, act_dim, low, high, norm_meta, source, env_kwargs):
    import torch

    try:
        env = cls(1, **env_kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"env_kwargs: {env_kwargs!r} for {cls.__name__}: {exc}") from None
    try:
        period = float(env.env_dt)
    finally:
        env.close()
    obs_names = getattr(cls, "OBSERVATION", None) or [(f"obs{i}", "") for i in range(obs_dim)]
    act_names = getattr(cls, "ACTION", None) or [(f"action{i}", "") for i in range(act_dim)]
    return {
        "format": FORMAT,
        "task": cls.__name__,
        "task_id": task_id(cls),
        "robot": cls.robot,
        "variant": cls.variant or "",
        "obs_dim": str(obs_dim),
        "act_dim": str(act_dim),
        "observation": json.dumps([list(e) for e in obs_names]),
        "action": json.dumps(
            [[n, u, float(lo), float(hi)] for (n, u), lo, hi in zip(act_names, low, high)]
        ),
        "control_period_s": repr(period),
        "obs_normalization": json.dumps(norm_meta),
        "env_kwargs": json.dumps(env_kwargs),
        "asr_version": __version__,
        "torch_version": torch.__version__,
        "source": source,
    }


def _write_proto(proto, meta, path):
    del proto.metadata_props[:]
    for k, v in meta.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = k, v
    proto.producer_name = "asr.rl.export_onnx"
    with atomic_write(path) as f:
        f.write(proto.SerializeToString())


# ---------------------------------------------------------------- run


class OnnxPolicy:
    """An exported policy run with onnxruntime: policy(obs) -> actions (float32), batched.

    Attributes: path, obs_dim, act_dim, metadata (dict: JSON entries parsed), task, robot,
    variant, control_period_s, observation / action (lists of entries as in the metadata),
    env_kwargs (dict: the task's keyword arguments the policy was trained with; {} for a file
    that records none)."""

    def __init__(self, path, *, env=None, threads=1):
        if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path: expected an ONNX file path, got {type(path).__name__}")
        with open(os.fspath(path), "rb") as f:
            data = f.read()
        self._load(data, os.fspath(path), env, threads)

    @classmethod
    def from_bytes(cls, data, *, name="<bytes>", env=None, threads=1):
        """The policy of an ONNX file's bytes (`name` stands for its path in messages)."""
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"data: expected the bytes of an ONNX file, got {type(data).__name__}")
        self = cls.__new__(cls)
        self._load(bytes(data), str(name), env, threads)
        return self

    def _load(self, data, path, env, threads):
        ort = need("onnxruntime", "rl", "asr.rl.OnnxPolicy")

        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(
                f"threads: got {threads!r}, valid: an int >= 0 (0: onnxruntime's default)"
            )
        self.path = path
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = threads
        opts.log_severity_level = 4
        try:
            self.session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own classes
            raise ValueError(f"path: {self.path!r} is not a valid ONNX model ({exc})") from None
        ins, outs = self.session.get_inputs(), self.session.get_outputs()
        if (
            len(ins) != 1
            or len(outs) != 1
            or len(ins[0].shape) != 2
            or len(outs[0].shape) != 2
            or not isinstance(ins[0].shape[1], int)
            or not isinstance(outs[0].shape[1], int)
        ):
            raise ValueError(
                f"path: {self.path!r} is not an asr policy (expected one input "
                "(batch, obs_dim) and one output (batch, act_dim), got "
                f"{[(i.name, i.shape) for i in ins]} -> "
                f"{[(o.name, o.shape) for o in outs]})"
            )
        self._in, self._out = ins[0].name, outs[0].name
        self.obs_dim, self.act_dim = ins[0].shape[1], outs[0].shape[1]
        meta = dict(self.session.get_modelmeta().custom_metadata_map)
        for key in ("observation", "action", "obs_normalization", "env_kwargs"):
            if key in meta:
                try:
                    meta[key] = json.loads(meta[key])
                except ValueError:
                    pass
        self.metadata = meta
        self.task, self.robot = meta.get("task"), meta.get("robot")
        self.variant = meta.get("variant")
        kwargs = meta.get("env_kwargs")
        self.env_kwargs = dict(kwargs) if isinstance(kwargs, dict) else {}
        self.observation, self.action = meta.get("observation"), meta.get("action")
        cp = meta.get("control_period_s")
        self.control_period_s = float(cp) if cp is not None else None
        if env is not None:
            self.check_task(env)

    def check_task(self, env):
        """ValueError unless the policy's input / output sizes are the observation / action
        sizes of `env` (an asr task class, asr vector env or gymnasium env)."""
        obs, act, name = _spaces_of(env)
        if (obs, act) != (self.obs_dim, self.act_dim):
            raise ValueError(
                f"env: {name} has observation size {obs} and action size {act}; "
                f"the policy {self.path!r} takes observations of size "
                f"{self.obs_dim} and gives actions of size {self.act_dim}"
            )
        return self

    def __call__(self, obs):
        x = np.asarray(obs, dtype=np.float32)
        single = x.ndim == 1
        if single:
            x = x[None]
        if x.ndim != 2 or x.shape[1] != self.obs_dim:
            raise ValueError(
                f"obs: shape {np.shape(obs)}, expected (N, {self.obs_dim}) or ({self.obs_dim},)"
            )
        a = self.session.run([self._out], {self._in: np.ascontiguousarray(x)})[0]
        return a[0] if single else a

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        """(actions, None): the call shape of Stable-Baselines3's model.predict, so code written
        for it runs an exported policy. The policy is the deterministic one (deterministic=False
        is refused), and obs are raw observations: the file normalises them itself."""
        if deterministic is not True:
            raise ValueError(
                f"deterministic: got {deterministic!r}, valid: True (an exported policy is "
                "the actor's mean)"
            )
        return self(obs), None

    def __repr__(self):
        return (
            f"OnnxPolicy({self.path!r}, task={self.task!r}, obs_dim={self.obs_dim}, "
            f"act_dim={self.act_dim})"
        )


__all__ = ["export_onnx", "OnnxPolicy", "load_training", "resolve_task", "task_id", "FORMAT"]
