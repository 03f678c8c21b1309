"""User-defined compliance models (docs/models.md, "user-defined models"): a Python callable
(convenience path) and a C function pointer from the user's own cffi module (fast path), both
registered without recompiling asr.

References are independent: the closed form of the user's own spring written here in NumPy,
and, for the C model (a linear SEA), the closed form of docs/models.md and the built-in `sea`.
"""

import importlib
import math
import sys
import uuid

import numpy as np
import pytest

import asr
from asr.core.ffi import ffi

INF = math.inf


def _unique(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def register():
    """register(name_prefix, elastic, ...) -> (name, spec); unregisters everything on teardown."""
    names = []

    def _register(prefix, elastic, refmap=None, **kw):
        name = _unique(prefix)
        spec = asr.register_model(name, elastic, refmap, **kw)
        names.append(name)
        return name, spec

    yield _register
    for name in names:
        if name in asr.models():
            asr.unregister_model(name)


# ---------------------------------------------------------------------------- a cubic spring

CUBIC_PARAMS = (
    asr.ParamSpec(
        "k", 5.0, lo=0.0, hi=INF, lo_open=True, hi_open=True, unit="N m/rad", doc="linear stiffness"
    ),
    asr.ParamSpec(
        "c", 40.0, lo=0.0, hi=INF, hi_open=True, unit="N m/rad^3", doc="cubic coefficient"
    ),
)


def cubic_elastic(q, qd, th1, th2, th1d, th2d, k, c):
    phi = q - th1
    tau1 = -(k * phi + c * phi**3)
    sigma = k + 3.0 * c * phi**2
    return {"tau1": tau1, "stiffness": sigma, "kload1": sigma, "defl1": phi}


def cubic_refmap(eq, preset, k, c):
    return eq, preset


def cubic_closed(q, th1, k=5.0, c=40.0):
    """The cubic spring's own closed form."""
    phi = q - th1
    return -(k * phi + c * phi**3), k + 3.0 * c * phi**2


@pytest.fixture
def cubic(register):
    name, spec = register(
        "cubic",
        cubic_elastic,
        cubic_refmap,
        params=CUBIC_PARAMS,
        nmotor=1,
        defaults={"motor_J": 0.01, "kp": 60.0},
        doc="cubic test spring",
    )
    return name, spec


def test_python_model_spec(cubic):
    name, spec = cubic
    assert name in asr.models()
    s = asr.models()[name]
    assert s is spec or s == spec
    assert s.nmotor == 1 and s.kinematic_th2 is False
    assert [p.name for p in s.params] == ["k", "c"]
    assert [p.default for p in s.params] == [5.0, 40.0]
    assert s.params[0].unit == "N m/rad" and s.params[1].unit == "N m/rad^3"
    common = {p.name: p.default for p in s.common}
    assert common["motor_J"] == 0.01 and common["kp"] == 60.0
    assert common["kd"] == 4.5  # not overridden: the toolbox default
    assert s.doc == "cubic test spring"


def test_python_model_compliance_closed_form(cubic):
    name, _ = cubic
    q = np.linspace(-0.6, 0.6, 13)[:, None]
    th1 = np.linspace(-0.4, 0.4, 9)[None, :]
    r = asr.compliance(name, q, th1)
    tau, sigma = cubic_closed(q, th1)
    np.testing.assert_allclose(r.tau1, tau, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r.tau_link, tau, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r.stiffness, sigma, rtol=1e-12)
    np.testing.assert_allclose(r.load1, -tau, rtol=1e-12, atol=1e-14)  # default reaction
    np.testing.assert_array_equal(r.tau2, 0.0)
    np.testing.assert_array_equal(r.load2, 0.0)
    np.testing.assert_array_equal(r.damping, 0.0)
    np.testing.assert_allclose(r.defl1, q - th1, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(r.clamped, 0)
    # non-default and array-valued (per-point) parameters
    k = np.linspace(1.0, 20.0, 13)[:, None]
    r = asr.compliance(name, q, th1, k=k, c=0.5)
    tau, sigma = cubic_closed(q, th1, k=k, c=0.5)
    np.testing.assert_allclose(r.tau_link, tau, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r.stiffness, sigma, rtol=1e-12)
    # stiffness is -d tau/dq (finite difference) for this model as well
    h = 1e-6
    fd = -(
        asr.compliance(name, q + h, th1).tau_link - asr.compliance(name, q - h, th1).tau_link
    ) / (2 * h)
    np.testing.assert_allclose(asr.compliance(name, q, th1).stiffness, fd, rtol=1e-6)


def test_python_model_reference_maps(cubic, register):
    name, _ = cubic
    eq = np.linspace(-1, 1, 5)
    th1, th2 = asr.reference_map(name, eq, 0.3)
    np.testing.assert_array_equal(th1, eq)
    np.testing.assert_array_equal(th2, 0.3)
    # without a refmap: the toolbox template's antagonistic map th = eq +/- preset
    name2, _ = register("cubic_default_map", cubic_elastic, params=CUBIC_PARAMS, nmotor=2)
    th1, th2 = asr.reference_map(name2, eq, 0.25)
    np.testing.assert_allclose(th1, eq + 0.25, rtol=0, atol=1e-15)
    np.testing.assert_allclose(th2, eq - 0.25, rtol=0, atol=1e-15)


def test_python_model_params_validated(cubic):
    name, _ = cubic
    with pytest.raises(ValueError, match=r"\bk\b"):
        asr.compliance(name, 0.1, 0.0, k=0.0)  # open lower bound
    with pytest.raises(ValueError, match=r"\bk\b"):
        asr.compliance(name, 0.1, 0.0, k=np.array([1.0, -2.0]))
    with pytest.raises(ValueError, match=r"\bc\b"):
        asr.compliance(name, 0.1, 0.0, c=-0.5)
    with pytest.raises(ValueError, match=r"\bc\b"):
        asr.compliance(name, 0.1, 0.0, c=np.nan)
    with pytest.raises(ValueError, match="bogus"):
        asr.compliance(name, 0.1, 0.0, bogus=1.0)
    with pytest.raises(ValueError, match=r"\bk\b"):
        asr.Batch([asr.Joint(name, 3, {"k": -1.0})], 2)
    b = asr.Batch([asr.Joint(name, 3, {"k": 7.0})], 2)
    with pytest.raises(ValueError, match=r"\bc\b"):
        b.set_param(0, "c", np.array([1.0, -1.0]))
    np.testing.assert_array_equal(b.get_param(0, "c"), 40.0)  # unchanged after the failure
    np.testing.assert_array_equal(b.get_param(0, "k"), 7.0)


def test_python_model_batch_mode3(cubic):
    name, _ = cubic
    n = 6
    k = np.linspace(2.0, 12.0, n)
    b = asr.Batch([asr.Joint(name, 3, {"k": k, "c": 25.0})], n)
    rng = np.random.default_rng(3)
    eq0 = rng.uniform(-0.5, 0.5, n)
    b.reset(0.0, np.stack([eq0, np.zeros(n)], -1)[:, None, :])
    for _step in range(5):
        eq = rng.uniform(-0.5, 0.5, n)
        q = rng.uniform(-0.7, 0.7, n)
        refs = np.stack([eq, np.full(n, 0.1)], -1)[:, None, :]
        out = b.step(q[:, None], 0.0, refs, 1e-3)
        tau, sigma = cubic_closed(q, eq, k=k, c=25.0)
        np.testing.assert_allclose(b.th1[:, 0], eq, rtol=0, atol=0)
        np.testing.assert_allclose(b.tau_el1[:, 0], tau, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b.stiffness[:, 0], sigma, rtol=1e-12)
        np.testing.assert_allclose(b.tau_link[:, 0], tau, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(np.asarray(out)[:, 0], tau, rtol=1e-12, atol=1e-14)
    assert np.all(b.status == 0)


def test_python_model_batch_mode6(cubic):
    """Motor dynamics: the torque of each step is the spring's closed form at the link angle
    given and the motor angle at the start of the step; the PID drives the motor to eq."""
    name, _ = cubic
    n = 3
    b = asr.Batch([asr.Joint(name, 6, {"c": 10.0})], n)
    q = np.array([-0.05, 0.0, 0.08])
    eq = np.array([0.2, -0.1, 0.05])
    refs = np.stack([eq, np.zeros(n)], -1)[:, None, :]
    b.reset(q[:, None])  # motors at zero deflection
    np.testing.assert_array_equal(b.th1[:, 0], q)
    moved = False
    for _ in range(150):
        th_start = b.th1[:, 0].copy()
        b.step(q[:, None], 0.0, refs, 2e-3)
        tau, sigma = cubic_closed(q, th_start, c=10.0)
        np.testing.assert_allclose(b.tau_el1[:, 0], tau, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b.stiffness[:, 0], sigma, rtol=1e-12)
        moved |= np.any(b.th1[:, 0] != th_start)
    assert moved
    # the motor PID (kp 60, friction 0.02 N m) brings the motor close to the equilibrium
    assert np.all(np.abs(b.th1[:, 0] - eq) < 0.5 * np.abs(q - eq) + 1e-3)


def test_python_linear_model_reproduces_builtin_sea_in_mode6(register):
    """A Python linear SEA (the cubic with c = 0) follows the built-in sea exactly."""
    name, _ = register("pysea", cubic_elastic, cubic_refmap, params=CUBIC_PARAMS, nmotor=1)
    n, steps = 3, 60
    t = np.arange(steps) * 2e-3
    eq = (0.3 * np.sin(5 * t)[None, :] * np.array([1.0, -0.5, 2.0])[:, None])[:, :, None, None]
    refs = np.concatenate([eq, np.zeros_like(eq)], axis=-1)  # (n, steps, 1, 2)
    q = 0.05 * np.cos(3 * t)[None, :, None] * np.ones((n, 1, 1))
    res = {}
    for model, params in ((name, {"k": 10.0, "c": 0.0}), ("sea", {"k": 10.0})):
        b = asr.Batch([asr.Joint(model, 6, params)], n)
        b.reset(0.0)
        res[model] = b.rollout(
            steps, 2e-3, refs, q=q, record=("tau_link", "th1", "th1d", "stiffness")
        )
    for f in ("tau_link", "th1", "th1d", "stiffness"):
        np.testing.assert_allclose(res[name][f], res["sea"][f], rtol=1e-12, atol=1e-13, err_msg=f)
    assert np.ptp(res["sea"]["th1"]) > 0.05  # the motors really moved


# ---------------------------------------------------------------------------- exceptions


class ModelBoom(Exception):
    pass


def exploding_elastic(q, qd, th1, th2, th1d, th2d, k, c):
    if q > 1.0:
        raise ModelBoom(f"spring broke at q={q:.3f}")
    if q < -1.0:
        return 1.0 / 0.0  # ZeroDivisionError
    return cubic_elastic(q, qd, th1, th2, th1d, th2d, k, c)


def exploding_refmap(eq, preset, k, c):
    if eq > 2.0:
        raise KeyError("no such equilibrium")
    return eq, preset


@pytest.fixture
def exploding(register):
    return register("boom", exploding_elastic, exploding_refmap, params=CUBIC_PARAMS, nmotor=1)[0]


def test_exception_propagates_from_compliance(exploding):
    with pytest.raises(ModelBoom, match=r"spring broke at q=1\.500"):
        asr.compliance(exploding, np.array([0.0, 1.5, 0.2]), 0.0)
    with pytest.raises(ZeroDivisionError):
        asr.compliance(exploding, -1.5, 0.0)
    # not sticky: the next valid call works and is right
    r = asr.compliance(exploding, 0.5, 0.1)
    assert float(r.tau_link) == pytest.approx(cubic_closed(0.5, 0.1)[0], rel=1e-12)
    with pytest.raises(KeyError, match="no such equilibrium"):
        asr.reference_map(exploding, 3.0, 0.0)
    th1, _ = asr.reference_map(exploding, 0.5, 0.0)
    assert float(th1) == 0.5


@pytest.mark.parametrize("mode", (3, 6))
def test_exception_propagates_from_batch_step(exploding, mode):
    b = asr.Batch([asr.Joint(exploding, mode)], 2)
    refs = np.zeros((2, 1, 2))
    b.reset(0.0, refs)
    b.step(0.3, 0.0, refs, 1e-3)  # fine
    assert float(b.tau_link[0, 0]) == pytest.approx(cubic_closed(0.3, 0.0)[0], rel=1e-12)
    with pytest.raises(ModelBoom, match=r"spring broke at q=1\.200"):
        b.step(np.array([[0.1], [1.2]]), 0.0, refs, 1e-3)
    b.reset(0.0, refs)
    with pytest.raises(ModelBoom, match="spring broke"):
        b.step(1.7, 0.0, refs, 1e-3, on_error="flag")  # never swallowed
    b.reset(0.0, refs)
    with pytest.raises(ZeroDivisionError):
        b.step(-1.7, 0.0, refs, 1e-3)
    b.reset(0.0, refs)
    with pytest.raises(ModelBoom):
        b.rollout(5, 1e-3, refs, q=np.linspace(0.9, 1.3, 5)[None, :, None] * np.ones((2, 1, 1)))
    # the refmap's exception too (mode 3 and 6 map the references)
    b.reset(0.0, refs)
    with pytest.raises(KeyError, match="no such equilibrium"):
        b.step(0.0, 0.0, np.full((2, 1, 2), 2.5), 1e-3)
    with pytest.raises(KeyError, match="no such equilibrium"):
        b.reset(0.0, np.full((2, 1, 2), 2.5))
    # after a reset with valid inputs the batch works again
    b.reset(0.0, refs)
    b.step(0.2, 0.0, refs, 1e-3)
    assert float(b.tau_el1[1, 0]) == pytest.approx(cubic_closed(0.2, 0.0)[0], rel=1e-12)


def test_bad_return_value_raises(register):
    name, _ = register("notamap", lambda *a, **p: (1.0, 2.0), params=())
    with pytest.raises(TypeError):
        asr.compliance(name, 0.1, 0.0)
    name2, _ = register(
        "badkey", lambda *a, **p: {"tau1": 0.0, "stiffness": 1.0, "oops": 1.0}, params=()
    )
    with pytest.raises(ValueError, match="oops"):
        asr.compliance(name2, 0.1, 0.0)


# ---------------------------------------------------------------------------- C function pointer

C_SOURCE = r"""
#include <math.h>
#include <string.h>
#include "asr.h"

/* linear SEA: phi = sat(q - th1, max_def), tau1 = -k phi; p = {k, max_def} */
int my_elastic(void* user, const double* p, const asr_elastic_in* in, asr_elastic_out* out) {
    double k = p[0], m = p[1];
    double raw = in->q - in->th1;
    double phi = fmin(fmax(raw, -m), m);
    (void)user;
    memset(out, 0, sizeof *out);
    out->tau1 = -k * phi;
    out->stiffness = k;
    out->load1 = k * phi;
    out->kload1 = k;
    out->defl1 = phi;
    out->clamped = fabs(raw) > m;
    return 0;
}

int my_refmap(void* user, const double* p, double eq, double preset, double* th1, double* th2) {
    (void)user; (void)p;
    *th1 = eq;
    *th2 = preset;
    return 0;
}
"""

C_CDEF = """
typedef struct asr_elastic_in {
    double q, qd;
    double th1, th2;
    double th1d, th2d;
} asr_elastic_in;
typedef struct asr_elastic_out {
    double tau1, tau2;
    double stiffness;
    double damping;
    double load1, load2;
    double kload1, kload2;
    double cload1, cload2;
    double defl1, defl2;
    int clamped;
} asr_elastic_out;
int my_elastic(void* user, const double* p, const asr_elastic_in* in, asr_elastic_out* out);
int my_refmap(void* user, const double* p, double eq, double preset, double* th1, double* th2);
"""


@pytest.fixture(scope="module")
def user_c_module(tmp_path_factory):
    """The user's own cffi module (out-of-line API mode), compiled at test time."""
    import os

    import cffi

    csrc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(asr.__file__))), "csrc")
    assert os.path.exists(os.path.join(csrc, "asr.h")), csrc
    tmp = tmp_path_factory.mktemp("user_cffi")
    modname = f"_asr_user_sea_{uuid.uuid4().hex[:8]}"
    builder = cffi.FFI()
    builder.cdef(C_CDEF)
    builder.set_source(modname, C_SOURCE, include_dirs=[csrc], libraries=["m"])
    builder.compile(tmpdir=str(tmp))
    sys.path.insert(0, str(tmp))
    try:
        mod = importlib.import_module(modname)
    finally:
        sys.path.remove(str(tmp))
    return mod


