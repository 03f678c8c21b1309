"""Parameter identification from data: fit a joint's parameters by nonlinear least squares.

>>> res = identify("qbmove_advanced", {"q": q, "theta1": th1, "theta2": th2, "tau": tau},
...                ["k1", "a1", "k2", "a2"])
>>> res.estimates["k1"], res.ci95["k1"]
>>> print(res.summary())

Three kinds of data (docs/identification.md has the formats and the method):

    "static"  torque-deflection samples (M,): q, theta1, theta2 (rad; awas2: the pivot, m) and
              the measured link torque tau (N m); residual asr.compliance(...).tau_link - tau,
              every parameter set of a Jacobian in ONE vectorised call.
    "bench"   an actuator alone (asr.Batch, no MuJoCo) with the link prescribed: references
              refs (steps, 2), link angles q (steps,) rad and velocities qd (steps,) rad/s held
              during step k, and the link torque tau (steps,) N m recorded after step k.
    "robot"   rollouts of a robot (asr.Sim): references refs (steps, J, 2) and the link angles
              q (steps, J) rad measured after every step (optionally link torques tau
              (steps, J) N m); the residual is the simulated minus the measured trajectory.

The finite-difference Jacobian of a rollout is ONE batched rollout whose p + 1 instances are the
point and its p perturbations (asr guarantees a batch equals its single runs), so an iteration
costs about one rollout of p + 1 instances rather than p + 1 rollouts.

Confidence intervals come from the Jacobian J of the residuals at the solution (parameters in
their SI units): cov = s^2 (J^T J)^-1, s^2 = (residual sum of squares) / (m - p), m residuals
and p parameters; stderr = sqrt(diag(cov)); ci95 = estimate +/- t_{0.975, m - p} stderr
(Student's t). They are exact for a model linear in its parameters with independent Gaussian
noise of one variance, and first-order (asymptotic) otherwise.
"""

import numpy as np

from asr.analysis.identification.data import (
    _array,
    _per_joint,
    _refs,
    _time_step,
    load_data,
    register_reader,
)
from asr.analysis.identification.params import fitted_params, fixed_params
from asr.analysis.identification.result import FORMAT, KINDS, UNITS, Identification
from asr.common import validate as V
from asr.common.optional import need
from asr.core.batch import Batch, Joint
from asr.core.models import compliance, get_model

# what the simulation records for each measured channel
_RECORD = {"q": "q", "tau": "tau_link"}
_PENALTY = 1e6  # residual, in noise standard deviations, of a sample of a diverged rollout


# ---------------------------------------------------------------- residual evaluators
# Each takes P, (n, p) parameter sets in SI units, and returns {channel: (n, ...) simulated}.


def _static_model(model, data, plist, held):
    q = _array(data, "q", (None,))
    m = q.shape[0]
    arrays = {
        k: _array(data, k, (m,), required=k in ("theta1", "tau"))
        for k in ("theta1", "theta2", "qd", "theta1_d", "theta2_d", "tau")
    }
    inputs = {
        k: (0.0 if arrays[k] is None else arrays[k])
        for k in ("theta2", "qd", "theta1_d", "theta2_d")
    }

    def evaluate(P):
        values = {p.name: P[:, k][:, None] for k, p in enumerate(plist)}
        c = compliance(
            model,
            q,
            arrays["theta1"],
            inputs["theta2"],
            qd=inputs["qd"],
            theta1_d=inputs["theta1_d"],
            theta2_d=inputs["theta2_d"],
            **held,
            **values,
        )
        return {"tau": c.tau_link}

    return evaluate, {"tau": arrays["tau"]}


def _cached(make):
    """make(n) built once per instance count n (a batch of 1 for residuals, p + 1 for
    Jacobians)."""
    cache = {}

    def get(n):
        if n not in cache:
            cache[n] = make(n)
        return cache[n]

    return get


def _set_params(batch, plist, P):
    for k, p in enumerate(plist):
        batch.set_param(p.joint, p.name, P[:, k])


