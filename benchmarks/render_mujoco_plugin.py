"""Pictures of robots driven by asr's MuJoCo plugin, rendered headless by MuJoCo's own renderer
(docs/images/mujoco_plugin_<robot>.png).

    MUJOCO_GL=egl .venv/bin/python benchmarks/render_mujoco_plugin.py [--robots ur10 ...]

Each robot of SCENES is exported with asr's actuators as the engine plugin "asr.actuator"
(asr.export_mjcf), reset to its key "asr_initial" and stepped by plain mujoco.mj_step while
joint 1's equilibrium reference sweeps `sweep` rad (half a cosine over the first `seconds`): the
plugin's actuators move the links, so the picture shows the robot where asr's springs and motors
took it (qbmove_arm_5dof: the pusher pressed against the 2 kg box). A free camera frames every
geom but the floor. MuJoCo picks its GL back end when its rendering is first imported: this
script asks for EGL (headless) unless MUJOCO_GL is set already.
"""

import argparse
import os
import sys
import tempfile

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import asr  # noqa: E402
import asr.mujoco.plugin  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(os.path.dirname(HERE), "docs", "images")
KEY = "asr_initial"

# robot: variant, joint 1's equilibrium sweep (rad), duration (s), camera azimuth / elevation (deg)
SCENES = {
    "qbmove_arm_5dof": {
        "variant": None,
        "sweep": 0.5,
        "seconds": 3.0,
        "azimuth": 100.0,
        "elevation": -30.0,
    },
    "ur10": {
        "variant": "vsa_soft",
        "sweep": 0.5,
        "seconds": 2.0,
        "azimuth": 130.0,
        "elevation": -25.0,
    },
}
WIDTH, HEIGHT = 800, 600  # pixels
FILL = 0.85  # the framed geoms' bounding sphere spans this fraction of the view's height


def exported(robot, variant=None):
    """The robot's MjModel with asr's plugin actuators (asr.export_mjcf, written to a temporary
    folder) and an MjData at its key asr_initial, forward computed."""
    asr.mujoco.plugin.load()
    with tempfile.TemporaryDirectory() as folder:
        path = asr.export_mjcf(robot, variant, os.path.join(folder, "robot.xml"))
        m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, KEY))
    mujoco.mj_forward(m, d)  # the geoms' poses; the plugin places its motors at the first step
    return m, d


def drive(m, d, sweep, seconds):
    """Step d for `seconds` with joint 1's equilibrium (ctrl[0], rad) moved by `sweep` along
    half a cosine; the other references stay at the key's."""
    eq0 = float(d.ctrl[0])
    steps = int(round(seconds / m.opt.timestep))
    for k in range(steps):
        d.ctrl[0] = eq0 + sweep * 0.5 * (1.0 - np.cos(np.pi * k / steps))
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)


def robot_geoms(m):
    """Indices of the geoms that move with the plugin's joints (their bodies and descendants)."""
    moved = {int(m.jnt_bodyid[m.actuator_trnid[a, 0]]) for a in range(m.nu)}
    robot = [b for b in range(m.nbody) if _has_ancestor(m, b, moved)]
    return np.flatnonzero(np.isin(m.geom_bodyid, robot))


def _has_ancestor(m, body, bodies):
    while body > 0:
        if body in bodies:
            return True
        body = int(m.body_parentid[body])
    return False


def camera(m, d, azimuth, elevation):
    """A free camera looking at the centre of every geom but planes (the floor), far enough for
    their bounding sphere to fill FILL of the view's height."""
    keep = m.geom_type != mujoco.mjtGeom.mjGEOM_PLANE
    centres, radii = d.geom_xpos[keep], m.geom_rbound[keep][:, None]
    lo, hi = (centres - radii).min(axis=0), (centres + radii).max(axis=0)
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = 0.5 * (lo + hi)
    half_fovy = np.radians(m.vis.global_.fovy) / 2.0
    cam.distance = 0.5 * np.linalg.norm(hi - lo) / np.sin(half_fovy) * FILL
    cam.azimuth, cam.elevation = azimuth, elevation
    return cam


def render(m, d, cam, width=WIDTH, height=HEIGHT):
    """(height, width, 3) uint8 RGB picture of d from cam (MuJoCo's offscreen renderer)."""
    m.vis.global_.offwidth = max(m.vis.global_.offwidth, width)
    m.vis.global_.offheight = max(m.vis.global_.offheight, height)
    with mujoco.Renderer(m, height, width) as renderer:
        renderer.update_scene(d, cam)
        return renderer.render()


def picture(robot):
    """The robot of SCENES driven by the plugin and rendered: (RGB array, MjModel, MjData)."""
    s = SCENES[robot]
    m, d = exported(robot, s["variant"])
    drive(m, d, s["sweep"], s["seconds"])
    return render(m, d, camera(m, d, s["azimuth"], s["elevation"])), m, d


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=list(SCENES), choices=list(SCENES))
    ap.add_argument("--out-dir", default=IMAGES, help="folder of the PNG files")
    a = ap.parse_args(argv)
    import imageio.v2 as imageio

    os.makedirs(a.out_dir, exist_ok=True)
    for robot in a.robots:
        image, m, d = picture(robot)
        out = os.path.join(a.out_dir, f"mujoco_plugin_{robot}.png")
        imageio.imwrite(out, image)
        torques = {k: round(v["tau_joint"], 3) for k, v in asr.mujoco.plugin.states(m, d).items()}
        print(
            f"wrote {out} ({os.path.getsize(out) // 1024} KB); t = {d.time:.2f} s, joint "
            f"torques {torques} N m"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