SEA_PARAMS = (
    asr.ParamSpec("k", 10.0, lo=0.0, hi=INF, lo_open=True, hi_open=True, unit="N m/rad"),
    asr.ParamSpec("max_def", 0.8, lo=0.0, hi=INF, lo_open=True, hi_open=True, unit="rad"),
)


@pytest.fixture(params=("raw_pointer", "cast_with_asr_ffi"))
def c_sea(request, user_c_module, register):
    uffi, ulib = user_c_module.ffi, user_c_module.lib
    el = uffi.addressof(ulib, "my_elastic")
    rm = uffi.addressof(ulib, "my_refmap")
    if request.param == "cast_with_asr_ffi":
        el = ffi.cast("asr_elastic_fn", ffi.cast("uintptr_t", uffi.cast("uintptr_t", el)))
        rm = ffi.cast("asr_refmap_fn", ffi.cast("uintptr_t", uffi.cast("uintptr_t", rm)))
    name, spec = register("csea", el, rm, params=SEA_PARAMS, nmotor=1)
    return name


def test_c_model_matches_builtin_sea_compliance(c_sea):
    q = np.linspace(-1.5, 1.5, 17)[:, None]
    th1 = np.linspace(-0.9, 0.9, 7)[None, :]
    rng = np.random.default_rng(5)
    for params in (
        {},
        {"k": 200.0, "max_def": 0.3},
        {"k": rng.uniform(1, 400, (17, 7)), "max_def": rng.uniform(0.1, 1.2, (17, 7))},
    ):
        mine = asr.compliance(c_sea, q, th1, **params)
        ref = asr.compliance("sea", q, th1, **params)
        k = params.get("k", 10.0)
        m = params.get("max_def", 0.8)
        phi = np.clip(q - th1, -m, m)
        for f in (
            "tau_link",
            "tau1",
            "tau2",
            "stiffness",
            "damping",
            "load1",
            "load2",
            "defl1",
            "defl2",
        ):
            np.testing.assert_allclose(
                getattr(mine, f), getattr(ref, f), rtol=1e-12, atol=1e-13, err_msg=f
            )
        np.testing.assert_array_equal(mine.clamped, ref.clamped)
        # and the closed form of docs/models.md
        np.testing.assert_allclose(mine.tau_link, -k * phi, rtol=1e-12, atol=1e-13)
        np.testing.assert_array_equal(mine.clamped, (np.abs(q - th1) > m).astype(int))
    th1, th2 = asr.reference_map(c_sea, np.array([0.1, -0.4]), 0.7)
    np.testing.assert_array_equal(th1, [0.1, -0.4])
    with pytest.raises(ValueError, match="max_def"):
        asr.compliance(c_sea, 0.1, 0.0, max_def=-1.0)


