"""Rollouts as bags: write asr trajectories as ROS 1 bags, ROS 2 bags (SQLite 3) or ROS 2 MCAP
recordings with the topics and types of asr's live node, and read bags (written here, or
recorded from the node or a robot with `rosbag record`) back into NumPy arrays.

    out = sim.rollout(200, refs, record=asr.sim.DEFAULT_RECORD + ("ref1", "ref2"))
    write_bag(out, "arm.bag", sim=sim, instance=0)            # or dt=, joint_names=, robot=
    topics = read_bag("arm.bag")       # {topic: {"t": (M,) s, "type": ..., fields...}}
    back = as_rollout(topics)          # {field: (N, steps, J)}, "t", "joint_names"

Topics (`<ns>` is empty with `instance=k`, `/instance_<k>` for every instance k with
`instance=None`), the same names and types as the node (toolbox topics of [Mengacci2021]):

    <ns>/joint_states, <ns>/robot_state   sensor_msgs/JointState: name = joint names,
                                          position = q (rad), velocity = qd (rad/s),
                                          effort = tau_joint (N m, the torque on the link)
    <ns>/<joint>/link_state               asr_msgs/state_info: q = q, dq = qd, ref_1 = ref1,
                                          ref_2 = ref2, tau = tau_joint, stiff = stiffness
    <ns>/<joint>/motor_1_state            asr_msgs/state_info: q = th1, dq = th1d, ref_1 = ref1,
    <ns>/<joint>/motor_2_state            ref_2 = ref2, tau = tau_m1, stiff = stiffness (motor 2:
                                          th2, th2d, tau_m2)
    <ns>/motor_1_state, <ns>/motor_2_state  sensor_msgs/JointState of th1, th1d, tau_m1 (th2 ...)
    <ns>/<joint>/torque_el1_state          std_msgs/Float64: tau_el1 (N m); el2: tau_el2

Motor topics are written when the rollout recorded the motor angle (th1 / th2), elastic torques
when it recorded tau_el1 / tau_el2. A state_info field whose rollout field was not recorded is
0 (state_info has no "unset"); a JointState array whose field was not recorded is empty, the ROS
convention. In ROS 2 (formats "ros2" and "mcap") message names must be CamelCase: the same
message is asr_msgs/msg/StateInfo there (ROS 1: asr_msgs/state_info), with the same fields.

Time: sample k of a rollout is the state at the end of step k, so its stamp is
t0 + (k + 1) dt (s; t0, default 0, is the rollout's start on the bag's clock, which keeps
every stamp positive). header.stamp and the bag's record time are equal, in integer nanoseconds
round(t0 * 1e9) + round((k + 1) dt * 1e9).

Formats: "ros1" a ROS 1 bag (version 2.0) file, path ending in .bag, with each connection's full
message definition and MD5 sum (Debian's rosbag info / rosbag check / rosbag play read it);
"ros2" a rosbag2 folder (metadata.yaml + SQLite 3 .db3, CDR); "mcap" a rosbag2 folder with MCAP
storage (metadata.yaml + <name>.mcap, ros2msg schemas, CDR), what `ros2 bag record -s mcap`
writes. ROS 2 bags carry the robot name and dt as custom data (asr.robot, asr.dt_s).
"""

import math
import os
import re
from pathlib import Path

import numpy as np

from asr._optional import need
from asr.ros.messages import STATE_INFO_DEFINITION

