"""[Mengacci2021] (Mengacci et al. 2021, the NMMI ROS-Gazebo toolbox) sec. 4.1-4.2: figs. 7, 11, 12,
13 and 14 reproduced with asr.Sim (MuJoCo links, asr actuators).

    python -m asr.experiments.mengacci2021 --out DIR

writes one plotly HTML per figure (fig7.html ... fig14.html) and prints a summary table.

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

import dataclasses
import math
import os
import time

import numpy as np
from scipy.optimize import brentq, least_squares

import asr
from asr.experiments import command_line
from asr.references import min_jerk

# ---------------------------------------------------------------- constants (paper sec. 4.1-4.2)

STEP = 0.8  # rad, equilibrium step of figs. 7 and 12
FIG7_PRESETS = {  # variant: ((soft preset, soft k), (stiff preset, stiff k))
    "sea": ((0.0, 200.0), (0.0, 400.0)),
    "awas2": ((0.005, None), (0.04, None)),
    "bavs": ((0.001, None), (0.22, None)),
    "qbmove_advanced": ((0.2, None), (0.6, None)),
}
SOFT, STIFF = 0.2, 0.6  # qbmove Advanced presets, rad
CHIRP = dict(amplitude=0.15, f0=0.5, f1=6.0)
SINE = dict(amplitude=0.8, omega=0.8)
TOOLBOX_SPRINGS = dict(k1=0.0019, a1=8.9992, k2=0.0019, a2=8.9992, max_def=0.8)
SWEEP = dict(start=-0.6, end=0.4, duration=3.0)

# toolbox defaults of the spring parameters (docs/models.md sec. 1), overridden by robot.toml
SPRING_DEFAULTS = {
    "sea": dict(k=10.0, max_def=0.8),
    "awas2": dict(Ks=10.0, L=0.05, r_t=0.015, max_def=0.3),
    "bavs": dict(a=1.21e-6, b=2.38e-6, k=1.6e5, ke=8.71, max_def=0.27),
    "qbmove_advanced": dict(k1=0.0019, a1=8.9992, k2=0.0019, a2=8.9992, max_def=0.8),
}


# ------------------------------------------------------------ closed forms (docs/models.md sec. 1)


def _sat(x, m):
    return np.clip(x, -m, m)


def tau_sea(q, eq, preset, k, max_def):
    """Walkman SEA ([Mengacci2021] eq. 3): th1 = eq, tau = -k sat(q - th1)."""
    return -k * _sat(q - eq, max_def)


def tau_awas2(q, eq, preset, Ks, L, r_t, max_def):
    """AwAS-II ([Mengacci2021] eq. 4): th1 = eq, pivot s = preset, G = (L/r_t) s/(L - s),
    tau = -Ks G^2 sin(2 phi)."""
    G = (L / r_t) * preset / (L - preset)
    return -Ks * G**2 * np.sin(2.0 * _sat(q - eq, max_def))


def tau_bavs(q, eq, preset, a, b, k, ke, max_def):
    """BAVS ([Mengacci2021] eq. 5-6): th = eq +/- preset, phi_i = sat(th_i - q)."""
    p1 = _sat(eq + preset - q, max_def)
    p2 = _sat(eq - preset - q, max_def)
    return k * (b * np.exp(ke * p1) - a * np.exp(-ke * p1)) + k * (
        a * np.exp(ke * p2) - b * np.exp(-ke * p2)
    )


def tau_qbmove(q, eq, preset, k1, a1, k2, a2, max_def):
    """qbmove Advanced: th = eq +/- preset, phi_i = sat(q - th_i),
    tau = -sum k_i sinh(a_i phi_i)."""
    p1 = _sat(q - (eq + preset), max_def)
    p2 = _sat(q - (eq - preset), max_def)
    return -k1 * np.sinh(a1 * p1) - k2 * np.sinh(a2 * p2)


TAU = {"sea": tau_sea, "awas2": tau_awas2, "bavs": tau_bavs, "qbmove_advanced": tau_qbmove}


def spring(model, params=None):
    """tau(q, eq, preset) of `model` with the toolbox defaults updated by `params` (spring
    parameters only; motor and controller parameters are ignored)."""
    p = dict(SPRING_DEFAULTS[model])
    p.update({k: float(v) for k, v in (params or {}).items() if k in p})
    fn = TAU[model]
    return lambda q, eq, preset: fn(q, eq, preset, **p)


# ---------------------------------------------------------------- rigid-body data from the MJCF


def pendulum_link(mjcf, joint="joint"):
    """Mass (kg), centre of mass in the body frame (m), joint axis, inertia about the axis
    (kg m^2), joint damping (N m s/rad), gravity vector (m/s^2) and the body's rest orientation,
    read from the MJCF with mujoco's compiler (a single body on a hinge fixed to the world)."""
    import mujoco

    m = mujoco.MjModel.from_xml_path(mjcf)
    j = m.joint(joint)
    b = int(j.bodyid[0])
    if int(m.body_parentid[b]) != 0:
        raise ValueError(f"{mjcf}: {joint!r} must move a body fixed to the world")
    R0 = np.empty(9)
    mujoco.mju_quat2Mat(R0, m.body_quat[b])
    Ri = np.empty(9)
    mujoco.mju_quat2Mat(Ri, m.body_iquat[b])
    Ri = Ri.reshape(3, 3)
    axis = np.array(m.jnt_axis[j.id], float)
    axis /= np.linalg.norm(axis)
    c = np.array(m.body_ipos[b], float)
    mass = float(m.body_mass[b])
    I_com = Ri @ np.diag(m.body_inertia[b]) @ Ri.T
    inertia = float(axis @ I_com @ axis + mass * (c @ c - (c @ axis) ** 2))
    return dict(
        mass=mass,
        com=c,
        axis=axis,
        inertia=inertia,
        R0=R0.reshape(3, 3),
        damping=float(m.dof_damping[int(j.dofadr[0])]),
        gravity=np.array(m.opt.gravity, float),
    )


