"""What a CPR solve returns: CPRSolution (joint values, plate pose, rod wrenches and shapes, and
what warm-starts the next solve) and NotConverged (the solver stopped short of the tolerance)."""

import dataclasses

import numpy as np


class NotConverged(RuntimeError):
    """The solver stopped without reaching the tolerance; `solution` holds the last iterate
    (converged False), for inspection or as a guess, never as an answer."""

    def __init__(self, message, solution):
        super().__init__(message)
        self.solution = solution


@dataclasses.dataclass
class CPRSolution:
    converged: bool
    q: np.ndarray  # (n_rods,) joint values: rad, m, or rod lengths (m)
    position: np.ndarray  # (3,) plate position, m, world
    rotation: np.ndarray  # (3, 3) plate orientation, plate frame -> world
    base_wrenches: np.ndarray  # (n_rods, 6) internal [n0 (N), m0 (N m)] at each rod base, world
    centerlines: np.ndarray  # (n_rods, n_grid, 3) rod centerlines, m
    residual_norm: float
    iterations: int
    unknowns: np.ndarray  # solver vector: pass as `guess` to warm-start the next solve
    # the solver's last Jacobian (n_residuals x n_active, column-major: shape (n_active,
    # n_residuals)); a CPRSolution passed as `guess` to a solve of the same problem hands it on,
    # with its inverse and the rods' tip states (asr_cpr_solve_warm): they only speed
    # convergence up, the answer never depends on them
    jacobian: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)
    problem: str = dataclasses.field(default="", repr=False, compare=False)
    _carry: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)
    _carry_flags: int = dataclasses.field(default=0, repr=False, compare=False)
    _carry_grid: int = dataclasses.field(default=0, repr=False, compare=False)
    _carry_of: object | None = dataclasses.field(default=None, repr=False, compare=False)
    # computes the centerlines when first read (a rod integration per leg that a warm-started
    # sequence of solves rarely needs)
    _centerlines_of: object | None = dataclasses.field(default=None, repr=False, compare=False)


def _get_centerlines(self):
    cl = self.__dict__.get("_centerlines")
    if cl is None and self._centerlines_of is not None:
        cl = self._centerlines_of()
        self.__dict__["_centerlines"] = cl
    return cl


def _set_centerlines(self, value):
    self.__dict__["_centerlines"] = value


# a dataclass field made a property after the class: mypy types it as the field
CPRSolution.centerlines = property(_get_centerlines, _set_centerlines)  # type: ignore[assignment]
