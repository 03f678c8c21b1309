"""The bridge between C and the Python side of user-defined compliance models: the C function
pointers register_model accepts (checked against their exact C type), the trampolines C calls for
a Python callable (every output checked), and the per-call bindings that keep the exception a
callable raises with the call that ran it."""

import numbers
from collections.abc import Mapping, Sequence, Sized

import numpy as np

from asr.core.ffi import ffi, lib

# asr_elastic_in's fields in struct order, listed once in C (ASR_ELASTIC_INPUTS, asr_model.h).
IN_FIELDS = tuple(
    ffi.string(lib.asr_elastic_in_name(k)).decode() for k in range(lib.ASR_NELASTIC_IN)
)
# asr_elastic_out's fields in struct order, listed once in C (ASR_ELASTIC_OUTPUTS, asr_model.h):
# the real outputs, then the int 'clamped'.
OUT_NAMES = tuple(
    ffi.string(lib.asr_elastic_out_name(k)).decode() for k in range(lib.ASR_NELASTIC_OUT)
)
OUT_FIELDS = OUT_NAMES[: lib.ASR_NELASTIC_REAL]  # the real outputs
_REQUIRED = ("tau1", "stiffness")  # a Python model must return these; the rest default to 0,
_LOAD_OF = {"load1": "tau1", "load2": "tau2"}  # except each load, the minus of its spring torque


class PythonModel:
    """A Python elastic / refmap pair (the exceptions they raise are kept by a Binding)."""

    def __init__(self, names, elastic, refmap):
        self.elastic, self.refmap = elastic, refmap
        self.names = list(names)  # the model's own parameters, in C order

    def kwargs(self, p):
        return {n: p[k] for k, n in enumerate(self.names)}


class Binding:
    """One user's copy of a model's C definition (a batch's, or one compliance /
    reference_map call's). A Python model's callbacks reach their binding through the copy's
    user pointer and keep the exception they raise here, so it belongs to the call that ran
    them: no other batch or thread sees it, whichever thread (Python or a C worker) ran the
    callback. Built-in and C models raise nothing and use the shared definition.

    finite: a non-finite output of a Python callable is a ValueError naming it (a pure
    evaluation); else it goes to C, which freezes that instance alone (a batch, so on_error
    'flag' still runs the others)."""

    def __init__(self, model, finite):
        self.model, self.python, self.error = model, model.python, None
        self.finite = finite
        self.cdef = model.cdef
        if self.python is not None:
            self._handle = ffi.new_handle(self)
            self.cdef = ffi.new("asr_model_def*", model.cdef[0])
            self.cdef.user = self._handle

    def keep_error(self, exc):
        """Keep a callback's exception: the first of a C call, the one that stopped it."""
        if self.error is None:
            self.error = exc

    def raise_pending(self):
        """Re-raise (once) the exception kept during this binding's last C call."""
        err, self.error = self.error, None
        if err is not None:
            raise err


def _real_output(value, what, finite):
    """A callback's output `what` as a float (finite: a finite one); TypeError / ValueError
    naming it."""
    if (
        isinstance(value, (bool, np.bool_))
        or np.ndim(value) != 0
        or not (
            isinstance(value, numbers.Real)
            or (isinstance(value, np.ndarray) and value.dtype.kind in "iuf")
        )
    ):
        raise TypeError(
            f"{what}: expected a real number, got {type(value).__name__} {str(value)[:40]}"
        )
    x = float(value)
    if finite and not np.isfinite(x):
        raise ValueError(f"{what}: got {x}, must be finite (to refuse a point, raise)")
    return x


_CLAMPED = (0, 1, 2)  # springs at their deflection limit (-1 is C's mark of a failed point)


def _clamped_output(value):
    """The number of springs at their limit; a bool (`abs(defl) > limit`, as C would write it)
    counts as 0 or 1."""
    if isinstance(value, np.bool_):
        value = bool(value)
    if not isinstance(value, numbers.Integral) or int(value) not in _CLAMPED:
        raise ValueError(
            f"compliance output 'clamped': got {value!r}; valid: 0, 1 or 2 (an "
            "int, the number of springs at their deflection limit, or a bool)"
        )
    return int(value)


