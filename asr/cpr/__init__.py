"""Continuum parallel robots of Cosserat rods (csrc/cpr): the robot and its solver (solver), its
description files (description), rotations (rotations) and solutions (solution)."""

from asr.cpr.solver import *  # noqa: F403
from asr.cpr.solver import __all__  # noqa: F401