def gravity_torque(q, link):
    """Torque of gravity about the joint axis at link angle(s) q (scalar or array), N m: the
    centre of mass rotated about the axis (Rodrigues), r x m g projected on the axis."""
    q = np.asarray(q, float)
    a, c = link["axis"], link["com"]
    qq = q[..., None]
    r = (np.cos(qq) * c + np.sin(qq) * np.cross(a, c) + (1 - np.cos(qq)) * a * (a @ c)) @ link[
        "R0"
    ].T
    tau = np.cross(r, link["mass"] * link["gravity"]) @ (link["R0"] @ a)
    return float(tau) if q.ndim == 0 else tau


# ---------------------------------------------------------------- statics


def _stable_roots(f, lo, hi, n=4001):
    """Roots of f in [lo, hi] where f decreases (stable equilibria of a restoring torque)."""
    x = np.linspace(lo, hi, n)
    y = f(x)
    roots = []
    for i in np.flatnonzero(np.sign(y[:-1]) * np.sign(y[1:]) <= 0):
        if y[i] == 0.0 and i > 0 and y[i - 1] == 0.0:
            continue
        r = x[i] if y[i] == 0.0 else brentq(f, x[i], x[i + 1], xtol=1e-15, rtol=1e-15)
        h = 1e-7
        if f(r + h) - f(r - h) < 0:
            roots.append(float(r))
    return roots


def static_equilibrium(model, params, eq, preset, link, tau_ext=0.0):
    """The link angle where the closed-form elastic torque balances gravity (and tau_ext): the
    stable root of tau_el(q) + tau_g(q) + tau_ext = 0 nearest the equilibrium reference."""
    tau = spring(model, params)
    f = lambda q: tau(q, eq, preset) + gravity_torque(q, link) + tau_ext
    roots = _stable_roots(f, eq - math.pi / 2, eq + math.pi / 2)
    if not roots:
        raise ValueError(f"{model}: no static equilibrium for eq {eq}, preset {preset}")
    return min(roots, key=lambda r: abs(r - eq))


def linearised(model, params, eq, preset, link, q_star):
    """Stiffness -d(tau_el + tau_g)/dq at q_star (N m/rad), natural frequency (Hz), damping ratio
    and the slowest decay rate (1/s) of I qdd + c qd + sigma (q - q*) = 0."""
    tau = spring(model, params)
    f = lambda q: tau(q, eq, preset) + gravity_torque(q, link)
    h = 1e-6
    sigma = -(f(q_star + h) - f(q_star - h)) / (2 * h)
    I, c = link["inertia"], link["damping"]
    wn = math.sqrt(sigma / I)
    disc = c * c - 4 * I * sigma
    rate = c / (2 * I) if disc < 0 else (c - math.sqrt(disc)) / (2 * I)
    return dict(sigma=sigma, fn=wn / (2 * math.pi), zeta=c / (2 * math.sqrt(sigma * I)), decay=rate)


# ---------------------------------------------------------------- helpers


def with_mode(robot, mode):
    """A copy of an asr.Robot with every joint in `mode` (robot.toml is left unchanged)."""
    return dataclasses.replace(
        robot, joints=tuple(dataclasses.replace(j, mode=mode) for j in robot.joints)
    )


def step_metrics(t, q, q0, target, band=0.05, small=0.01):
    """Step response of one joint: final value, error to target, overshoot (% of the step
    q_final - q0), settling time into +/- band * |step| around q_final (s), and the number of
    half-oscillations: sign changes of q - q_final among samples more than `small` rad away."""
    qf = float(q[-1])
    span = qf - q0
    over = 100.0 * max(0.0, float(np.max((q - qf) * np.sign(span)))) / abs(span)
    out = np.flatnonzero(np.abs(q - qf) > band * abs(span))
    settle = float(t[out[-1] + 1]) if out.size and out[-1] + 1 < len(t) else float(t[0])
    e = q - qf
    e = e[np.abs(e) > small]
    half = int(np.count_nonzero(np.diff(np.sign(e)) != 0))
    return dict(
        q0=float(q0), final=qf, error=qf - target, overshoot=over, settling=settle, half_cycles=half
    )


# ---------------------------------------------------------------- fig. 7


