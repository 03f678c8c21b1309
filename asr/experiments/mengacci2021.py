"""[Mengacci2021] (Mengacci et al. 2021, the NMMI ROS-Gazebo toolbox) sec. 4.1-4.2: figs. 7, 11, 12,
13 and 14 reproduced with asr.Sim (MuJoCo links, asr actuators).

    python -m asr.experiments.mengacci2021 --out DIR

writes one plotly HTML per figure (fig7.html ... fig14.html) and prints a summary table. The
parts: asr.experiments._mengacci2021_closed_forms (the independent references: spring closed
forms, the rig's MJCF data, statics), _mengacci2021_runs (the settings and one run per figure),
_mengacci2021_report (summary table and figures); this module runs them all (run_all, main).

- fig7: robots/pendulum_1dof (0.2 kg at 0.04 m under gravity), the four actuators soft and stiff
  (sea k 200 / 400 N m/rad via params; awas2 pivot 0.005 / 0.04 m, bavs 0.001 / 0.22 rad,
  qbmove_advanced 0.2 / 0.6 rad via refs), mode 3, a 0.8 rad equilibrium step. Independent
  reference: the static equilibrium tau_elastic(q) = gravity torque, solved with brentq from the
  closed forms of docs/models.md sec. 1 written here, with the mass, its distance from the axis
  and gravity read from the MJCF by mujoco's compiler.
- fig11: the same rig with qbmove_advanced in mode 6 (motor PID and dynamics with the toolbox
  defaults; robot.toml says mode 3, so a copy of the asr.Robot with mode 6 is given to asr.Sim),
  a linear chirp of the equilibrium reference, 0.15 rad, 0.5 -> 6 Hz in 20 s, soft 0.2 / stiff
  0.6. Frequency response by lock-in demodulation (a least-squares fit of sin and cos of the
  chirp's phase over sliding windows of 4 cycles), and a fitted second-order joint model
  K wn^2 / (s^2 + 2 zeta wn s + wn^2) from the realised equilibrium (the mean of the two motor
  angles) to the link; checked against the linearised closed form (wn = sqrt(sigma / I) at the
  sagged equilibrium, zeta = c / (2 sqrt(sigma I))).
- fig12: robots/qbmove_arm_2dof `horizontal`, mode 6, 0.8 rad equilibrium steps on both joints.
- fig13: robots/qbmove_arm_2dof `vertical`, mode 6, eq(t) = 0.8 sin(0.8 t) on both joints for two
  periods; the same input on `horizontal` is the no-gravity control.
- fig14: robots/qbmove_arm_5dof and its 2 kg box: the push is a minimum-jerk sweep of the base yaw
  joint's equilibrium from -0.6 to +0.4 rad in 3 s, held to 6 s (robot README); the box position
  is read from MuJoCo's data.

Springs of figs. 12-13: the toolbox defaults (k1 = k2 = 0.0019 N m, a1 = a2 = 8.9992 1/rad) by
default, as the robot README suggests for these figures. The arm's robot.toml carries the springs
identified for the ILC of sec. 4.3 (asymmetric: the link rests 0.10 / 0.03 rad off the nominal
equilibrium); `springs="identified"` runs those (reported as a second row).

What the runs show (python -m asr.experiments.mengacci2021 prints the numbers):

- fig7: every steady state equals the closed-form static equilibrium to rounding (~1e-15 rad);
  soft AwAS-II sags 0.020 rad and soft qbmove Advanced 0.272 rad below 0.8, their stiff
  presets 2e-5 and 0.015 rad.
- fig11: on this rig (I = 3.2e-4 kg m^2) the joint resonances lie above the chirp band: soft
  7.4 Hz, stiff 17.3 Hz (fitted from 0.5-6 Hz data; the linearised closed form gives 7.5 and
  17.5 Hz). In mode 6 the motor position loop (toolbox PID 125 / 4.5 on J = 0.0233 kg m^2) is a
  low-pass of about 5 Hz (-3 dB) shared by both presets, so within 0.5-6 Hz the reference-to-link
  gain stays above -3 dB for both and the soft joint's approach to its resonance props its gain
  up: the preset's effect is read on the joint (link / realised equilibrium).
- fig12: both presets end within the closed-form static-friction band around 0.8 rad (soft
  +/- 0.166 rad, stiff +/- 0.007 rad); the stiff arm rings longer (6-7 half-oscillations against
  1), as the paper notes for its simulation. With the identified springs the links end 0.03-0.16
  rad short of 0.8 (asymmetric springs).
- fig13: the soft arm sags below the reference (mean error -0.54 / -0.24 rad, none without
  gravity); the stiff arm tracks better in rms, although joint 1, whose spring gives at most
  ~1.25 N m against 1.275 N m of gravity at q = 0, sits on its deflection clamp 1/3 of the time.
  With the identified springs the stiff preset tracks worse than the soft one.
- fig14: soft, the box stops the arm (joint 1 at 0.01 rad, box moved 0.4 mm); stiff, the arm
  pushes it 5.4 cm.
"""

