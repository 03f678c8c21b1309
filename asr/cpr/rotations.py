"""Rotation vectors and matrices of the CPR solver (the C core's exp and log maps), and the C
double* of an array that the asr.cpr wrappers pass to it."""

import numpy as np

from asr.common.validate import finite_array
from asr.core.ffi import ffi, lib

# max |R^T R - I| accepted for a rotation matrix
ROTATION_TOL = 1e-9


def _ptr(a):
    """A C double* to the float64 C-contiguous array a (its owner keeps it alive)."""
    return ffi.from_buffer("double[]", a)


def rot_exp(w):
    """Rotation matrix (3, 3) of the rotation vector w (3, rad): the rotation by the angle |w|
    about w / |w|, for every finite w whose length is finite."""
    w = finite_array(w, "w", (3,))
    R = np.empty((3, 3))
    if lib.asr_rot_exp(_ptr(w), _ptr(R)) == lib.ASR_ERR_RANGE:
        raise ValueError(
            f"w: the rotation angle |w| of {w.tolist()!r} overflows a double; "
            "valid: |w| <= 1.8e308 rad (reduce the angle modulo 2 pi)"
        )
    return R


def rot_log(R, name="R"):
    """Rotation vector (3, rad, angle in [0, pi]) of the rotation matrix R (3, 3); ValueError
    naming `name` when R is not a rotation (max |R^T R - I| > ROTATION_TOL or det R < 0)."""
    R = finite_array(R, name, (3, 3))
    w = np.empty(3)
    if lib.asr_rot_log(_ptr(R), ROTATION_TOL, _ptr(w)) != 0:
        raise ValueError(
            f"{name}: must be a rotation matrix (orthonormal to {ROTATION_TOL:g}, "
            f"det +1), got {R.tolist()!r}"
        )
    return w
