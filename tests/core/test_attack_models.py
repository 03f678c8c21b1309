"""User-defined compliance models under attack (issue 28): an exception belongs to the call whose
callback raised it, whatever other batch or thread uses the same model; a pointer of the wrong
C type is refused before C calls it; what a callback returns is checked field by field.

Crash cases run in a subprocess with a timeout, so a segfault fails the test instead of pytest.
"""

import math
import subprocess
import sys
import textwrap
import threading
import uuid

import numpy as np
import pytest

import asr
from asr.core.ffi import lib
from asr.core.models import MAX_MODEL_PARAMS

INF = math.inf


@pytest.fixture
def register():
    """register(prefix, elastic, refmap=None, **kw) -> name; unregisters on teardown."""
    names = []

    def _register(prefix, elastic, refmap=None, **kw):
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        asr.register_model(name, elastic, refmap, **kw)
        names.append(name)
        return name

    yield _register
    for name in names:
        if name in asr.models():
            asr.unregister_model(name)


# ---------------------------------------------------------------- errors belong to their call

FAIL = (
    asr.ParamSpec("k", 5.0, lo=0.0, hi=INF, lo_open=True, hi_open=True, unit="N m/rad"),
    asr.ParamSpec("fail", 0.0, lo=0.0, hi=1.0, integer=True, doc="1: the callback raises"),
)


class XFailed(ValueError):
    """The failing batch's own exception type."""


def shared_elastic(q, qd, th1, th2, th1d, th2d, k, fail):
    if fail:
        raise XFailed(f"X's own failure at q = {q}")
    return {"tau1": -k * (q - th1), "stiffness": k, "kload1": k}


def shared_refmap(eq, preset, k, fail):
    if fail:
        raise XFailed(f"X's own refmap failure at eq = {eq}")
    return eq, preset


def _hammer_x(run_x, stop, seen):
    """Run X until stopped, recording what each call raised."""
    while not stop.is_set():
        try:
            run_x()
            seen.append("no exception")
        except XFailed as exc:
            seen.append("ok" if str(exc).startswith("X's own") else f"XFailed {exc}")
        except Exception as exc:  # anything else is X getting the wrong error
            seen.append(f"{type(exc).__name__}: {exc}")


def _entry_points(name):
    """{entry: (run X (always raises), run Y (never raises))} over one shared model (X resets
    first: its instance stays frozen after each failure)."""
    bx = asr.Batch([asr.Joint(name, 2, {"fail": 1.0})], 1)
    by = asr.Batch([asr.Joint(name, 2, {"fail": 0.0})], 1)
    bx.reset(0.0)
    by.reset(0.0)
    return {
        "rollout": (
            lambda: (bx.reset(0.0), bx.rollout(20, 1e-3, np.zeros((1, 1, 2)), q=0.05)),
            lambda: by.rollout(20, 1e-3, np.zeros((1, 1, 2)), q=0.05),
        ),
        "compliance": (
            lambda: asr.compliance(name, np.linspace(0, 0.1, 50), 0.0, fail=1.0),
            lambda: asr.compliance(name, np.linspace(0, 0.1, 50), 0.0, fail=0.0),
        ),
        "reference_map": (
            lambda: asr.reference_map(name, np.zeros(50), 0.1, fail=1.0),
            lambda: asr.reference_map(name, np.zeros(50), 0.1, fail=0.0),
        ),
    }


@pytest.mark.parametrize("entry", ("rollout", "compliance", "reference_map"))
@pytest.mark.slow
def test_an_error_belongs_to_the_call_that_raised_it(register, entry):
    """X (always raising) in a thread, Y (never raising) 1000 times on the same model: Y never
    raises, and every X call gets its own exception type and message."""
    name = register("shared", shared_elastic, shared_refmap, params=FAIL, nmotor=1)
    run_x, run_y = _entry_points(name)[entry]
    stop, seen_x = threading.Event(), []
    x = threading.Thread(target=_hammer_x, args=(run_x, stop, seen_x))
    x.start()
    y_raised = []
    try:
        for _ in range(1000):
            try:
                run_y()
            except Exception as exc:
                y_raised.append(f"{type(exc).__name__}: {exc}")
    finally:
        stop.set()
        x.join(timeout=120)  # generous: one X call is a few callbacks
    assert not x.is_alive()
    assert y_raised == [], f"Y raised {len(y_raised)} of 1000 times: {y_raised[:3]}"
    wrong = [s for s in seen_x if s != "ok"]
    assert seen_x and wrong == [], (
        f"X got {len(wrong)} wrong outcomes of {len(seen_x)}: {wrong[:3]}"
    )


