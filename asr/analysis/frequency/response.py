"""Frequency responses (Bode plots) of one joint by batched stepped sines.

>>> fr = frequency_response("qbmove_arm_2dof", joint=0, input="equilibrium", output="q")
>>> fr.magnitude.shape, fr.bandwidth()          # (presets, freqs); -3 dB frequency per preset, Hz
>>> fr.figure().show()

Every (preset, frequency) pair is one instance of ONE batch (an asr.Sim of P x F instances for a
robot, an asr.Batch for actuators alone), all stepped together. Instance (p, f) drives the
joint's input with a sine of amplitude A at its frequency, the other inputs held; after a
rollout long enough for the slowest frequency, the output's discrete Fourier coefficient over
the last `cycles` whole periods of that instance gives magnitude and phase. Everything before
that window (at least `settle_cycles` periods, more for the faster frequencies) lets the
transients die. Method, timing conventions and accuracy: docs/frequency.md.
"""

import dataclasses

import numpy as np

from asr.analysis.frequency.measure import Accumulator, run_sines, start_run
from asr.analysis.frequency.rig import BATCH_INPUTS as BATCH_INPUTS
from asr.analysis.frequency.rig import BATCH_OUTPUTS as BATCH_OUTPUTS
from asr.analysis.frequency.rig import SIM_INPUTS as SIM_INPUTS
from asr.analysis.frequency.rig import SIM_OUTPUTS as SIM_OUTPUTS
from asr.analysis.frequency.rig import rig_of
from asr.common import validate as V
from asr.common.optional import need
from asr.core.models import compliance, reference_map

# name: unit. Inputs are driven with a sine; outputs are recorded state fields.
INPUTS = {"equilibrium": "rad", "tau_ext": "N m", "q": "rad"}
OUTPUTS = {"q": "rad", "tau_link": "N m", "tau_joint": "N m"}
# Time of a recorded sample of step n, in steps: q is the link state at the end of the step,
# torques are computed from the state at its start (asr.Sim.rollout, `record`).
_OUTPUT_DELAY = {"q": 1, "tau_link": 0, "tau_joint": 0}
_EQ_MODES = (3, 6)  # modes whose first reference is the equilibrium
_MOTOR_MODES = (2, 5)  # single-motor joints: the motor angle is the spring's equilibrium
DEFAULT_ANGLE = 0.01  # rad: default amplitude of an angle input (small-signal)


