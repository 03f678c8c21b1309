"""[Mengacci2021]'s independent references: the closed-form spring torques of docs/models.md
sec. 1 (toolbox defaults), the 1-DOF rig's rigid-body data read from its MJCF, and the static
equilibrium and linearisation they give (what asr.experiments.mengacci2021's runs are checked
against)."""

import math

import numpy as np
from scipy.optimize import brentq

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