def test_a_batch_error_does_not_outlive_its_call(register):
    """The failing call raises its error once; the same batch's next good call is clean."""
    name = register("shared", shared_elastic, shared_refmap, params=FAIL, nmotor=1)
    b = asr.Batch([asr.Joint(name, 2, {"fail": 1.0})], 1)
    b.reset(0.0)
    with pytest.raises(XFailed, match="X's own failure"):
        b.rollout(2, 1e-3, np.zeros((1, 1, 2)), q=0.05)
    b.set_params(0, fail=0.0)
    b.reset(0.0)
    b.rollout(2, 1e-3, np.zeros((1, 1, 2)), q=0.05)
    assert b.status[0] == 0


# ---------------------------------------------------------------- pointers of the wrong C type

CRASH_SCRIPT = textwrap.dedent("""
    import asr
    from asr.core.ffi import ffi
    good = lambda q, qd, th1, th2, th1d, th2d: {"tau1": -q, "stiffness": 1.0}
    cases = {
        "elastic data": dict(elastic=ffi.new("double[4]")),
        "elastic refmap type": dict(elastic=asr.core.ffi.lib.asr_py_refmap),
        "elastic int pointer": dict(elastic=ffi.new("int*")),
        "elastic NULL": dict(elastic=ffi.cast("asr_elastic_fn", 0)),
        "refmap data": dict(elastic=good, refmap=ffi.new("double[4]")),
        "refmap elastic type": dict(elastic=good, refmap=asr.core.ffi.lib.asr_py_elastic),
        "refmap NULL": dict(elastic=good, refmap=ffi.cast("asr_refmap_fn", 0)),
    }
    for k, (case, kw) in enumerate(cases.items()):
        name = f"bad{k}"
        try:
            asr.register_model(name, kw.pop("elastic"), kw.pop("refmap", None))
        except TypeError as exc:
            print(f"{case}: TypeError: {exc}", flush=True)
            continue
        print(f"{case}: accepted", flush=True)
        asr.compliance(name, 0.1, 0.0)          # where a bad pointer crashed
        asr.reference_map(name, 0.1, 0.2)
        print(f"{case}: evaluated", flush=True)
""")


def test_a_pointer_of_the_wrong_c_type_is_refused():
    """A data pointer (or another function type, or NULL) given as elastic or refmap: a
    TypeError naming the parameter, the type given and the type expected; never a crash.
    120 s is a generous bound for one interpreter start and seven registrations."""
    r = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, f"exit {r.returncode} (signal 11 is a crash): {r.stdout}{r.stderr}"
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert len(lines) == 7, r.stdout
    for case, text in lines.items():
        param = case.split()[0]
        assert text.startswith(f"TypeError: {param}: "), (case, text)
        assert f"asr_{param}_fn" in text and "int(*)(" in text, (case, text)
    assert "double[4]" in lines["elastic data"]
    assert "NULL" in lines["elastic NULL"] and "NULL" in lines["refmap NULL"]


# ---------------------------------------------------------------- what a model declares and returns


def test_too_many_parameters_named_with_the_limit(register):
    """70 own parameters: refused at registration, naming the count and the limit (before: a
    Batch failed later with 'value outside its valid range')."""
    params = [asr.ParamSpec(f"p{k}", 1.0) for k in range(70)]
    with pytest.raises(ValueError, match=r"params: 70 parameters.*at most \d+"):
        register("many", shared_elastic, params=params)
    limit = MAX_MODEL_PARAMS
    name = register(
        "most",
        lambda q, qd, th1, th2, th1d, th2d, **p: {"tau1": -q, "stiffness": 1.0},
        params=[asr.ParamSpec(f"p{k}", 1.0) for k in range(limit)],
        nmotor=1,
    )
    b = asr.Batch([asr.Joint(name, 2)], 1)  # the most the core takes works in a batch
    b.reset(0.0)
    b.rollout(2, 1e-3, np.zeros((1, 1, 2)), q=0.01)
    assert b.status[0] == 0


