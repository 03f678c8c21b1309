"""Independent SciPy/NumPy reference for the inverse problem (IGM) of Till's continuum
Stewart-Gough robot (docs/cpr.md): the straightforward implementation a user would write.

Robot: 6 extensible rods (the rod lengths L are the actuation), E = 207 GPa,
G = E / (2 (1 + 0.305)), r = 0.65 mm, no gravity, no distributed load, straight rods
(v0 = e3, u0 = 0). Base holes at radius 0.087 m, angles -10, 10, 110, 130, 230, 250 deg (z = 0);
plate holes at radius 0.087 m in the plate frame, angles -50, 50, 70, 170, 190, 290 deg.
Rod i runs from base hole i to plate hole i. Each rod leaves the base along the base z axis
(R(0) = I) and may twist in its base hole (m0z = 0); it is clamped to the plate.

Cosserat rod (world-frame n, m): v = Kse^-1 R^T n + e3, u = Kbt^-1 R^T m,
p' = R v, R' = R hat(u), n' = 0, m' = -p' x n; Kse = diag(GA, GA, EA), Kbt = diag(EI, EI, GJ).
Fixed-step classical RK4 over N = 40 grid points (N - 1 steps of L / (N - 1)), the six rods
integrated together as one NumPy array of shape (6, 18).

Unknowns (36), per rod i the block x[6i:6i+6] = (n0x, n0y, n0z, m0x, m0y, L).

Residuals, formulation "till" (default, 36): per rod the tip position error pL - (pE + RE r_i)
(3) and the two bending components (x, y) of the orientation error e = vee(RE^T RL - RL^T RE)
(2), then the plate equilibrium: F_ext - sum_i nL_i (3) and
M_ext - sum_i (mL_i + (RE r_i) x nL_i) (3). This is Till's published formulation of this
benchmark and the general one of docs/cpr.md (tip constraint reduced by the free directions, plate
equilibrium): a rod free to twist in its base hole cannot hold a twist error at its tip (for
an isotropic straight rod a base twist angle only turns the material frame about the
centreline), so the twist component of the tip orientation error is not a constraint, and the
rod lengths are fixed by the plate equilibrium.

Formulation "per_rod" (36): per rod the full tip pose error, position (3) and all three
orientation components (3), no plate equilibrium. The rods are then decoupled, and the problem
is singular where a rod bends in a plane (the home pose): its length is then free (any L is
reached by axial stretch) and only the guess fixes it. Kept for comparison, not the reference.

For RE = I (every pose of the protocol) vee(RE^T RL - RL^T RE) = vee(RL - RL^T), the same as
docs/cpr.md's vee(Rd^T R - Rd R^T).

Solver: scipy.optimize.least_squares(method="lm") (MINPACK lmdif: forward-difference Jacobian
over the whole robot, 36 residual evaluations per Jacobian). No analytic or structured
Jacobian, no compiled code.
"""

import math

import numpy as np
from scipy.optimize import least_squares

E = 207e9
G = E / (2.0 * (1.0 + 0.305))
RAD = 0.0013 / 2.0
AREA = math.pi * RAD**2
I_BEND = math.pi * RAD**4 / 4.0
J_POLAR = 2.0 * I_BEND
KSE_INV = 1.0 / np.array([G * AREA, G * AREA, E * AREA])
KBT_INV = 1.0 / np.array([E * I_BEND, E * I_BEND, G * J_POLAR])
HOLE_RADIUS = 0.087
BASE_ANGLES_DEG = (-10.0, 10.0, 110.0, 130.0, 230.0, 250.0)
PLATE_ANGLES_DEG = (-50.0, 50.0, 70.0, 170.0, 190.0, 290.0)
N_RODS = 6
N_GRID = 40


def _holes(angles_deg):
    a = np.radians(np.asarray(angles_deg, dtype=float))
    return HOLE_RADIUS * np.stack([np.cos(a), np.sin(a), np.zeros_like(a)], axis=1)


