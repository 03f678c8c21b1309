"""Checks done in Python before any pointer reaches C: dtype, shape, contiguity, writability,
finiteness and ranges, with errors that name the argument, its value and what is valid."""

import numbers
from collections.abc import Sequence
from typing import Any, SupportsFloat

import numpy as np
import numpy.typing as npt

# the types the package's typed modules share: cffi's CData (asr._core has no type stubs), the
# float64 arrays results are, the C int arrays of indices
CData = Any
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intc]


def num(x: SupportsFloat) -> str:
    """A number as plain text for messages (0.05, not np.float64(0.05))."""
    x = float(x)
    return repr(int(x)) if x.is_integer() and abs(x) < 1e16 else repr(x)


def read_only(values: npt.ArrayLike, dtype: npt.DTypeLike = np.float64) -> npt.NDArray[Any]:
    """A new array of values that cannot be written (results handed out: a caller's edit would
    not change what they describe). See locked_view: its flag cannot be set back either."""
    return locked_view(np.array(values, dtype=dtype))


def locked_view(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A read-only view of the C-contiguous array arr whose writeable flag cannot be set back.

    A view with the flag merely cleared (arr.flags.writeable = False) can be made writable
    again by anyone, since its base is. This view's base is a read-only memoryview, so NumPy
    refuses `flags.writeable = True` on it and on every view taken of it; arr stays writable to
    its owner (C writes the live state through it)."""
    # an ndarray is a buffer (NumPy's stubs do not say so to Python 3.10's typeshed)
    return np.asarray(memoryview(arr).toreadonly())  # type: ignore[arg-type]


def real_array(value: object, name: str) -> FloatArray:
    """value as a float64 array (a copy only when needed); TypeError for non-real data."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected a real number or array of reals, got a bool")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name}: expected a real number or array of reals ({exc})") from None
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise TypeError(
            f"{name}: expected real numbers (float64, or a type convertible to it without loss "
            f"of meaning), got dtype {arr.dtype}"
        )
    return np.asarray(arr, dtype=np.float64, order="C")


def finite(arr: FloatArray, name: str) -> FloatArray:
    """Raise ValueError naming the first NaN or inf in arr."""
    # min and max propagate NaN and reach inf: no array-sized temporary unless something is bad
    if arr.size == 0 or (np.isfinite(arr.min()) and np.isfinite(arr.max())):
        return arr
    bad = ~np.isfinite(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0]) if arr.ndim else ()
        value = arr[where] if arr.ndim else arr.item()
        raise ValueError(f"{name}: must be finite, got {num(value)} at index {where}")
    return arr


def finite_array(value: object, name: str, shape: Sequence[int] | None = None) -> FloatArray:
    """A finite float64 C-contiguous array of exactly `shape` (if given)."""
    arr = real_array(value, name)
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {arr.shape}")
    return finite(arr, name)


def broadcast_input(value: object, name: str, shape: Sequence[int]) -> FloatArray:
    """value broadcast to `shape` (scalars and compatible arrays), float64, finite, contiguous."""
    arr = real_array(value, name)
    try:
        out = np.broadcast_to(arr, shape)
    except ValueError:
        raise ValueError(
            f"{name}: shape {arr.shape} does not broadcast to {tuple(shape)}"
        ) from None
    return finite(np.asarray(out, order="C"), name)


def output_array(arr: object, name: str, shape: Sequence[int]) -> FloatArray:
    """A caller-provided output array C will write into: exactly float64, shape, C-contiguous,
    writable. Never copied (a copy would not receive the results)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a numpy.ndarray, got {type(arr).__name__}")
    if arr.dtype != np.float64:
        raise TypeError(f"{name}: expected dtype float64, got {arr.dtype}")
    if arr.shape != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {arr.shape}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name}: must be C-contiguous (use numpy.ascontiguousarray)")
    if not arr.flags.writeable:
        raise ValueError(f"{name}: must be writable, got a read-only array")
    return arr


def positive_int(value: object, name: str, lo: int = 1, hi: int | None = None) -> int:
    """An int in [lo, hi]; TypeError for non-integers (bool included)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        top = "inf" if hi is None else hi
        raise ValueError(f"{name}: got {value}, valid range [{lo}, {top}]")
    return value


def positive_float(value: object, name: str) -> float:
    """A finite float > 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not (np.isfinite(value) and value > 0.0):
        raise ValueError(f"{name}: got {value!r}, valid range (0, inf)")
    return value


def instance_indices(instances: npt.ArrayLike, n: int) -> IntArray:
    """instances as a C-contiguous int array of indices in [0, n)."""
    idx = np.asarray(instances)
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise TypeError(f"instances: expected a sequence of ints, got {instances!r}")
    bad = idx[(idx < 0) | (idx >= n)]
    if bad.size:
        raise ValueError(f"instances: got {int(bad[0])}, valid range [0, {n - 1}]")
    return np.ascontiguousarray(idx, dtype=np.intc)
