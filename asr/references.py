"""Reference trajectories shared by the experiments and the dashboard."""

import numpy as np


def min_jerk_fraction(t, duration):
    """Fraction (0 -> 1) of a fifth-order minimum-jerk move of `duration` s completed at times
    t (s): 0 before t = 0, 1 after `duration`."""
    s = np.clip(np.asarray(t, dtype=float) / duration, 0.0, 1.0)
    return s**3 * (10.0 - 15.0 * s + 6.0 * s * s)


def min_jerk(t, q0, q1, duration):
    """Fifth-order minimum-jerk profile q0 -> q1 over [0, duration] (q0 before, q1 after), at
    times t (s); same units as q0 and q1."""
    return q0 + (q1 - q0) * min_jerk_fraction(t, duration)