import os
import time

from asr.experiments import command_line
from asr.experiments._mengacci2021_closed_forms import (
    SPRING_DEFAULTS,
    TAU,
    gravity_torque,
    linearised,
    pendulum_link,
    spring,
    static_equilibrium,
    tau_awas2,
    tau_bavs,
    tau_qbmove,
    tau_sea,
)
from asr.experiments._mengacci2021_report import figures, summary
from asr.experiments._mengacci2021_runs import (
    CHIRP,
    FIG7_PRESETS,
    SINE,
    SOFT,
    STEP,
    STIFF,
    SWEEP,
    TOOLBOX_SPRINGS,
    fig7,
    fig11,
    fig12,
    fig13,
    fig14,
    fit_second_order,
    friction_band,
    lockin,
    second_order,
    step_metrics,
    with_mode,
)

# the public names of the split modules, importable from here as before the split
__all__ = [
    "CHIRP",
    "FIG7_PRESETS",
    "SINE",
    "SOFT",
    "SPRING_DEFAULTS",
    "STEP",
    "STIFF",
    "SWEEP",
    "TAU",
    "TOOLBOX_SPRINGS",
    "fig7",
    "fig11",
    "fig12",
    "fig13",
    "fig14",
    "figures",
    "fit_second_order",
    "friction_band",
    "gravity_torque",
    "linearised",
    "lockin",
    "main",
    "pendulum_link",
    "run_all",
    "second_order",
    "spring",
    "static_equilibrium",
    "step_metrics",
    "summary",
    "tau_awas2",
    "tau_bavs",
    "tau_qbmove",
    "tau_sea",
    "with_mode",
]


def run_all():
    """Every figure (figs. 12-13 also with the identified springs). Returns the results dict."""
    res, wall = {}, {}
    for name, fn in (
        ("fig7", fig7),
        ("fig11", fig11),
        ("fig12", fig12),
        ("fig13", fig13),
        ("fig14", fig14),
    ):
        t0 = time.perf_counter()
        res[name] = fn()
        wall[name] = time.perf_counter() - t0
    res["fig12_identified"] = fig12(springs="identified")
    res["fig13_identified"] = fig13(springs="identified")
    res["wall_s"] = wall
    return res


def main(out_dir="mengacci2021_output"):
    """Run every figure, write out_dir/fig7.html ... fig14.html, print the summary table."""
    os.makedirs(out_dir, exist_ok=True)
    res = run_all()
    text = summary(
        res["fig7"],
        res["fig11"],
        res["fig12"],
        res["fig13"],
        res["fig14"],
        res["fig12_identified"],
        res["fig13_identified"],
    )
    text += "\n\nwall time (s): " + ", ".join(f"{k} {v:.2f}" for k, v in res["wall_s"].items())
    for name, fig in figures(
        res["fig7"], res["fig11"], res["fig12"], res["fig13"], res["fig14"]
    ).items():
        fig.write_html(os.path.join(out_dir, f"{name}.html"), include_plotlyjs=True, full_html=True)
    print(text)
    print(f"\nfigures: {', '.join(sorted(os.listdir(out_dir)))} in {out_dir}")
    return res


def _cli(argv=None):
    command_line(
        "mengacci2021",
        "Mengacci et al. 2021 figs. 7, 11-14 with asr.Sim",
        main,
        argv,
        out_help="output folder for the HTML figures",
    )


if __name__ == "__main__":
    _cli()
