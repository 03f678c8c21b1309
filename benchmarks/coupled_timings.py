"""The coupled benchmark's timings (benchmarks/bench_coupled.py): asr, bare MuJoCo, the Python
loop and mj_step for one N; asr + DART against bare DART and MuJoCo; the 5-DOF real-time
factor. Rates are instance-steps per second, each the best of `reps` repetitions."""

import math
import time

import mujoco
import mujoco.rollout
import numpy as np
from coupled_workload import (
    MAX_REFS_VALUES,
    PILOT_INSTANCE_STEPS,
    ROBOT,
    ROBOT_5DOF,
    SWEEP_PERIOD_5DOF,
    PythonLoop,
    make_refs,
)

import asr

STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS
CONTROL_SPEC = mujoco.mjtState.mjSTATE_QFRC_APPLIED


# ---------------------------------------------------------------- timings


class _Timing:
    """One configuration: run() -> seconds for `steps` steps of n instances."""

    def __init__(self, n, steps, run):
        self.n, self.steps, self.run = n, steps, run
        self.best = math.inf

    def once(self):
        self.best = min(self.best, self.run())

    @property
    def rate(self):
        """Best instance-steps per second so far."""
        return self.n * self.steps / self.best


def _steps_for(rate, n, target_s, cap):
    return int(min(cap, max(2, round(target_s * rate / n))))