def _returning(**fields):
    def elastic(q, qd, th1, th2, th1d, th2d):
        return {"tau1": -q, "stiffness": 1.0, **fields}

    return elastic


@pytest.mark.parametrize("clamped", ("yes", 7, -1, 1.5, None, np.int64(3)))
def test_clamped_must_be_a_spring_count(register, clamped):
    name = register("clamp", _returning(clamped=clamped), nmotor=1)
    with pytest.raises((TypeError, ValueError), match=r"'clamped'.*0, 1 or 2"):
        asr.compliance(name, 0.1, 0.0)


def test_clamped_counts_are_accepted(register):
    for count in (0, 1, 2, np.int32(2), True, False, np.bool_(True)):
        name = register("clamp", _returning(clamped=count))
        assert int(asr.compliance(name, 0.1, 0.0).clamped) == int(count)


@pytest.mark.parametrize(
    "field", ("tau1", "stiffness", "tau2", "damping", "load1", "kload2", "cload1", "defl2")
)
@pytest.mark.parametrize("value", (math.nan, INF, -INF))
def test_a_non_finite_output_is_a_clear_error_or_frozen_instance(register, field, value):
    """A callback returning NaN or inf: from compliance a ValueError naming the output and the
    value (before: 'value outside its valid range' blaming the inputs); in a batch, in every
    mode, exactly that instance frozen with ASR_ERR_NONFINITE, even for an output the mode
    leaves unused (before: damping, load2, kload2 and cload silently accepted in mode 2, an
    infinite cload1 in mode 5)."""

    def elastic(q, qd, th1, th2, th1d, th2d):
        out = {"tau1": -q, "stiffness": 1.0}
        if q > 0.5:  # instance 1 only
            out[field] = value
        return out

    name = register("nan", elastic)
    with pytest.raises(ValueError, match=rf"'{field}': got {value}, must be finite"):
        asr.compliance(name, 0.6, 0.0)
    for mode in (2, 5, 6):
        b = asr.Batch([asr.Joint(name, mode)], 3)
        b.reset(0.0)
        b.rollout(2, 1e-3, np.zeros((3, 1, 2)), q=np.array([[0.0], [0.6], [0.1]]), on_error="flag")
        assert list(b.status) == [0, lib.ASR_ERR_NONFINITE, 0], (mode, list(b.status))
        assert np.all(np.isfinite(b.field("tau_joint")))


@pytest.mark.parametrize(
    "result, pattern",
    (
        ((math.nan, 0.0), r"refmap.*th1.*nan.*finite"),
        ((0.0, INF), r"refmap.*th2.*inf.*finite"),
        ((0.0, 0.0, 0.0), r"refmap.*\(th1, th2\).*3"),
        ("ab", r"refmap.*\(th1, th2\).*str"),
        ((0.0, "x"), r"refmap.*th2.*str"),
    ),
)
def test_a_bad_refmap_result_is_a_clear_error(register, result, pattern):
    name = register("map", _returning(), lambda eq, preset: result)
    with pytest.raises((TypeError, ValueError), match=pattern):
        asr.reference_map(name, 0.1, 0.2)


def test_a_non_finite_refmap_result_in_a_batch_is_refused(register):
    """In a batch: a reset to such references is refused, and a step freezes the instance
    (before: NaN motor angles in the state after reset)."""

    def refmap(eq, preset):
        return (math.nan if eq > 0.5 else eq), preset

    name = register("map", _returning(), refmap)
    b = asr.Batch([asr.Joint(name, 6)], 2)
    refs = np.array([[[0.6, 0.0]], [[0.1, 0.0]]])
    with pytest.raises(ValueError, match="reset"):
        b.reset(0.0, refs)
    b.reset(0.0)
    b.rollout(2, 1e-3, refs, q=0.0, on_error="flag")
    assert list(b.status) == [lib.ASR_ERR_NONFINITE, 0]
    assert np.all(np.isfinite(b.field("th1")))
