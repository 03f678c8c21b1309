"""The coupled benchmark's workload (benchmarks/bench_coupled.py): the robots, the references
of every instance and joint, and the best loop a user can write in Python (PythonLoop), the
baseline that tests/benchmarks/test_bench_coupled.py checks against asr.Sim."""

import mujoco
import numpy as np
from numpy_reference import DEFAULTS, QbmoveAdvancedMode6

import asr

ROBOT = "qbmove_arm_2dof"
ROBOT_5DOF = "qbmove_arm_5dof"
EQ_AMPLITUDE = 0.3  # rad
EQ_FREQUENCY = 1.0  # Hz
SWEEP_PERIOD_5DOF = 4.0  # s
MAX_REFS_VALUES = 16_000_000  # cap on the (N, steps, J, 2) reference array: 128 MB of float64
PILOT_INSTANCE_STEPS = 20_000


def make_refs(robot, n, steps, dt):
    """(n, steps, J, 2) references: the robot's initial refs, equilibria plus
    EQ_AMPLITUDE sin(2 pi f t + 2 pi i / n)."""
    nj = len(robot.joints)
    init = np.zeros((nj, 2)) if robot.initial_refs is None else np.array(robot.initial_refs)
    t = np.arange(steps) * dt
    phase = 2.0 * np.pi * np.arange(n) / n
    refs = np.empty((n, steps, nj, 2))
    refs[...] = init
    refs[..., 0] += EQ_AMPLITUDE * np.sin(
        2.0 * np.pi * EQ_FREQUENCY * t[None, :, None] + phase[:, None, None]
    )
    return refs


class PythonLoop:
    """N instances of a robot whose joints are all qbmove_advanced in mode 6, stepped by a Python
    loop: mj_step1 per instance, the NumPy reference over all N x J joints, qfrc_applied,
    mj_step2 per instance. Set up and reset as asr.Sim (same start state)."""

    def __init__(self, robot, n, variant=None, max_substep=1e-3):
        self.robot = robot if isinstance(robot, asr.Robot) else asr.load_robot(robot, variant)
        for j in self.robot.joints:
            if j.model != "qbmove_advanced" or j.mode != 6:
                raise ValueError(
                    f"PythonLoop: joint {j.name} is {j.model} mode {j.mode}; the "
                    "NumPy reference covers qbmove_advanced mode 6 only"
                )
        self.n, self.nj = int(n), len(self.robot.joints)
        self.model = self.robot.mj_model()
        self.dt = float(self.model.opt.timestep)
        self.qpos_adr, self.dof_adr = asr.robots.robot.joint_addresses(
            self.model, self.robot.joint_names
        )
        self.datas = [mujoco.MjData(self.model) for _ in range(self.n)]
        # per-joint parameters, flattened instance-major (index i * J + j)
        params = {}
        for name in {p for j in self.robot.joints for p in j.params}:
            col = np.array([j.params.get(name, DEFAULTS[name]) for j in self.robot.joints])
            params[name] = np.tile(col, self.n)
        self.act = QbmoveAdvancedMode6(self.n * self.nj, max_substep=max_substep, **params)
        # views into every MjData: the actuated joints' qpos, qvel and qfrc_applied entries
        self._qpos = [self._view(d.qpos, self.qpos_adr) for d in self.datas]
        self._qvel = [self._view(d.qvel, self.dof_adr) for d in self.datas]
        self._qfrc = [self._view(d.qfrc_applied, self.dof_adr) for d in self.datas]
        self.reset()

    @staticmethod
    def _view(arr, adr):
        """A view of arr at the addresses (a slice when they are consecutive), else None."""
        a0 = adr[0]
        if list(adr) == list(range(a0, a0 + len(adr))):
            return arr[a0 : a0 + len(adr)]
        return None

    def reset(self):
        """As asr.Sim.reset() with the robot's initial q and refs."""
        q0 = self.robot.initial_q
        for d in self.datas:
            mujoco.mj_resetData(self.model, d)
            if q0 is not None:
                d.qpos[self.qpos_adr] = q0
            mujoco.mj_forward(self.model, d)
        q = np.array([d.qpos[self.qpos_adr] for d in self.datas]).reshape(-1)
        refs = (
            None
            if self.robot.initial_refs is None
            else np.tile(np.array(self.robot.initial_refs), (self.n, 1))
        )
        self.act.reset(q, refs)

    def run(self, refs, record=False):
        """len(refs[0]) steps with refs (N, steps, J, 2). record: return the link angles
        after every step (N, steps, J) and the applied torques (N, steps, J)."""
        n, nj, m, dt = self.n, self.nj, self.model, self.dt
        steps = refs.shape[1]
        # (steps, N * J, 2), instance-major like the actuators
        refs_t = np.ascontiguousarray(refs.transpose(1, 0, 2, 3)).reshape(steps, n * nj, 2)
        datas, act = self.datas, self.act
        step1, step2 = mujoco.mj_step1, mujoco.mj_step2
        q = np.empty((n, nj))
        qd = np.empty((n, nj))
        qflat, qdflat = q.reshape(-1), qd.reshape(-1)
        fast = all(v is not None for v in self._qpos + self._qvel + self._qfrc)
        pairs_in = list(zip(datas, self._qpos, self._qvel, range(n)))
        pairs_out = list(zip(datas, self._qfrc, range(n)))
        qpos_adr, dof_adr = self.qpos_adr, self.dof_adr
        out_q = np.empty((n, steps, nj)) if record else None
        out_tau = np.empty((n, steps, nj)) if record else None
        for t in range(steps):
            if fast:
                for d, vq, vqd, i in pairs_in:
                    step1(m, d)
                    q[i] = vq
                    qd[i] = vqd
            else:
                for i, d in enumerate(datas):
                    step1(m, d)
                    q[i] = d.qpos[qpos_adr]
                    qd[i] = d.qvel[dof_adr]
            tau = act.step(qflat, qdflat, refs_t[t], dt).reshape(n, nj)
            if fast:
                for d, vf, i in pairs_out:
                    vf[:] = tau[i]
                    step2(m, d)
            else:
                for i, d in enumerate(datas):
                    d.qfrc_applied[dof_adr] = tau[i]
                    step2(m, d)
            if record:
                out_tau[:, t] = tau
                for i, d in enumerate(datas):
                    out_q[i, t] = d.qpos[qpos_adr]
        return (out_q, out_tau) if record else None
