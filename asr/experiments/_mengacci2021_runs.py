"""[Mengacci2021]'s simulated runs with asr.Sim: the paper's settings (sec. 4.1-4.2) and one
function per figure (fig7, fig11, fig12, fig13, fig14) returning its numbers and traces; the
summary and plots are in asr.experiments._mengacci2021_report."""

import dataclasses
import math

import numpy as np
from scipy.optimize import brentq, least_squares

import asr
from asr.experiments._mengacci2021_closed_forms import (
    linearised,
    pendulum_link,
    spring,
    static_equilibrium,
)
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
        # per-step references with N > 1, see tests/experiments/test_mengacci2021.py)
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
    return sim, robot, r0, sim.joint_friction()  # N m, per joint (the MJCF's frictionloss)


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


def _box_position(sim):
    """World position of the body `box` (m) in instance 0."""
    position, _ = sim.body_state("box")
    return position


def fig14(duration=6.0, start=SWEEP["start"], end=SWEEP["end"], sweep=SWEEP["duration"], every=20):
    """5-DOF arm and the 2 kg box: joint 1's equilibrium follows a minimum-jerk sweep start ->
    end in `sweep` s, then is held to `duration`; other references stay at the variant's
    [initial]. Returns per variant (soft, stiff) the box displacement (m, xyz and horizontal
    norm, of the box body's frame), joint 1's final angle, the largest |tau_link| of joint 1
    and traces sampled every `every` steps."""
    res = {}
    for variant in ("soft", "stiff"):
        robot = asr.load_robot("qbmove_arm_5dof", variant)
        sim = asr.Sim(robot, 1)
        p0 = _box_position(sim)
        r0 = np.array(robot.initial_refs)[None]
        n = int(round(duration / sim.dt))
        t = np.arange(n) * sim.dt  # time at the start of each step
        refs = np.repeat(r0[:, None], n, axis=1)
        refs[0, :, 0, 0] = min_jerk(t, start, end, sweep)
        log_t, log_box, q1, tau1 = [], [], [], []
        for k in range(0, n, every):  # chunks of `every` steps, box position after each
            out = sim.rollout(min(every, n - k), refs[:, k : k + every], record=("q", "tau_link"))
            log_t.append(min(k + every, n) * sim.dt)
            log_box.append(_box_position(sim) - p0)
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