def fig7(duration=3.0, t_step=0.2, step=STEP, trace_every=10):
    """1-DOF rig, four actuators soft and stiff, mode 3, step of the equilibrium to `step` at
    t_step. Returns {'rows': [...], 't': (n,), 'traces': {(variant, label): q (n,)}} where each
    row has the simulated final angle and speed, the static equilibrium from the closed forms
    (static), |final - static| and the tolerance from the damping envelope."""
    rows, traces, t = [], {}, None
    for variant, cases in FIG7_PRESETS.items():
        robot = asr.load_robot("pendulum_1dof", variant)
        joint = robot.joints[0]
        link = pendulum_link(robot.mjcf, joint.name)
        presets = np.array([c[0] for c in cases])
        jparams = [dict(joint.params, **({"k": c[1]} if c[1] is not None else {})) for c in cases]
        params = {joint.name: {"k": np.array([c[1] for c in cases])}} if variant == "sea" else None
        sim = asr.Sim(robot, 2, params=params)
        dt = sim.dt
        n0, n = int(round(t_step / dt)), int(round(duration / dt))
        before = np.zeros((2, 1, 2))
        before[:, 0, 1] = presets
        after = before.copy()
        after[:, 0, 0] = step
        q0 = [static_equilibrium(joint.model, jp, 0.0, p, link) for jp, p in zip(jparams, presets)]
        sim.reset(q0=np.array(q0)[:, None], refs=before)
        # two held-reference rollouts (the AwAS-II pivot check of Sim.rollout rejects
        # per-step references with N > 1, see tests/test_mengacci2021.py)
        a = sim.rollout(n0, before, record=("q", "qd"))
        b = sim.rollout(n - n0, after, record=("q", "qd"))
        q = np.concatenate([a["q"], b["q"]], axis=1)[:, :, 0]
        qd = b["qd"][:, -1, 0]
        t = np.arange(1, n + 1) * dt
        for i, (label, jp, p) in enumerate(zip(("soft", "stiff"), jparams, presets)):
            qs = static_equilibrium(joint.model, jp, step, p, link)
            lin = linearised(joint.model, jp, step, p, link, qs)
            amp = float(np.max(np.abs(q[i, n0:] - qs)))
            tol = 10.0 * amp * math.exp(-lin["decay"] * (duration - t_step)) + 1e-6
            rows.append(
                dict(
                    variant=variant,
                    label=label,
                    preset=float(jp["k"]) if variant == "sea" else float(p),
                    final=float(q[i, -1]),
                    qd_final=float(abs(qd[i])),
                    static=qs,
                    static_eq0=q0[i],
                    diff=abs(float(q[i, -1]) - qs),
                    tol=tol,
                    gap=step - float(q[i, -1]),
                    peak=float(q[i].max()),
                    decay=lin["decay"],
                    sigma=lin["sigma"],
                )
            )
            traces[(variant, label)] = q[i, ::trace_every]
    return dict(rows=rows, t=t[::trace_every], traces=traces, t_step=t_step, step=step)


# ---------------------------------------------------------------- fig. 11


def lockin(t, x, phase, freq, amplitude, cycles=4.0, hop=0.1):
    """Complex gain of x with respect to amplitude * sin(phase) along a slow chirp: over windows
    of `cycles` periods of the local frequency `freq`, least squares of x on sin(phase),
    cos(phase), 1 and t (offset and drift). Returns (frequencies, gains)."""
    dt = t[1] - t[0]
    F, H = [], []
    k = 0
    n = len(t)
    while k < n:
        half = int(cycles / 2 / freq[k] / dt)
        if k - half >= 0:
            if k + half >= n:
                break
            sl = slice(k - half, k + half)
            A = np.stack([np.sin(phase[sl]), np.cos(phase[sl]), np.ones(2 * half), t[sl] - t[k]], 1)
            c, *_ = np.linalg.lstsq(A, x[sl], rcond=None)
            F.append(freq[k])
            H.append((c[0] + 1j * c[1]) / amplitude)  # x = |H| sin(phase + angle H)
        k += max(1, int(hop / dt))
    return np.array(F), np.array(H)


def second_order(p, w):
    K, fn, zeta = p
    wn = 2 * np.pi * fn
    return K * wn**2 / (wn**2 - w**2 + 2j * zeta * wn * w)


def fit_second_order(F, H, guess):
    w = 2 * np.pi * F

    def res(p):
        r = second_order(p, w) - H
        return np.r_[r.real, r.imag]

    sol = least_squares(res, guess, bounds=([0.05, 0.1, 1e-4], [20.0, 500.0, 10.0]))
    return sol.x, float(np.sqrt(np.mean(sol.fun**2)))


def _band_edge(F, mag, ref):
    """First frequency where mag drops below ref / sqrt(2), linearly interpolated (None: never)."""
    below = np.flatnonzero(mag < ref / math.sqrt(2))
    if not below.size:
        return None
    i = int(below[0])
    if i == 0:
        return float(F[0])
    y0, y1, lim = mag[i - 1], mag[i], ref / math.sqrt(2)
    return float(F[i - 1] + (F[i] - F[i - 1]) * (y0 - lim) / (y0 - y1))


