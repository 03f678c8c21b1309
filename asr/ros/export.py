"""Export a learned or configured policy as a ROS package that runs on a robot without asr:
ros=1, a catkin package with a rospy node; ros=2, an ament_python package with an rclpy node.
The node reads the robot's `<ns>/joint_states` and publishes the command topics of the toolbox
interface [Mengacci2021] (the interface `asr ros` and `asr ros2` serve, so the same package
drives the simulated and the real robot). Both nodes embed one copy of the policy maths
(POLICY_BLOCK below), so they compute the same commands.

    from asr.ros.export import export_policy
    export_policy(ilc_result, "qbmove_arm_2dof", "ws/src", ros=2)  # ws/src/asr_..._policy

What is exported (the node's data file <node>.json; JSON floats round-trip exactly):

- an ILCResult (asr.learning.iterative_learning): a time table. Sample k of the learned equilibrium
  reference is held from t = settle_s + k dt to settle_s + (k + 1) dt after the first joint state
  (zero-order hold, as `ilc` applied it to the Sim: one sample per step, after `settle_s`
  seconds held at sample 0), the preset (second reference) held throughout, the last sample held
  after the end. Published as the robot-level `<ns>/reference_1` (equilibria) and
  `<ns>/reference_2` (presets) of the toolbox's Plugin Manager, std_msgs/Float64MultiArray,
  one value per joint (modes 3 / 6), at every joint state (ROS 1: latched, a node that
  connects late gets the current command).
- a linear policy of asr.envs.cem (the dict `cem.train` returns, its "mean" W, or W itself,
  shape (act_dim, obs_dim + 1)) for a registered task (asr/... gymnasium ids; found from the
  robot, the variant and W's shape, or given with `task=`): every env step (frame_skip * dt s
  of joint-state time) the node builds the task's observation from the JointState, entry by
  entry as the task's OBSERVATION names them (task_io: q, qd (rad, rad/s), target (the
  private parameter ~target, rad, for a task that observes one), q - target, t (s: the env
  step's start, counted from the first state); for a task that tracks a reference (Periodic2DOF)
  q_ref, qd_ref (rad, rad/s: the reference and its rate at the env step's end, (k + 1) env_dt
  for env step k), q - q_ref and qd - qd_ref, from the data file's "reference" {"centre" (per
  joint, rad), "amplitude" (rad), "frequency" (Hz)}: q_ref_j = centre_j + amplitude sin(2 pi
  frequency t), as asr.envs.periodic.reference computes it; the exporter takes them from the
  task built with the policy's env_kwargs (a training folder's config.json, the ONNX file's
  metadata, or env_kwargs=), so a bad keyword fails at export) and publishes the action
  a = low + (high - low) (1 + tanh(W [obs, 1])) / 2, split as its ACTION names it: the
  equilibria as reference_1 and the presets as reference_2 above, held until the next env
  step, as the env holds them. A release entry (Throw): the first env step whose release is
  above the task's RELEASE_THRESHOLD ends the episode; at the first state after that step
  (when the env lets the ball go) the node publishes True once on `<ns>/release`
  (std_msgs/Bool, latched) and from then on holds its last references. A task that observes
  its time (t, or a reference of it) is episodic: after max_episode_steps env steps (of the
  task built with env_kwargs) the node holds them too.
- an ONNX policy (asr.rl.export_onnx: an asr.rl.OnnxPolicy, a .onnx file, or a training
  folder, exported on the way) for its task (the file's metadata, or `task=`; its input and
  output sizes must fit the task): the observation / action mapping of the linear policy above,
  the action computed by running the file (copied as <node>.onnx) with onnxruntime,
  which the node then needs, with numpy, in the Python that runs it (README.md of the package,
  launch argument python:=...).
- a dashboard workspace dict (GET /api/workspace): constant per-joint
  `<ns>/<joint>/equilibrium_position` (the joint's "hold" offset, or offset + amplitude of a
  "step") and `<ns>/<joint>/stiffness_preset` (std_msgs/Float64, latched (ROS 2:
  transient_local), republished at every joint state), which the toolbox offers in modes 3
  and 6 only (other modes are refused).
  Time-varying references (sine, chirp, minjerk) are refused: export an ILC result for a
  trajectory. The toolbox interface has no topic for control gains, operation modes or
  spring parameters: the package records them (data file, and the node's private parameters
  ~gains, ~modes, ~params) for the robot's own configuration; they are not sent.

Time base: the header stamp of the JointState (the robot's, or the simulation's, time), counted
from the first state received; with the node's parameter use_stamps false, the ROS time
instead (for a robot whose joint states carry no stamps).

Lockstep (ROS 2, parameter lockstep): against `asr ros2 --lockstep` the node answers every new
joint state (by stamp; it also reads the latched `joint_states_latest`, so a node started after
asr's gets the start state) with one `<ns>/step` message, the references (J, 2) row-major as
its data: asr's node steps one period with them. The loop then runs exactly as the offline
rollout of the same policy (tests/test_ros2_export.py).

Topics are relative to the node's namespace (launch argument ns); started in none, the node
uses the data file's (the `namespace` given here). Launch argument node_name names the node, so
that two policies run at once.

The package's files are composed in asr.ros._export_templates (ROS 1, and the blocks both
nodes embed) and asr.ros._export_ros2_templates (ROS 2); here the policy is turned into
the node's data and the package written atomically (a new hidden folder swapped in whole).
"""