BASE_HOLES = _holes(BASE_ANGLES_DEG)  # (6, 3) world, z = 0
PLATE_HOLES = _holes(PLATE_ANGLES_DEG)  # (6, 3) plate frame


def vee(S):
    """(..., 3, 3) -> (..., 3): the axial vector of the skew part's convention (S32, S13, S21)."""
    return np.stack([S[..., 2, 1], S[..., 0, 2], S[..., 1, 0]], axis=-1)


def _rod_ode(y):
    """y (k, 18) = p (3), R row-major (9), n (3), m (3) -> dy/ds (k, 18)."""
    k = y.shape[0]
    R = y[:, 3:12].reshape(k, 3, 3)
    n = y[:, 12:15]
    m = y[:, 15:18]
    v = KSE_INV * np.einsum("kji,kj->ki", R, n)
    v[:, 2] += 1.0
    u = KBT_INV * np.einsum("kji,kj->ki", R, m)
    p_s = np.einsum("kij,kj->ki", R, v)
    # R' = R hat(u): column j of R hat(u) = R (hat(u) e_j)
    uh = np.zeros((k, 3, 3))
    uh[:, 0, 1] = -u[:, 2]
    uh[:, 0, 2] = u[:, 1]
    uh[:, 1, 0] = u[:, 2]
    uh[:, 1, 2] = -u[:, 0]
    uh[:, 2, 0] = -u[:, 1]
    uh[:, 2, 1] = u[:, 0]
    R_s = R @ uh
    dy = np.empty_like(y)
    dy[:, 0:3] = p_s
    dy[:, 3:12] = R_s.reshape(k, 9)
    dy[:, 12:15] = 0.0
    dy[:, 15:18] = -np.cross(p_s, n)
    return dy


def integrate_rods(n0, m0, lengths, n_grid=N_GRID, record=False):
    """RK4 over n_grid points for the six rods at once. n0, m0 (6, 3) world frame at the base,
    lengths (6,). Returns the tip state (6, 18), or all grid states (n_grid, 6, 18) when
    `record`."""
    k = len(lengths)
    y = np.zeros((k, 18))
    y[:, 0:3] = BASE_HOLES[:k]
    y[:, 3:12] = np.eye(3).reshape(9)
    y[:, 12:15] = n0
    y[:, 15:18] = m0
    h = (np.asarray(lengths, dtype=float) / (n_grid - 1))[:, None]
    out = [y] if record else None
    for _ in range(n_grid - 1):
        k1 = _rod_ode(y)
        k2 = _rod_ode(y + 0.5 * h * k1)
        k3 = _rod_ode(y + 0.5 * h * k2)
        k4 = _rod_ode(y + h * k3)
        y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        if record:
            out.append(y)
    return np.stack(out) if record else y


def unpack(x):
    """Unknowns (36,) -> n0 (6, 3), m0 (6, 3) with m0z = 0, lengths (6,)."""
    b = np.asarray(x, dtype=float).reshape(N_RODS, 6)
    n0 = b[:, 0:3].copy()
    m0 = np.zeros((N_RODS, 3))
    m0[:, 0:2] = b[:, 3:5]
    return n0, m0, b[:, 5].copy()


def base_wrenches(x):
    """(6, 6): per rod (n0, m0) at the base, world frame (m0z = 0)."""
    n0, m0, _ = unpack(x)
    return np.hstack([n0, m0])