def _refs_cap(n, nj):
    return max(2, MAX_REFS_VALUES // (2 * n * nj))


def _sim_run(sim, refs):
    def run():
        sim.reset()
        t0 = time.perf_counter()
        sim.rollout(refs.shape[1], refs, record=())
        return time.perf_counter() - t0

    return run


def _initial_states(sim):
    """(N, nstate) full physics state of every instance of a (reset) Sim."""
    m = sim.models[0]
    x0 = np.empty((sim.n_instances, mujoco.mj_stateSize(m, STATE_SPEC)))
    for i, d in enumerate(sim.datas):
        mujoco.mj_getState(m, d, x0[i], STATE_SPEC)
    return x0


class _Bare:
    """mujoco.rollout of the same links replaying recorded joint torques as qfrc_applied."""

    def __init__(self, model, x0, control, threads):
        self.model, self.x0, self.control = model, x0, control
        n, steps = control.shape[:2]
        self.steps = steps
        nthread = threads if threads > 1 else 0  # 0: on the calling thread
        self.pool = mujoco.rollout.Rollout(nthread=nthread)
        self.datas = [mujoco.MjData(model) for _ in range(max(1, nthread))]
        self.warm = np.zeros((n, model.nv))
        self.state = np.empty((n, steps, x0.shape[1]))
        self.sensordata = np.empty((n, steps, model.nsensordata))

    def run(self):
        t0 = time.perf_counter()
        self.pool.rollout(
            self.model,
            self.datas,
            self.x0,
            self.control,
            control_spec=CONTROL_SPEC.value,
            nstep=self.steps,
            initial_warmstart=self.warm,
            state=self.state,
            sensordata=self.sensordata,
        )
        return time.perf_counter() - t0

    def close(self):
        self.pool.close()


def _mj_step_loop(model, x0, steps):
    d = mujoco.MjData(model)

    def run():
        mujoco.mj_setState(model, d, x0, STATE_SPEC)
        step = mujoco.mj_step
        t0 = time.perf_counter()
        for _ in range(steps):
            step(model, d)
        return time.perf_counter() - t0

    return run


def _python_run(loop, refs):
    def run():
        loop.reset()
        t0 = time.perf_counter()
        loop.run(refs)
        return time.perf_counter() - t0

    return run


def bench_size(n, threads, variant, target_s, python_target_s, reps):
    """All configurations at one N: {key: _Timing} and the bare replay's largest deviation."""
    sims = {th: asr.Sim(ROBOT, n, threads=th, variant=variant) for th in threads}
    sim1 = sims[threads[0]]
    robot, dt, nj = sim1.robot, sim1.dt, sim1.n_joints
    cap = _refs_cap(n, nj)
    # asr pilot (also the warm-up), then one length for asr and bare MuJoCo
    pilot = min(cap, max(2, PILOT_INSTANCE_STEPS // n))
    refs = make_refs(robot, n, pilot, dt)
    run = _sim_run(sim1, refs)
    run()
    rate = n * pilot / min(run(), run())
    steps = _steps_for(rate, n, target_s, cap)
    refs = make_refs(robot, n, steps, dt)
    # the torques asr applies over those steps, replayed by bare MuJoCo
    sim1.reset()
    x0 = _initial_states(sim1)
    tau = sim1.rollout(steps, refs, record=("tau_joint",))["tau_joint"]
    q_end = sim1.q
    model = sim1.models[0]
    control = np.zeros((n, steps, model.nv))
    control[:, :, sim1.dof_adr] = tau
    del tau
    timings = {}
    for th in threads:
        timings[("asr", th)] = _Timing(n, steps, _sim_run(sims[th], refs))
    bares = {th: _Bare(model, x0, control, th) for th in threads}
    for th in threads:
        timings[("bare", th)] = _Timing(n, steps, bares[th].run)
    # Python loop: its own pilot and length
    loop = PythonLoop(robot, n)
    ppilot = min(cap, max(2, 2_000 // n))
    prun = _python_run(loop, make_refs(robot, n, ppilot, dt))
    prun()
    prate = n * ppilot / prun()
    psteps = _steps_for(prate, n, python_target_s, cap)
    timings[("python", 1)] = _Timing(n, psteps, _python_run(loop, make_refs(robot, n, psteps, dt)))
    if n == 1:
        timings[("mj_step", 1)] = _Timing(n, steps, _mj_step_loop(model, x0[0], steps))
    for tm in timings.values():  # warm-up of every configuration, untimed
        tm.run()
    for _ in range(reps):
        for tm in timings.values():
            tm.once()
    # the bare replay followed asr's trajectories
    qpos = bares[threads[0]].state[:, -1, 1 + np.array(sim1.qpos_adr)]
    dev = float(np.max(np.abs(qpos - q_end)))
    for b in bares.values():
        b.close()
    return timings, dev, nj


GZ_ROBOTS = ("qbmove_arm_2dof", "pendulum_1dof")


class _BareDart:
    """n DART worlds of a robot's SDF stepped by the shim (asr_gz_step_replay) replaying
    recorded joint torques (N, steps, J), no actuator model."""

    def __init__(self, robot, q0, tau):
        from asr.engines.gz_shim import GazeboWorlds

        self.tau = np.ascontiguousarray(tau, dtype=np.float64)
        self.n, self.steps = self.tau.shape[:2]
        self.worlds = GazeboWorlds(robot.sdf, robot.joint_names, self.n)
        self.q0 = np.array(q0, float)
        ffi = self.worlds._ffi
        self.handles = ffi.new("asr_gz_world*[]", self.worlds._worlds)
        self.c_tau = ffi.cast("const double*", ffi.from_buffer(self.tau))

    def run(self):
        for i in range(self.n):
            self.worlds.set_state(i, self.q0[i], np.zeros(self.q0.shape[1]))
        t0 = time.perf_counter()
        self.worlds._lib.asr_gz_step_replay(self.handles, self.n, self.steps, self.c_tau)
        return time.perf_counter() - t0


def bench_gazebo(robot_name, n, variant, target_s, reps):
    """asr + DART, bare DART, asr + MuJoCo and bare MuJoCo on one robot, one thread, the bare
    engines replaying the torques asr applied on them: ({key: _Timing}, {deviation name: rad})."""
    variant = variant if robot_name == ROBOT else None
    engines = ("gazebo", "mujoco")
    sims = {e: asr.Sim(robot_name, n, threads=1, variant=variant, engine=e) for e in engines}
    sim = sims["gazebo"]
    robot, dt, nj = sim.robot, sim.dt, sim.n_joints
    cap = _refs_cap(n, nj)
    pilot = min(cap, max(2, PILOT_INSTANCE_STEPS // 10 // n))
    run = _sim_run(sim, make_refs(robot, n, pilot, dt))
    run()
    steps = _steps_for(n * pilot / min(run(), run()), n, target_s, cap)
    refs = make_refs(robot, n, steps, dt)
    timings, tau, q_end, x0 = {}, {}, {}, None
    for e in engines:
        timings[(e, "asr")] = _Timing(n, steps, _sim_run(sims[e], refs))
        sims[e].reset()
        if e == "mujoco":
            x0 = _initial_states(sims[e])
        q0 = sims[e].q.copy()
        tau[e] = sims[e].rollout(steps, refs, record=("tau_joint",))["tau_joint"]
        q_end[e] = sims[e].q.copy()
    model = sims["mujoco"].models[0]
    control = np.zeros((n, steps, model.nv))
    control[:, :, sims["mujoco"].dof_adr] = tau["mujoco"]
    bare_mj = _Bare(model, x0, control, 1)
    bare_dart = _BareDart(robot, q0, tau["gazebo"])
    timings[("gazebo", "bare")] = _Timing(n, steps, bare_dart.run)
    timings[("mujoco", "bare")] = _Timing(n, steps, bare_mj.run)
    for tm in timings.values():  # warm-up, untimed
        tm.run()
    for _ in range(reps):
        for tm in timings.values():
            tm.once()
    q_mj = bare_mj.state[:, -1, 1 + np.array(sims["mujoco"].qpos_adr)]
    dev = {
        "bare_dart_replay": float(np.max(np.abs(bare_dart.worlds.q() - q_end["gazebo"]))),
        "bare_mujoco_replay": float(np.max(np.abs(q_mj - q_end["mujoco"]))),
        "dart_vs_mujoco": float(np.max(np.abs(q_end["gazebo"] - q_end["mujoco"]))),
    }
    bare_mj.close()
    bare_dart.worlds.close()
    return timings, dev


def realtime_5dof(target_s, reps):
    """Best simulated seconds per wall second of the 5-DOF arm with the box, N = 1, 1 thread."""
    sim = asr.Sim(ROBOT_5DOF, 1, threads=1)
    dt = sim.dt
    init = np.array(sim.robot.initial_refs)

    def refs_for(steps):
        t = np.arange(steps) * dt
        refs = np.empty((1, steps) + init.shape)
        refs[...] = init
        refs[0, :, 0, 0] = -0.1 - 0.5 * np.cos(2.0 * np.pi * t / SWEEP_PERIOD_5DOF)
        return refs

    pilot = 2000
    run = _sim_run(sim, refs_for(pilot))
    run()
    rate = pilot / min(run(), run())
    steps = _steps_for(rate, 1, target_s, _refs_cap(1, sim.n_joints))
    tm = _Timing(1, steps, _sim_run(sim, refs_for(steps)))
    for _ in range(reps):
        tm.once()
    return tm.rate * dt, steps, dt