def _mark_diverged(outputs, batch):
    """outputs with the instances the batch froze (diverged, out of range) set to NaN: a
    trial point of the search may make a rollout diverge; its residuals become a penalty."""
    bad = np.asarray(batch.status) != 0
    for v in outputs.values():
        v[bad] = np.nan
    return outputs


def _bench_model(model, data, plist, held, mode, dt):
    q = _per_joint(data, "q", _array(data, "q").shape[0], 1)
    steps = q.shape[0]
    refs = _refs(data, 1)
    if refs.shape[0] != steps:
        raise ValueError(f"data['refs']: {refs.shape[0]} steps, data['q'] has {steps}")
    tau = _per_joint(data, "tau", steps, 1)
    dt = _time_step(data, dt, steps)
    qd = _per_joint(data, "qd", steps, 1, required=False)
    qd = np.gradient(q, dt, axis=0) if qd is None else qd
    batches = _cached(lambda n: Batch([Joint(model, mode, held.get(0, {}))], n))

    def evaluate(P):
        n = P.shape[0]
        batch = batches(n)
        _set_params(batch, plist, P)
        batch.reset(q[0], refs[0])
        tile = lambda a: np.ascontiguousarray(np.broadcast_to(a, (n,) + a.shape))  # noqa: E731
        out = batch.rollout(
            steps, dt, tile(refs), tile(q), tile(qd), record=("tau_link",), on_error="flag"
        )
        return _mark_diverged({"tau": out["tau_link"]}, batch)

    return evaluate, {"tau": tau}


def _robot_model(robot, data, plist, held, dt):
    from asr.sim.simulation import Sim

    make = lambda n: Sim(robot, n, params=held)  # noqa: E731
    probe = make(1)
    nj = probe.n_joints
    refs = _refs(data, nj)
    steps = refs.shape[0]
    measured = {
        "q": _per_joint(data, "q", steps, nj),
        "tau": _per_joint(data, "tau", steps, nj, required=False),
    }
    measured = {c: v for c, v in measured.items() if v is not None}
    q0 = _array(data, "q0", (nj,), required=False)
    _time_step(data, dt, steps, probe.dt)
    sims = _cached(lambda n: probe if n == 1 else make(n))
    record = tuple(_RECORD[c] for c in measured)

    def evaluate(P):
        n = P.shape[0]
        sim = sims(n)
        _set_params(sim.batch, plist, P)
        sim.reset(q0, refs[0])
        out = sim.rollout(
            steps, np.broadcast_to(refs, (n,) + refs.shape), record=record, on_error="flag"
        )
        return _mark_diverged({c: out[_RECORD[c]] for c in measured}, sim.batch)

    return evaluate, measured


# ---------------------------------------------------------------- the fit


def _sigmas(sigma, channels):
    """{channel: noise standard deviation} weighing each measured channel."""
    sigma = dict(sigma or {})
    stray = sorted(set(sigma) - set(channels))
    if stray:
        raise ValueError(f"sigma: {stray} are not channels of the data ({', '.join(channels)})")
    if len(channels) > 1 and set(sigma) != set(channels):
        raise ValueError(
            f"sigma: the data has channels {', '.join(channels)} in different "
            "units; give each channel's noise standard deviation, e.g. "
            + ", ".join(f"{c!r}: ... ({UNITS[c]})" for c in channels)
        )
    return {c: V.positive_float(sigma.get(c, 1.0), f"sigma[{c!r}]") for c in channels}


def _covariance(jac, residual, p):
    """cov = s^2 (J^T J)^-1 with s^2 = SS / (m - p), by the SVD of J; inf where J is rank
    deficient (a combination of parameters the data does not determine)."""
    m = residual.size
    s2 = float(residual @ residual) / (m - p)
    _, sv, vt = np.linalg.svd(jac, full_matrices=False)
    tol = sv.max(initial=0.0) * max(jac.shape) * np.finfo(float).eps
    if np.sum(sv > tol) < p:
        return np.full((p, p), np.inf), False
    return s2 * (vt.T / sv**2) @ vt, True