def _store_elastic(result, out, finite):
    """Fill a C asr_elastic_out from a Python model's result mapping, every field checked."""
    if not isinstance(result, Mapping):
        raise TypeError(
            "a Python compliance model must return a mapping with at least 'tau1' and "
            f"'stiffness', got {type(result).__name__}"
        )
    unknown = set(result) - set(OUT_NAMES)
    if unknown:
        raise ValueError(
            f"unknown compliance outputs {sorted(unknown, key=str)}; valid: {OUT_NAMES}"
        )
    missing = [k for k in _REQUIRED if k not in result]
    if missing:
        raise ValueError(
            f"a Python compliance model must return 'tau1' and 'stiffness'; "
            f"{missing[0]!r} is missing (got {sorted(result)})"
        )
    values = dict.fromkeys(OUT_FIELDS, 0.0)
    for k, v in result.items():
        if k != "clamped":
            values[k] = _real_output(v, f"compliance output {k!r}", finite)
    for load, tau in _LOAD_OF.items():
        if load not in result:
            values[load] = -values[tau]
    for k in OUT_FIELDS:
        setattr(out, k, values[k])
    out.clamped = _clamped_output(result.get("clamped", 0))


def _store_refmap(result, th1, th2, finite):
    """Store a Python refmap's (th1, th2), both checked."""
    if (
        isinstance(result, (str, bytes))
        or not isinstance(result, (Sequence, np.ndarray))
        or len(result) != 2
    ):
        size = f" of length {len(result)}" if isinstance(result, Sized) else ""
        raise TypeError(
            f"refmap: must return a pair (th1, th2), got {type(result).__name__}"
            f"{size} {str(result)[:40]}"
        )
    th1[0] = _real_output(result[0], "refmap output 'th1'", finite)
    th2[0] = _real_output(result[1], "refmap output 'th2'", finite)


@ffi.def_extern(error=lib.ASR_ERR_CALLBACK)
def asr_py_elastic(user, p, inp, out):
    bound = ffi.from_handle(user)
    model = bound.python
    try:
        result = model.elastic(
            inp.q, inp.qd, inp.th1, inp.th2, inp.th1d, inp.th2d, **model.kwargs(p)
        )
        _store_elastic(result, out, bound.finite)
        return 0
    except BaseException as exc:  # kept and re-raised by this call's caller after the C call
        bound.keep_error(exc)
        return lib.ASR_ERR_CALLBACK


@ffi.def_extern(error=lib.ASR_ERR_CALLBACK)
def asr_py_refmap(user, p, eq, preset, th1, th2):
    bound = ffi.from_handle(user)
    model = bound.python
    try:
        _store_refmap(model.refmap(eq, preset, **model.kwargs(p)), th1, th2, bound.finite)
        return 0
    except BaseException as exc:
        bound.keep_error(exc)
        return lib.ASR_ERR_CALLBACK


def _default_refmap(eq, preset, **params):
    """Antagonistic map th = eq +/- preset (the toolbox template's default)."""
    return eq + preset, eq - preset


_FN_TYPES = {"elastic": "asr_elastic_fn", "refmap": "asr_refmap_fn"}


def _signature(ctype):
    """A function-pointer ctype as comparable text, None for any other type. The user's own
    cffi module declares the structs anew, and may name them 'asr_elastic_in' where asr's
    cdef says 'struct asr_elastic_in': both are the same C type."""
    if ctype.kind != "function":
        return None
    return ctype.cname.replace("struct ", "")


def _c_function(fn, param):
    """fn (a cffi cdata) as the C function-pointer type `param` takes, checked: C calls it
    blindly, so a data pointer or another signature would crash the process."""
    tname = _FN_TYPES[param]
    expected, given = ffi.typeof(tname), ffi.typeof(fn)
    if _signature(given) != _signature(expected):
        raise TypeError(
            f"{param}: expected a C function pointer of type {tname}, "
            f"{expected.cname}, got a cdata of type {given.cname}"
        )
    if fn == ffi.NULL:
        raise TypeError(
            f"{param}: got a NULL {tname} pointer ({expected.cname}); expected a C function"
        )
    return ffi.cast(tname, fn)


def callbacks(elastic, refmap, names):
    """(C elastic, C refmap, PythonModel or None): C pointers checked, and the trampolines
    for what is Python (refmap None: the default eq +/- preset map, in Python)."""
    c_el = _c_function(elastic, "elastic") if isinstance(elastic, ffi.CData) else None
    c_rm = _c_function(refmap, "refmap") if isinstance(refmap, ffi.CData) else None
    if c_el is None and not callable(elastic):
        raise TypeError(
            "elastic: expected a C asr_elastic_fn pointer or a Python callable, got "
            f"{type(elastic).__name__}"
        )
    if c_rm is None and refmap is not None and not callable(refmap):
        raise TypeError(
            "refmap: expected a C asr_refmap_fn pointer or a Python callable, got "
            f"{type(refmap).__name__}"
        )
    if c_el is not None and c_rm is not None:
        return c_el, c_rm, None
    python = PythonModel(
        names,
        elastic if c_el is None else None,
        (refmap or _default_refmap) if c_rm is None else None,
    )
    return (
        c_el if c_el is not None else lib.asr_py_elastic,
        c_rm if c_rm is not None else lib.asr_py_refmap,
        python,
    )
