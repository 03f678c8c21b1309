"""Which rollout field goes to which topic and message field in asr's bags, for ROS 1 (the
toolbox's topics [Mengacci2021]) and ROS 2 (the ROS 2 node's topics, standard types only), and
back: the writers build their messages from `layout`, as_rollout reads fields through
`SOURCES`. Topics are relative to an instance's namespace `<ns>` ('' or /instance_<k>).

Kinds of message: "js" sensor_msgs/JointState, "si" the toolbox's state_info (ROS 1 only), "f64"
std_msgs/Float64, "f64ma" std_msgs/Float64MultiArray (ROS 2's held_references: the references
(J, 2) row-major, ref1 and ref2 of joint 0, then joint 1 ...), "clock" rosgraph_msgs/Clock
(ROS 2 only).
"""

import numpy as np

from asr.ros import _ros2_types as ros2

# state_info field -> the rollout field a link_state carries (ROS 1)
LINK_MAP = {
    "q": "q",
    "dq": "qd",
    "ref_1": "ref1",
    "ref_2": "ref2",
    "tau": "tau_joint",
    "stiff": "stiffness",
}
LINK_KEYS = ("q", "qd", "tau_joint")  # JointState position, velocity, effort of the link
MOTOR_KEYS = {m: (f"th{m}", f"th{m}d", f"tau_m{m}") for m in (1, 2)}
JS_KEYS = ("position", "velocity", "effort")
MSGTYPE = {"js": ros2.JOINT_STATE, "f64": ros2.FLOAT64, "f64ma": ros2.FLOAT64_ARRAY}
MSGTYPE["clock"] = ros2.CLOCK


def motor_name(joint, m):
    """The JointState name of joint `joint`'s motor m (1 or 2)."""
    return f"{joint}_motor_{m}"


def _js(fields, keys, k, cols, names):
    """get(s) -> (names, position, velocity, effort) of fields `keys` at columns `cols`."""
    empty = np.zeros(0)
    arrs = [fields[f][k] if f in fields else None for f in keys]
    return lambda s: (names, *(empty if a is None else a[s, cols].copy() for a in arrs))


def _motor_states(fields, k, names):
    """get(s) of ROS 2's motor_states: every joint's motor 1 (and 2), joint by joint."""
    ms = [m for m in (1, 2) if f"th{m}" in fields]
    motor_names = [motor_name(j, m) for j in names for m in ms]
    cols = []
    for key in range(3):
        per = [fields[MOTOR_KEYS[m][key]][k] for m in ms if MOTOR_KEYS[m][key] in fields]
        cols.append(
            np.stack(per, axis=-1).reshape(per[0].shape[0], -1) if len(per) == len(ms) else None
        )
    empty = np.zeros(0)
    return lambda s: (motor_names, *(empty if c is None else c[s].copy() for c in cols))


def _scalar(fields, f, k, j):
    return lambda s: float(fields[f][k, s, j])


def layout(ros_version, fields, names, instances):
    """[(topic, kind, get)] in write order; get(s) is the content of step s's message."""
    out = []
    every = list(range(len(names)))
    for k, ns in instances:
        out.append((f"{ns}/joint_states", "js", _js(fields, LINK_KEYS, k, every, names)))
        if ros_version == 1:
            out.append((f"{ns}/robot_state", "js", _js(fields, LINK_KEYS, k, every, names)))
            for m in (1, 2):
                if f"th{m}" in fields:
                    get = _js(fields, MOTOR_KEYS[m], k, every, names)
                    out.append((f"{ns}/motor_{m}_state", "js", get))
        elif "th1" in fields:
            out.append((f"{ns}/motor_states", "js", _motor_states(fields, k, names)))
        for j, name in enumerate(names):
            if ros_version == 1:
                zero = np.zeros(fields["q"].shape[1])
                cols = {m: fields[f][k, :, j] if f in fields else zero for m, f in LINK_MAP.items()}
                get = lambda s, cols=cols: {m: float(c[s]) for m, c in cols.items()}  # noqa: E731
                out.append((f"{ns}/{name}/link_state", "si", get))
            else:
                get = _js(fields, LINK_KEYS, k, [j], [name])
                out.append((f"{ns}/{name}/link_state", "js", get))
            for m in (1, 2):
                if f"th{m}" in fields:
                    # the ROS 1 node names the joint, the ROS 2 node the motor
                    label = name if ros_version == 1 else motor_name(name, m)
                    get = _js(fields, MOTOR_KEYS[m], k, [j], [label])
                    out.append((f"{ns}/{name}/motor_{m}_state", "js", get))
            for e in (1, 2):
                if f"tau_el{e}" in fields:
                    get = _scalar(fields, f"tau_el{e}", k, j)
                    out.append((f"{ns}/{name}/torque_el{e}_state", "f64", get))
            if ros_version == 2 and "stiffness" in fields:
                out.append((f"{ns}/{name}/stiffness", "f64", _scalar(fields, "stiffness", k, j)))
        if ros_version == 2 and "ref1" in fields and "ref2" in fields:
            held = np.stack([fields["ref1"][k], fields["ref2"][k]], axis=-1)
            held = held.reshape(held.shape[0], -1)  # (steps, 2 J): (J, 2) row-major
            out.append((f"{ns}/held_references", "f64ma", lambda s, a=held: a[s].copy()))
    if ros_version == 2:
        out.append(("/clock", "clock", lambda s: None))
    return out


