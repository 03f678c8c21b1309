"""The systems asr.frequency_response measures: an asr.Sim, a robot or an asr.Batch described
alike (joints, modes, instance-0 parameters, held references, time step, valid inputs and
outputs) with a builder of the batch of P x F instances."""

import dataclasses

import numpy as np

from asr.core.batch import Batch, Joint
from asr.core.models import get_model
from asr.robots.robot import Robot, load_robot
from asr.sim.simulation import Sim

# What each system supports: a Sim has link dynamics; a Batch prescribes the link angle, so
# only torques are outputs and the link angle itself may be the input (dynamic stiffness).
SIM_INPUTS, SIM_OUTPUTS = ("equilibrium", "tau_ext"), ("q", "tau_link", "tau_joint")
BATCH_INPUTS, BATCH_OUTPUTS = ("equilibrium", "q"), ("tau_link", "tau_joint")


@dataclasses.dataclass
class Rig:
    """What frequency_response needs of a system: its joints and a builder of the batch."""

    kind: str  # "robot" or "batch"
    specs: tuple
    modes: np.ndarray  # (J,)
    params: list  # J dicts {parameter: instance-0 value}
    joint_names: tuple[str, ...]
    refs0: np.ndarray  # (J, 2) held references
    dt: float
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    build: object  # build(n, params) -> asr.Sim or asr.Batch
    robot: object = None


def rig_of(system, variant, dt, threads):
    """The Rig of what frequency_response was given: an asr.Batch, an asr.Sim (its robot,
    parameters, modes and settings), or a robot (name, path or asr.Robot, with variant);
    dt (s) and threads as frequency_response got them."""
    if isinstance(system, Batch):
        return _batch_rig(system, dt)
    if isinstance(system, Sim):
        if system.controller is not None:
            raise ValueError(
                "system: a Sim with an interaction controller (it writes the first "
                "references); pass its robot instead"
            )
        b = system.batch
        settings = dict(
            threads=b.threads,
            max_substep=b.max_substep,
            motor_scheme=b.motor_scheme,
            engine=system.engine,
        )
        return _robot_rig(system.robot, _params_of(b), b.modes, settings, system.dt)
    if isinstance(system, (str, Robot)) or hasattr(system, "__fspath__"):
        robot = system if isinstance(system, Robot) else load_robot(system, variant)
        modes = np.array([j.mode for j in robot.joints])
        return _robot_rig(
            robot, [dict(j.params) for j in robot.joints], modes, dict(threads=threads)
        )
    raise TypeError(
        f"system: expected an asr.Sim, an asr.Batch, a robot name, path or "
        f"asr.Robot, got {type(system).__name__}"
    )


def _params_of(batch):
    """Every parameter of every joint, instance 0's value (the order of all_params sets
    pos_min before pos_max, so setting them in turn is always valid)."""
    return [
        {p.name: float(batch.get_param(j, p.name)[0]) for p in spec.all_params}
        for j, spec in enumerate(batch.specs)
    ]


def _robot_rig(robot, params, modes, settings, dt=None):
    specs = tuple(get_model(j.model).spec for j in robot.joints)
    refs0 = (
        np.zeros((len(specs), 2))
        if robot.initial_refs is None
        else np.array(robot.initial_refs, dtype=float)
    )

    def build(n, per_joint):
        sim = Sim(
            robot,
            n,
            params={k: {**params[k], **per_joint.get(k, {})} for k in range(len(specs))},
            **settings,
        )
        for k, mode in enumerate(modes):
            sim.batch.set_mode(k, int(mode))
        return sim

    dt = float(robot.mj_model().opt.timestep) if dt is None else dt
    return Rig(
        "robot",
        specs,
        np.asarray(modes),
        params,
        robot.joint_names,
        refs0,
        dt,
        SIM_INPUTS,
        SIM_OUTPUTS,
        build,
        robot,
    )


def _batch_rig(batch, dt):
    dt = batch.check_dt(dt)
    params, modes = _params_of(batch), batch.modes

    def build(n, per_joint):
        joints = [
            Joint(s.name, int(m), {**params[k], **per_joint.get(k, {})})
            for k, (s, m) in enumerate(zip(batch.specs, modes))
        ]
        return Batch(
            joints,
            n,
            threads=batch.threads,
            max_substep=batch.max_substep,
            motor_scheme=batch.motor_scheme,
        )

    names = tuple(f"{k} ({s.name})" for k, s in enumerate(batch.specs))
    return Rig(
        "batch",
        batch.specs,
        modes,
        params,
        names,
        np.zeros((len(modes), 2)),
        dt,
        BATCH_INPUTS,
        BATCH_OUTPUTS,
        build,
    )
