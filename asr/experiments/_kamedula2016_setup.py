"""[Kamedula2016] sec. 5.1 (asr.experiments.kamedula2016): the experiment's constants, the
reference plant's parameters read from the robot, and the two tests' inputs q_d."""

import dataclasses

import numpy as np

ROBOT = "rrbot_sea"
VARIANTS = ("k100", "k188", "k500")
MEDIUM = "k188"
CTRL_PERIOD = 1e-3  # s, the controller rate f_c = 1 kHz
CONFIGS = {"coarse": 1e-3, "fine": 1e-4}  # name -> MuJoCo timestep, s
STEP = 1.0  # rad
STEP_DURATION = 3.0  # s
RAMP_RATE = 0.1  # rad/s
RAMP_DURATION = 10.0  # s
HOLD_DURATION = 5.0  # s, after the -1 rad step
CHIRP_DURATION = 20.0  # s
RTOL, ATOL = 1e-10, 1e-12
SIGNALS = ("q", "tau_t", "tau_m")
ENGINE_NAMES = {"mujoco": "MuJoCo", "gazebo": "Gazebo DART"}  # asr.Sim's link engines
# [Kamedula2016] sec. 5.1, time-varying test with the medium set: (max error, "NRMSE") per signal.
# The max torque errors are the "differences up to 0.12 and 2.11 N m".
PAPER = {"q": (1.2e-3, 4.5e-7), "tau_t": (0.12, 3.6e-5), "tau_m": (2.11, 5.3e-4)}


# ---------------------------------------------------------------- parameters


@dataclasses.dataclass(frozen=True)
class Plant:
    """Parameters of the reference equations (SI): link from the MJCF, actuator from robot.toml."""

    inertia: float  # kg m^2, link inertia about the joint axis (+ armature)
    gravity: float  # N m, m g l_c: gravity torque = gravity * sin(q)
    damping: float  # N m s/rad, joint damping
    Kt: float
    Dt: float
    Bm: float
    Dm: float
    Kp: float
    Kd: float
    tau_max: float


def link_parameters(mjcf, joint="joint1"):
    """{inertia, mass, l_c, g, gravity, damping} of the body that `joint` (a hinge at the root of
    a body hanging from the world, q = 0 with the centre of mass straight above the axis) turns,
    read from the MJCF through mujoco's compiler; gravity = m g l_c with gravity torque
    +gravity sin(q)."""
    import mujoco

    m = mujoco.MjModel.from_xml_path(mjcf)
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)  # body frames at qpos0 = 0
    j = m.joint(joint).id
    body = int(m.jnt_bodyid[j])
    dof = int(m.jnt_dofadr[j])
    R = d.xmat[body].reshape(3, 3)  # body frame -> world
    axis = R @ m.jnt_axis[j]
    axis = axis / np.linalg.norm(axis)
    mass = float(m.body_mass[body])
    r = R @ (m.body_ipos[body] - m.jnt_pos[j])  # axis point -> centre of mass, world
    r_perp = r - axis * (axis @ r)
    Ri = np.empty(9)
    mujoco.mju_quat2Mat(Ri, m.body_iquat[body])
    Rc = R @ Ri.reshape(3, 3)  # principal frame -> world
    I_com = Rc @ np.diag(m.body_inertia[body]) @ Rc.T
    inertia = float(axis @ I_com @ axis + mass * (r_perp @ r_perp) + m.dof_armature[dof])
    gvec = np.array(m.opt.gravity)
    g = float(np.linalg.norm(gvec))
    l_c = float(np.linalg.norm(r_perp))
    if l_c > 0 and r_perp @ gvec > -(1 - 1e-9) * l_c * g:
        raise ValueError(f"{mjcf}: at q = 0 the centre of mass is not straight above the axis")
    # torque of m g about the axis for the centre of mass turned by q: +c sin(q)
    c = float(axis @ np.cross(np.cross(axis, r_perp), mass * gvec))
    return {
        "inertia": inertia,
        "mass": mass,
        "l_c": l_c,
        "g": g,
        "gravity": c,
        "damping": float(m.dof_damping[dof]),
    }


def plant(robot):
    """The reference Plant of an asr.Robot (rrbot_sea variant)."""
    link = link_parameters(robot.mjcf, robot.joints[0].name)
    jp = robot.joints[0].params
    return Plant(
        link["inertia"],
        link["gravity"],
        link["damping"],
        jp["Kt"],
        jp["Dt"],
        jp["motor_J"],
        jp["motor_D"],
        jp["kp"],
        jp.get("kd", 0.0),
        jp["tau_max"],
    )


def holding_torque(p, q_d):
    """g(q_d): the torque that holds the link at q_d against gravity (tau_ff, [Kamedula2016]
    eq. 4)."""
    return -p.gravity * np.sin(q_d)


# ---------------------------------------------------------------- inputs


def step_input(duration=STEP_DURATION, step=STEP, period=CTRL_PERIOD):
    """q_d at the controller ticks t_k = k period: `step` from t = 0."""
    return np.full(int(round(duration / period)), float(step))


def time_varying_input(
    ramp=RAMP_DURATION, hold=HOLD_DURATION, chirp=CHIRP_DURATION, rate=RAMP_RATE, period=CTRL_PERIOD
):
    """q_d at the ticks: ramp `rate` t for `ramp` s, then a -1 rad step held `hold` s, then
    0.5 sin(0.02 pi t' + 0.004 pi t'^2) for `chirp` s (t' from the chirp's start). Returns
    (q_d, segment start times)."""
    n1, n2, n3 = (int(round(x / period)) for x in (ramp, hold, chirp))
    t1 = np.arange(n1) * period
    top = rate * ramp  # the ramp's end value (1 rad)
    t3 = np.arange(n3) * period
    q_d = np.concatenate(
        [
            rate * t1,
            np.full(n2, top - 1.0),
            top - 1.0 + 0.5 * np.sin(0.02 * np.pi * t3 + 0.004 * np.pi * t3**2),
        ]
    )
    return q_d, (0.0, n1 * period, (n1 + n2) * period)
