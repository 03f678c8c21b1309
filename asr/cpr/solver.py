"""Continuum parallel robots (CPR): static Cosserat-rod legs between a base and a rigid plate.

The model, the reference robots and the benchmark protocol are those of docs/cpr.md
([Gotelli2022], the ARK CPR simulator, and Till's continuum Stewart-Gough robot). The rods and the
Levenberg-Marquardt solver run in C (csrc/cpr/: rod.c, cpr_legs.c, cpr.c, linalg.c); this
module wraps the solver (CPRobot) and converts between poses and the solver's unknown vector.
Robot descriptions (robots/cpr/<name>.toml) are read and checked in asr.cpr.description, the
rotation maps live in asr.cpr.rotations, the results (CPRSolution) in asr.cpr.solution.

>>> import asr.cpr
>>> robot = asr.cpr.load_cpr("stewart_till")
>>> sol = robot.solve_igm([0.0, 0.0, 0.4])
>>> sol.converged, sol.q.shape
(True, (6,))
"""

import functools

import numpy as np

from asr.common.validate import finite_array, positive_float
from asr.core.errors import raise_for_status
from asr.core.ffi import ffi, lib
from asr.cpr.description import (  # noqa: F401  (cpr_dir: read as asr.cpr.cpr_dir)
    BASE_JOINTS,
    TIP_JOINTS,
    cpr_dir,
    read_description,
)
from asr.cpr.rotations import ROTATION_TOL, _ptr, rot_exp, rot_log  # noqa: F401
from asr.cpr.solution import CPRSolution, NotConverged

__all__ = [
    "CPRobot",
    "CPRSolution",
    "NotConverged",
    "load_cpr",
    "integrate_rod",
    "till_benchmark_poses",
    "rot_exp",
    "rot_log",
]

# What a failed C call of the solver means, and what to try.
STATUS = {
    lib.ASR_ERR_NULL: "a required array was missing (a bug in asr: please report it)",
    lib.ASR_ERR_RANGE: "an argument is outside its valid range: n_grid in [2, {MAX_GRID}], tol "
    "> 0, max_iter >= 1, threads >= 1, rod lengths, E, G and r > 0",
    lib.ASR_ERR_MODEL: "a leg combines joints the solver does not support (a free twist needs a "
    "fixed tip): check the robot file",
    lib.ASR_ERR_NONFINITE: "the rods' integration became non-finite: the pose or load is far "
    "outside what the rods can reach; solve from a guess nearer it (a neighbouring pose's "
    "solution), in smaller steps, or with a smaller load",
    lib.ASR_ERR_INPUT: "an input holds NaN or inf (target, guess, wrench or joint values)",
    lib.ASR_ERR_NOMEM: "out of memory: lower n_grid or the number of poses",
}
MAX_GRID = 100_000  # grid points per rod (an (n_rods, n_grid, 3) centerline per solution)
MAX_ITER = 1_000_000
MAX_THREADS = 1024


def load_cpr(name_or_path):
    """A CPRobot from robots/cpr/<name>.toml or a path to a .toml file; ValueError (naming the
    file and the key) for a bad description."""
    return CPRobot(*read_description(name_or_path))


# ------------------------------------------------------------------ the robot


def _check_int(value, name, lo, hi):
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer, float))
        or value != value
        or int(value) != value
        or not lo <= value <= hi
    ):
        raise ValueError(f"{name}: expected an integer in [{lo}, {hi}], got {value!r}")
    return int(value)


def _check_grid(n_grid):
    return _check_int(n_grid, "n_grid", 2, MAX_GRID)


def _check(status, what):
    """Raise for a failed C call (asr.core.errors.raise_for_status) with the solver's own hints."""
    if status != lib.ASR_OK:
        raise_for_status(status, what, {k: t.format(MAX_GRID=MAX_GRID) for k, t in STATUS.items()})