FORMATS = ("ros1", "ros2", "mcap")
STATE_INFO_ROS2 = "asr_msgs/msg/StateInfo"
_STATE_INFO_RS1 = "asr_msgs/msg/state_info"  # rosbags' spelling of asr_msgs/state_info
_JOINT_STATE = "sensor_msgs/msg/JointState"
_FLOAT64 = "std_msgs/msg/Float64"
# state_info field: the rollout field it carries, per topic kind
_LINK_MAP = {
    "q": "q",
    "dq": "qd",
    "ref_1": "ref1",
    "ref_2": "ref2",
    "tau": "tau_joint",
    "stiff": "stiffness",
}
_MOTOR_MAP = {
    m: {
        "q": f"th{m}",
        "dq": f"th{m}d",
        "ref_1": "ref1",
        "ref_2": "ref2",
        "tau": f"tau_m{m}",
        "stiff": "stiffness",
    }
    for m in (1, 2)
}
_JS_MAP = {
    "/joint_states": ("q", "qd", "tau_joint"),
    "/robot_state": ("q", "qd", "tau_joint"),
    "/motor_1_state": ("th1", "th1d", "tau_m1"),
    "/motor_2_state": ("th2", "th2d", "tau_m2"),
}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _typestore(ros_version):
    """rosbags' typestore of ROS 1 Noetic or ROS 2 Humble plus asr's state message."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    if ros_version == 1:
        store = get_typestore(Stores.ROS1_NOETIC)
        store.register(get_types_from_msg(STATE_INFO_DEFINITION, _STATE_INFO_RS1))
    else:
        store = get_typestore(Stores.ROS2_HUMBLE)
        store.register(get_types_from_msg(STATE_INFO_DEFINITION, STATE_INFO_ROS2))
    return store


# ---------------------------------------------------------------- input


def _positive(x, name):
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: got {x!r}, expected a number") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name}: got {x!r}, valid range: a finite number > 0 (s)")
    return v


def _from_result(result, dt, joint_names, robot, sim):
    """(fields {name: (N, steps, J) float64}, dt, joint names, robot name) of any result kind."""
    from asr.iterative_learning import ILCResult
    from asr.parameter_sweep import SweepResult

    if sim is not None:
        dt = sim.dt if dt is None else dt
        joint_names = sim.robot.joint_names if joint_names is None else joint_names
        robot = sim.robot.name if robot is None else robot
    if isinstance(result, SweepResult):
        raise TypeError(
            "result: a SweepResult keeps per-sample metrics, not trajectories; run "
            "the samples you want with asr.Sim (params / mujoco_params from "
            "result.params) and write that rollout (instance=None: all of them)"
        )
    if isinstance(result, ILCResult):
        if result.output is None:
            raise ValueError("result: this ILCResult has no output trajectories (output is None)")
        meta = result.metadata or {}
        dt = result.dt if dt is None else dt
        joint_names = meta.get("joints") if joint_names is None else joint_names
        robot = meta.get("robot") if robot is None else robot
        out = np.asarray(result.output, dtype=float)
        fields = {
            "q": out,
            "ref1": np.asarray(result.input, dtype=float),
            "ref2": np.broadcast_to(np.asarray(result.presets, dtype=float)[:, None, :], out.shape),
        }
    elif isinstance(result, dict):
        fields = {}
        for k, v in result.items():
            if k in ("t", "joint_names"):
                continue
            arr = np.asarray(v)
            if arr.ndim != 3 or not np.issubdtype(arr.dtype, np.number):
                raise ValueError(
                    f"result[{k!r}]: got an array of shape {arr.shape} and dtype "
                    f"{arr.dtype}, expected numbers of shape (N, steps, J)"
                )
            fields[k] = arr.astype(float, copy=False)
        if "q" not in fields:
            raise ValueError(
                f"result: no 'q' (link angles) among its fields {sorted(fields)}; "
                "record 'q' in sim.rollout(..., record=...)"
            )
    else:
        raise TypeError(
            f"result: got {type(result).__name__}, expected a Sim.rollout dict "
            "{field: (N, steps, J)} or an asr.iterative_learning.ILCResult"
        )
    shape = fields["q"].shape
    for k, v in fields.items():
        if v.shape != shape:
            raise ValueError(f"result[{k!r}]: shape {v.shape} differs from q's {shape}")
    if 0 in shape:
        raise ValueError(f"result: empty trajectories of shape {shape} (N, steps, J)")
    if dt is None:
        raise TypeError("dt: this result does not carry its time step; pass dt= (s) or sim=")
    dt = _positive(dt, "dt")
    if joint_names is None:
        raise TypeError(
            "joint_names: this result does not carry joint names; pass joint_names= or sim="
        )
    joint_names = tuple(joint_names)
    if len(joint_names) != shape[2]:
        raise ValueError(
            f"joint_names: got {len(joint_names)} names {joint_names!r}, the "
            f"result has J = {shape[2]} joints"
        )
    for n in joint_names:
        if not isinstance(n, str) or not _NAME.match(n):
            raise ValueError(
                f"joint_names: {n!r} is not a valid ROS name (a letter, then "
                "letters, digits or '_')"
            )
    if len(set(joint_names)) != len(joint_names):
        raise ValueError(f"joint_names: duplicate names in {joint_names!r}")
    robot = "" if robot is None else str(robot)
    return fields, dt, joint_names, robot


def _stamps_ns(t0, dt, steps):
    """(steps,) int64 stamps of the samples, ns: t0 + (k + 1) dt."""
    return int(round(t0 * 1e9)) + np.rint((np.arange(steps) + 1) * dt * 1e9).astype(np.int64)


# ---------------------------------------------------------------- writing


def write_bag(
    result,
    path,
    format="ros1",
    *,
    instance=None,
    dt=None,
    joint_names=None,
    robot=None,
    sim=None,
    t0=0.0,
):
    """Write a rollout as a bag; returns the path written (a .bag file or a rosbag2 folder).

    result: a Sim.rollout result {field: (N, steps, J)} (units of asr.FIELD_UNITS; needs 'q'),
        or an asr.iterative_learning.ILCResult (its last trials: q = output, ref1 = the learned
        input eq, ref2 = the presets). A SweepResult holds no trajectories: TypeError.
    path: ".bag" file (format "ros1") or a folder (formats "ros2", "mcap") that does not exist
        yet, in an existing folder.
    format: "ros1", "ros2" or "mcap" (see the module docstring).
    instance: an instance index k in [0, N): its topics without prefix; None: every instance
        under the namespace /instance_<k>.
    dt (s), joint_names (J names), robot (its name): taken from `sim` (an asr.Sim) or from an
        ILCResult when not given; a rollout dict carries none of them.
    t0: the rollout's start on the bag's clock, s (>= 0); sample k is stamped t0 + (k + 1) dt.
    """
    if format not in FORMATS:
        raise ValueError(f"format: got {format!r}, valid: {', '.join(map(repr, FORMATS))}")
    fields, dt, names, robot = _from_result(result, dt, joint_names, robot, sim)
    n, steps, nj = fields["q"].shape
    try:
        t0 = float(t0)
    except (TypeError, ValueError):
        raise TypeError(f"t0: got {t0!r}, expected a number of seconds") from None
    if not (math.isfinite(t0) and t0 >= 0):
        raise ValueError(f"t0: got {t0!r}, valid range: finite, >= 0 s")
    if t0 + (steps + 1) * dt > 2**31:
        raise ValueError(
            f"t0: the last stamp {t0 + steps * dt!r} s exceeds the 2**31 s of ROS time"
        )
    if instance is None:
        instances = [(k, f"/instance_{k}") for k in range(n)]
    else:
        if not isinstance(instance, (int, np.integer)) or isinstance(instance, bool):
            raise TypeError(f"instance: got {instance!r}, expected an integer index or None")
        if not 0 <= instance < n:
            raise ValueError(
                f"instance: got {instance}, valid range 0 to {n - 1} (N = {n}) "
                "or None (all instances)"
            )
        instances = [(int(instance), "")]
    path = Path(os.fspath(path))
    if not path.parent.is_dir():
        raise ValueError(f"path: the folder {str(path.parent)!r} of {str(path)!r} does not exist")
    if path.exists():
        raise ValueError(f"path: {str(path)!r} exists already; bags are never overwritten")
    if format == "ros1" and path.suffix != ".bag":
        raise ValueError(f"path: got {str(path)!r}; a ROS 1 bag's name ends in .bag")
    stamps = _stamps_ns(t0, dt, steps)
    if format == "ros1":
        need("rosbags", "ros", "asr.ros.write_bag")
        _write_ros1(path, fields, names, robot, instances, stamps)
    else:
        _write_ros2(path, format, fields, names, robot, instances, stamps, dt)
    return path


def _topics(fields, names, instances):
    """[(topic, kind, instance, detail)] in write order; kind js / si / f64."""
    out = []
    for k, ns in instances:
        for t in ("/joint_states", "/robot_state"):
            out.append((ns + t, "js", k, _JS_MAP[t]))
        for m in (1, 2):
            if f"th{m}" in fields:
                out.append((f"{ns}/motor_{m}_state", "js", k, _JS_MAP[f"/motor_{m}_state"]))
        for j, name in enumerate(names):
            out.append((f"{ns}/{name}/link_state", "si", k, (j, _LINK_MAP)))
            for m in (1, 2):
                if f"th{m}" in fields:
                    out.append((f"{ns}/{name}/motor_{m}_state", "si", k, (j, _MOTOR_MAP[m])))
            for e in (1, 2):
                if f"tau_el{e}" in fields:
                    out.append((f"{ns}/{name}/torque_el{e}_state", "f64", k, (j, f"tau_el{e}")))
    return out


def _messages(store, ros_version, fields, names, instances, stamps):
    """Yield (step, topic index, message) in time order."""
    T = store.types
    Header, Time = T["std_msgs/msg/Header"], T["builtin_interfaces/msg/Time"]
    JS, F64 = T[_JOINT_STATE], T[_FLOAT64]
    SI = T[_STATE_INFO_RS1 if ros_version == 1 else STATE_INFO_ROS2]
    topics = _topics(fields, names, instances)
    empty = np.zeros(0)
    zero = np.zeros(fields["q"].shape)
    for s, ns_total in enumerate(stamps):
        stamp = Time(sec=int(ns_total // 1_000_000_000), nanosec=int(ns_total % 1_000_000_000))
        header = (
            Header(seq=s, stamp=stamp, frame_id="")
            if ros_version == 1
            else Header(stamp=stamp, frame_id="")
        )
        for i, (_, kind, k, detail) in enumerate(topics):
            if kind == "js":
                arrs = [fields[f][k, s].copy() if f in fields else empty for f in detail]
                msg = JS(
                    header=header,
                    name=list(names),
                    position=arrs[0],
                    velocity=arrs[1],
                    effort=arrs[2],
                )
            elif kind == "si":
                j, fmap = detail
                msg = SI(**{m: float(fields.get(f, zero)[k, s, j]) for m, f in fmap.items()})
            else:
                j, f = detail
                msg = F64(data=float(fields[f][k, s, j]))
            yield s, i, msg


def _type_of(kind, ros_version):
    if kind == "js":
        return _JOINT_STATE
    if kind == "f64":
        return _FLOAT64
    return _STATE_INFO_RS1 if ros_version == 1 else STATE_INFO_ROS2


def _ros1_definitions():
    """{rosbags type name: {msgdef, md5sum}} of the installed ROS 1 messages (Debian's genpy
    classes, comments included, as `rosbag record` stores them: `rosbag check` compares the
    full text, not only the MD5 sum); {} without ROS 1 (rosbags' Noetic definitions then)."""
    from asr.ros.messages import state_info_class

    try:
        from asr.ros.environment import ros1

        classes = {
            _JOINT_STATE: ros1("sensor_msgs.msg").JointState,
            _FLOAT64: ros1("std_msgs.msg").Float64,
            _STATE_INFO_RS1: state_info_class(),
        }
    except ImportError:
        return {}
    return {k: {"msgdef": c._full_text, "md5sum": c._md5sum} for k, c in classes.items()}


def _write_ros1(path, fields, names, robot, instances, stamps):
    from rosbags.rosbag1 import Writer

    store = _typestore(1)
    callerid = "/asr" + (f"_{robot}" if _NAME.match(robot or "-") else "")
    topics = _topics(fields, names, instances)
    defs = _ros1_definitions()
    with Writer(path) as writer:
        conns = [
            writer.add_connection(
                t,
                _type_of(kind, 1),
                callerid=callerid,
                **defs.get(_type_of(kind, 1), {"typestore": store}),
            )
            for t, kind, _, _ in topics
        ]
        for s, i, msg in _messages(store, 1, fields, names, instances, stamps):
            writer.write(conns[i], int(stamps[s]), store.serialize_ros1(msg, conns[i].msgtype))


def _write_ros2(path, format, fields, names, robot, instances, stamps, dt):
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = _typestore(2)
    plugin = StoragePlugin.MCAP if format == "mcap" else StoragePlugin.SQLITE3
    topics = _topics(fields, names, instances)
    with Writer(path, version=8, storage_plugin=plugin) as writer:
        writer.set_custom_data("asr.robot", robot)
        writer.set_custom_data("asr.dt_s", repr(dt))
        conns = [
            writer.add_connection(t, _type_of(kind, 2), typestore=store) for t, kind, _, _ in topics
        ]
        for s, i, msg in _messages(store, 2, fields, names, instances, stamps):
            writer.write(conns[i], int(stamps[s]), store.serialize_cdr(msg, conns[i].msgtype))


# ---------------------------------------------------------------- reading


def read_bag(path, topics=None):
    """Read a bag into arrays: {topic: {"type": message type, "t": (M,) s, fields...}}.

    path: a ROS 1 .bag file (written here, by `rosbag record` or by rosbag's Python API), a
        rosbag2 folder (SQLite 3 or MCAP storage) or a single .mcap file of ROS 2 messages.
    topics: read only these topic names (default: all).

    "type" is rosbags' spelling of the message type (sensor_msgs/msg/JointState; ROS 1's
    asr_msgs/state_info reads as asr_msgs/msg/state_info, ROS 2's as asr_msgs/msg/StateInfo).
    "t" is each message's header.stamp where it has a header, else the bag's record time, in s
    (float64 of integer nanoseconds); "t_record" (M,) is the record time, s. Fields, M messages
    in record order: sensor_msgs/JointState: "name" (a tuple of the first message's names;
    ValueError if a later message names other joints), "position" (M, J) rad, "velocity" (M, J)
    rad/s, "effort" (M, J) N m ((M, 0) when the messages leave them empty); state_info (ROS 1
    and ROS 2 spellings): q, dq, ref_1, ref_2, tau, stiff, each (M,) (units in
    asr.ros.messages.STATE_INFO_FIELDS); std_msgs/Float64: "data" (M,). Other types: their
    numeric scalar fields as (M,) arrays. Use as_rollout for asr.Sim's {field: (N, steps, J)}.
    """
    need("rosbags", "ros", "asr.ros.read_bag")
    from rosbags.highlevel import AnyReader

    path = Path(os.fspath(path))
    if not path.exists():
        raise ValueError(f"path: {str(path)!r} does not exist")
    if not (path.is_dir() or path.suffix in (".bag", ".mcap")):
        raise ValueError(
            f"path: got {str(path)!r}; expected a ROS 1 .bag file, a rosbag2 folder or a .mcap file"
        )
    if topics is not None:
        topics = {topics} if isinstance(topics, str) else set(topics)
    store = _typestore(2 if path.suffix != ".bag" else 1)
    raw = {}
    with AnyReader([path], default_typestore=store) as reader:
        conns = [c for c in reader.connections if topics is None or c.topic in topics]
        if topics is not None and (missing := topics - {c.topic for c in conns}):
            raise ValueError(
                f"topics: {sorted(missing)} not in the bag; it has "
                f"{sorted({c.topic for c in reader.connections})}"
            )
        for conn, t_ns, data in reader.messages(connections=conns):
            msg = reader.deserialize(data, conn.msgtype)
            entry = raw.setdefault(conn.topic, {"type": conn.msgtype, "msgs": [], "t_rec": []})
            entry["msgs"].append(msg)
            entry["t_rec"].append(t_ns)
    return {topic: _columns(topic, e["type"], e["msgs"], e["t_rec"]) for topic, e in raw.items()}


def _columns(topic, msgtype, msgs, t_rec):
    rec = np.array(t_rec, dtype=np.int64)
    out = {"type": msgtype, "t_record": rec * 1e-9}
    header = getattr(msgs[0], "header", None)
    if header is not None and hasattr(header, "stamp"):
        ns = np.array(
            [m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec for m in msgs],
            dtype=np.int64,
        )
        out["t"] = ns * 1e-9
    else:
        out["t"] = out["t_record"]
    if msgtype == _JOINT_STATE:
        names = tuple(msgs[0].name)
        for m in msgs:
            if tuple(m.name) != names:
                raise ValueError(
                    f"{topic}: JointState names change from {names!r} to {tuple(m.name)!r}"
                )
        out["name"] = names
        for f in ("position", "velocity", "effort"):
            rows = [np.asarray(getattr(m, f), dtype=float) for m in msgs]
            width = {len(r) for r in rows}
            if len(width) != 1:
                raise ValueError(f"{topic}: {f} lengths vary between messages ({sorted(width)})")
            out[f] = np.array(rows).reshape(len(msgs), width.pop())
        return out
    for f in msgs[0].__dataclass_fields__:
        v = getattr(msgs[0], f)
        if isinstance(v, (bool, int, float, np.number)) and f != "__msgtype__":
            out[f] = np.array([getattr(m, f) for m in msgs])
    return out


def as_rollout(topics, joint_names=None):
    """The asr.Sim view of read_bag's result: {field: (N, steps, J)} plus "t" (steps,) s and
    "joint_names" (J names), N instances from the namespaces /instance_<k> (or N = 1 for topics
    without prefix). Fields: q, qd, tau_joint (from joint_states), ref1, ref2, stiffness (from
    link_state), th1, th1d, tau_m1 / th2, th2d, tau_m2 (from motor_<m>_state) and tau_el1 /
    tau_el2, each where the bag has its topic. state_info fields a rollout did not record were
    written as 0 and read back as 0; empty JointState arrays give no field. All topics must
    hold the same stamps (a bag from a live node whose topics were not sampled together does
    not: ValueError; read its topics with read_bag instead)."""
    if not isinstance(topics, dict):
        raise TypeError(f"topics: got {type(topics).__name__}, expected read_bag's dict")
    prefixes = sorted(
        {m.group(1) for t in topics if (m := re.match(r"^(/instance_\d+)?/joint_states$", t))}
        - {None},
        key=lambda p: int(p.rsplit("_", 1)[1]),
    )
    if not prefixes:
        if "/joint_states" not in topics:
            raise ValueError("topics: no /joint_states or /instance_<k>/joint_states topic")
        prefixes = [""]
    indices = [int(p.rsplit("_", 1)[1]) for p in prefixes if p]
    if indices and indices != list(range(len(prefixes))):
        raise ValueError(f"topics: instance namespaces {prefixes} are not 0 .. N-1")
    js0 = topics[prefixes[0] + "/joint_states"]
    names = tuple(js0["name"]) if joint_names is None else tuple(joint_names)
    t = js0["t"]
    per = {}
    for ns in prefixes:
        parts = {}

        def take(parts, topic, field, key, j=None):
            d = topics.get(topic)
            if d is None or d[key].size == 0:
                return
            if len(d["t"]) != len(t) or not np.array_equal(d["t"], t):
                raise ValueError(
                    f"{topic}: its {len(d['t'])} stamps differ from those of "
                    f"{prefixes[0]}/joint_states"
                )
            col = d[key] if j is None else d[key][:, None]
            parts.setdefault(field, {})[j] = col

        js = topics[ns + "/joint_states"]
        if tuple(js["name"]) != names:
            raise ValueError(f"{ns}/joint_states: joints {tuple(js['name'])!r}, expected {names!r}")
        for f, key in zip(("q", "qd", "tau_joint"), ("position", "velocity", "effort")):
            take(parts, ns + "/joint_states", f, key)
        for j, name in enumerate(names):
            for m, fmap in [(None, _LINK_MAP)] + list(_MOTOR_MAP.items()):
                topic = f"{ns}/{name}/" + ("link_state" if m is None else f"motor_{m}_state")
                for key, f in fmap.items():
                    if (
                        m is None
                        and f in ("q", "qd", "tau_joint")
                        or (m is not None and f in ("ref1", "ref2", "stiffness"))
                    ):
                        continue
                    take(parts, topic, f, key, j)
            for e in (1, 2):
                take(parts, f"{ns}/{name}/torque_el{e}_state", f"tau_el{e}", "data", j)
        for f, cols in parts.items():
            if None in cols:
                per.setdefault(f, []).append(cols[None])
            elif len(cols) == len(names):
                per.setdefault(f, []).append(
                    np.concatenate([cols[j] for j in range(len(names))], axis=1)
                )
    out = {f: np.stack(v) for f, v in per.items() if len(v) == len(prefixes)}
    out["t"] = t
    out["joint_names"] = names
    return out


__all__ = ["write_bag", "read_bag", "as_rollout", "FORMATS", "STATE_INFO_ROS2"]
