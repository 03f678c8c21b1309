"""A robot driven by asr's MuJoCo plugin, rendered offscreen by MuJoCo's own renderer (EGL), as
benchmarks/render_mujoco_plugin.py makes the documentation's pictures: the robot is visible and
the picture follows the motion the plugin gives it, which is asr.Sim's motion.

MuJoCo picks its GL back end when its rendering is first imported, so the rendering runs in a
child process with MUJOCO_GL=egl and this pytest process keeps whatever it has. Where EGL is
missing the test skips, and fails when CI is set."""

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import IN_CI
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

ROOT = str(ROOT_PATH)
ROBOT = "qbmove_arm_2dof"  # default variant: vertical, the arm hanging under gravity
SWEEP, SECONDS = 0.5, 0.5  # rad of joint 1's equilibrium, s
NO_GL = 3  # the child's exit status when no GL context can be made

# The child: renders the exported robot at its key (shown, then with its moving geoms
# transparent), drives it with the plugin and renders it again; writes the pictures (.npz).
CHILD = """
import sys
import numpy as np
try:  # with MUJOCO_GL=egl, mujoco loads EGL through PyOpenGL when it is imported
    import mujoco
except Exception as exc:
    print(f"no GL back end ({type(exc).__name__}: {exc})")
    sys.exit(3)
sys.path.insert(0, sys.argv[1])
import render_mujoco_plugin as r
robot, sweep, seconds, out = sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
m, d = r.exported(robot)
cam = r.camera(m, d, 100.0, -15.0)
try:
    shown = r.render(m, d, cam, 240, 180)
except Exception as exc:
    print(f"no GL context ({type(exc).__name__}: {exc})")
    sys.exit(3)
rgba = m.geom_rgba.copy()
m.geom_rgba[r.robot_geoms(m), 3] = 0.0
hidden = r.render(m, d, cam, 240, 180)
m.geom_rgba[:] = rgba
q0 = d.qpos.copy()
r.drive(m, d, sweep, seconds)
moved = r.render(m, d, cam, 240, 180)
np.savez(out, shown=shown, hidden=hidden, moved=moved, q0=q0, q1=d.qpos, dt=m.opt.timestep)
"""


def _render(tmp_path):
    out = tmp_path / "pictures.npz"
    env = dict(os.environ, MUJOCO_GL="egl")
    args = [sys.executable, "-c", CHILD, os.path.join(ROOT, "benchmarks"), ROBOT]
    proc = subprocess.run(
        args + [str(SWEEP), str(SECONDS), str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode == NO_GL:
        if IN_CI:
            pytest.fail(f"MuJoCo's EGL rendering is missing in CI: {proc.stdout}{proc.stderr}")
        pytest.skip(f"MuJoCo cannot render with EGL here: {proc.stdout.strip()}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict(np.load(out))


def _differing(a, b):
    """Fraction of pixels whose colour differs by more than 8 levels in some channel."""
    return float(np.mean(np.abs(a.astype(int) - b.astype(int)).max(axis=2) > 8))


def _sim_q(q0, steps):
    """asr.Sim's link angles after the child's drive (the same references step by step)."""
    import asr

    sim = asr.Sim(ROBOT, 1)
    refs = np.empty((1, steps) + np.shape(sim.robot.initial_refs))
    refs[...] = sim.robot.initial_refs
    k = np.arange(steps)
    refs[0, :, 0, 0] += SWEEP * 0.5 * (1.0 - np.cos(np.pi * k / steps))
    sim.reset(q0=q0[None, sim.qpos_adr], refs=refs[:, 0])
    sim.rollout(steps, refs, record=())
    return sim.q[0]


@pytest.mark.slow
def test_rendered_robot_is_visible_and_follows_the_plugin(tmp_path):
    pics = _render(tmp_path)
    shown, hidden, moved = pics["shown"], pics["hidden"], pics["moved"]
    assert shown.shape == (180, 240, 3) and shown.dtype == np.uint8
    # the robot's geoms cover a good part of the framed picture, lit (the background is black)
    robot = np.abs(shown.astype(int) - hidden.astype(int)).max(axis=2) > 8
    assert robot.mean() > 0.03, robot.mean()
    assert shown[robot].mean() > 40, shown[robot].mean()
    # the plugin moved the arm (joint 1 follows its equilibrium by tenths of a radian) exactly
    # as asr.Sim moves it, and the picture shows it
    import asr

    steps = int(round(SECONDS / float(pics["dt"])))
    qpos_adr = asr.Sim(ROBOT, 1).qpos_adr
    q0, q1 = pics["q0"][qpos_adr], pics["q1"][qpos_adr]
    assert abs(q1[0] - q0[0]) > 0.1, (q0, q1)
    np.testing.assert_allclose(q1, _sim_q(pics["q0"], steps), rtol=0, atol=1e-12)
    assert _differing(shown, moved) > 0.01, _differing(shown, moved)