class CPRobot:
    """A continuum parallel robot; build it with load_cpr()."""

    def __init__(self, name, legs, plate_mass, gravity, wrench, home, home_rot, path):
        self.name, self.path = name, path
        self.legs = legs
        self.n_rods = len(legs)
        self.plate_mass = plate_mass
        self.gravity = gravity
        self.wrench = wrench
        self.home_position = home
        self.home_rotation = rot_exp(home_rot)
        self._c_legs = ffi.new("asr_cpr_leg[]", self.n_rods)
        for c, l in zip(self._c_legs, legs):
            c.rod.E, c.rod.G, c.rod.r, c.rod.rho = l["E"], l["G"], l["r"], l["rho"]
            for k in range(3):
                c.rod.g[k], c.rod.u0[k], c.rod.f_ext[k] = l["g"][k], l["u0"][k], l["f_ext"][k]
                c.base_p[k], c.base_axis[k] = l["base"][k], l["base_axis"][k]
                c.tip_p[k], c.tip_axis[k] = l["tip"][k], l["tip_axis"][k]
            for k in range(9):
                c.base_R[k] = l["base_R"].flat[k]
                c.tip_R[k] = l["tip_R"].flat[k]
            c.L = l["L"]
            c.base_joint = BASE_JOINTS[l["base_joint"]]
            c.tip_joint = TIP_JOINTS[l["tip_joint"]]
            c.free_twist = int(l["free_twist"])
        self._nw = [5 if l["free_twist"] else 6 for l in legs]
        self._xoff = np.concatenate([[0], np.cumsum([n + 1 for n in self._nw])])
        self._robot_default = None
        self._robot_default = self._robot(None)  # the C robot struct without a wrench override
        self.n_unknowns = int(lib.asr_cpr_nx(self._robot_default))
        self.n_residuals = int(lib.asr_cpr_nres(self._robot_default))
        self._nact = {p: int(lib.asr_cpr_nact(self._robot_default, p)) for p in (0, 1)}
        self._carry_size = {p: int(lib.asr_cpr_carry_size(self._robot_default, p)) for p in (0, 1)}
        self._opt_cache = {}

    def __repr__(self):
        return f"CPRobot({self.name!r}, {self.n_rods} rods, {self.n_unknowns} unknowns)"

    def _robot(self, wrench):
        if wrench is None and self._robot_default is not None:
            return self._robot_default
        r = ffi.new("asr_cpr*")
        r.n_leg = self.n_rods
        r.legs = self._c_legs
        r.plate_mass = self.plate_mass
        w = self.wrench if wrench is None else finite_array(wrench, "wrench", (6,))
        for k in range(3):
            r.g[k] = self.gravity[k]
        for k in range(6):
            r.wrench[k] = w[k]
        return r

    def _options(self, n_grid, tol, max_iter, threads):
        key = (n_grid, tol, max_iter, threads)
        try:
            o = self._opt_cache.get(key)
        except TypeError:  # unhashable: validated below, not cached
            key, o = None, None
        if o is not None:
            return o
        _check_grid(n_grid)
        if (
            isinstance(tol, bool)
            or not isinstance(tol, (int, float, np.floating))
            or not 0 < tol < np.inf
        ):
            raise ValueError(f"tol: expected a finite number > 0, got {tol!r}")
        _check_int(max_iter, "max_iter", 1, MAX_ITER)
        _check_int(threads, "threads", 1, MAX_THREADS)
        o = ffi.new("asr_cpr_options*")
        o.n_grid, o.tol, o.max_iter, o.threads = (
            int(n_grid),
            float(tol),
            int(max_iter),
            int(threads),
        )
        if key is not None and len(self._opt_cache) < 64:
            self._opt_cache[key] = o
        return o

    def default_unknowns(self):
        """Zero base wrenches, the description's joint values and home plate pose."""
        x = np.zeros(self.n_unknowns)
        for i, l in enumerate(self.legs):
            x[self._xoff[i + 1] - 1] = l["q"]
        x[-6:-3] = self.home_position
        x[-3:] = rot_log(self.home_rotation)
        return x

    def _guess(self, guess):
        if guess is None:
            return self.default_unknowns()
        if isinstance(guess, CPRSolution):
            u = guess.unknowns
            if (
                type(u) is np.ndarray
                and u.dtype == np.float64
                and u.shape == (self.n_unknowns,)
                and np.isfinite(u).all()
            ):
                return u.copy()
            guess = u
        return finite_array(guess, "guess", (self.n_unknowns,)).copy()

    def _centerlines(self, x, n_grid, wrench):
        res = np.empty(self.n_residuals)
        cl = np.empty((self.n_rods, n_grid, 3))
        _check(
            lib.asr_cpr_residual(self._robot(wrench), _ptr(x), n_grid, _ptr(res), _ptr(cl)),
            "centerlines",
        )
        return cl

    def _solutions(self, xs, reps, n_grid, wrench):
        """CPRSolutions of the solver vectors xs (M, n_unknowns) and their C reports."""
        M = xs.shape[0]
        q, pos = np.empty((M, self.n_rods)), np.empty((M, 3))
        rot, bw = np.empty((M, 3, 3)), np.empty((M, self.n_rods, 6))
        _check(
            lib.asr_cpr_unpack(
                self._robot_default, M, _ptr(xs), _ptr(q), _ptr(pos), _ptr(rot), _ptr(bw)
            ),
            "unpack",
        )
        if wrench is not None:
            wrench = finite_array(wrench, "wrench", (6,)).copy()
        return [
            CPRSolution(
                bool(reps[k].converged),
                q[k],
                pos[k],
                rot[k],
                bw[k],
                None,
                float(reps[k].residual_norm),
                int(reps[k].iterations),
                xs[k],
                _centerlines_of=functools.partial(self._centerlines, xs[k], n_grid, wrench),
            )
            for k in range(M)
        ]

    def _solve(self, problem, x, guess, wrench, n_grid, tol, max_iter, threads, what):
        opt = self._options(n_grid, tol, max_iter, threads)
        rep = ffi.new("asr_cpr_report*")
        carry = np.empty(self._carry_size[problem])
        flags = ffi.new("int*")
        if (
            isinstance(guess, CPRSolution)
            and guess.problem == what
            and guess._carry_of is self
            and guess._carry is not None
        ):
            carry[...] = guess._carry
            f = guess._carry_flags
            # tips: the rods on the guess's grid at its leg unknowns, which x keeps unless the
            # joint values changed (the IGM only sets the plate)
            if guess._carry_grid != opt.n_grid or not np.array_equal(guess.unknowns[:-6], x[:-6]):
                f &= ~lib.ASR_CPR_CARRY_TIPS
            flags[0] = f
        _check(
            lib.asr_cpr_solve_warm(
                self._robot(wrench), problem, _ptr(x), opt, rep, _ptr(carry), flags
            ),
            what,
        )
        sol = self._solutions(x[None], [rep], n_grid, wrench)[0]
        if flags[0]:
            sol._carry, sol._carry_flags, sol._carry_grid = carry, flags[0], opt.n_grid
            sol._carry_of, sol.problem = self, what
        if flags[0] & lib.ASR_CPR_CARRY_J:
            m, n = self.n_residuals, self._nact[problem]
            sol.jacobian = carry[: m * n].reshape(n, m)  # column-major (m, n)
        if not sol.converged:
            raise NotConverged(
                f"{self.name}: {what} did not converge (residual norm "
                f"{sol.residual_norm:.3g} after {sol.iterations} iterations)",
                sol,
            )
        return sol

    def solve_igm(
        self,
        position,
        rotation=None,
        wrench=None,
        guess=None,
        n_grid=40,
        tol=1e-10,
        max_iter=100,
        threads=1,
    ):
        """Inverse problem: the joint values (and rod shapes) that hold the plate at `position`
        (3, m) with orientation `rotation` (3x3, default identity) under the plate's loads and
        `wrench` (6: force, moment at the plate origin, world; default the description's)."""
        p = finite_array(position, "position", (3,))
        w = rot_log(np.eye(3) if rotation is None else rotation, "rotation")
        x = self._guess(guess)
        x[-6:-3] = p
        x[-3:] = w
        return self._solve(0, x, guess, wrench, n_grid, tol, max_iter, threads, "solve_igm")

    def solve_dgm(self, q, wrench=None, guess=None, n_grid=40, tol=1e-10, max_iter=100, threads=1):
        """Direct problem: the plate pose for joint values q (n_rods: rad, m, or rod lengths)."""
        q = finite_array(q, "q", (self.n_rods,))
        x = self._guess(guess)
        for i in range(self.n_rods):
            x[self._xoff[i + 1] - 1] = q[i]
        return self._solve(1, x, guess, wrench, n_grid, tol, max_iter, threads, "solve_dgm")

    def solve_igm_batch(
        self,
        positions,
        rotations=None,
        wrench=None,
        guess=None,
        threads=1,
        warm=True,
        n_grid=40,
        tol=1e-10,
        max_iter=100,
    ):
        """IGM at M poses in one C call: positions (M, 3), rotations (M, 3, 3) or None
        (identity). warm: each pose starts from the previous solution (the first from guess),
        a chain whose threads share each solve; warm=False: every pose from guess, the threads
        take whole poses. Returns the list of CPRSolutions; NotConverged (with the first
        failing pose's last iterate, and `index`) if any pose fails."""
        P = finite_array(positions, "positions")
        if P.ndim != 2 or P.shape[1] != 3:
            raise ValueError(f"positions: expected shape (M, 3), got {P.shape}")
        M = P.shape[0]
        targets = np.zeros((M, 6))
        targets[:, :3] = P
        if rotations is not None:
            Rs = finite_array(rotations, "rotations", (M, 3, 3))
            for k in range(M):
                targets[k, 3:] = rot_log(Rs[k], f"rotations[{k}]")
        return self._batch(
            0, targets, wrench, guess, threads, warm, n_grid, tol, max_iter, "solve_igm_batch"
        )

    def solve_dgm_batch(
        self, qs, wrench=None, guess=None, threads=1, warm=True, n_grid=40, tol=1e-10, max_iter=100
    ):
        """DGM at M joint vectors qs (M, n_rods) in one C call; warm, threads and the answer as
        in solve_igm_batch."""
        Q = finite_array(qs, "qs")
        if Q.ndim != 2 or Q.shape[1] != self.n_rods:
            raise ValueError(f"qs: expected shape (M, {self.n_rods}), got {Q.shape}")
        return self._batch(
            1,
            np.ascontiguousarray(Q),
            wrench,
            guess,
            threads,
            warm,
            n_grid,
            tol,
            max_iter,
            "solve_dgm_batch",
        )

    def _batch(self, problem, targets, wrench, guess, threads, warm, n_grid, tol, max_iter, what):
        M = targets.shape[0]
        x0 = self._guess(guess)
        xs = np.empty((M, self.n_unknowns))
        reps = ffi.new("asr_cpr_report[]", max(M, 1))
        opt = self._options(n_grid, tol, max_iter, threads)
        _check(
            lib.asr_cpr_solve_batch(
                self._robot(wrench),
                problem,
                M,
                _ptr(targets),
                _ptr(x0),
                int(bool(warm)),
                opt,
                _ptr(xs),
                reps,
            ),
            what,
        )
        sols = self._solutions(xs, reps, n_grid, wrench)
        for k, sol in enumerate(sols):
            if not sol.converged:
                err = NotConverged(
                    f"{self.name}: {what} pose {k} did not converge "
                    f"(residual norm {sol.residual_norm:.3g})",
                    sol,
                )
                err.index = k
                raise err
        return sols

    def residual(self, unknowns, n_grid=40, wrench=None):
        """The residual vector (n_residuals) at a solver vector."""
        x = finite_array(unknowns, "unknowns", (self.n_unknowns,)).copy()
        n_grid = _check_grid(n_grid)
        res = np.empty(self.n_residuals)
        _check(
            lib.asr_cpr_residual(self._robot(wrench), _ptr(x), n_grid, _ptr(res), ffi.NULL),
            "residual",
        )
        return res


