"""[Parnenzini2015] (Parnenzini et al., the 2015 qbmove Gazebo plugin): one qbmove module tracking a
sine and stepping at several stiffness presets (figs. 2, 3), and the assemblies of fig. 4, a 3R
arm and a 12-module snake, running the published snake gait.

    python -m asr.experiments.parnenzini2015 --out DIR

Actuator: asr model `qbmove` (docs/models.md sec. 1) in mode 6: references (equilibrium q_e,
preset s), motors commanded to q_e +/- s (clamped at 3.1497 rad), each driven by the PD at 1 kHz
through the voltage drive (PWM dead zone 0.3, saturation, 8 V, Kt 0.8, Kb 0.3, R 2.3), with the
motors' static friction (0.8 N m) and the output shaft's (0.01 N m); springs k sinh(a phi) with
k = 0.022 N m, a = 6.85 1/rad (stiffness 2 a k cosh(a s) at rest: 0.301 N m/rad at s = 0).

(i) Single module (figs. 2, 3). The paper validates a bare module against a Simulink model and
gives neither the load, nor A and w, nor the value of "HIGH". Our rig, written at run time as a
temporary robot folder (`rig_robot`): the module housing fixed, its output flange (0.05 kg, the
plate of robots/qbmove_3r) carrying a 0.1 kg load 0.089 m from the axis (one module spacing),
inertia 9.4e-4 kg m^2 about the axis; the axis vertical, so gravity does not load the joint
(a soft module under gravity would only show its sag); joint damping 0.01 N m s/rad (a choice:
some dissipation besides the 0.01 N m shaft friction, light enough to leave the soft module
underdamped). Presets s = 0 (the paper's soft tracking case), 0.3 rad (its soft step case) and
HIGH = 0.6 rad: the largest round preset whose spring pretension k sinh(a s) = 0.67 N m stays
below the motors' static friction (0.8 N m; a motor is then not back-driven by its own spring)
and well within the drive's stall torque (Kt/R 8 V = 2.78 N m); stiffness 9.2 N m/rad, 30 times
that of s = 0. Tests, from rest at q = 0 with the motors at +/- s:

- tracking: q_e(t) = A sin(w t), A = 0.5 rad, w = 2 pi rad/s (1 Hz, below the soft rig's
  natural frequency sqrt(0.301 / 9.4e-4) = 18 rad/s, where the spring's deflection under the
  load's inertia is visible), 5 s; error measured from t = 1 s (RMS, max, and the amplitude and
  phase lag of the response's fundamental);
- step: q_e = 0.7 rad from t = 0, 2 s: rise time (10 -> 90 % of 0.7 rad), overshoot over the
  final value, settling time into +/- 2 % of the step around the final value, final error.

(ii) Assemblies (fig. 4), robots/qbmove_3r and robots/qbmove_snake, preset s = 0.3 rad, 5 s from
their [initial] state, the gait of the plugin's published snake (talker.cc): module i (0-based,
joint i + 1) gets q_e,i(t) = A_i sin(w t + i phi), w = 4.71 rad/s, A = 60 deg on the pitch
joints (the "vertical" modules, whose shafts are horizontal) and 20 deg on the yaw joints; the
phase between consecutive modules phi = 2 pi / 6 = pi / 3 (the talker's pi / lambda with
lambda = 3 and no extra phase; our choice, the paper publishes none). The 3R arm runs in both
variants: `vertical` (all joints pitch, A = 60 deg, under gravity) and `horizontal` (all yaw,
A = 20 deg). Checked: asr statuses, MuJoCo's warnings (unstable accelerations, contact
overflows, ...), finite states, bounds on joint angles, velocities and motor angles, and for
the snake the net horizontal displacement of its centre of mass (mujoco's subtree centre of
mass of the head, sampled every 0.1 s). Horizontal momentum conservation makes that
displacement a measure of locomotion: without floor friction no internal motion could move the
centre of mass horizontally.

Results (`python -m asr.experiments.parnenzini2015`, about 1-2 s). Single module:

| s | stiffness | track RMS / max | amplitude | lag | overshoot | settling | 0.7 - q |
| --- | --- | --- | --- | --- | --- | --- | --- |
| 0 | 0.38 | 0.158 / 0.272 | 0.497 | 25.2 deg | 0.374 | 0.58 s | 0.047 |
| 0.3 | 1.21 | 0.092 / 0.160 | 0.480 | 14.4 deg | 0.341 | 0.60 s | 0.043 |
| 0.6 (HIGH) | 8.2 | 0.069 / 0.095 | 0.472 | 10.8 deg | 0.100 | 0.32 s | 0.027 |

(s, angles and errors in rad, stiffness in N m/rad: its mean over the tracking; the last three
columns are the step's)

The stiff module tracks better (less than half the RMS error and the lag of s = 0) and
settles faster with a quarter of the overshoot; rise times are alike (34-44 ms, set by the
motors). Every case ends short of its reference, by the PWM dead
zone and the motors' static friction: a motor stops once the PD's command no longer overcomes
0.8 N m (plus its spring's pull), i.e. within (0.3 + 0.7 R tau_fs / (Kt 8 V)) / kp = 0.048 rad
of its reference for an unloaded motor; the motors also trail the sine by up to 0.08-0.1 rad,
which bounds how well even the stiff module tracks.

Assemblies, 5 s of gait, s = 0.3: 3R vertical / 3R horizontal / snake: statuses 0, no MuJoCo
warnings, max |q| 1.33 / 0.52 / 0.98 rad, max |qd| 13.0 / 3.6 / 11.5 rad/s, max |th| 1.30 /
0.60 / 1.30 rad, mean RMS deviation from the gait 0.33 / 0.15 / 0.24 rad; the snake's centre
of mass moves 0.219 m (dx = -0.219 m, towards the head: head first; dy = 0.006 m; path
0.37 m), its height staying between 0.033 and 0.076 m.
"""