@dataclasses.dataclass(frozen=True)
class FrequencyResponse:
    """Frequency response of one joint, one curve per preset.

    freqs: (F,) Hz, ascending: the excitation frequencies, each snapped so that `cycles`
        periods are a whole number of steps.
    presets: (P,) in `preset_unit` (the second reference, or the spring parameter of
        single-motor SEAs).
    magnitude: (P, F) |output / input| in `unit` (e.g. "rad/rad", "rad/(N m)", "N m/rad").
    phase: (P, F) rad, output relative to input, unwrapped along freqs.
    residual: (P, F) dimensionless: RMS of the output minus its mean and fitted sine, over the
        RMS of the output minus its mean, in the window (0: a pure sine; large: transients,
        nonlinearity or noise; measurements with residual above ~0.05 are doubtful).
    amplitude: input amplitude, input unit. dt: step, s. steps: length of the rollout.
    """

    freqs: np.ndarray
    presets: np.ndarray
    magnitude: np.ndarray
    phase: np.ndarray
    residual: np.ndarray
    input: str
    output: str
    joint: str
    unit: str
    preset_unit: str
    amplitude: float
    dt: float
    cycles: int
    settle_cycles: int
    steps: int

    @property
    def response(self):
        """(P, F) complex output / input, `unit`."""
        return self.magnitude * np.exp(1j * self.phase)

    def bandwidth(self, drop_db=3.0):
        """(P,) Hz: the lowest frequency where the magnitude falls drop_db (dB, > 0) below its
        value at the lowest frequency, interpolated linearly in log f and dB. ValueError naming
        the preset when its curve never falls that far (extend freqs upwards)."""
        drop_db = V.positive_float(drop_db, "drop_db")
        db = 20 * np.log10(self.magnitude)
        out = np.empty(len(self.presets))
        for p, curve in enumerate(db):
            level = curve[0] - drop_db
            below = np.flatnonzero(curve < level)
            if below.size == 0 or below[0] == 0:
                raise ValueError(
                    f"drop_db: the magnitude of preset {V.num(self.presets[p])} "
                    f"does not fall {drop_db:g} dB within {self.freqs[0]:.4g}.."
                    f"{self.freqs[-1]:.4g} Hz; extend freqs"
                )
            k = below[0]
            lf = np.log(self.freqs[k - 1 : k + 1])
            s = (level - curve[k - 1]) / (curve[k] - curve[k - 1])
            out[p] = np.exp(lf[0] + s * (lf[1] - lf[0]))
        return out

    def figure(self):
        """A plotly Bode figure: magnitude (log axis, `unit`) and phase (degrees) against
        frequency (Hz, log axis), one trace per preset."""
        need("plotly", "plots", "FrequencyResponse.figure")
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.06)
        for p, preset in enumerate(self.presets):
            name = f"preset {preset:g} {self.preset_unit}".rstrip()
            common = dict(x=self.freqs, name=name, legendgroup=name, mode="lines+markers")
            fig.add_trace(go.Scatter(y=self.magnitude[p], **common), row=1, col=1)
            fig.add_trace(
                go.Scatter(y=np.degrees(self.phase[p]), showlegend=False, **common), row=2, col=1
            )
        fig.update_xaxes(type="log")
        fig.update_xaxes(title_text="frequency (Hz)", row=2, col=1)
        fig.update_yaxes(
            type="log", title_text=f"|{self.output} / {self.input}| ({self.unit})", row=1, col=1
        )
        fig.update_yaxes(title_text="phase (deg)", row=2, col=1)
        fig.update_layout(title=f"joint {self.joint}: {self.output} / {self.input}")
        return fig


