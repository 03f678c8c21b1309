"""The varied batches and runs that tests/core/test_simd_core.py compares across lanes, batch
sizes and instruction sets (also imported by its per-kernel child process)."""

import numpy as np

import asr
from asr.core.models import get_model

DT = 1e-3
STEPS = 300
COMPLIANT = ("sea", "sea_damped", "awas2", "bavs", "qbmove_advanced", "qbmove")


def preset_refs(name, i):
    """Second references of instances i inside the model's preset range, different per
    instance."""
    p = get_model(name).spec.preset
    return p.lo + (p.hi - p.lo) * (0.2 + 0.6 * (i % 16) / 15)


def inputs(name, mode, n, steps=STEPS, first=0):
    """Per-instance link motion, references and torques for instances first .. first + n - 1:
    phases differ per instance, so motors slide and stick at different steps."""
    i = np.arange(first, first + n)[:, None]
    t = np.arange(steps)[None, :] * DT
    q = 0.3 * np.sin(3.0 * t + i)
    qd = 0.9 * np.cos(3.0 * t + i)
    refs = np.empty((n, steps, 1, 2))
    amplitude = 0.3 if mode in (0, 4) else 0.5  # N m in the torque modes, else rad
    refs[:, :, 0, 0] = amplitude * np.sin(2.0 * np.pi * 1.5 * t + i)
    spec = get_model(name).spec
    second = preset_refs(name, i) + 0 * t
    refs[:, :, 0, 1] = second if spec.nmotor == 1 or mode in (3, 6) else 0.2 * np.cos(t + i)
    ext = 0.05 * np.cos(7.0 * t + i)
    return q[..., None], qd[..., None], refs, ext[..., None]


def varied_batch(name, mode, n, threads=1, first=0):
    """n instances of `name` in `mode`; controller period, integral gain and motor friction
    differ per instance (so lanes of one vector take different branches)."""
    b = asr.Batch([asr.Joint(name, mode=mode)], n, threads=threads)
    i = np.arange(first, first + n)
    b.set_param(0, "ctrl_period", np.where(i % 3 == 0, 0.0, 2e-3))
    b.set_param(0, "ki", np.where(i % 2 == 0, 0.0, 3.0))
    b.set_param(0, "friction", b.get_param(0, "friction") * (1.0 + (i % 4)))
    return b


def run(b, name, mode, n, first=0, steps=STEPS):
    q, qd, refs, ext = inputs(name, mode, n, steps, first)
    b.reset(q[:, 0], refs[:, 0])
    out = b.rollout(steps, DT, refs, q, qd, tau_ext=ext, record=asr.FIELDS, on_error="flag")
    return out, b.status.copy()