def fig11(
    duration=20.0,
    settle=1.0,
    mode=6,
    amplitude=CHIRP["amplitude"],
    f0=CHIRP["f0"],
    f1=CHIRP["f1"],
    presets=(SOFT, STIFF),
    trace_every=20,
):
    """1-DOF qbmove Advanced, chirp of the equilibrium reference (0.15 rad, 0.5 -> 6 Hz linear in
    `duration` s) around eq 0, presets soft / stiff, operation `mode` (6: motor PID and
    dynamics). Returns per preset the lock-in frequency response (reference -> link Hq,
    reference -> realised equilibrium Hm, joint Hj = Hq / Hm), the fitted joint model
    (K, fn, zeta), its resonance (Hz), peak gain and -3 dB bandwidth (Hz), the linearised closed
    form (fn, zeta), the in-band -3 dB points of Hq and Hm (None: above f1), the peak link
    excursion max|q - mean q| and the peak spring deflection max|(q - m) - mean| (rad)."""
    robot = with_mode(asr.load_robot("pendulum_1dof", "qbmove_advanced"), mode)
    joint = robot.joints[0]
    link = pendulum_link(robot.mjcf, joint.name)
    presets = np.asarray(presets, float)
    N = len(presets)
    sim = asr.Sim(robot, N)
    dt = sim.dt
    n = int(round(duration / dt))
    t = np.arange(n) * dt
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t**2 / (2 * duration))
    freq = f0 + (f1 - f0) * t / duration
    eq = amplitude * np.sin(phase)
    r0 = np.zeros((N, 1, 2))
    r0[:, 0, 1] = presets
    q0 = [static_equilibrium(joint.model, joint.params, 0.0, p, link) for p in presets]
    sim.reset(q0=np.array(q0)[:, None], refs=r0)
    sim.rollout(int(round(settle / dt)), r0, record=())
    refs = np.repeat(r0[:, None], n, axis=1)
    refs[:, :, 0, 0] = eq
    out = sim.rollout(n, refs, record=("q", "th1", "th2"))
    res = {}
    for i, p in enumerate(presets):
        q = out["q"][i, :, 0]
        m = 0.5 * (out["th1"][i, :, 0] + out["th2"][i, :, 0])
        F, Hq = lockin(t, q, phase, freq, amplitude)
        _, Hm = lockin(t, m, phase, freq, amplitude)
        Hj = Hq / Hm
        lin = linearised(joint.model, joint.params, 0.0, p, link, q0[i])
        (K, fn, zeta), rms = fit_second_order(F, Hj, [1.0, lin["fn"], max(lin["zeta"], 0.05)])
        ff = np.linspace(0.01, 10 * fn, 200001)
        mag = np.abs(second_order((K, fn, zeta), 2 * np.pi * ff))
        d = q - m
        res[float(p)] = dict(
            F=F,
            Hq=Hq,
            Hm=Hm,
            Hj=Hj,
            K=float(K),
            fn=float(fn),
            zeta=float(zeta),
            fit_rms=rms,
            f_res=float(ff[np.argmax(mag)]) if zeta < 1 / math.sqrt(2) else None,
            peak_gain=float(mag.max()),
            bandwidth=_band_edge(ff, mag, K),
            fn_lin=lin["fn"],
            zeta_lin=lin["zeta"],
            q_static=q0[i],
            bw_ref_link=_band_edge(F, np.abs(Hq), np.abs(Hq[0])),
            bw_motor=_band_edge(F, np.abs(Hm), np.abs(Hm[0])),
            peak_gain_ref_link=float(np.abs(Hq).max()),
            peak_link=float(np.max(np.abs(q - q.mean()))),
            peak_deflection=float(np.max(np.abs(d - d.mean()))),
            t=t[::trace_every],
            q=q[::trace_every],
            eq=eq[::trace_every],
            m=m[::trace_every],
        )
    return dict(presets=res, mode=mode, duration=duration, f0=f0, f1=f1, amplitude=amplitude)


# ---------------------------------------------------------------- figs. 12-13 (2-DOF arm)


def _arm_params(springs, robot):
    if springs == "toolbox":
        return {j.name: dict(TOOLBOX_SPRINGS) for j in robot.joints}
    if springs == "identified":
        return None
    raise ValueError(f"springs: got {springs!r}, valid: 'toolbox', 'identified'")


def _arm_springs(springs, robot):
    return [
        spring(j.model, dict(j.params, **(TOOLBOX_SPRINGS if springs == "toolbox" else {})))
        for j in robot.joints
    ]


def _arm_sim(variant, springs, presets, settle):
    """2-DOF arm, one instance per preset, settled at rest with equilibrium 0."""

    robot = asr.load_robot("qbmove_arm_2dof", variant)
    sim = asr.Sim(robot, len(presets), params=_arm_params(springs, robot))
    r0 = np.zeros((len(presets), 2, 2))
    r0[:, :, 1] = np.asarray(presets)[:, None]
    q0 = (
        None
        if springs == "identified"
        else (np.array(robot.initial_q) if variant == "vertical" else np.zeros(2))
    )
    sim.reset(q0=q0, refs=r0)
    sim.rollout(int(round(settle / sim.dt)), r0, record=())
    m = sim.models[0]
    friction = np.array([m.dof_frictionloss[d] for d in sim.dof_adr])
    return sim, robot, r0, friction