@pytest.mark.parametrize("mode", (2, 3, 5, 6))
def test_c_model_matches_builtin_sea_in_batch(c_sea, mode):
    n, steps, dt = 4, 150, 2e-3
    t = np.arange(steps) * dt
    amp = np.array([0.2, -0.5, 0.9, 0.05])
    eq = (amp[:, None] * np.sin(4 * t)[None, :])[:, :, None, None]
    refs = np.concatenate([eq, np.zeros_like(eq)], axis=-1)  # (n, steps, 1, 2)
    q = (0.3 * np.cos(2 * t)[None, :] * np.ones((n, 1)))[:, :, None]
    qd = (-0.6 * np.sin(2 * t)[None, :] * np.ones((n, 1)))[:, :, None]
    params = {"k": np.array([10.0, 50.0, 200.0, 400.0]), "max_def": 0.5}
    rec = ("tau_link", "tau_el1", "stiffness", "th1", "th1d", "defl1", "clamped", "tau_m1")
    res = {}
    for model in (c_sea, "sea"):
        b = asr.Batch([asr.Joint(model, mode, params)], n, threads=2)
        b.reset(0.0)
        res[model] = b.rollout(steps, dt, refs, q=q, qd=qd, record=rec)
        assert np.all(b.status == 0)
    for f in rec:
        np.testing.assert_allclose(res[c_sea][f], res["sea"][f], rtol=1e-12, atol=1e-12, err_msg=f)
    # closed form of docs/models.md on the recorded states (motor angle at the start of each step)
    th_start = np.concatenate([np.zeros((n, 1, 1)), res[c_sea]["th1"][:, :-1]], axis=1)
    if mode in (2, 3):
        th_start = refs[..., 0]
    phi = np.clip(q - th_start, -0.5, 0.5)
    np.testing.assert_allclose(
        res[c_sea]["tau_el1"], -params["k"][:, None, None] * phi, rtol=1e-12, atol=1e-12
    )
    assert np.any(res[c_sea]["clamped"] > 0) or mode >= 5  # big steps clamp in modes 2 and 3