def frequency_response(
    system,
    joint=0,
    input="equilibrium",
    output="q",
    freqs=None,
    presets=None,
    *,
    amplitude=None,
    cycles=5,
    settle_cycles=5,
    operating_point=None,
    variant=None,
    dt=1e-3,
    n_freqs=20,
    max_steps=2_000_000,
    threads=1,
    progress=False,
):
    """Stepped-sine frequency response of `joint`, one batch for all presets and frequencies.

    system: an asr.Sim (its robot, modes, actuator parameters of instance 0, time step and
        solver settings; its state is not touched), a robot (name, folder path or asr.Robot,
        with `variant`), or an asr.Batch (actuators alone, the link angle prescribed; instance
        0's parameters; `dt` s per step).
    joint: index or name of the actuated joint.
    input: "equilibrium" (the joint's first reference, modes 3 / 6, or the motor angle of a
        single-motor joint in modes 2 / 5; rad), "tau_ext" (external link torque, N m; robots
        only) or "q" (the prescribed link angle, rad; Batch only).
    output: "q" (link angle, rad; robots only), "tau_link" (actuator torque on the link, N m),
        "tau_joint" (tau_link + tau_ext, N m).
    freqs: (F,) Hz, each in (0, 1 / (2 dt)); default n_freqs log-spaced from a fifth of the
        lowest to three times the highest natural frequency sqrt(k / I) of the presets (k the
        spring stiffness at the operating point, I the link inertia about the joint), at most
        1 / (10 dt); for a Batch 0.5 to 50 Hz.
    presets: (P,) the joint's stiffness presets (second reference, or for preset kind 'param'
        the spring parameter, e.g. the SEA's k); default the model's soft and stiff presets.
    amplitude: input amplitude (input unit); default 0.01 rad for angles and, for tau_ext, the
        torque that deflects the softest preset's spring by 0.01 rad.
    cycles: whole periods in each measuring window; settle_cycles: periods before it (at
        least). operating_point: the joint's first reference the sine is added to (rad;
        default the robot's initial reference, else 0); the link starts shifted by as much.
    max_steps: refuse longer rollouts (the slowest frequency sets the length).
    threads: native threads of the batch. progress: a tqdm bar over the rollout's steps.
    Returns a FrequencyResponse.
    """
    rig = rig_of(system, variant, dt, threads)
    j = _joint_index(rig, joint)
    _check_choice(input, "input", rig.inputs, rig.kind)
    _check_choice(output, "output", rig.outputs, rig.kind)
    spec = rig.specs[j]
    _check_joint(rig, j, input)
    presets = _presets(spec, presets)
    cycles = V.positive_int(cycles, "cycles")
    settle_cycles = V.positive_int(settle_cycles, "settle_cycles", lo=0)
    op = (
        rig.refs0[j, 0]
        if operating_point is None
        else float(V.finite_array(operating_point, "operating_point", ()))
    )
    stiffness = np.array([_stiffness(rig, j, op, p) for p in presets])
    amplitude = _amplitude(amplitude, input, stiffness)
    freqs = _freqs(rig, j, freqs, stiffness, n_freqs)
    # samples per window; above 2 per cycle so that no snapped frequency reaches Nyquist
    windows = np.maximum(np.rint(cycles / (freqs * rig.dt)), 2 * cycles + 1).astype(np.int64)
    freqs = cycles / (windows * rig.dt)  # snapped: whole cycles
    settle = np.ceil(settle_cycles / (freqs * rig.dt)).astype(np.int64)
    steps = int(np.max(windows + settle))
    max_steps = V.positive_int(max_steps, "max_steps")
    if steps > max_steps:
        raise ValueError(
            f"freqs: the lowest, {freqs[0]:.4g} Hz, needs {steps} steps of "
            f"{rig.dt:g} s ({settle_cycles} + {cycles} cycles), more than "
            f"max_steps = {max_steps}; raise the lowest frequency or max_steps"
        )
    P, F = len(presets), len(freqs)
    omega = np.tile(2 * np.pi * freqs, P)  # instance p * F + f
    start = steps - np.tile(windows, P)
    run = start_run(rig, P * F, j, np.repeat(presets, F), op)
    acc = Accumulator(omega, start, rig.dt, _OUTPUT_DELAY[output])
    run_sines(run, j, input, output, amplitude, steps, acc, progress)
    ratio = (acc.output / acc.input).reshape(P, F)
    return FrequencyResponse(
        freqs=V.read_only(freqs),
        presets=V.read_only(presets),
        magnitude=V.read_only(np.abs(ratio)),
        phase=V.read_only(np.unwrap(np.angle(ratio), axis=1)),
        residual=V.read_only(acc.residual().reshape(P, F)),
        input=input,
        output=output,
        joint=rig.joint_names[j],
        unit=f"{OUTPUTS[output]}/{_unit_text(INPUTS[input])}",
        preset_unit=spec.preset.unit,
        amplitude=amplitude,
        dt=rig.dt,
        cycles=cycles,
        settle_cycles=settle_cycles,
        steps=steps,
    )


# ---------------------------------------------------------------- checks and defaults


def _joint_index(rig, joint):
    if isinstance(joint, str):
        if joint not in rig.joint_names:
            raise ValueError(
                f"joint: unknown joint {joint!r}; actuated joints: {', '.join(rig.joint_names)}"
            )
        return rig.joint_names.index(joint)
    return V.positive_int(joint, "joint", lo=0, hi=len(rig.specs) - 1)


def _check_choice(value, name, valid, kind):
    if not isinstance(value, str) or value not in valid:
        what = (
            "a robot (link dynamics)" if kind == "robot" else "an asr.Batch (link angle prescribed)"
        )
        raise ValueError(f"{name}: got {value!r}; valid for {what}: {', '.join(valid)}")


def _check_joint(rig, j, input):
    spec, mode = rig.specs[j], int(rig.modes[j])
    if spec.nmotor == 0 or spec.preset.kind == "none":
        raise ValueError(
            f"joint: {rig.joint_names[j]!r} is rigid (model {spec.name!r}); a "
            "frequency response compares the stiffness presets of a spring"
        )
    eq_modes = _EQ_MODES + (_MOTOR_MODES if spec.nmotor == 1 else ())
    if input == "equilibrium" and mode not in eq_modes:
        raise ValueError(
            f"input: 'equilibrium' needs joint {rig.joint_names[j]!r} in mode "
            f"{' or '.join(map(str, eq_modes))} (its first reference is then the "
            f"equilibrium), got mode {mode}"
        )


