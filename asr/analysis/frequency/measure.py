"""The stepped sines of asr.frequency_response: the batch reset at the operating point, the
rollout in chunks with the input's sine added, and the Fourier coefficients of input and
output summed over each instance's measuring window."""

import dataclasses

import numpy as np

from asr.core.batch import Batch

_CHUNK = 4096  # steps per rollout call (bounds the per-step input arrays)


class Accumulator:
    """Discrete Fourier coefficients of input and output over each instance's window (the
    last whole cycles of the rollout), summed chunk by chunk: X = (2 / n) sum x e^(-i w t)."""

    def __init__(self, omega, start, dt, delay):
        self.omega, self.start, self.dt, self.delay = omega, start, dt, delay
        n = len(omega)
        self.n = np.zeros(n)
        self.u = np.zeros(n, complex)
        self.y = np.zeros(n, complex)
        self.s1, self.s2 = np.zeros(n), np.zeros(n)
        self.shift = None

    def add(self, t0, u, y):
        """u, y: (N, c) input and output of steps t0 .. t0 + c - 1."""
        if self.shift is None:  # sums of y - y(0): no cancellation against a large mean
            self.shift = y[:, :1].copy()
        k = t0 + np.arange(u.shape[1])
        w = (k[None, :] >= self.start[:, None]).astype(float)
        phase_u = np.exp(-1j * self.omega[:, None] * k * self.dt)
        phase_y = np.exp(-1j * self.omega[:, None] * (k + self.delay) * self.dt)
        z = (y - self.shift) * w
        self.n += w.sum(axis=1)
        self.u += (u * w * phase_u).sum(axis=1)
        self.y += (z * phase_y).sum(axis=1)
        self.s1 += z.sum(axis=1)
        self.s2 += (z * z).sum(axis=1)

    @property
    def input(self):
        return 2 * self.u / self.n

    @property
    def output(self):
        return 2 * self.y / self.n

    def residual(self):
        """Over whole cycles sine, cosine and the mean are orthogonal: the residual's energy
        is the variance less the fitted sine's, n |Y|^2 / 2."""
        var = self.s2 - self.s1**2 / self.n
        rest = var - self.n * np.abs(self.output) ** 2 / 2
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.sqrt(np.clip(rest, 0, None) / var)
        return np.where(var > 0, r, 0.0)


@dataclasses.dataclass
class Run:
    """The batched system, reset at the operating point: link angles q0 (n, J), rad, and held
    references refs (n, J, 2); dt s."""

    system: object
    q0: np.ndarray
    refs: np.ndarray
    dt: float


def start_run(rig, n, j, instance_presets, op):
    """A Run of n instances, instance i with preset instance_presets[i]."""
    spec = rig.specs[j]
    per_joint = {j: {spec.preset.param: instance_presets}} if spec.preset.kind == "param" else {}
    system = rig.build(n, per_joint)
    refs = np.broadcast_to(rig.refs0, (n,) + rig.refs0.shape).copy()
    shift = op - refs[:, j, 0]
    refs[:, j, 0] = op
    if spec.preset.kind != "param":
        refs[:, j, 1] = instance_presets
    if rig.kind == "batch":
        q0 = refs[:, :, 0].copy()
        system.reset(q0, refs)
    else:
        system.reset()  # the robot's initial q (or the model's qpos0)
        q0 = system.q
        q0[:, j] += shift
        system.reset(q0, refs)
    return Run(system, q0, refs, rig.dt)


def run_sines(run, j, input, output, amplitude, steps, acc, progress):
    """The whole rollout in chunks of _CHUNK steps, each summed into acc."""
    from tqdm.auto import tqdm

    omega = acc.omega[:, None]
    with tqdm(total=steps, disable=not progress, desc="frequency response", unit="step") as bar:
        for t0 in range(0, steps, _CHUNK):
            c = min(_CHUNK, steps - t0)
            t = (t0 + np.arange(c)) * acc.dt
            u = amplitude * np.sin(omega * t)  # (N, c)
            u_rate = amplitude * omega * np.cos(omega * t)  # du/dt
            acc.add(t0, u, _advance(run, j, input, output, u, u_rate))
            bar.update(c)


def _advance(run, j, input, output, u, u_rate):
    """Run one chunk of c steps with input u (N, c) (and its rate, per second) added on joint
    j, the other inputs held; the output of joint j, (N, c)."""
    n, c = u.shape
    refs = run.refs
    if input == "equilibrium":
        refs = np.repeat(run.refs[:, None], c, axis=1)
        refs[:, :, j, 0] += u
    if isinstance(run.system, Batch):
        q = np.repeat(run.q0[:, None], c, axis=1)
        qd = np.zeros_like(q)
        if input == "q":
            q[:, :, j] += u
            qd[:, :, j] = u_rate
        out = run.system.rollout(c, run.dt, refs, q, qd, record=(output,))
    else:
        ext = None
        if input == "tau_ext":
            ext = np.zeros((n, c, run.system.n_joints))
            ext[:, :, j] = u
        out = run.system.rollout(c, refs, tau_ext=ext, record=(output,))
    return out[output][:, :, j]