def test_c_elastic_with_python_default_refmap(user_c_module, register):
    uffi, ulib = user_c_module.ffi, user_c_module.lib
    name, _ = register(
        "csea_pymap", uffi.addressof(ulib, "my_elastic"), params=SEA_PARAMS, nmotor=1
    )
    th1, th2 = asr.reference_map(name, 0.2, 0.1)  # toolbox template map: eq +/- preset
    assert float(th1) == pytest.approx(0.3, abs=1e-15)
    assert float(th2) == pytest.approx(0.1, abs=1e-15)
    r = asr.compliance(name, 0.5, 0.3)
    assert float(r.tau_link) == pytest.approx(-2.0, rel=1e-12)


# ---------------------------------------------------------------------------- registry


def test_registration_errors(cubic):
    name, _ = cubic
    before = dict(asr.models())
    with pytest.raises(ValueError, match="already"):
        asr.register_model(name, cubic_elastic, params=CUBIC_PARAMS)
    for builtin in ("sea", "qbmove", "rigid"):
        with pytest.raises(ValueError):
            asr.register_model(builtin, cubic_elastic, params=CUBIC_PARAMS)
    fresh = _unique("bad")
    with pytest.raises(ValueError, match="not_a_param"):
        asr.register_model(fresh, cubic_elastic, params=CUBIC_PARAMS, defaults={"not_a_param": 1.0})
    with pytest.raises(ValueError, match="motor_J"):
        asr.register_model(fresh, cubic_elastic, params=CUBIC_PARAMS, defaults={"motor_J": -1.0})
    with pytest.raises(TypeError):
        asr.register_model(fresh, 42, params=CUBIC_PARAMS)
    with pytest.raises(TypeError):
        asr.register_model(fresh, "cubic_elastic", params=CUBIC_PARAMS)
    with pytest.raises(TypeError):
        asr.register_model(fresh, cubic_elastic, refmap=3.0, params=CUBIC_PARAMS)
    with pytest.raises(TypeError):
        asr.register_model(fresh, cubic_elastic, params=({"name": "k"},))
    with pytest.raises(ValueError, match="nmotor"):
        asr.register_model(fresh, cubic_elastic, params=CUBIC_PARAMS, nmotor=3)
    with pytest.raises((TypeError, ValueError)):
        asr.register_model("", cubic_elastic, params=CUBIC_PARAMS)
    # a failed registration leaves nothing behind
    assert fresh not in asr.models()
    assert set(asr.models()) == set(before)
    with pytest.raises(ValueError):
        asr.compliance(fresh, 0.1, 0.0)


