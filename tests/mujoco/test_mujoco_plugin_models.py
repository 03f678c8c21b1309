"""Every built-in compliance model in every operation mode it takes, run through asr's MuJoCo
plugin (mj_step on a 1-DOF pendulum), against asr.Batch replaying the link motion MuJoCo gave
the plugin: the same C core on the same inputs, so the state agrees to the last bit.

Also MuJoCo's side: the first actuator's force is the step's joint torque and is what the
integrator applies (Euler's update checked against the pendulum's closed-form equation of
motion), the second actuator's force is 0, and an instance with one actuator runs with ref2 = 0.
"""

import numpy as np
import pytest

import asr
from asr.core.models import reference_map
from tests.support.mujoco_plugin import (
    batch_replay,
    compile_plugin,
    plugin_field,
    plugin_mjcf,
    record_run,
)

DT = 1e-3  # s, the MuJoCo timestep
SUBSTEP = 2.5e-4  # s, max_substep: 4 motor sub-steps per step
STEPS = 2000  # the references change at STEPS // 2
TOL = 1e-12  # agreement asked of plugin vs asr.Batch (measured: 0, bit-identical)
G = 9.81  # m/s^2

# Parameters: the pendulum_1dof robot's variants where it has one, else the model's defaults.
PARAMS = {
    "sea": {"k": 200.0, "max_def": 0.8},
    "awas2": {"Ks": 10.0, "L": 0.05, "r_t": 0.015, "max_def": 0.3},
    "bavs": {"a": 1.21e-6, "b": 2.38e-6, "k": 1.6e5, "ke": 8.71, "max_def": 0.27},
    "qbmove_advanced": {"k1": 0.0019, "a1": 8.9992, "k2": 0.0019, "a2": 8.9992, "max_def": 0.8},
}
# Link: a point mass (kg) at a length (m); the pendulum robot's 0.2 kg at 0.04 m, heavier for
# CENTAURO's visco-elastic joint, whose transmission damping would make explicit Euler unstable
# on the light link (Dt dt / I > 2).
LINK = {"sea_damped": (2.0, 0.1)}


def cases():
    return [
        pytest.param(name, mode, id=f"{name}-mode{mode}")
        for name, spec in asr.models().items()
        for mode in ((0, 1) if spec.nmotor == 0 else range(7))
    ]


def joint_of(model, mode, nact=2):
    mass, length = LINK.get(model, (0.2, 0.04))
    return {
        "name": "joint",
        "model": model,
        "mode": mode,
        "params": PARAMS.get(model, {}),
        "max_substep": SUBSTEP,
        "nact": nact,
        "mass": mass,
        "length": length,
    }


def preset(model, stiff):
    """A preset inside the model's range (the awas2 pivot position, m; else rad), 0 for the
    models whose stiffness is a parameter."""
    spec = asr.models()[model].preset
    if spec.kind != "ref":
        return 0.0
    # halfway to the stiff preset: the stiffest awas2 needs a timestep of 0.2 ms on this link
    return 0.5 * (spec.soft + spec.stiff) if stiff else spec.soft


def references(model, mode, later):
    """(ref1, ref2) of `mode` that make things happen; `later` gives the second set, applied
    mid-run."""
    eq = -0.1 if later else 0.25  # rad
    nmotor = asr.models()[model].nmotor
    if mode == 0:  # link torque, N m
        return (-0.02 if later else 0.05), 0.0
    if mode == 1:  # link angle, rad
        return eq, 0.0
    if mode in (2, 5):  # motor positions (awas2: motor angle, pivot position)
        th1, th2 = reference_map(model, eq, preset(model, later), **PARAMS.get(model, {}))
        return float(th1), float(th2)
    if mode in (3, 6):  # equilibrium and preset
        return eq, preset(model, later)
    tau = -0.03 if later else 0.05  # mode 4: motor torques, N m (awas2: the pivot position)
    return tau, (-0.5 * tau if nmotor == 2 else preset(model, later))