def friction_band(tau, preset, friction, eq=0.0):
    """The set of link angles around eq where the closed-form elastic torque
    stays within the joint's static friction (no gravity): a joint at rest may stop anywhere in
    it. Returns its (lower, upper) offsets from eq, rad (not centred for asymmetric springs)."""
    f = lambda d, s: tau(eq + d, eq, preset) + s * friction  # tau decreases with d
    upper = brentq(lambda d: f(d, 1.0), -1.5, 1.5, xtol=1e-12)
    lower = brentq(lambda d: f(d, -1.0), -1.5, 1.5, xtol=1e-12)
    return lower, upper


def fig12(
    duration=8.0, settle=3.0, step=STEP, springs="toolbox", presets=(SOFT, STIFF), trace_every=5
):
    """2-DOF arm, horizontal, mode 6: equilibrium steps 0 -> `step` on both joints at t = 0 from
    rest. Returns per preset and joint the step metrics (final, error to the target, overshoot %,
    5 % settling time, half-oscillations), the closed-form static-friction band around the target
    and the final link speed."""
    sim, robot, r0, friction = _arm_sim("horizontal", springs, presets, settle)
    taus = _arm_springs(springs, robot)
    q_start = sim.q
    n = int(round(duration / sim.dt))
    r1 = r0.copy()
    r1[:, :, 0] = step
    out = sim.rollout(n, r1, record=("q",))
    t = np.arange(1, n + 1) * sim.dt
    qd_end = np.abs(sim.qd)
    res = {}
    for i, p in enumerate(presets):
        joints = []
        for j in range(2):
            mtr = step_metrics(t, out["q"][i, :, j], q_start[i, j], step)
            lo, hi = friction_band(taus[j], p, friction[j], eq=step)
            mtr.update(
                band=(lo, hi),
                qd_end=float(qd_end[i, j]),
                in_band=bool(lo - 1e-3 <= mtr["final"] - step <= hi + 1e-3),
            )
            joints.append(mtr)
        res[float(p)] = dict(joints=joints, q=out["q"][i, ::trace_every])
    return dict(
        presets=res, t=t[::trace_every], step=step, springs=springs, friction=friction.tolist()
    )


def _sine_run(variant, springs, presets, periods, settle, amplitude, omega):
    sim, robot, r0, _ = _arm_sim(variant, springs, presets, settle)
    n = int(round(periods * 2 * math.pi / omega / sim.dt))
    t = np.arange(1, n + 1) * sim.dt  # time after each step (q is recorded)
    refs = np.repeat(r0[:, None], n, axis=1)
    refs[:, :, :, 0] = amplitude * np.sin(omega * (t - sim.dt))[None, :, None]  # at step start
    out = sim.rollout(n, refs, record=("q", "clamped"))
    return t, amplitude * np.sin(omega * t), out


def fig13(
    periods=2.0,
    settle=3.0,
    springs="toolbox",
    presets=(SOFT, STIFF),
    amplitude=SINE["amplitude"],
    omega=SINE["omega"],
    trace_every=5,
):
    """2-DOF arm, vertical (gravity), mode 6: eq(t) = 0.8 sin(0.8 t) on both joints from rest at
    eq 0, `periods` periods; the same on `horizontal` (no gravity on the joints) as the control.
    Returns per preset and joint the rms, max and mean of q - eq (rad), with and without gravity,
    and the fraction of steps with a spring at its deflection clamp."""
    t, eq, out = _sine_run("vertical", springs, presets, periods, settle, amplitude, omega)
    _, _, ctl = _sine_run("horizontal", springs, presets, periods, settle, amplitude, omega)
    res = {}
    for i, p in enumerate(presets):
        e = out["q"][i] - eq[:, None]
        eh = ctl["q"][i] - eq[:, None]
        res[float(p)] = dict(
            rms=np.sqrt(np.mean(e**2, 0)).tolist(),
            max=np.abs(e).max(0).tolist(),
            mean=e.mean(0).tolist(),
            rms_horizontal=np.sqrt(np.mean(eh**2, 0)).tolist(),
            mean_horizontal=eh.mean(0).tolist(),
            clamp_fraction=(out["clamped"][i] > 0).mean(0).tolist(),
            q=out["q"][i, ::trace_every],
            q_horizontal=ctl["q"][i, ::trace_every],
        )
    return dict(presets=res, t=t[::trace_every], eq=eq[::trace_every], springs=springs)


# ---------------------------------------------------------------- fig. 14


