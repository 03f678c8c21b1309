"""Continuum parallel robots of Cosserat rods (csrc/cpr): the robot and its solver (solver), its
description files (description), rotations (rotations) and solutions (solution)."""

from asr.cpr.description import cpr_dir
from asr.cpr.solver import *  # noqa: F403
from asr.cpr.solver import __all__ as _solver_names

__all__ = [*_solver_names, "cpr_dir"]
