"""Rollouts as bags: write asr trajectories as ROS 1 bags or ROS 2 (Jazzy) bags with the topics
and types of asr's live nodes, and read bags (written here, or recorded from a node or a robot
with `rosbag record` / `ros2 bag record`) back into NumPy arrays.

    out = sim.rollout(200, refs, record=asr.sim.DEFAULT_RECORD + ("ref1", "ref2"))
    write_bag(out, "arm.bag", sim=sim, instance=0)            # or dt=, joint_names=, robot=
    write_bag(out, "arm_ros2", "ros2", sim=sim)               # a rosbag2 folder (MCAP)
    topics = read_bag("arm.bag")       # {topic: {"t": (M,) s, "type": ..., fields...}}
    back = as_rollout(topics)          # {field: (N, steps, J)}, "t", "joint_names"

Topics (`<ns>` is empty with `instance=k`, `/instance_<k>` for every instance k with
`instance=None`), the names and types of the live nodes (toolbox topics of [Mengacci2021]);
JointState: name, position (rad), velocity (rad/s), effort (N m). A link's effort is the
rollout's tau_joint (tau_link + tau_ext; the live nodes publish tau_link, the same without an
external torque):

    ROS 1 ("ros1")                      ROS 2 ("ros2", "ros2-sqlite3")
    <ns>/joint_states, <ns>/robot_state <ns>/joint_states          JointState q, qd, tau_joint
    <ns>/motor_1_state, motor_2_state   <ns>/motor_states          JointState th, thd, tau_m of
      (JointState of every joint)         (names <j>_motor_1, <j>_motor_2, joint by joint)
    <ns>/<j>/link_state: state_info     <ns>/<j>/link_state: JointState of joint <j> (q, qd,
      (q, dq, ref_1, ref_2, tau =         tau_joint); <ns>/<j>/stiffness Float64 (N m/rad);
      tau_joint, stiff = stiffness)       <ns>/reference_1, reference_2 Float64MultiArray (J)
    <ns>/<j>/motor_1_state, motor_2_state: JointState of one motor (name: ROS 1 <j>, ROS 2
      <j>_motor_<m>, as each node names it)
    <ns>/<j>/torque_el1_state, torque_el2_state: std_msgs Float64 tau_el1, tau_el2 (N m)
                                        /clock rosgraph_msgs/msg/Clock (the stamps)

state_info is the toolbox's message (asr.ros.messages: type name and definition, float32
fields), so its values read back rounded to float32. Motor topics are written when the rollout
recorded th1 / th2, elastic torques when it recorded tau_el1 / tau_el2, ROS 2's stiffness and
references when it recorded them. A state_info field whose rollout field was not recorded is 0
(state_info has no "unset"); a JointState array whose field was not recorded is empty, the ROS
convention.

Time: sample k of a rollout is the state at the end of step k, so its stamp is
t0 + (k + 1) dt (s; t0, default 0, is the rollout's start on the bag's clock, which keeps
every stamp positive). header.stamp, the bag's record time and (ROS 2) the publish time are
equal, in integer nanoseconds round(t0 * 1e9) + round((k + 1) dt * 1e9).

Formats: "ros1" a ROS 1 bag (version 2.0) file, path ending in .bag, with each connection's full
message definition and MD5 sum (Debian's rosbag info / rosbag check / rosbag play read it).
"ros2" a rosbag2 folder as ROS 2 Jazzy's `ros2 bag record` writes it by default: metadata.yaml
version 9 (type hashes, offered QoS) and <folder>_0.mcap (MCAP, ros2msg schemas, CDR), standard
message types only (asr.ros._ros2_types); "mcap" is the same as "ros2" (before, "ros2" meant
SQLite 3 storage and both used a custom asr_msgs/msg/StateInfo). "ros2-sqlite3" the same bag
with SQLite 3 storage (<folder>.db3). ROS 2 bags carry the robot name and dt as custom data
(asr.robots.robot, asr.dt_s).
"""

import math
import os
import re
from pathlib import Path

import numpy as np

from asr.common.optional import need
from asr.ros import _ros2_types as ros2
from asr.ros import messages
from asr.ros._bag_layout import LINK_MAP, MSGTYPE, SOURCES, layout, read_field

FORMATS = ("ros1", "ros2", "mcap", "ros2-sqlite3")
_STORAGE = {"ros2": "mcap", "mcap": "mcap", "ros2-sqlite3": "sqlite3"}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def state_info():
    """(type name, definition, genpy class getter) of a ROS 1 bag's link_state: the toolbox's
    compliant_plugin/state_info (float32), the type the live ROS 1 node publishes, from
    asr.ros.messages (the one place of its definition)."""
    m = messages
    return m.STATE_INFO, m.STATE_INFO_DEFINITION, m.state_info_class