import shutil
import sys
import tempfile
import time

import asr
from asr.experiments import command_line, run_and_report
from asr.experiments._parnenzini2015_gait import (
    CHUNK,
    GAIT_DURATION,
    GAIT_PHI,
    GAIT_PITCH,
    GAIT_PRESET,
    GAIT_W,
    GAIT_YAW,
    Q_BOUND,
    QD_BOUND,
    TH_MARGIN,
    TH_MAX,
    gait,
    gait_amplitudes,
)
from asr.experiments._parnenzini2015_report import gait_figure, module_figure, summary, write_html
from asr.experiments._parnenzini2015_rig import (
    LOAD_ARM,
    LOAD_MASS,
    PRESETS,
    RIG_DAMPING,
    RIG_TOML,
    RIG_XML,
    S_HIGH,
    S_MEDIUM,
    S_SOFT,
    STEP,
    STEP_DURATION,
    TRACK_A,
    TRACK_DURATION,
    TRACK_SKIP,
    TRACK_W,
    fundamental,
    rig_robot,
    step_response,
    tracking,
)

# the names the parts define, importable from here as before the split
__all__ = [
    "CHUNK",
    "GAIT_DURATION",
    "GAIT_PHI",
    "GAIT_PITCH",
    "GAIT_PRESET",
    "GAIT_W",
    "GAIT_YAW",
    "LOAD_ARM",
    "LOAD_MASS",
    "PRESETS",
    "QD_BOUND",
    "Q_BOUND",
    "RIG_DAMPING",
    "RIG_TOML",
    "RIG_XML",
    "STEP",
    "STEP_DURATION",
    "S_HIGH",
    "S_MEDIUM",
    "S_SOFT",
    "TH_MARGIN",
    "TH_MAX",
    "TRACK_A",
    "TRACK_DURATION",
    "TRACK_SKIP",
    "TRACK_W",
    "fundamental",
    "gait",
    "gait_amplitudes",
    "gait_figure",
    "main",
    "module_figure",
    "rig_robot",
    "run",
    "step_response",
    "summary",
    "tracking",
    "write_html",
]


def run(
    track_duration=TRACK_DURATION,
    step_duration=STEP_DURATION,
    gait_duration=GAIT_DURATION,
    figures=True,
):
    """Both parts. Returns {'tracking', 'step': rig results with 'metrics' per preset,
    'gaits': {name: gait()}, 'presets', 'wall_s', 'figures' (if figures)}."""
    wall = {}
    tmp = tempfile.mkdtemp(prefix="asr_parnenzini2015_")
    try:
        rig = rig_robot(tmp)
        t0 = time.perf_counter()
        tr = tracking(rig, duration=track_duration)
        st = step_response(rig, duration=step_duration)
        wall["module"] = time.perf_counter() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    gaits = {}
    for name, variant in (
        ("arm3r_vertical", ("qbmove_3r", "vertical")),
        ("arm3r_horizontal", ("qbmove_3r", "horizontal")),
        ("snake", ("qbmove_snake", None)),
    ):
        gaits[name] = gait(asr.load_robot(*variant), duration=gait_duration)
        wall[name] = gaits[name]["wall_s"]
    res = {"tracking": tr, "step": st, "gaits": gaits, "presets": PRESETS, "wall_s": wall}
    if figures:
        res["figures"] = {"module": module_figure(res), "gaits": gait_figure(res)}
    return res


def main(out_dir="parnenzini2015_output", **run_kwargs):
    """Run, write out_dir/parnenzini2015.html, print the table; returns run()'s dict with 'html'
    and 'total_s'; run_kwargs go to run() (shorter runs)."""
    return run_and_report("parnenzini2015", run, write_html, summary, out_dir, run_kwargs)


def _cli(argv=None):
    command_line("parnenzini2015", __doc__.splitlines()[0], main, argv)


if __name__ == "__main__":
    _cli(sys.argv[1:])