def _presets(spec, presets):
    pre = spec.preset
    if presets is None:
        return np.array([pre.soft, pre.stiff])
    values = V.finite_array(np.atleast_1d(V.real_array(presets, "presets")), "presets")
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"presets: expected a non-empty 1-D sequence, got shape {values.shape}")
    if pre.kind == "param":
        spec.param(pre.param).check(values, f"presets: {spec.name} parameter ")
        return values
    bad = values[(values < pre.lo) | (values > pre.hi)]
    if bad.size:
        raise ValueError(
            f"presets: got {V.num(bad[0])}, valid range [{V.num(pre.lo)}, "
            f"{V.num(pre.hi)}] {pre.unit} ({pre.meaning})"
        )
    return values


def _model_params(spec, params):
    """The model's own spring parameters out of a joint's full parameter dict."""
    own = {p.name for p in spec.params}
    return {k: v for k, v in params.items() if k in own}


def _stiffness(rig, j, op, preset):
    """Spring stiffness of joint j at link angle op with the motors where the references
    (op, preset) put them, N m/rad."""
    spec = rig.specs[j]
    params = _model_params(spec, rig.params[j])
    ref2 = rig.refs0[j, 1]
    if spec.preset.kind == "param":
        params[spec.preset.param] = preset
    else:
        ref2 = preset
    th1, th2 = reference_map(spec.name, op, ref2, **params)
    return float(compliance(spec.name, op, th1, th2, **params).stiffness)


def _amplitude(amplitude, input, stiffness):
    if amplitude is not None:
        return V.positive_float(amplitude, "amplitude")
    if INPUTS[input] == "rad":
        return DEFAULT_ANGLE
    k = float(np.min(stiffness))
    if not k > 0:
        raise ValueError(
            f"amplitude: no default for tau_ext (the softest preset has stiffness "
            f"{k:g} N m/rad at the operating point); give one, N m"
        )
    return DEFAULT_ANGLE * k


def _link_inertia(robot, j):
    """Inertia about joint j at the initial configuration, kg m^2: 1 / (M^-1)_jj."""
    import mujoco

    from asr.robots.robot import joint_addresses

    m = robot.mj_model()
    d = mujoco.MjData(m)
    qpos_adr, dof_adr = joint_addresses(m, robot.joint_names, robot.mjcf)
    if robot.initial_q is not None:
        d.qpos[qpos_adr] = robot.initial_q
    mujoco.mj_forward(m, d)
    unit, col = np.zeros((1, m.nv)), np.zeros((1, m.nv))
    unit[0, dof_adr[j]] = 1.0
    mujoco.mj_solveM(m, d, col, unit)
    return 1.0 / col[0, dof_adr[j]]


def _freqs(rig, j, freqs, stiffness, n_freqs):
    nyquist = 0.5 / rig.dt
    if freqs is None:
        n = V.positive_int(n_freqs, "n_freqs", lo=2)
        if rig.kind == "batch":
            lo, hi = 0.5, 50.0
        else:
            inertia = _link_inertia(rig.robot, j)
            fn = np.sqrt(np.clip(stiffness, 1e-12, None) / inertia) / (2 * np.pi)
            lo, hi = fn.min() / 5, 3 * fn.max()
        hi = min(hi, 0.1 / rig.dt)
        return np.geomspace(min(lo, hi / 10), hi, n)
    f = V.finite_array(np.atleast_1d(V.real_array(freqs, "freqs")), "freqs")
    if f.ndim != 1 or f.size == 0:
        raise ValueError(f"freqs: expected a non-empty 1-D sequence, Hz, got shape {f.shape}")
    bad = f[(f <= 0) | (f >= nyquist)]
    if bad.size:
        raise ValueError(
            f"freqs: got {V.num(bad[0])} Hz, valid range (0, {nyquist:g}) Hz "
            f"(below the Nyquist frequency 1 / (2 dt), dt = {rig.dt:g} s)"
        )
    return np.sort(f)


def _unit_text(unit):
    return f"({unit})" if " " in unit else unit