# ------------------------------------------------------------------ single rods, benchmark


def integrate_rod(
    y0, L, E, G, r, rho=0.0, g=(0.0, 0.0, 0.0), u0=(0.0, 0.0, 0.0), f_ext=(0.0, 0.0, 0.0), n_grid=40
):
    """The states (n_grid, 18) [p, R row-major, n, m] of a rod integrated by the C core's RK4
    from its base state y0 (18)."""
    y0 = finite_array(y0, "y0", (18,))
    L, E, G, r = (positive_float(v, name) for v, name in ((L, "L"), (E, "E"), (G, "G"), (r, "r")))
    if not 0 <= float(rho) < np.inf:
        raise ValueError(f"rho: expected a finite density >= 0 kg/m^3, got {rho!r}")
    g, u0, f_ext = (
        finite_array(v, name, (3,)) for v, name in ((g, "g"), (u0, "u0"), (f_ext, "f_ext"))
    )
    n_grid = _check_grid(n_grid)
    rod = ffi.new("asr_rod*")
    rod.E, rod.G, rod.r, rod.rho = E, G, r, rho
    for k in range(3):
        rod.g[k], rod.u0[k], rod.f_ext[k] = g[k], u0[k], f_ext[k]
    path = np.empty((int(n_grid), 18))
    tip = np.empty(18)
    _check(
        lib.asr_rod_integrate(rod, float(L), _ptr(y0), int(n_grid), _ptr(tip), _ptr(path)),
        "integrate_rod",
    )
    return path


def till_benchmark_poses():
    """Plate positions (202, 3) of the benchmark protocol of docs/cpr.md (orientation identity):
    (0, 0, 0.4) solved cold, (0, 0.02, 0.48) warm, then 100 warm steps of +1 mm in y and z and
    100 of -1 mm back."""
    first = [[0.0, 0.0, 0.4], [0.0, 0.02, 0.48]]
    up = [[0.0, 0.02 + 0.001 * k, 0.48 + 0.001 * k] for k in range(1, 101)]
    down = [[0.0, 0.02 + 0.001 * k, 0.48 + 0.001 * k] for k in range(99, -1, -1)]
    return np.array(first + up + down)