def fig14(duration=6.0, start=SWEEP["start"], end=SWEEP["end"], sweep=SWEEP["duration"], every=20):
    """5-DOF arm and the 2 kg box: joint 1's equilibrium follows a minimum-jerk sweep start ->
    end in `sweep` s, then is held to `duration`; other references stay at the variant's
    [initial]. Returns per variant (soft, stiff) the box displacement (m, xyz and horizontal
    norm, from MuJoCo's xpos), joint 1's final angle, the largest |tau_link| of joint 1 and
    traces sampled every `every` steps."""
    res = {}
    for variant in ("soft", "stiff"):
        robot = asr.load_robot("qbmove_arm_5dof", variant)
        sim = asr.Sim(robot, 1)
        d = sim.datas[0]
        box = sim.models[0].body("box").id
        p0 = d.xpos[box].copy()
        r0 = np.array(robot.initial_refs)[None]
        n = int(round(duration / sim.dt))
        t = np.arange(n) * sim.dt  # time at the start of each step
        refs = np.repeat(r0[:, None], n, axis=1)
        refs[0, :, 0, 0] = min_jerk(t, start, end, sweep)
        log_t, log_box, q1, tau1 = [], [], [], []
        for k in range(0, n, every):  # chunks of `every` steps, box position after each
            out = sim.rollout(min(every, n - k), refs[:, k : k + every], record=("q", "tau_link"))
            log_t.append(min(k + every, n) * sim.dt)
            log_box.append(d.xpos[box] - p0)
            q1.append(out["q"][0, -1, 0])
            tau1.append(np.abs(out["tau_link"][0, :, 0]).max())
        disp = log_box[-1]
        res[variant] = dict(
            preset=float(r0[0, 0, 1]),
            disp=disp,
            horizontal=float(np.hypot(*disp[:2])),
            q1_final=float(q1[-1]),
            q1_target=end,
            tau1_max=float(max(tau1)),
            t=np.array(log_t),
            box=np.array(log_box),
            q1=np.array(q1),
        )
    return dict(variants=res, start=start, end=end, sweep=sweep, duration=duration)


# ---------------------------------------------------------------- figures and summary


def _fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def summary(r7, r11, r12, r13, r14, r12_id=None, r13_id=None):
    lines = ["Mengacci et al. 2021 sec. 4.1-4.2 with asr (MuJoCo links, asr actuators)", ""]
    lines.append(
        f"Fig. 7  1-DOF rig, mode 3, equilibrium step 0 -> {r7['step']} rad "
        "(static: closed form + brentq)"
    )
    lines.append(
        f"  {'actuator':16s} {'case':5s} {'preset':>7s} {'final':>8s} {'static':>8s} "
        f"{'|diff|':>8s} {'tol':>8s} {'0.8-q':>8s} {'peak':>6s}"
    )
    for r in r7["rows"]:
        lines.append(
            f"  {r['variant']:16s} {r['label']:5s} {r['preset']:7.3f} {r['final']:8.5f} "
            f"{r['static']:8.5f} {r['diff']:8.1e} {r['tol']:8.1e} {r['gap']:8.5f} "
            f"{r['peak']:6.3f}"
        )
    lines += [
        "",
        f"Fig. 11 1-DOF qbmove Advanced, mode {r11['mode']}, chirp "
        f"{r11['amplitude']} rad {r11['f0']} -> {r11['f1']} Hz in {r11['duration']} s; "
        "joint = link / realised equilibrium (fitted 2nd order), ref->link in band",
    ]
    lines.append(
        f"  {'preset':>6s} {'fn':>6s} {'fn_lin':>6s} {'zeta':>6s} {'z_lin':>6s} "
        f"{'f_res':>6s} {'peak':>6s} {'bw-3dB':>7s} {'rms':>7s} | {'ref->q':>7s} "
        f"{'-3dB':>6s} {'motor':>6s} | {'pk link':>7s} {'pk defl':>7s}"
    )
    edge = lambda f: _fmt(f, "6.2f") if f is not None else f">{r11['f1']}"
    for p, r in r11["presets"].items():
        lines.append(
            f"  {p:6.2f} {r['fn']:6.2f} {r['fn_lin']:6.2f} {r['zeta']:6.3f} "
            f"{r['zeta_lin']:6.3f} {_fmt(r['f_res'], '6.2f')} {r['peak_gain']:6.3f} "
            f"{_fmt(r['bandwidth'], '7.2f')} {r['fit_rms']:7.4f} | "
            f"{r['peak_gain_ref_link']:7.3f} "
            f"{edge(r['bw_ref_link']):>6s} {edge(r['bw_motor']):>6s} | "
            f"{r['peak_link']:7.4f} {r['peak_deflection']:7.4f}"
        )
    for r12x in [r12] + ([r12_id] if r12_id else []):
        lines += [
            "",
            f"Fig. 12 2-DOF arm horizontal, mode 6, steps 0 -> {r12x['step']} rad, "
            f"springs {r12x['springs']} (joint friction {r12x['friction']} N m)",
        ]
        lines.append(
            f"  {'preset':>6s} {'joint':>5s} {'start':>7s} {'final':>7s} {'error':>7s} "
            f"{'band':>16s} {'over%':>6s} {'t_s5%':>6s} {'half':>4s} {'|qd|end':>8s}"
        )
        for p, r in r12x["presets"].items():
            for j, m in enumerate(r["joints"]):
                band = f"[{m['band'][0]:+.3f},{m['band'][1]:+.3f}]"
                lines.append(
                    f"  {p:6.2f} {j + 1:5d} {m['q0']:7.3f} {m['final']:7.4f} "
                    f"{m['error']:+7.4f} {band:>16s} {m['overshoot']:6.1f} "
                    f"{m['settling']:6.2f} {m['half_cycles']:4d} {m['qd_end']:8.1e}"
                )
    for r13x in [r13] + ([r13_id] if r13_id else []):
        lines += [
            "",
            f"Fig. 13 2-DOF arm vertical, mode 6, eq = 0.8 sin(0.8 t), springs "
            f"{r13x['springs']}: q - eq (rad), joints 1 / 2",
        ]
        lines.append(
            f"  {'preset':>6s} {'rms':>15s} {'max':>15s} {'mean':>15s} "
            f"{'rms no gravity':>15s} {'mean no grav.':>15s} {'clamp frac':>11s}"
        )
        for p, r in r13x["presets"].items():
            pair = lambda v, s="7.3f": " ".join(format(x, s) for x in v)
            lines.append(
                f"  {p:6.2f} {pair(r['rms']):>15s} {pair(r['max']):>15s} "
                f"{pair(r['mean'], '+7.3f'):>15s} {pair(r['rms_horizontal']):>15s} "
                f"{pair(r['mean_horizontal'], '+7.3f'):>15s} "
                f"{pair(r['clamp_fraction'], '5.2f'):>11s}"
            )
    lines += [
        "",
        f"Fig. 14 5-DOF arm + 2 kg box, joint 1 eq {r14['start']} -> {r14['end']} rad "
        f"(minimum jerk {r14['sweep']} s), {r14['duration']} s",
    ]
    lines.append(
        f"  {'variant':7s} {'preset':>6s} {'box dx,dy,dz (cm)':>22s} {'|dxy| cm':>9s} "
        f"{'q1 end':>7s} {'max|tau1|':>9s}"
    )
    for v, r in r14["variants"].items():
        dxyz = ",".join(f"{x * 100:+.2f}" for x in r["disp"])
        lines.append(
            f"  {v:7s} {r['preset']:6.2f} {dxyz:>22s} {r['horizontal'] * 100:9.2f} "
            f"{r['q1_final']:7.3f} {r['tau1_max']:9.3f}"
        )
    return "\n".join(lines)