def identify(
    model,
    data,
    params,
    *,
    robot=None,
    variant=None,
    joint=0,
    kind=None,
    mode=None,
    dt=None,
    x0=None,
    bounds=None,
    fixed=None,
    sigma=None,
    diff_step=1e-6,
    max_nfev=200,
    progress=False,
):
    """Fit parameters of `model` to `data` by nonlinear least squares
    (scipy.optimize.least_squares, trust-region reflective within the valid ranges).

    model: the compliance model name; with `robot`, None or the model of joint `joint`.
    data: a dict of arrays, an .npz, a .csv with a header row or a ROS bag (asr.ros registers
        its reader when imported; see load_data).
        static: q, theta1, theta2 (M,) rad (awas2 theta2: pivot, m), tau (M,) N m, optional
        qd, theta1_d, theta2_d (M,) rad/s. bench: refs (steps, 2) (or ref1, ref2 (steps,)),
        q (steps,) rad, optional qd (steps,) rad/s (default: the central difference of q),
        tau (steps,) N m, and dt / t. robot: refs (steps, J, 2), q (steps, J) rad after each
        step, optional tau (steps, J) N m, q0 (J,) rad start (default the robot's), t / dt.
    params: names to fit: "k1" (joint `joint`) or, on a robot, "<joint name>.k1".
    robot: an asr.Robot or robot name (variant: its variant) for kind "robot".
    kind: "static", "bench" or "robot"; None: robot if `robot`, bench if data has references,
        else static. mode: the bench joint's operation mode (default as asr.Batch).
    x0: {name: start} (default: the robot's value, else the model's default).
    bounds: {name: (lo, hi)} in SI units (default and limit: the parameter's valid range).
    fixed: {name: value} parameters held at given values (static and bench: on top of the
        defaults; robot: on top of robot.toml).
    sigma: {channel: noise standard deviation} ("q" rad, "tau" N m), required to weigh two
        channels; one channel needs none (s^2 is estimated from the residuals).
    diff_step: finite-difference step in the search variable (log of a positive parameter:
        a relative step). max_nfev: most residual evaluations. progress: a tqdm bar.
    Returns an Identification.
    """
    need("scipy", "identify", "asr.identify")
    from scipy.optimize import least_squares
    from scipy.stats import t as student_t
    from tqdm.auto import tqdm

    source = _source(model, robot, variant, joint)
    kind, data = _kind(kind, robot, load_data(data))
    evaluate, measured, plist, u0, u_lo, u_hi, x_start = _problem(
        kind, source, data, params, joint, mode, dt, x0, bounds, fixed
    )
    weights = _sigmas(sigma, list(measured))
    h = V.positive_float(diff_step, "diff_step")
    max_nfev = V.positive_int(max_nfev, "max_nfev")
    m = sum(v.size for v in measured.values())
    p = len(plist)
    if m <= p:
        raise ValueError(f"data: {m} measured values for {p} parameters; need more than {p}")
    bar = tqdm(total=max_nfev, desc="identify", unit="eval", disable=not progress)

    def values(U):
        return np.column_stack([par.from_u(U[:, k]) for k, par in enumerate(plist)])

    def residuals(U):
        sim = evaluate(values(U))
        r = np.concatenate(
            [((sim[c] - measured[c][None]) / weights[c]).reshape(len(U), -1) for c in measured],
            axis=1,
        )
        # a diverged trial: residuals far above any fit, so the step is refused and shortened
        r[~np.isfinite(r)] = _PENALTY
        return r

    def fun(u):
        bar.update(1)
        return residuals(u[None])[0]

    def jac(u):
        step = np.where(u + h <= u_hi, h, -h)  # step back from an upper bound
        R = residuals(np.vstack([u, u + np.diag(step)]))
        return ((R[1:] - R[0]) / step[:, None]).T

    try:
        res = least_squares(
            fun, u0, jac=jac, bounds=(u_lo, u_hi), method="trf", max_nfev=max_nfev, x_scale="jac"
        )
    finally:
        bar.close()
    est = values(res.x[None])[0]
    jac_value = res.jac / np.array([par.dvalue_du(v) for par, v in zip(plist, est)])
    cov, identifiable = _covariance(jac_value, res.fun, p)
    se = np.sqrt(np.diag(cov))
    tq = float(student_t.ppf(0.975, m - p))
    raw = residuals(res.x[None])[0]
    offsets = np.cumsum([0] + [measured[c].size for c in measured])
    rms = {
        c: float(np.sqrt(np.mean((raw[a:b] * weights[c]) ** 2)))
        for c, a, b in zip(measured, offsets[:-1], offsets[1:])
    }
    names = tuple(par.key for par in plist)
    message = (
        res.message
        if identifiable
        else (
            res.message + "; the Jacobian is rank deficient: the data do not determine every "
            "parameter (stderr inf)"
        )
    )
    return Identification(
        names=names,
        estimates=dict(zip(names, map(float, est))),
        stderr=dict(zip(names, map(float, se))),
        ci95={n: (float(e - tq * s), float(e + tq * s)) for n, e, s in zip(names, est, se)},
        covariance=cov,
        initial=dict(zip(names, map(float, x_start))),
        residual_rms=rms,
        cost=float(res.cost),
        m=m,
        dof=m - p,
        nfev=int(res.nfev),
        njev=int(res.njev or 0),
        success=bool(res.success),
        message=message,
        kind=kind,
        source=source if isinstance(source, str) else f"{source.name}/{source.variant}",
    )