# ---------------------------------------------------------------- reading back

# rollout field -> where to read it, in order of preference:
# ("all", topic, key): a JointState of every joint (names = the joint names);
# ("pairs", topic, key, r): a Float64MultiArray of 2 J values, (J, 2) row-major: column r - 1;
# ("named", topic, key, m): ROS 2's motor_states, the columns named motor_name(joint, m);
# ("joint", topic, key): one topic per joint, <j> in the topic replaced by each joint's name,
#     its (M,) or (M, 1) column.
SOURCES = {
    **{f: [("all", "joint_states", key)] for f, key in zip(LINK_KEYS, JS_KEYS)},
    **{
        f: [
            ("all", f"motor_{m}_state", key),
            ("named", "motor_states", key, m),
            ("joint", f"<j>/motor_{m}_state", key),
            ("joint", f"<j>/motor_{m}_state", si),  # older asr ROS 1 bags: state_info
        ]
        for m in (1, 2)
        for f, key, si in zip(MOTOR_KEYS[m], JS_KEYS, ("q", "dq", "tau"))
    },
    **{
        f"ref{r}": [
            ("pairs", "held_references", "data", r),
            ("joint", "<j>/link_state", f"ref_{r}"),
        ]
        for r in (1, 2)
    },
    "stiffness": [("joint", "<j>/stiffness", "data"), ("joint", "<j>/link_state", "stiff")],
    **{f"tau_el{e}": [("joint", f"<j>/torque_el{e}_state", "data")] for e in (1, 2)},
}


def read_field(topics, ns, names, source, check):
    """(M, J) array of one SOURCES entry under namespace `ns`, or None where the bag lacks it;
    check(topic, d) raises when a topic's stamps differ from joint_states'."""
    how, where, key = source[:3]
    if how == "joint":
        cols = []
        for name in names:
            d = topics.get(f"{ns}/{where.replace('<j>', name)}")
            if d is None or key not in d or d[key].size == 0:
                return None
            check(f"{ns}/{where.replace('<j>', name)}", d)
            cols.append(d[key].reshape(len(d[key]), -1)[:, :1])
        return np.concatenate(cols, axis=1)
    d = topics.get(f"{ns}/{where}")
    if d is None or key not in d or d[key].size == 0:
        return None
    if how == "named":
        have = list(d["name"])
        want = [motor_name(n, source[3]) for n in names]
        if not set(want) <= set(have):
            return None
        check(f"{ns}/{where}", d)
        return d[key][:, [have.index(w) for w in want]]
    if how == "pairs":
        if d[key].shape[1] != 2 * len(names):
            raise ValueError(
                f"{ns}/{where}: {d[key].shape[1]} values per message, expected "
                f"2 J = {2 * len(names)}"
            )
        check(f"{ns}/{where}", d)
        return d[key][:, source[3] - 1 :: 2]
    if "name" in d and tuple(d["name"]) != tuple(names):
        raise ValueError(f"{ns}/{where}: joints {tuple(d['name'])!r}, expected {tuple(names)!r}")
    if d[key].shape[1] != len(names):
        raise ValueError(f"{ns}/{where}: {d[key].shape[1]} values per message, J = {len(names)}")
    check(f"{ns}/{where}", d)
    return d[key]