def _state_info_type():
    """rosbags' spelling (pkg/msg/name) of state_info's type."""
    pkg, name = state_info()[0].split("/")
    return f"{pkg}/msg/{name}"


def _typestore(ros_version):
    """rosbags' type store of ROS 1 Noetic plus the toolbox's state_info, or ROS 2 Jazzy."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    if ros_version == 2:
        return ros2.typestore()
    store = get_typestore(Stores.ROS1_NOETIC)
    store.register(get_types_from_msg(state_info()[1], _state_info_type()))
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
    from asr.analysis.sweep import SweepResult
    from asr.learning.iterative_learning import ILCResult

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
            "{field: (N, steps, J)} or an asr.learning.iterative_learning.ILCResult"
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
        or an asr.learning.iterative_learning.ILCResult (its last trials: q = output, ref1 = the
        learned
        input eq, ref2 = the presets). A SweepResult holds no trajectories: TypeError.
    path: ".bag" file (format "ros1") or a folder (the ROS 2 formats) that does not exist yet,
        in an existing folder.
    format: "ros1", "ros2" (MCAP storage), "mcap" (the same) or "ros2-sqlite3" (see the module
        docstring).
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
    need("rosbags", "ros", "asr.ros.write_bag")
    if format == "ros1":
        _write_ros1(path, fields, names, robot, instances, stamps)
    else:
        from asr.ros.bags_ros2 import write_ros2

        write_ros2(path, _STORAGE[format], fields, names, robot, instances, stamps, dt)
    return path


def _check_state_info_range(fields):
    """state_info's fields are of one float type (the toolbox's: float32): a value beyond its
    range would not fit (an OverflowError deep in the serialiser); say which field instead."""
    dtype = np.dtype(state_info()[1].split()[0])
    top = float(np.finfo(dtype).max)
    for f in LINK_MAP.values():
        if f in fields:
            big = np.abs(fields[f][np.isfinite(fields[f])])
            if big.size and big.max() > top:
                raise ValueError(
                    f"result[{f!r}]: a value of magnitude {big.max():.3g} exceeds {dtype}'s "
                    f"range ({top:.3g}) of the toolbox's state_info in a ROS 1 bag; write "
                    "format='ros2' (float64) instead"
                )


def _ros1_definitions():
    """{rosbags type name: {msgdef, md5sum}} of the installed ROS 1 messages (Debian's genpy
    classes, comments included, as `rosbag record` stores them: `rosbag check` compares the
    full text, not only the MD5 sum); {} without ROS 1 (rosbags' Noetic definitions then)."""
    try:
        from asr.ros.environment import ros1

        classes = {
            MSGTYPE["js"]: ros1("sensor_msgs.msg").JointState,
            MSGTYPE["f64"]: ros1("std_msgs.msg").Float64,
            _state_info_type(): state_info()[2](),
        }
    except ImportError:
        return {}
    return {k: {"msgdef": c._full_text, "md5sum": c._md5sum} for k, c in classes.items()}


def _write_ros1(path, fields, names, robot, instances, stamps):
    from rosbags.rosbag1 import Writer

    _check_state_info_range(fields)
    store = _typestore(1)
    T = store.types
    Header, Time = T["std_msgs/msg/Header"], T["builtin_interfaces/msg/Time"]
    msgtypes = dict(MSGTYPE, si=_state_info_type())
    callerid = "/asr" + (f"_{robot}" if _NAME.match(robot or "-") else "")
    entries = layout(1, fields, names, instances)
    defs = _ros1_definitions()
    with Writer(path) as writer:
        conns = []
        for topic, kind, _ in entries:
            msgtype = msgtypes[kind]
            extra = defs.get(msgtype, {"typestore": store})
            conns.append(writer.add_connection(topic, msgtype, callerid=callerid, **extra))
        for s, t_ns in enumerate(stamps):
            stamp = Time(sec=int(t_ns // 1_000_000_000), nanosec=int(t_ns % 1_000_000_000))
            header = Header(seq=s, stamp=stamp, frame_id="")
            for conn, (_, kind, get) in zip(conns, entries):
                content = get(s)
                if kind == "js":
                    name, position, velocity, effort = content
                    msg = T[conn.msgtype](
                        header=header,
                        name=list(name),
                        position=position,
                        velocity=velocity,
                        effort=effort,
                    )
                elif kind == "si":
                    msg = T[conn.msgtype](**content)
                else:
                    msg = T[conn.msgtype](data=content)
                writer.write(conn, int(t_ns), store.serialize_ros1(msg, conn.msgtype))


# ---------------------------------------------------------------- reading


def read_bag(path, topics=None):
    """Read a bag into arrays: {topic: {"type": message type, "t": (M,) s, fields...}}.

    path: a ROS 1 .bag file (written here, by `rosbag record` or by rosbag's Python API), a
        rosbag2 folder (SQLite 3 or MCAP storage) or a single .mcap file of ROS 2 messages.
    topics: read only these topic names (default: all).

    "type" is rosbags' spelling of the message type (sensor_msgs/msg/JointState; ROS 1's
    <pkg>/state_info reads as <pkg>/msg/state_info).
    "t" is each message's header.stamp where it has a header, else the bag's record time, in s
    (float64 of integer nanoseconds); "t_record" (M,) is the record time, s. Fields, M messages
    in record order: sensor_msgs/JointState: "name" (a tuple of the first message's names;
    ValueError if a later message names other joints), "position" (M, J) rad, "velocity" (M, J)
    rad/s, "effort" (M, J) N m ((M, 0) when the messages leave them empty); state_info: q, dq,
    ref_1, ref_2, tau, stiff, each (M,) (units in asr.ros.messages.STATE_INFO_FIELDS; float32
    values in float64 arrays); std_msgs/Float64: "data" (M,); std_msgs/Float64MultiArray: "data"
    (M, n) (ValueError if n varies). Other types: their numeric scalar fields as (M,) arrays.
    Use as_rollout for asr.Sim's {field: (N, steps, J)}.
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


def _rows(topic, field, arrays):
    """(M, n) float64 of M messages' arrays `field`; ValueError when their lengths differ."""
    rows = [np.asarray(a, dtype=float) for a in arrays]
    width = {len(r) for r in rows}
    if len(width) != 1:
        raise ValueError(f"{topic}: {field} lengths vary between messages ({sorted(width)})")
    return np.array(rows).reshape(len(rows), width.pop())


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
    if msgtype == ros2.FLOAT64_ARRAY:
        out["data"] = _rows(topic, "data", [m.data for m in msgs])
        return out
    if msgtype == ros2.JOINT_STATE:
        names = tuple(msgs[0].name)
        for m in msgs:
            if tuple(m.name) != names:
                raise ValueError(
                    f"{topic}: JointState names change from {names!r} to {tuple(m.name)!r}"
                )
        out["name"] = names
        for f in ("position", "velocity", "effort"):
            out[f] = _rows(topic, f, [getattr(m, f) for m in msgs])
        return out
    for f in msgs[0].__dataclass_fields__:
        v = getattr(msgs[0], f)
        if isinstance(v, (bool, int, float, np.number)) and f != "__msgtype__":
            out[f] = np.array([getattr(m, f) for m in msgs])
    return out


def as_rollout(topics, joint_names=None):
    """The asr.Sim view of read_bag's result: {field: (N, steps, J)} plus "t" (steps,) s and
    "joint_names" (J names), N instances from the namespaces /instance_<k> (or N = 1 for topics
    without prefix), from ROS 1 or ROS 2 bags (asr.ros._bag_layout.SOURCES says which topic
    gives which field). Fields: q, qd, tau_joint (joint_states), th1, th1d, tau_m1 / th2, th2d,
    tau_m2 (the motor states), ref1, ref2 (reference_1/2, or state_info), stiffness
    (<j>/stiffness, or state_info) and tau_el1 / tau_el2, each where the bag has it.
    state_info fields a rollout did not record were written as 0 and read back as 0; empty
    JointState arrays give no field. All topics must hold the same stamps (a bag from a live
    node whose topics were not sampled together does not: ValueError; read its topics with
    read_bag instead)."""
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

    def check(topic, d):
        if len(d["t"]) != len(t) or not np.array_equal(d["t"], t):
            raise ValueError(
                f"{topic}: its {len(d['t'])} stamps differ from those of {prefixes[0]}/joint_states"
            )

    per = {}
    for ns in prefixes:
        for field, sources in SOURCES.items():
            for source in sources:
                got = read_field(topics, ns, names, source, check)
                if got is not None:
                    per.setdefault(field, []).append(got)
                    break
    out = {f: np.stack(v) for f, v in per.items() if len(v) == len(prefixes)}
    out["t"] = t
    out["joint_names"] = names
    return out


def identification_data(path):
    """A bag as asr.identify's data (asr.analysis.identification.data.load_data): instance 0 of
    as_rollout(read_bag(path)), its q, qd, tau_joint -> tau, th1 -> theta1, th2 -> theta2,
    ref1 / ref2 -> refs (steps, J, 2) and the stamps t. asr.ros registers it as the reader of
    .bag, .mcap and rosbag2 folders when imported."""
    back = as_rollout(read_bag(path))
    out = {"t": back["t"]}
    for field, key in (
        ("q", "q"),
        ("qd", "qd"),
        ("tau_joint", "tau"),
        ("th1", "theta1"),
        ("th2", "theta2"),
    ):
        if field in back:
            out[key] = back[field][0]
    if "ref1" in back and "ref2" in back:
        out["refs"] = np.stack([back["ref1"][0], back["ref2"][0]], axis=-1)
    return out


__all__ = ["write_bag", "read_bag", "as_rollout", "identification_data", "state_info", "FORMATS"]
