"""[Parnenzini2015] (asr.experiments.parnenzini2015), part (ii): the published snake gait on the
assemblies of fig. 4, with its checks and the centre of mass of a free-floating robot."""

import time

import numpy as np

import asr

GAIT_W = 4.71  # rad/s
GAIT_PITCH, GAIT_YAW = np.radians(60.0), np.radians(20.0)
GAIT_PHI = 2 * np.pi / 6  # rad, between consecutive modules
GAIT_PRESET = 0.3  # rad
GAIT_DURATION = 5.0  # s
CHUNK = 100  # steps between centre-of-mass samples
# stability bounds of the assemblies (rad, rad/s): no joint turns half a revolution, no link
# spins at 50 rad/s (the references peak at 4.9 rad/s, the soft vertical 3R arm swings at up to
# 13 rad/s), no motor passes its command clamp (3.1497 rad) by more than 0.5 rad
Q_BOUND, QD_BOUND, TH_MARGIN = np.pi, 50.0, 0.5
TH_MAX = 3.1497
FIELDS = ("q", "qd", "th1", "th2", "tau_joint")  # the joint records of a gait


def gait_amplitudes(robot):
    """A per joint: 60 deg on pitch joints (axis horizontal in the model's rest pose), 20 deg
    on yaw joints (axis vertical)."""
    import mujoco

    m = robot.mj_model()
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    amps = []
    for name in robot.joint_names:
        j = m.joint(name).id
        axis = d.xmat[m.jnt_bodyid[j]].reshape(3, 3) @ m.jnt_axis[j]
        amps.append(GAIT_YAW if abs(axis[2]) > 0.9 else GAIT_PITCH)
    return np.array(amps)


def gait(
    robot,
    duration=GAIT_DURATION,
    phi=GAIT_PHI,
    w=GAIT_W,
    preset=GAIT_PRESET,
    amps=None,
    chunk=CHUNK,
):
    """Run the gait on `robot` (an asr.Robot) from its [initial] state. Returns the joint
    records (T, J), the references, the centre of mass of the robot's root body every `chunk`
    steps (for a free base), the checks and the wall time."""
    sim = asr.Sim(robot, 1)
    J, dt = sim.n_joints, sim.dt
    amps = gait_amplitudes(robot) if amps is None else np.asarray(amps, float)
    n = int(round(duration / dt))
    t = np.arange(n) * dt
    q_e = amps * np.sin(w * t[:, None] + np.arange(J) * phi)
    refs = np.empty((1, n, J, 2))
    refs[0, :, :, 0] = q_e
    refs[0, :, :, 1] = preset
    m, data = _mujoco(sim)
    free = _has_free_joint(m)
    com = _com_sampler(m, data, robot.joint_names[0])
    t0 = time.perf_counter()
    rec, coms, t_com = _rollout_in_chunks(sim, refs, chunk, com)
    wall = time.perf_counter() - t0
    res = {
        "robot": f"{robot.name}/{robot.variant}",
        "t": t + dt,
        "q_e": q_e,
        "amps": amps,
        "free_base": free,
        "t_com": t_com,
        "com": coms,
        "checks": _checks(int(sim.batch.status[0]), data, rec),
        "wall_s": wall,
        **rec,
    }
    res["rms_tracking"] = np.sqrt(np.mean((rec["q"] - q_e) ** 2, axis=0))
    if free:
        res.update(_locomotion(coms))
    return res


def _mujoco(sim):
    """MuJoCo only: the model and data of `sim`'s one instance. The gait needs MuJoCo's own
    objects: the free joint of a floating base, the centre of mass of the root body's subtree
    (subtree_com) and MuJoCo's warning counters, which the engine interface does not give."""
    return sim.models[0], sim.datas[0]


def _has_free_joint(m):
    """Whether the model has a free joint (a floating base, whose centre of mass is tracked)."""
    import mujoco

    return any(int(m.jnt_type[k]) == int(mujoco.mjtJoint.mjJNT_FREE) for k in range(m.njnt))


def _com_sampler(m, data, joint):
    """A function returning the centre of mass of the subtree of `joint`'s root body (the body
    below the world), computed on a scratch copy so that the simulation's data stay untouched."""
    import mujoco

    root = int(m.body_rootid[m.jnt_bodyid[m.joint(joint).id]])
    scratch = mujoco.MjData(m)

    def com():
        scratch.qpos[:] = data.qpos
        mujoco.mj_kinematics(m, scratch)
        mujoco.mj_comPos(m, scratch)
        return scratch.subtree_com[root].copy()

    return com


def _rollout_in_chunks(sim, refs, chunk, com):
    """Roll `refs` out `chunk` steps at a time, sampling com() before and after each chunk.
    Returns the records {field: (n, J)}, the samples (k, 3) and their times (k,)."""
    n, J, dt = refs.shape[1], refs.shape[2], sim.dt
    rec = {f: np.empty((n, J)) for f in FIELDS}
    coms, t_com = [com()], [0.0]
    for k in range(0, n, chunk):
        c = min(chunk, n - k)
        out = sim.rollout(c, refs[:, k : k + c], record=FIELDS)
        for f in FIELDS:
            rec[f][k : k + c] = out[f][0]
        coms.append(com())
        t_com.append((k + c) * dt)
    return rec, np.array(coms), np.array(t_com)


def _checks(status, data, rec):
    """asr's status, MuJoCo's warnings, finite states and the stability bounds of a gait."""
    import mujoco

    warnings = {
        str(mujoco.mjtWarning(i)).split(".")[-1]: int(data.warning[i].number)
        for i in range(len(data.warning))
        if data.warning[i].number
    }
    finite = bool(
        all(np.isfinite(v).all() for v in rec.values())
        and np.isfinite(data.qpos).all()
        and np.isfinite(data.qvel).all()
    )
    checks = {
        "status": status,
        "mujoco_warnings": warnings,
        "finite": finite,
        "max_abs_q": float(np.abs(rec["q"]).max()),
        "max_abs_qd": float(np.abs(rec["qd"]).max()),
        "max_abs_th": float(max(np.abs(rec["th1"]).max(), np.abs(rec["th2"]).max())),
        "max_abs_tau": float(np.abs(rec["tau_joint"]).max()),
    }
    checks["bounded"] = bool(
        finite
        and checks["max_abs_q"] < Q_BOUND
        and checks["max_abs_qd"] < QD_BOUND
        and checks["max_abs_th"] < TH_MAX + TH_MARGIN
    )
    checks["stable"] = bool(checks["bounded"] and checks["status"] == 0 and not warnings)
    return checks


def _locomotion(coms):
    """Net horizontal displacement, path length and height range of the centre of mass."""
    dxy = coms[-1, :2] - coms[0, :2]
    return {
        "displacement": float(np.hypot(*dxy)),
        "displacement_xy": dxy,
        "path_length": float(np.linalg.norm(np.diff(coms[:, :2], axis=0), axis=1).sum()),
        "com_height": (float(coms[:, 2].min()), float(coms[:, 2].max())),
    }
