"""Small MJCFs with asr's MuJoCo plugin "asr.actuator" and the runs the plugin tests share.

plugin_mjcf writes a serial chain of hinge links, one plugin instance per joint; compile_plugin
loads the plugin and compiles it; record_run steps it with mj_step, recording what MuJoCo gives
the plugin before each step and the plugin state after it; batch_replay runs asr.Batch on that
recorded link motion, the independent reference the plugin is compared with.
"""

from typing import Any

import numpy as np

from tests.conftest import require

GRAVITY = (0.0, 0.0, -9.81)  # m/s^2


def _config(key: str, value: object) -> str:
    # repr keeps every bit of a float (the plugin parses values with strtod)
    text = repr(float(value)) if isinstance(value, float) else str(value)
    return f'<config key="{key}" value="{text}"/>'


def _instance(joint: dict[str, Any]) -> str:
    keys = [_config("model", joint["model"]), _config("mode", int(joint["mode"]))]
    for key in ("max_substep", "motor_scheme"):
        if key in joint:
            keys.append(_config(key, joint[key]))
    keys += [_config(k, float(v)) for k, v in joint.get("params", {}).items()]
    return f'<instance name="{joint["name"]}">{"".join(keys)}</instance>'


def _actuators(joint: dict[str, Any]) -> str:
    name = joint["name"]
    return "".join(
        f'<plugin name="{name}_ref{a + 1}" joint="{name}" instance="{name}"/>'
        for a in range(int(joint.get("nact", 2)))
    )


def _chain(joints: list[dict[str, Any]]) -> str:
    """Nested bodies, one hinge (about x) per joint: a point mass `mass` (kg, default 0.2) at
    `length` (m, default 0.04) along the link's y axis, the next link attached there; joint
    viscous damping `damping` (N m s/rad, default 0)."""
    xml, pos = "", "0 0 0.1"
    for joint in joints:
        mass, length = joint.get("mass", 0.2), joint.get("length", 0.04)
        xml += (
            f'<body name="{joint["name"]}_link" pos="{pos}">'
            f'<joint name="{joint["name"]}" type="hinge" axis="1 0 0" '
            f'damping="{joint.get("damping", 0.0)!r}"/>'
            f'<inertial pos="0 {length!r} 0" mass="{mass!r}" diaginertia="1e-7 1e-7 1e-7"/>'
        )
        pos = f"0 {length!r} 0"
    return xml + "</body>" * len(joints)


def plugin_mjcf(
    joints: list[dict[str, Any]],
    *,
    body_xml: str | None = None,
    timestep: float = 1e-3,
    integrator: str = "Euler",
    gravity: tuple[float, float, float] = GRAVITY,
) -> str:
    """An MJCF with one asr.actuator instance per joint.

    joints: dicts with "name" (the instance and, unless body_xml is given, the hinge), "model",
    "mode", optional "params" ({asr parameter name: value}, SI), "max_substep" (s),
    "motor_scheme", "nact" (1 or 2 actuators, default 2) and, for the generated chain, "mass"
    (kg), "length" (m) and "damping" (N m s/rad). body_xml: worldbody contents to use instead of
    the generated chain (it must hold joints with these names). timestep: s. integrator: MuJoCo's
    name (Euler, implicitfast, RK4, implicit). gravity: m/s^2.
    """
    body = _chain(joints) if body_xml is None else body_xml
    instances = "".join(_instance(j) for j in joints)
    actuators = "".join(_actuators(j) for j in joints)
    g = " ".join(repr(float(x)) for x in gravity)
    return (
        '<mujoco model="asr_plugin_test"><compiler angle="radian" autolimits="true"/>'
        f'<option timestep="{timestep!r}" integrator="{integrator}" gravity="{g}"/>'
        f'<extension><plugin plugin="asr.actuator">{instances}</plugin></extension>'
        f"<worldbody>{body}</worldbody><actuator>{actuators}</actuator></mujoco>"
    )


def compile_plugin(xml: str) -> tuple[Any, Any]:
    """(MjModel, MjData) of an MJCF using the plugin, which is loaded first."""
    mujoco = require("mujoco")
    from asr.mujoco import plugin as mujoco_plugin

    mujoco_plugin.load()
    m = mujoco.MjModel.from_xml_string(xml)
    return m, mujoco.MjData(m)


def raw_states(m: Any, d: Any) -> np.ndarray:
    """Every plugin instance's state, (ninstance, nstate): the header then asr.FIELDS."""
    return np.array(
        [
            d.plugin_state[m.plugin_stateadr[k] : m.plugin_stateadr[k] + m.plugin_statenum[k]]
            for k in range(m.nplugin)
        ]
    )


def record_run(m: Any, d: Any, ctrl: np.ndarray) -> dict[str, np.ndarray]:
    """mj_step once per row of ctrl, (steps, nu). Returns "q", "qd" ((steps, nv), rad, rad/s:
    the hinges' state before each step, what the plugin sees), "state" ((steps, ninstance,
    nstate): the plugin states after each step), "force" ((steps, nu), N m: actuator_force)
    and "qfrc" ((steps, nv), N m: qfrc_actuator), both of the step's force evaluation."""
    mujoco = require("mujoco")
    steps = len(ctrl)
    out = {
        "q": np.empty((steps, m.nv)),
        "qd": np.empty((steps, m.nv)),
        "force": np.empty((steps, m.nu)),
        "qfrc": np.empty((steps, m.nv)),
        "state": np.empty((steps, m.nplugin, int(m.plugin_statenum[0]))),
    }
    for i in range(steps):
        d.ctrl[:] = ctrl[i]
        out["q"][i], out["qd"][i] = d.qpos, d.qvel
        mujoco.mj_step(m, d)
        out["force"][i], out["qfrc"][i] = d.actuator_force, d.qfrc_actuator
        out["state"][i] = raw_states(m, d)
    return out


def plugin_field(run: dict[str, np.ndarray], name: str, joint: int = 0) -> np.ndarray:
    """(steps,) values of plugin state field `name` (a header name or asr.FIELDS) of instance
    `joint` in a record_run result."""
    from asr.mujoco import plugin as mujoco_plugin

    return run["state"][:, joint, mujoco_plugin.fields().index(name)]


def batch_replay(
    joints: list[dict[str, Any]],
    q: np.ndarray,
    qd: np.ndarray,
    refs: np.ndarray,
    dt: float,
    record: tuple[str, ...],
) -> dict[str, np.ndarray]:
    """asr.Batch (one instance) reset at q[0] with refs[0] and rolled out on the prescribed
    link motion q, qd ((steps, J), rad, rad/s) with refs ((steps, J, 2)) at step dt (s), the
    joints' max_substep and motor_scheme. Returns {field: (steps, J)} for `record`."""
    import asr

    first = joints[0]
    batch = asr.Batch(
        [{"model": j["model"], "mode": j["mode"], **j.get("params", {})} for j in joints],
        1,
        max_substep=first.get("max_substep", 1e-3),
        motor_scheme=first.get("motor_scheme", "euler"),
    )
    batch.reset(q[None, 0], refs[None, 0])
    out = batch.rollout(len(q), dt, refs[None], q[None], qd[None], record=record)
    return {k: v[0] for k, v in out.items()}