def _source(model, robot, variant, joint):
    """The model name, or the asr.Robot (its joint `joint` of model `model` if given)."""
    from asr.robots.robot import Robot, load_robot

    if robot is None:
        get_model(model)
        return model
    robot = robot if isinstance(robot, Robot) else load_robot(robot, variant)
    joint = V.positive_int(joint, "joint", lo=0, hi=len(robot.joints) - 1)
    if model is not None and model != robot.joints[joint].model:
        raise ValueError(
            f"model: got {model!r}, joint {joint} ({robot.joints[joint].name}) of "
            f"robot {robot.name!r} has model {robot.joints[joint].model!r}"
        )
    return robot


def _kind(kind, robot, data):
    if kind is None:
        kind = (
            "robot"
            if robot is not None
            else "bench"
            if ("refs" in data or "ref1" in data)
            else "static"
        )
    if kind not in KINDS:
        raise ValueError(f"kind: got {kind!r}, valid: {', '.join(KINDS)}")
    if (kind == "robot") != (robot is not None):
        raise ValueError(
            f"kind: {kind!r} "
            + ("needs robot=" if robot is None else "takes no robot (use kind 'robot')")
        )
    return kind, data


def _problem(kind, source, data, params, joint, mode, dt, x0, bounds, fixed):
    """(evaluate, measured, fitted params, u0, u bounds, start values) of one problem."""
    if kind == "robot":
        specs = [get_model(j.model).spec for j in source.joints]
        names = list(source.joint_names)
        start = lambda j, spec: source.joints[j].params.get(spec.name, spec.default)  # noqa
    else:
        specs, names = [get_model(source).spec], None
        joint = V.positive_int(joint, "joint", lo=0, hi=0)
        start = lambda j, spec: spec.default  # noqa: E731
    own = kind == "static"
    plist, x_start, limits = fitted_params(params, x0, bounds, specs, joint, names, start, own)
    held = fixed_params(fixed, plist, specs, joint, names, own)
    if kind == "static":
        evaluate, measured = _static_model(source, data, plist, held.get(0, {}))
    elif kind == "bench":
        evaluate, measured = _bench_model(source, data, plist, held, mode, dt)
    else:
        evaluate, measured = _robot_model(source, data, plist, held, dt)
    u0 = np.array([p.to_u(v) for p, v in zip(plist, x_start)])
    ub = np.array([p.u_bounds(lo, hi) for p, (lo, hi) in zip(plist, limits)]).reshape(-1, 2)
    u0 = np.clip(u0, ub[:, 0], ub[:, 1])
    return evaluate, measured, plist, u0, ub[:, 0], ub[:, 1], x_start


__all__ = ["identify", "Identification", "load_data", "register_reader", "KINDS", "FORMAT"]