_COLORS = {"soft": "#1f77b4", "stiff": "#d62728", SOFT: "#1f77b4", STIFF: "#d62728"}


def _plotly():
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:  # pragma: no cover
        raise SystemExit(
            "asr.experiments.mengacci2021 needs plotly for its figures (pip install plotly)"
        ) from None
    return go, make_subplots


def figures(r7, r11, r12, r13, r14):
    """{name: plotly figure} for the five figures."""
    go, make_subplots = _plotly()
    figs = {}

    names = list(FIG7_PRESETS)
    f = make_subplots(rows=2, cols=2, subplot_titles=names)
    ref = np.where(r7["t"] >= r7["t_step"], r7["step"], 0.0)
    for k, v in enumerate(names):
        row, col = k // 2 + 1, k % 2 + 1
        f.add_trace(
            go.Scatter(
                x=r7["t"],
                y=ref,
                name="equilibrium ref",
                showlegend=k == 0,
                line=dict(color="black", dash="dot"),
            ),
            row=row,
            col=col,
        )
        for r in (r for r in r7["rows"] if r["variant"] == v):
            c = _COLORS[r["label"]]
            f.add_trace(
                go.Scatter(
                    x=r7["t"],
                    y=r7["traces"][(v, r["label"])],
                    name=r["label"],
                    showlegend=k == 0,
                    line=dict(color=c),
                ),
                row=row,
                col=col,
            )
            f.add_trace(
                go.Scatter(
                    x=[r7["t"][0], r7["t"][-1]],
                    y=[r["static"]] * 2,
                    name="static (closed form)",
                    showlegend=False,
                    line=dict(color=c, dash="dash", width=1),
                ),
                row=row,
                col=col,
            )
    f.update_xaxes(title_text="t (s)")
    f.update_yaxes(title_text="q (rad)")
    f.update_layout(
        title="Mengacci et al. 2021 fig. 7: 1-DOF rig, 0.8 rad step, mode 3 "
        "(dashed: static equilibrium from the closed form)"
    )
    figs["fig7"] = f

    f = make_subplots(
        rows=3,
        cols=1,
        subplot_titles=("link angle (chirp of the equilibrium reference)", "|H|", "phase (deg)"),
    )
    for p, r in r11["presets"].items():
        c = _COLORS.get(p, None)
        f.add_trace(
            go.Scatter(x=r["t"], y=r["q"], name=f"q, preset {p}", line=dict(color=c)), row=1, col=1
        )
        f.add_trace(
            go.Scatter(
                x=r["t"],
                y=r["eq"],
                name="eq ref",
                showlegend=p == SOFT,
                line=dict(color="black", width=1, dash="dot"),
            ),
            row=1,
            col=1,
        )
        w = 2 * np.pi * r["F"]
        fit = second_order((r["K"], r["fn"], r["zeta"]), w)
        for H, nm, dash in ((r["Hq"], "ref->link", "solid"), (r["Hj"], "joint", "dot")):
            f.add_trace(
                go.Scatter(x=r["F"], y=np.abs(H), name=f"{nm} {p}", line=dict(color=c, dash=dash)),
                row=2,
                col=1,
            )
            f.add_trace(
                go.Scatter(
                    x=r["F"],
                    y=np.degrees(np.angle(H)),
                    name=f"{nm} {p}",
                    showlegend=False,
                    line=dict(color=c, dash=dash),
                ),
                row=3,
                col=1,
            )
        f.add_trace(
            go.Scatter(
                x=r["F"],
                y=np.abs(fit),
                name=f"fit {p}: fn {r['fn']:.2f} Hz",
                line=dict(color=c, dash="dash", width=1),
            ),
            row=2,
            col=1,
        )
    f.update_xaxes(title_text="t (s)", row=1, col=1)
    f.update_xaxes(title_text="f (Hz)", row=2, col=1)
    f.update_xaxes(title_text="f (Hz)", row=3, col=1)
    f.update_layout(
        title=f"Mengacci et al. 2021 fig. 11: chirp {r11['amplitude']} rad, "
        f"{r11['f0']}-{r11['f1']} Hz, mode {r11['mode']}",
        height=900,
    )
    figs["fig11"] = f

    f = make_subplots(rows=2, cols=1, subplot_titles=("joint 1", "joint 2"))
    for j in range(2):
        f.add_trace(
            go.Scatter(
                x=r12["t"],
                y=np.full(len(r12["t"]), r12["step"]),
                name="eq ref",
                showlegend=j == 0,
                line=dict(color="black", dash="dot"),
            ),
            row=j + 1,
            col=1,
        )
        for p, r in r12["presets"].items():
            f.add_trace(
                go.Scatter(
                    x=r12["t"],
                    y=r["q"][:, j],
                    name=f"preset {p}",
                    showlegend=j == 0,
                    line=dict(color=_COLORS.get(p)),
                ),
                row=j + 1,
                col=1,
            )
    f.update_xaxes(title_text="t (s)")
    f.update_yaxes(title_text="q (rad)")
    f.update_layout(
        title=f"Mengacci et al. 2021 fig. 12: 2-DOF horizontal arm, 0.8 rad steps, "
        f"mode 6, springs {r12['springs']}"
    )
    figs["fig12"] = f

    f = make_subplots(rows=2, cols=1, subplot_titles=("joint 1", "joint 2"))
    for j in range(2):
        f.add_trace(
            go.Scatter(
                x=r13["t"],
                y=r13["eq"],
                name="eq ref",
                showlegend=j == 0,
                line=dict(color="black", dash="dot"),
            ),
            row=j + 1,
            col=1,
        )
        for p, r in r13["presets"].items():
            f.add_trace(
                go.Scatter(
                    x=r13["t"],
                    y=r["q"][:, j],
                    name=f"vertical, preset {p}",
                    showlegend=j == 0,
                    line=dict(color=_COLORS.get(p)),
                ),
                row=j + 1,
                col=1,
            )
            f.add_trace(
                go.Scatter(
                    x=r13["t"],
                    y=r["q_horizontal"][:, j],
                    name=f"horizontal (no gravity), preset {p}",
                    showlegend=j == 0,
                    line=dict(color=_COLORS.get(p), dash="dash", width=1),
                ),
                row=j + 1,
                col=1,
            )
    f.update_xaxes(title_text="t (s)")
    f.update_yaxes(title_text="q (rad)")
    f.update_layout(
        title=f"Mengacci et al. 2021 fig. 13: 2-DOF vertical arm, eq = 0.8 sin(0.8 t), "
        f"mode 6, springs {r13['springs']}"
    )
    figs["fig13"] = f

    f = make_subplots(
        rows=2, cols=1, subplot_titles=("joint 1 (base yaw)", "box displacement (cm)")
    )
    for v, r in r14["variants"].items():
        c = _COLORS[v]
        eq = min_jerk(r["t"], r14["start"], r14["end"], r14["sweep"])
        f.add_trace(
            go.Scatter(
                x=r["t"],
                y=eq,
                name="eq ref",
                showlegend=v == "soft",
                line=dict(color="black", dash="dot"),
            ),
            row=1,
            col=1,
        )
        f.add_trace(
            go.Scatter(x=r["t"], y=r["q1"], name=f"q1 {v}", line=dict(color=c)), row=1, col=1
        )
        for k, (axis, dash) in enumerate((("x", "dot"), ("y", "solid"))):
            f.add_trace(
                go.Scatter(
                    x=r["t"],
                    y=100 * r["box"][:, k],
                    name=f"box {axis} {v}",
                    line=dict(color=c, dash=dash),
                ),
                row=2,
                col=1,
            )
    f.update_xaxes(title_text="t (s)")
    f.update_layout(
        title="Mengacci et al. 2021 fig. 14: 5-DOF arm pushing a 2 kg box by a base-yaw sweep"
    )
    figs["fig14"] = f
    return figs


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