def ctrl_series(model, mode, nact=2):
    refs = np.empty((STEPS, 2))
    refs[: STEPS // 2] = references(model, mode, later=False)
    refs[STEPS // 2 :] = references(model, mode, later=True)
    if nact == 1:
        refs[:, 1] = 0.0
    return refs


def run_both(model, mode, nact=2, q0=0.0):
    joint = joint_of(model, mode, nact)
    m, d = compile_plugin(plugin_mjcf([joint], timestep=DT))
    d.qpos[0] = q0
    refs = ctrl_series(model, mode, nact)
    run = record_run(m, d, refs[:, :nact])
    ref = batch_replay([joint], run["q"], run["qd"], refs[:, None, :], DT, asr.FIELDS)
    return m, run, ref


def largest_difference(run, ref):
    return max(np.max(np.abs(plugin_field(run, f) - ref[f][:, 0])) for f in asr.FIELDS)


@pytest.mark.parametrize("model,mode", cases())
def test_plugin_state_is_asr_batch_on_the_same_link_motion(model, mode):
    m, run, ref = run_both(model, mode, q0=0.05)
    assert np.all(plugin_field(run, "status") == 0)
    assert np.ptp(run["q"][:, 0]) > 1e-3, "the link should move"
    assert np.max(np.abs(ref["tau_joint"])) > 1e-3, "the actuator should act"
    for f in asr.FIELDS:
        np.testing.assert_allclose(plugin_field(run, f), ref[f][:, 0], rtol=0, atol=TOL, err_msg=f)
    assert plugin_field(run, "steps")[-1] == STEPS


@pytest.mark.parametrize("model,mode", [("qbmove_advanced", 6), ("sea", 3), ("rigid", 0)])
def test_mujoco_integrates_the_plugin_torque(model, mode):
    m, run, _ = run_both(model, mode, q0=0.05)
    tau = plugin_field(run, "tau_joint")
    np.testing.assert_array_equal(run["force"][:, 0], tau)
    np.testing.assert_array_equal(run["force"][:, 1], 0.0)
    np.testing.assert_array_equal(run["qfrc"][:, 0], tau)
    # Euler (no joint damping): I (qd' - qd) / dt = tau - m g l cos q, I = m l^2 + 1e-7 kg m^2
    mass, length = LINK.get(model, (0.2, 0.04))
    inertia = mass * length**2 + 1e-7
    q, qd = run["q"][:, 0], run["qd"][:, 0]
    rhs = tau[:-1] - mass * G * length * np.cos(q[:-1])
    np.testing.assert_allclose(inertia * np.diff(qd) / DT, rhs, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.diff(q), DT * qd[1:], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("model,mode", [("sea", 3), ("awas2", 0), ("qbmove_advanced", 4)])
def test_one_actuator_instance_runs_with_ref2_zero(model, mode):
    m, run, ref = run_both(model, mode, nact=1, q0=0.05)
    assert m.nu == 1
    assert np.max(np.abs(ref["tau_joint"])) > 1e-3
    assert largest_difference(run, ref) <= TOL
    np.testing.assert_array_equal(plugin_field(run, "ref2"), 0.0)
    np.testing.assert_array_equal(run["force"][:, 0], plugin_field(run, "tau_joint"))


# chains of instances: the plugin steps the instances of one model, mode and integration
# settings together, one joint per lane (csrc/mujoco/group.h); the groups here are interleaved,
# their members' parameters differ, and the last chain's sea group fills more than one chunk
CHAINS = {
    "two models": [("sea", 6, {}), ("qbmove_advanced", 3, {})],
    "interleaved groups": [
        ("sea", 6, {}),
        ("qbmove_advanced", 6, {}),
        ("sea", 6, {"k": 150.0}),
        ("sea", 5, {}),
        ("qbmove_advanced", 6, {"k1": 0.0025}),
    ],
    "six of one group": [("sea", 6, {"k": 100.0 + 20.0 * j}) for j in range(6)],
}


@pytest.mark.parametrize("chain", CHAINS, ids=list(CHAINS))
def test_instances_in_a_chain_are_asr_batch_with_those_joints(chain):
    joints = []
    for j, (model, mode, params) in enumerate(CHAINS[chain]):
        joint = joint_of(model, mode)
        joint["name"], joint["params"] = f"j{j}", {**joint["params"], **params}
        if len(CHAINS[chain]) > 2:  # links heavy enough for the explicit coupling (omega dt < 2)
            joint["mass"], joint["length"] = 0.5, 0.1
        joints.append(joint)
    n = len(joints)
    m, d = compile_plugin(plugin_mjcf(joints, timestep=DT))
    refs = np.stack([ctrl_series(model, mode) for model, mode, _ in CHAINS[chain]], axis=1)
    run = record_run(m, d, refs.reshape(STEPS, 2 * n))
    ref = batch_replay(joints, run["q"], run["qd"], refs, DT, asr.FIELDS)
    for j in range(n):
        assert np.max(np.abs(ref["tau_joint"][:, j])) > 1e-3
        for f in asr.FIELDS:
            got = plugin_field(run, f, j)
            np.testing.assert_allclose(got, ref[f][:, j], rtol=0, atol=TOL, err_msg=f"{j} {f}")