def test_unregister(register):
    name, _ = register("gone", cubic_elastic, cubic_refmap, params=CUBIC_PARAMS, nmotor=1)
    b = asr.Batch([asr.Joint(name, 3)], 1)
    asr.unregister_model(name)
    assert name not in asr.models()
    with pytest.raises(ValueError):
        asr.compliance(name, 0.1, 0.0)
    with pytest.raises(ValueError):
        asr.Batch([asr.Joint(name, 3)], 1)
    with pytest.raises(ValueError):
        asr.unregister_model(name)
    # a batch created before keeps its own reference to the model
    refs = np.array([[[0.1, 0.0]]])
    b.reset(0.0, refs)
    b.step(0.3, 0.0, refs, 1e-3)
    assert float(b.tau_link[0, 0]) == pytest.approx(cubic_closed(0.3, 0.1)[0], rel=1e-12)
    # the name can be registered again
    asr.register_model(name, cubic_elastic, cubic_refmap, params=CUBIC_PARAMS, nmotor=1)
    assert name in asr.models()
    asr.unregister_model(name)
    assert name not in asr.models()


@pytest.mark.parametrize(
    "builtin", ("rigid", "sea", "sea_damped", "awas2", "bavs", "qbmove_advanced", "qbmove")
)
def test_builtins_cannot_be_unregistered(builtin):
    with pytest.raises(ValueError, match=builtin):
        asr.unregister_model(builtin)
    assert builtin in asr.models()
    r = asr.compliance(builtin, 0.0, 0.0, 0.01 if builtin == "awas2" else 0.0)
    assert np.all(np.isfinite(r.tau_link))


def test_threads_reports_the_count_used_with_a_python_model(cubic):
    b = asr.Batch([cubic[0]], 4, threads=3)
    assert b.threads == 1
    b.threads = 8
    assert b.threads == 1
    assert asr.Batch(["sea"], 4, threads=3).threads == 3