def residual(x, position, rotation=None, wrench=None, formulation="till", n_grid=N_GRID):
    """The 36 residuals of the IGM at plate pose (position, rotation) for unknowns x."""
    pE = np.asarray(position, dtype=float)
    RE = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
    n0, m0, lengths = unpack(x)
    tip = integrate_rods(n0, m0, lengths, n_grid)
    pL = tip[:, 0:3]
    RL = tip[:, 3:12].reshape(N_RODS, 3, 3)
    nL = tip[:, 12:15]
    mL = tip[:, 15:18]
    arm = PLATE_HOLES @ RE.T  # RE r_i, (6, 3)
    pos_err = pL - (pE + arm)
    rot_err = vee(RE.T[None] @ RL - np.swapaxes(RL, 1, 2) @ RE[None])
    if formulation == "per_rod":
        return np.hstack([pos_err, rot_err]).reshape(-1)
    if formulation != "till":
        raise ValueError(f"formulation must be 'till' or 'per_rod', got {formulation!r}")
    F = np.zeros(3) if wrench is None else np.asarray(wrench, dtype=float)[0:3]
    M = np.zeros(3) if wrench is None else np.asarray(wrench, dtype=float)[3:6]
    EF = F - nL.sum(axis=0)
    EM = M - (mL + np.cross(arm, nL)).sum(axis=0)
    return np.concatenate([np.hstack([pos_err, rot_err[:, 0:2]]).reshape(-1), EF, EM])


def cold_guess(position):
    """Till's cold start: no base wrench, every rod as long as the plate is high."""
    x = np.zeros((N_RODS, 6))
    x[:, 5] = float(np.asarray(position, dtype=float)[2])
    return x.reshape(-1)


def solve_igm(
    position, rotation=None, guess=None, wrench=None, formulation="till", n_grid=N_GRID, tol=1e-14
):
    """Solve the IGM with scipy.optimize.least_squares (LM, forward differences).

    Returns (lengths (6,), unknowns (36,), residual_norm, nfev); pass `unknowns` as `guess`
    to warm-start the next pose."""
    x0 = cold_guess(position) if guess is None else np.asarray(guess, dtype=float).copy()
    calls = [0]

    def fun(xx):
        calls[0] += 1
        return residual(xx, position, rotation, wrench, formulation, n_grid)

    sol = least_squares(fun, x0, method="lm", xtol=tol, ftol=tol, gtol=tol)
    x = sol.x
    res = residual(x, position, rotation, wrench, formulation, n_grid)
    # nfev: every residual evaluation, the finite-difference Jacobian's included (scipy's own
    # sol.nfev leaves those out for method "lm")
    return unpack(x)[2], x, float(np.linalg.norm(res)), calls[0]


def centerlines(x, n_grid=N_GRID):
    """(6, n_grid, 3) rod centrelines of a solution."""
    n0, m0, lengths = unpack(x)
    Y = integrate_rods(n0, m0, lengths, n_grid, record=True)
    return np.transpose(Y[:, :, 0:3], (1, 0, 2))


def till_sequence():
    """The protocol's plate poses: (0, 0, 0.4), then (0, 0.02, 0.48), then 100 steps of +1 mm in
    y and z, then 100 steps of -1 mm. Returns positions (202, 3) and rotations (202, 3, 3), all
    identity."""
    pos = [np.array([0.0, 0.0, 0.4]), np.array([0.0, 0.02, 0.48])]
    p = pos[-1].copy()
    for i in range(200):
        d = 0.001 if i < 100 else -0.001
        p = p + np.array([0.0, d, d])
        pos.append(p.copy())
    positions = np.array(pos)
    return positions, np.broadcast_to(np.eye(3), (len(positions), 3, 3)).copy()


if __name__ == "__main__":
    import time

    t0 = time.perf_counter()
    L, x, r, nfev = solve_igm([0.0, 0.0, 0.4])
    print(f"home: L = {L}, |res| = {r:.2e}, nfev = {nfev}, {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    L, x, r, nfev = solve_igm([0.0, 0.02, 0.48], guess=x)
    print(
        f"(0, .02, .48): L = {L}, |res| = {r:.2e}, nfev = {nfev}, {time.perf_counter() - t0:.2f} s"
    )
    print("base forces", base_wrenches(x)[:, :3])
