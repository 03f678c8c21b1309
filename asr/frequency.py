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

from asr import _validate as V
from asr._optional import need
from asr.batch import Batch, Joint
from asr.models import compliance, reference_map
from asr.robot import Robot, load_robot
from asr.sim import Sim

# name: unit. Inputs are driven with a sine; outputs are recorded state fields.
INPUTS = {"equilibrium": "rad", "tau_ext": "N m", "q": "rad"}
OUTPUTS = {"q": "rad", "tau_link": "N m", "tau_joint": "N m"}
# What each system supports: a Sim has link dynamics; a Batch prescribes the link angle, so
# only torques are outputs and the link angle itself may be the input (dynamic stiffness).
SIM_INPUTS, SIM_OUTPUTS = ("equilibrium", "tau_ext"), ("q", "tau_link", "tau_joint")
BATCH_INPUTS, BATCH_OUTPUTS = ("equilibrium", "q"), ("tau_link", "tau_joint")
# Time of a recorded sample of step n, in steps: q is the link state at the end of the step,
# torques are computed from the state at its start (asr.Sim.rollout, `record`).
_OUTPUT_DELAY = {"q": 1, "tau_link": 0, "tau_joint": 0}
_EQ_MODES = (3, 6)  # modes whose first reference is the equilibrium
_MOTOR_MODES = (2, 5)  # single-motor joints: the motor angle is the spring's equilibrium
DEFAULT_ANGLE = 0.01  # rad: default amplitude of an angle input (small-signal)
_CHUNK = 4096  # steps per rollout call (bounds the per-step input arrays)


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
    rig = _rig(system, variant, dt, threads)
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
    run = _start(rig, P * F, j, np.repeat(presets, F), op)
    acc = _Accumulator(omega, start, rig.dt, _OUTPUT_DELAY[output])
    _run(run, j, input, output, amplitude, steps, acc, progress)
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


# ---------------------------------------------------------------- the systems


@dataclasses.dataclass
class _Rig:
    """What frequency_response needs of a system: its joints and a builder of the batch."""

    kind: str  # "robot" or "batch"
    specs: tuple
    modes: np.ndarray  # (J,)
    params: list  # J dicts {parameter: instance-0 value}
    joint_names: tuple[str, ...]
    refs0: np.ndarray  # (J, 2) held references
    dt: float
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    build: object  # build(n, params) -> asr.Sim or asr.Batch
    robot: object = None


def _rig(system, variant, dt, threads):
    if isinstance(system, Batch):
        return _batch_rig(system, dt)
    if isinstance(system, Sim):
        if system.controller is not None:
            raise ValueError(
                "system: a Sim with an interaction controller (it writes the first "
                "references); pass its robot instead"
            )
        b = system.batch
        settings = dict(
            threads=b.threads,
            max_substep=b.max_substep,
            motor_scheme=b.motor_scheme,
            engine=system.engine,
        )
        return _robot_rig(system.robot, _params_of(b), b.modes, settings, system.dt)
    if isinstance(system, (str, Robot)) or hasattr(system, "__fspath__"):
        robot = system if isinstance(system, Robot) else load_robot(system, variant)
        modes = np.array([j.mode for j in robot.joints])
        return _robot_rig(
            robot, [dict(j.params) for j in robot.joints], modes, dict(threads=threads)
        )
    raise TypeError(
        f"system: expected an asr.Sim, an asr.Batch, a robot name, path or "
        f"asr.Robot, got {type(system).__name__}"
    )


def _params_of(batch):
    """Every parameter of every joint, instance 0's value (the order of all_params sets
    pos_min before pos_max, so setting them in turn is always valid)."""
    return [
        {p.name: float(batch.get_param(j, p.name)[0]) for p in spec.all_params}
        for j, spec in enumerate(batch.specs)
    ]


def _robot_rig(robot, params, modes, settings, dt=None):
    from asr.models import get_model

    specs = tuple(get_model(j.model).spec for j in robot.joints)
    refs0 = (
        np.zeros((len(specs), 2))
        if robot.initial_refs is None
        else np.array(robot.initial_refs, dtype=float)
    )

    def build(n, per_joint):
        sim = Sim(
            robot,
            n,
            params={k: {**params[k], **per_joint.get(k, {})} for k in range(len(specs))},
            **settings,
        )
        for k, mode in enumerate(modes):
            sim.batch.set_mode(k, int(mode))
        return sim

    dt = float(robot.mj_model().opt.timestep) if dt is None else dt
    return _Rig(
        "robot",
        specs,
        np.asarray(modes),
        params,
        robot.joint_names,
        refs0,
        dt,
        SIM_INPUTS,
        SIM_OUTPUTS,
        build,
        robot,
    )


def _batch_rig(batch, dt):
    dt = batch.check_dt(dt)
    params, modes = _params_of(batch), batch.modes

    def build(n, per_joint):
        joints = [
            Joint(s.name, int(m), {**params[k], **per_joint.get(k, {})})
            for k, (s, m) in enumerate(zip(batch.specs, modes))
        ]
        return Batch(
            joints,
            n,
            threads=batch.threads,
            max_substep=batch.max_substep,
            motor_scheme=batch.motor_scheme,
        )

    names = tuple(f"{k} ({s.name})" for k, s in enumerate(batch.specs))
    return _Rig(
        "batch",
        batch.specs,
        modes,
        params,
        names,
        np.zeros((len(modes), 2)),
        dt,
        BATCH_INPUTS,
        BATCH_OUTPUTS,
        build,
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

    from asr.robot import joint_addresses

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


# ---------------------------------------------------------------- running


class _Accumulator:
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
class _Run:
    """The batched system, reset at the operating point: link angles q0 (n, J), rad, and held
    references refs (n, J, 2); dt s."""

    system: object
    q0: np.ndarray
    refs: np.ndarray
    dt: float


def _start(rig, n, j, instance_presets, op):
    """A _Run of n instances, instance i with preset instance_presets[i]."""
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
    return _Run(system, q0, refs, rig.dt)


def _run(run, j, input, output, amplitude, steps, acc, progress):
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