import json
import os
import re
import shutil
import stat
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

from asr.common.files import folder_lock, replace_folder
from asr.rl import MODEL_FILES
from asr.ros._export_ros2_templates import ros2_package_files
from asr.ros._export_templates import ONNX_BLOCK, POLICY_BLOCK, package_files

FORMAT = "asr.ros_policy/1"
KINDS = ("table", "linear", "constant", "onnx")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # ROS package names (REP 144)
_TOPIC_PART = re.compile(r"^[A-Za-z][A-Za-z0-9_/]*$")
MAX_TABLE_SAMPLES = 2_000_000


def _check_robot(robot):
    if not isinstance(robot, str) or not _NAME.match(robot):
        raise ValueError(
            f"robot: got {robot!r}, valid: a robot name of robots/ (lower-case "
            "letters, digits, '_')"
        )


def _package_name(package, robot):
    _check_robot(robot)
    name = f"asr_{robot}_policy" if package is None else package
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"package: got {name!r}, valid: a ROS package name (lower-case letters, "
            "digits and '_', starting with a letter)"
        )
    return name


def _finite(arr, name):
    arr = np.asarray(arr, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or inf")
    return arr


def _from_ilc(res, robot, variant, instance):
    meta = res.metadata or {}
    if meta.get("robot") not in (None, robot):
        raise ValueError(
            f"robot: got {robot!r}, the ILC result was learned on {meta.get('robot')!r}"
        )
    n = res.input.shape[0]
    if (
        isinstance(instance, bool)
        or not isinstance(instance, (int, np.integer))
        or not 0 <= instance < n
    ):
        raise ValueError(
            f"instance: got {instance!r}, valid range [0, {n - 1}] (the result's instances)"
        )
    values = _finite(res.input[instance], "obj.input")
    if values.shape[0] > MAX_TABLE_SAMPLES:
        raise ValueError(f"obj.input: {values.shape[0]} samples, at most {MAX_TABLE_SAMPLES}")
    joints = list(meta.get("joints") or [])
    return {
        "kind": "table",
        "topics": "robot",
        "joints": joints,
        "variant": meta.get("variant", variant),
        "dt": float(res.dt),
        "start_s": float(meta.get("settle_s", 0.0)),
        "values_1": values.tolist(),
        "ref_2": _finite(res.presets[instance], "obj.presets").tolist(),
        "modes": meta.get("modes"),
        "source": "asr.ilc",
    }


def _registered_tasks():
    """The task classes of every registered asr gymnasium id (asr.learning.gym_registry.ENVS)."""
    import importlib

    from asr.learning.gym_registry import ENVS

    out = []
    for _, vector in ENVS.values():
        module, name = vector.split(":")
        out.append(getattr(importlib.import_module(module), name))
    return out


def _sizes(task):
    return (task.single_observation_space.shape[0], task.single_action_space.shape[0])


def find_task(robot, variant, sizes=None):
    """The registered asr task class running `robot` (and `variant`, when given); of several,
    the one of (observation, action) sizes `sizes`, when given."""
    runs = [c for c in _registered_tasks() if c.robot == robot and variant in (None, c.variant)]
    found = runs if len(runs) <= 1 or sizes is None else [c for c in runs if _sizes(c) == sizes]
    if len(found) != 1:
        names = ", ".join(f"{c.__name__} {_sizes(c)}" for c in runs) or "none"
        raise ValueError(
            f"robot: no single asr task runs {robot!r} (variant {variant!r}, policy sizes "
            f"{sizes}); tasks (observation, action): {names}; give task="
        )
    return found[0]


# the entries of a task's OBSERVATION / ACTION (names as asr.envs declares them) the node knows:
# joint k's angle, velocity, target and error (the joint's number left out for one joint), the
# time since the episode start; equilibrium, preset (reference_1 / reference_2) and the release
# and, for a task tracking a reference, its value and rate at the env step's end and the errors
_OBS_NAME = re.compile(r"^(q|qd|target|q_ref|qd_ref)(\d*)$")
_ERR_NAME = re.compile(r"^(q|qd)(\d*) - (target|q_ref|qd_ref)(\d*)$")
_ERRORS = {("q", "target"): "error", ("q", "q_ref"): "ref_error", ("qd", "qd_ref"): "rate_error"}
_ACT_NAME = re.compile(r"^(equilibrium|preset)(\d*)$")
# the observation sources computed from the task's reference (the data file's "reference")
REFERENCE_SOURCES = ("q_ref", "qd_ref", "ref_error", "rate_error")
_KNOWN = (
    "observation: q<k>, qd<k>, target<k>, q<k> - target<k>, q_ref<k>, qd_ref<k>, "
    "q<k> - q_ref<k>, qd<k> - qd_ref<k>, t; action: equilibrium<k>, preset<k>, release"
)


def _joint_of(digits, nj, task, name):
    k = int(digits) - 1 if digits else 0
    if (not digits and nj != 1) or not 0 <= k < nj:
        raise ValueError(
            f"task: {task.__name__}'s entry {name!r} names no joint of its {nj} (valid: {_KNOWN})"
        )
    return k


def _legacy_names(nj):
    """The names of a task without OBSERVATION / ACTION: [q, qd, target, q - target] and
    [equilibria, presets] (what every exported policy observed before tasks named them)."""
    ks = [""] if nj == 1 else [str(k + 1) for k in range(nj)]
    obs = [f"{x}{k}" for x in ("q", "qd", "target") for k in ks] + [f"q{k} - target{k}" for k in ks]
    return obs, [f"{x}{k}" for x in ("equilibrium", "preset") for k in ks]


def _entry(name, nj, task):
    """[source or sink, joint index or None] of one observation or action entry name."""
    if name in ("t", "release"):
        return [name, None]
    for pattern in (_OBS_NAME, _ACT_NAME):
        m = pattern.match(name)
        if m:
            return [m.group(1), _joint_of(m.group(2), nj, task, name)]
    m = _ERR_NAME.match(name)
    if m and (m.group(1), m.group(3)) in _ERRORS and m.group(2) == m.group(4):
        return [_ERRORS[m.group(1), m.group(3)], _joint_of(m.group(2), nj, task, name)]
    raise ValueError(
        f"task: {task.__name__} has the entry {name!r}, which the node cannot build "
        f"or apply (valid: {_KNOWN})"
    )


def task_io(task, nj):
    """(observation, action) of the node for `task` on a robot of nj joints: one [source,
    joint] per observation entry ("q", "qd", "target", "error" = q - target, "q_ref", "qd_ref"
    = the reference and its rate at the env step's end, "ref_error" = q - q_ref, "rate_error"
    = qd - qd_ref, "t" = time since the episode start, s) and one [sink, joint] per action
    entry ("equilibrium", "preset", "release"), in the task's order, from its OBSERVATION /
    ACTION names."""
    legacy = _legacy_names(nj)
    obs_names = [n for n, _ in getattr(task, "OBSERVATION", ())] or legacy[0]
    act_names = [n for n, _ in getattr(task, "ACTION", ())] or legacy[1]
    sizes = (task.single_observation_space.shape[0], task.single_action_space.shape[0])
    if (len(obs_names), len(act_names)) != sizes:
        raise ValueError(
            f"task: {task.__name__} has observation {sizes[0]} and action {sizes[1]} but "
            f"names {len(obs_names)} and {len(act_names)} entries (OBSERVATION / ACTION)"
        )
    obs = [_entry(n, nj, task) for n in obs_names]
    act = [_entry(n, nj, task) for n in act_names]
    if any(e[0] in ("equilibrium", "preset", "release") for e in obs) or any(
        e[0] not in ("equilibrium", "preset", "release") for e in act
    ):
        raise ValueError(
            f"task: {task.__name__} mixes observation and action entries (valid: {_KNOWN})"
        )
    for sink in ("equilibrium", "preset"):
        if sorted(j for s, j in act if s == sink) != list(range(nj)):
            raise ValueError(
                f"task: {task.__name__}'s action must hold one {sink} per joint ({nj}); "
                f"it names {act_names}"
            )
    if sum(s == "release" for s, _ in act) > 1:
        raise ValueError(f"task: {task.__name__}'s action names more than one release")
    return obs, act


def _task_mapping(robot, variant, task, target, sizes=None, env_kwargs=None):
    """The task's observation / action mapping of the node (linear and ONNX policies): joints,
    action Box, entries (task_io), ~target (tasks observing targets), env step, episode end
    (tasks observing time), the reference (tasks observing one) for env_kwargs."""
    from asr.envs.vector import AsrVectorEnv

    if task is None:
        task = find_task(robot, variant, sizes)
    if not (isinstance(task, type) and issubclass(task, AsrVectorEnv)):
        raise TypeError(f"task: expected an asr.envs task class, got {task!r}")
    if task.robot != robot:
        raise ValueError(f"robot: got {robot!r}, task {task.__name__} runs {task.robot!r}")
    import asr

    r = asr.load_robot(task.robot, task.variant)
    nj = len(r.joint_names)
    obs, act = task_io(task, nj)
    tracks = any(s in REFERENCE_SOURCES for s, _ in obs)
    timed = ["t", None] in obs or tracks
    env_kwargs, reference, max_steps = _task_options(task, env_kwargs, tracks)
    dt = task.timestep if task.timestep is not None else r.mj_model().opt.timestep
    d = {
        "topics": "robot",
        "joints": list(r.joint_names),
        "variant": task.variant,
        "task": task.__name__,
        "observation": obs,
        "action": act,
        "release": any(s == "release" for s, _ in act),
        "release_above": _release_threshold(task),
        # a task observing its time is episodic: after max_episode_steps the node holds
        "max_steps": max_steps if timed else None,
        "low": task.single_action_space.low.tolist(),
        "high": task.single_action_space.high.tolist(),
        "dt": float(dt),
        "frame_skip": int(task.frame_skip),
        "env_dt": float(dt) * int(task.frame_skip),
        "modes": [j.mode for j in r.joints],
    }
    if any(s in ("target", "error") for s, _ in obs):
        d["target"] = _target(target, nj).tolist()
    elif target is not None:
        raise ValueError(f"target: got {target!r}, but task {task.__name__} observes no target")
    if env_kwargs:
        d["env_kwargs"] = env_kwargs
    if reference is not None:
        d["reference"] = reference
    return task, d


def _task_options(task, env_kwargs, tracks):
    """(env_kwargs, reference or None, max_episode_steps): the task's keyword arguments the
    policy was trained with, checked by building the task with them (its own errors name
    keyword, value and valid range; the data file stores them, so JSON values), for a task
    that tracks a reference (`tracks`) the node's copy of it, the task's
    reference_parameters() ({"centre" (per joint, rad), "amplitude" (rad), "frequency" (Hz)}),
    and the episode's env steps with those keywords."""
    if env_kwargs is None:
        env_kwargs = {}
    if not isinstance(env_kwargs, dict):
        raise TypeError(
            f"env_kwargs: expected a dict of {task.__name__}'s keyword arguments, "
            f"got {type(env_kwargs).__name__}"
        )
    if not env_kwargs and not tracks:
        return {}, None, int(task.max_episode_steps)
    try:
        json.dumps(env_kwargs)
    except (TypeError, ValueError):
        raise ValueError(
            f"env_kwargs: got {env_kwargs!r}, expected JSON values (numbers, strings, lists; "
            "the node's data file stores them)"
        ) from None
    if tracks and not hasattr(task, "reference_parameters"):
        raise ValueError(
            f"task: {task.__name__} observes a reference (q_ref, qd_ref) but has no "
            "reference_parameters() to give the node"
        )
    try:
        env = task(1, **env_kwargs)
    except TypeError as exc:  # an unknown keyword (the tasks' range checks raise ValueError)
        raise ValueError(f"env_kwargs: {env_kwargs!r} for {task.__name__}: {exc}") from None
    try:
        reference = dict(env.reference_parameters()) if tracks else None
        return dict(env_kwargs), reference, int(env.max_episode_steps)
    finally:
        env.close()


def _release_threshold(task):
    """The release entry's threshold: the env lets go at the first env step whose release
    action is above it (the task's RELEASE_THRESHOLD, as a class or module attribute; 0)."""
    import sys

    module = sys.modules.get(task.__module__)
    value = getattr(task, "RELEASE_THRESHOLD", getattr(module, "RELEASE_THRESHOLD", 0.0))
    return float(value)


def _target(target, nj):
    target = _finite(np.zeros(nj) if target is None else target, "target")
    target = np.broadcast_to(target, (nj,)) if target.ndim == 0 else target
    if target.shape != (nj,):
        raise ValueError(f"target: expected {nj} values (rad), got shape {target.shape}")
    return target


def _from_linear(W, robot, variant, task, target, env_kwargs):
    W = _finite(W, "obj (W)")
    sizes = (W.shape[1] - 1, W.shape[0]) if W.ndim == 2 else None
    task, d = _task_mapping(robot, variant, task, target, sizes, env_kwargs)
    obs_dim = task.single_observation_space.shape[0]
    act_dim = task.single_action_space.shape[0]
    if W.shape != (act_dim, obs_dim + 1):
        raise ValueError(
            f"obj: W of shape {W.shape}, expected (act_dim, obs_dim + 1) = "
            f"({act_dim}, {obs_dim + 1}) for {task.__name__}"
        )
    return dict(d, kind="linear", W=W.tolist(), source="asr.envs.cem")


def _onnx_policy(obj):
    """(OnnxPolicy, the ONNX file's bytes) for an OnnxPolicy, a .onnx file or a training folder
    (exported with asr.rl.export_onnx); None for anything else."""
    if isinstance(obj, (str, os.PathLike)):
        p = os.fspath(obj)
        folder = os.path.isdir(p) and any(
            os.path.isfile(os.path.join(p, f)) for f in MODEL_FILES.values()
        )
        if not (folder or p.endswith(".onnx")):
            return None
        from asr.rl.onnx_policy import OnnxPolicy, export_onnx

        if folder:
            with tempfile.TemporaryDirectory() as tmp:
                return _onnx_policy(OnnxPolicy(export_onnx(p, os.path.join(tmp, "policy.onnx"))))
        obj = OnnxPolicy(p)
    if type(obj).__name__ != "OnnxPolicy" or not hasattr(obj, "session"):
        return None
    with open(obj.path, "rb") as f:
        return obj, f.read()


def _from_onnx(policy, robot, variant, task, target, env_kwargs):
    if task is None and policy.task:
        from asr.rl.onnx_policy import resolve_task

        task = resolve_task(policy.task)
    if policy.robot not in (None, robot):
        raise ValueError(
            f"robot: got {robot!r}, the ONNX policy {policy.path!r} was exported "
            f"for {policy.robot!r}"
        )
    sizes = (policy.obs_dim, policy.act_dim)
    env_kwargs = {**policy.env_kwargs, **(env_kwargs or {})}  # the file's ({} from an old asr)
    task, d = _task_mapping(robot, variant, task, target, sizes, env_kwargs)
    policy.check_task(task)  # ValueError naming both sizes
    return dict(
        d,
        kind="onnx",
        onnx="policy_node.onnx",
        obs_dim=policy.obs_dim,
        act_dim=policy.act_dim,
        metadata=policy.metadata,
        source="asr.rl.export_onnx",
    )


def _from_workspace(ws, robot, variant):
    if ws.get("robot") not in (None, robot):
        raise ValueError(f"robot: got {robot!r}, the workspace is of {ws.get('robot')!r}")
    import asr

    r = asr.load_robot(
        robot, variant if variant is not None else ws.get("variant"), allow_path=False
    )
    joints = list(r.joint_names)
    modes = {j.name: j.mode for j in r.joints}
    modes.update(ws.get("mode") or {})
    bad = [f"{name!r} in mode {modes[name]}" for name in joints if modes[name] not in (3, 6)]
    if bad:
        raise ValueError(
            f"workspace mode: {', '.join(bad)}; the exported node sends "
            "equilibrium_position / stiffness_preset, which the toolbox interface "
            "offers in modes 3 and 6 (valid: 3, 6)"
        )
    presets, refs = ws.get("preset") or {}, ws.get("reference") or {}
    init = r.initial_refs
    eq, pre = [], []
    for k, name in enumerate(joints):
        gen = refs.get(name, {"kind": "hold", "offset": float(init[k][0]) if init else 0.0})
        kind = gen.get("kind")
        if kind not in ("hold", "step"):
            raise ValueError(
                f"workspace reference of {name!r}: kind {kind!r} varies in time; "
                "valid for export: hold, step (export an ILC result for a "
                "trajectory)"
            )
        eq.append(
            float(gen.get("offset", 0.0))
            + (float(gen.get("amplitude", 0.0)) if kind == "step" else 0.0)
        )
        pre.append(float(presets.get(name, init[k][1] if init else 0.0)))
    _finite(eq + pre, "workspace reference / preset")
    params = ws.get("params") or {}
    gains = {j: {g: v for g, v in p.items() if g in ("kp", "ki", "kd")} for j, p in params.items()}
    return {
        "kind": "constant",
        "topics": "joint",
        "joints": joints,
        "variant": r.variant,
        "ref_1": eq,
        "ref_2": pre,
        "modes": [modes[name] for name in joints],
        "gains": {j: g for j, g in gains.items() if g},
        "params": params,
        "source": "dashboard workspace",
    }


def policy_data(
    obj,
    robot,
    *,
    variant=None,
    namespace="",
    instance=0,
    task=None,
    target=None,
    onnx=None,
    env_kwargs=None,
):
    """The JSON-able data of the exported node (see the module doc) for `obj`. onnx: the
    (OnnxPolicy, bytes) of `obj` when the caller has it already (a policy exported from a
    training folder lives in a temporary file that is gone by now). env_kwargs: the task's
    keyword arguments the policy was trained with (a training folder's config.json gives
    them; these replace its keys), which a task observing a reference needs (Periodic2DOF:
    frequency, amplitude)."""
    from asr.learning.iterative_learning import ILCResult

    _check_robot(robot)
    if not isinstance(namespace, str) or (
        namespace.strip("/") and not _TOPIC_PART.match(namespace.strip("/"))
    ):
        raise ValueError(f"namespace: got {namespace!r}, valid: '' or a ROS name like 'robot1'")
    if variant is not None and not isinstance(variant, str):
        raise TypeError(f"variant: expected a string or None, got {type(variant).__name__}")
    if isinstance(obj, (str, os.PathLike)) and os.path.isdir(obj):
        env_kwargs = {**_folder_env_kwargs(obj), **(env_kwargs or {})}
    if isinstance(obj, ILCResult):
        d = _from_ilc(obj, robot, variant, instance)
    elif isinstance(obj, dict) and "mean" in obj and "curve" in obj:
        d = _from_linear(obj["mean"], robot, variant, task, target, env_kwargs)
    elif isinstance(obj, dict) and str(obj.get("version", "")).startswith("asr.dashboard/"):
        d = _from_workspace(obj, robot, variant)
    elif isinstance(obj, np.ndarray):
        d = _from_linear(obj, robot, variant, task, target, env_kwargs)
    elif (onnx := onnx or _onnx_policy(obj)) is not None:
        d = _from_onnx(onnx[0], robot, variant, task, target, env_kwargs)
    else:
        raise TypeError(
            f"obj: expected an asr ILCResult, a cem.train result (dict with 'mean'), "
            f"a linear policy W (ndarray), a dashboard workspace dict or an ONNX "
            f"policy (asr.rl.OnnxPolicy, a .onnx file, a training folder), got "
            f"{type(obj).__name__}"
        )
    if not d["joints"]:
        import asr

        d["joints"] = list(asr.load_robot(robot, d.get("variant")).joint_names)
    for key in ("values_1",):
        if key in d and len(d[key][0]) != len(d["joints"]):
            raise ValueError(
                f"obj: {len(d[key][0])} joints, robot {robot!r} has {len(d['joints'])}"
            )
    d.update(format=FORMAT, robot=robot, namespace=namespace.strip("/"))
    return d


def _folder_env_kwargs(folder):
    """The env_kwargs a training folder's config.json records ({} without them)."""
    path = os.path.join(os.fspath(folder), "config.json")
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        kwargs = json.load(f).get("env_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise ValueError(f"obj: {path} has env_kwargs {kwargs!r}, expected a dict")
    return kwargs


def export_policy(
    obj,
    robot,
    out_dir,
    *,
    ros=1,
    variant=None,
    namespace="",
    package=None,
    instance=0,
    task=None,
    target=None,
    env_kwargs=None,
):
    """Write the ROS package `package` (default asr_<robot>_policy) for `obj` into out_dir (see
    the module doc) and return its path. An existing package folder of that name is replaced.

    ros=1: a catkin package: package.xml (format 2), CMakeLists.txt, README.md,
    launch/<node>.launch (arguments node_name, ns), scripts/<node>.py (the rospy node) and
    scripts/<node>.json (its data). ros=2: an ament_python package: package.xml (format 3),
    setup.py, setup.cfg, resource/<package>, README.md, launch/<node>.launch.py (arguments
    node_name, ns, lockstep, use_stamps), <package>/<node>.py (the rclpy node, entry point
    main) and <package>/<node>.json. An ONNX policy also writes <node>.onnx beside the data.
    instance: which instance of an ILCResult; task: the asr.envs task class of a linear or
    ONNX policy (default: the ONNX file's task, or the one running `robot`); target: its
    target default, rad per joint; env_kwargs: its task's keyword arguments (a training
    folder's own by default; a bad one is refused here, naming it). Files are world-readable
    (0644, executables and folders 0755) whatever the umask."""
    if ros not in (1, 2) or isinstance(ros, bool):
        raise ValueError(f"ros: got {ros!r}, valid: 1 (catkin) or 2 (ament_python)")
    name = _package_name(package, robot)
    onnx = None if isinstance(obj, (dict, np.ndarray)) else _onnx_policy(obj)
    d = policy_data(
        obj,
        robot,
        variant=variant,
        namespace=namespace,
        instance=instance,
        task=task,
        target=target,
        onnx=onnx,
        env_kwargs=env_kwargs,
    )
    node = "policy_node"
    d["node"] = node
    d["package"] = name
    if ros == 1:
        files = package_files(name, node, d, robot, onnx)
    else:
        files = ros2_package_files(name, node, d, onnx)
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    with folder_lock(out_dir):  # exporters of one folder take turns
        for left in os.listdir(out_dir):  # left by a killed export (none runs now)
            if left.startswith(f".{name}-"):
                shutil.rmtree(os.path.join(out_dir, left), ignore_errors=True)
        return write_package(name, files, out_dir)


def write_package(name, files, out_dir):
    """Write the package ({path: text or bytes}, executable paths) into a new hidden folder of
    out_dir, then swap it in whole. Modes are set, not left to the umask (mkdtemp makes 0700):
    a package is copied to robots and built by other users."""
    contents, executables = files
    tmp = tempfile.mkdtemp(prefix=f".{name}-", dir=out_dir)
    try:
        for rel, content in contents.items():
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(content.encode() if isinstance(content, str) else content)
            os.chmod(path, 0o755 if rel in executables else 0o644)
        for root, dirs, _ in os.walk(tmp):
            for folder in [root, *(os.path.join(root, x) for x in dirs)]:
                os.chmod(folder, 0o755)
        for rel in contents:
            if rel.endswith((".xml", ".launch")):
                ET.parse(os.path.join(tmp, rel))  # well-formed, or ParseError
        final = os.path.join(out_dir, name)
        replace_folder(tmp, final)  # the old package or the new one, whenever a kill comes
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def export_zip(obj, robot, **kwargs):
    """The package export_policy(obj, robot, ..., **kwargs) writes (ros=1 or 2), as the bytes
    of a zip archive (folder <package>/, the files' modes kept)."""
    import io
    import zipfile

    with tempfile.TemporaryDirectory() as tmp:
        path = export_policy(obj, robot, tmp, **kwargs)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for root, dirs, names in os.walk(path):
                dirs.sort()
                for n in sorted(names):
                    full = os.path.join(root, n)
                    rel = os.path.relpath(full, tmp)
                    info = zipfile.ZipInfo(rel.replace(os.sep, "/"))
                    info.external_attr = (stat.S_IFREG | (os.stat(full).st_mode & 0o777)) << 16
                    info.create_system = 3  # unix: unzip applies the modes
                    info.compress_type = zipfile.ZIP_DEFLATED
                    with open(full, "rb") as f:
                        z.writestr(info, f.read())
        return buf.getvalue()


# The plain Python (source text) every exported node embeds, ROS 1 and ROS 2 alike, runnable
# without ROS: POLICY_BLOCK defines the node's Policy class (its data file's policy turned into
# the commands for a JointState), ONNX_BLOCK the actor of an ONNX policy (onnx_actor; numpy and
# onnxruntime). exec(ONNX_BLOCK + POLICY_BLOCK, {"math": math, "os": os}) defines them here as
# in the node, so a test can check the node's commands against asr's own policy.
__all__ = [
    "export_policy",
    "export_zip",
    "policy_data",
    "find_task",
    "FORMAT",
    "ONNX_BLOCK",
    "POLICY_BLOCK",
]
