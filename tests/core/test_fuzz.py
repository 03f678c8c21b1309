"""Random-input fuzz of the public Python entry points (asr.compliance, asr.reference_map, Batch
construction, set_param, step, rollout, reset, set_mode) with hypothesis, derandomized.

Property: a call either returns outputs of the right shape that are finite, or raises
ValueError, TypeError or asr.SimulationError; never a crash, a hang, another exception type or a
silent NaN/inf in the returned torques. In a batch, running instances have finite joint torques
and frozen instances report a status and apply zero torque."""

import math

import numpy as np
import pytest

import asr
from tests.conftest import require

try:
    from hypothesis import HealthCheck, event, example, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - reported by test_hypothesis_is_available
    st = None

ALLOWED = (ValueError, TypeError, asr.SimulationError)
MODELS = ("rigid", "sea", "sea_damped", "awas2", "bavs", "qbmove_advanced", "qbmove")
SPECS = asr.models()
STATUS_CODES = {0, 2, 5, 6, 8, 9}  # running, range (model callback), non-finite, input, callback,
# diverged (a link faster than link_vel_max)
COMPLIANCE_FIELDS = (
    "tau_link",
    "tau1",
    "tau2",
    "stiffness",
    "damping",
    "load1",
    "load2",
    "defl1",
    "defl2",
    "clamped",
)
SPECIAL = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    0.05,
    0.8,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1e-300,
    -1e-300,
    1e300,
    -1e300,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    math.nan,
    math.inf,
    -math.inf,
    1e5,
    1000.0,
]


def test_hypothesis_is_available():
    mod = require("hypothesis")
    assert hasattr(mod, "given")


if st is not None:
    FUZZ = settings(
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=250,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )

    wild = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(SPECIAL),
        st.floats(-3.0, 3.0),
    )
    sane = st.floats(1e-3, 1e3)

    def arrays_of(elem, max_len=3):
        """A scalar, or a 1-d array of 1..max_len values."""
        return st.one_of(elem, st.lists(elem, min_size=1, max_size=max_len).map(np.array))

    def mostly(valid, invalid, one_in=8):
        """valid, except about one draw in one_in from invalid."""
        # an interior value picks invalid: hypothesis favours the ends of a range
        return st.integers(0, one_in - 1).flatmap(lambda k: invalid if k == one_in // 2 else valid)

    small = st.floats(0.0, 0.5)
    bad_types = st.sampled_from(["abc", True, [1.0, "x"], 1j, None])

    def per_instance(elem, n):
        return st.lists(elem, min_size=n, max_size=n).map(np.array)

    def param_values(n=None):
        """Mostly valid-looking values (so that batches get built and stepped), some extreme
        or non-finite ones, a few of the wrong type or length. n: instances of the batch
        (None: free-length arrays, for the pure functions)."""
        if n is None:
            ok = st.one_of(sane, small, arrays_of(sane), arrays_of(small))
            bad = st.one_of(wild, arrays_of(wild), bad_types)
        else:
            ok = st.one_of(sane, small, per_instance(sane, n), per_instance(small, n))
            bad = st.one_of(wild, per_instance(wild, n), per_instance(sane, n + 1), bad_types)
        return mostly(ok, bad, one_in=4)

    @st.composite
    def model_params(draw, model, common=False, n=None):
        spec = SPECS[model]
        pool = [p.name for p in (spec.all_params if common else spec.params)]
        names = draw(
            st.lists(st.sampled_from(pool), unique=True, max_size=min(3, len(pool)))
            if pool
            else st.just([])
        )
        params = {name: draw(param_values(n)) for name in names}
        if draw(st.integers(0, 9)) == 5:
            params["not_a_param"] = 1.0
        return params

    def broadcast_shape(*values):
        return np.broadcast_shapes(*(np.shape(v) for v in values))

    # ------------------------------------------------------------ compliance

    @st.composite
    def compliance_args(draw):
        model = draw(st.sampled_from(MODELS))
        args = [draw(arrays_of(wild)) for _ in range(6)]
        return model, args, draw(model_params(model))

    def call_compliance(model, args, params):
        q, th1, th2, qd, th1d, th2d = args
        try:
            r = asr.compliance(model, q, th1, th2, qd=qd, theta1_d=th1d, theta2_d=th2d, **params)
        except ALLOWED:
            return None, None
        shape = broadcast_shape(*args, *(v for v in params.values()))
        return r, shape

    @pytest.mark.slow
    @FUZZ
    @given(compliance_args())
    def test_fuzz_compliance_returns_right_shape_or_raises(a):
        r, shape = call_compliance(*a)
        if r is not None:
            assert isinstance(r, asr.Compliance)
            for f in COMPLIANCE_FIELDS:
                assert np.shape(getattr(r, f)) == shape, f

    @pytest.mark.slow
    @FUZZ
    @given(compliance_args())
    # spring overflow with parameters inside their ranges: exp(1000 * 0.8) = inf, and
    # b * exp(ke * phi) with b = 0 and an overflowing exponential = 0 * inf = NaN
    @example(("qbmove_advanced", [0.8, 0.0, 0.0, 0.0, 0.0, 0.0], {"a1": 1000.0}))
    @example(("bavs", [0.0, 0.27, 0.0, 0.0, 0.0, 0.0], {"b": 0.0, "ke": 1e4}))
    @example(("sea", [1e308, -1e308, 0.0, 0.0, 0.0, 0.0], {"max_def": 1e308, "k": 10.0}))
    def test_fuzz_compliance_outputs_finite_or_raises(a):
        r, _ = call_compliance(*a)
        if r is not None:
            for f in COMPLIANCE_FIELDS:
                v = np.asarray(getattr(r, f))
                assert np.all(np.isfinite(v)), (
                    f"compliance{a!r} returned non-finite {f} = {v!r} without raising"
                )

    # ------------------------------------------------------------ reference map

    @st.composite
    def refmap_args(draw):
        model = draw(st.sampled_from(MODELS))
        return model, draw(arrays_of(wild)), draw(arrays_of(wild)), draw(model_params(model))

    def call_reference_map(model, eq, preset, params):
        try:
            th1, th2 = asr.reference_map(model, eq, preset, **params)
        except ALLOWED:
            return None, None, None
        return th1, th2, broadcast_shape(eq, preset, *params.values())

    @pytest.mark.slow
    @FUZZ
    @given(refmap_args())
    def test_fuzz_reference_map_returns_right_shape_or_raises(a):
        th1, th2, shape = call_reference_map(*a)
        if th1 is not None:
            assert np.shape(th1) == shape and np.shape(th2) == shape

    @pytest.mark.slow
    @FUZZ
    @given(refmap_args())
    # eq + preset overflows for finite eq and preset
    @example(("bavs", 1e308, 1e308, {}))
    @example(("qbmove_advanced", -1.7976931348623157e308, -1e308, {}))
    def test_fuzz_reference_map_outputs_finite_or_raises(a):
        th1, th2, _ = call_reference_map(*a)
        if th1 is not None:
            assert np.all(np.isfinite(th1)) and np.all(np.isfinite(th2)), (
                f"reference_map{a!r} returned non-finite ({th1!r}, {th2!r}) without raising"
            )

    # ------------------------------------------------------------ batch

    def check_batch(b, where):
        status = np.asarray(b.status)
        assert set(np.unique(status).tolist()) <= STATUS_CODES, (where, status)
        running = status == 0
        tau = b.tau_joint
        assert tau.shape == (b.n_instances, b.n_joints)
        assert np.all(np.isfinite(tau[running])), f"{where}: running instance non-finite torque"
        assert np.all(tau[~running] == 0.0), f"{where}: a frozen instance applies torque"
        errs = b.errors()
        assert [e["instance"] for e in errs] == np.flatnonzero(status).tolist()
        for e in errs:
            assert 0 <= e["joint"] < b.n_joints
            assert 0 <= e["step"] < max(b.step_count, 1)

    refs_elem = st.one_of(st.floats(-1.0, 1.0), st.floats(0.0, 0.04), st.floats(0.0, 0.04), wild)
    link_elem = st.one_of(st.floats(-1.0, 1.0), st.floats(-1.0, 1.0), wild)

    @st.composite
    def inputs(draw, shape, elem):
        kind = draw(st.integers(0, 7))
        if kind == 0:
            return draw(elem)
        if kind == 4:  # wrong shape sometimes
            return np.zeros(tuple(s + 1 for s in shape))
        flat = draw(st.lists(elem, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        return np.array(flat).reshape(shape)

    DTS_OK = [1e-4, 1e-3, 2e-3, 0.01, 0.05, 0.3, 1e-300]
    DTS_BAD = [0.0, -1e-3, math.nan, math.inf]

    @st.composite
    def batch_config(draw):
        n = draw(st.integers(1, 3))
        joints = []
        for _ in range(draw(st.integers(1, 2))):
            model = draw(st.sampled_from(MODELS))
            modes = [0, 1] if model == "rigid" else list(range(7))
            mode = draw(mostly(st.sampled_from(modes + [None]), st.sampled_from([-1, 7, 2.5])))
            joints.append(asr.Joint(model, mode, draw(model_params(model, True, n))))
        threads = draw(mostly(st.sampled_from([1, 2, 3]), st.sampled_from([0, -1, 1.5])))
        max_substep = draw(
            mostly(
                st.sampled_from([1e-3, 1e-4, 5e-3, 0.1]),
                st.sampled_from([0.0, -1e-3, math.nan, math.inf]),
            )
        )
        return joints, n, threads, max_substep

    @pytest.mark.slow
    @settings(FUZZ, max_examples=300)
    @given(batch_config(), st.data())
    def test_fuzz_batch(config, data):
        joints, n, threads, max_substep = config
        try:
            b = asr.Batch(joints, n, threads=threads, max_substep=max_substep)
        except (ValueError, TypeError) as e:
            event(f"Batch: {type(e).__name__}")
            return
        event("Batch: ok")
        nj = b.n_joints
        check_batch(b, "construction")
        for _ in range(data.draw(st.integers(1, 4))):
            action = data.draw(
                st.sampled_from(["step", "step", "rollout", "set_param", "reset", "set_mode"])
            )
            where = action
            try:
                if action == "step":
                    q = data.draw(inputs((n, nj), link_elem))
                    qd = data.draw(inputs((n, nj), link_elem))
                    refs = data.draw(inputs((n, nj, 2), refs_elem))
                    ext = data.draw(st.one_of(st.none(), inputs((n, nj), link_elem)))
                    dt = data.draw(mostly(st.sampled_from(DTS_OK), st.sampled_from(DTS_BAD)))
                    on_error = data.draw(st.sampled_from(["raise", "flag"]))
                    tau = b.step(q, qd, refs, dt, tau_ext=ext, on_error=on_error)
                    assert tau.shape == (n, nj)
                elif action == "rollout":
                    steps = data.draw(st.integers(1, 5))
                    refs = data.draw(inputs((n, nj, 2), refs_elem))
                    q = data.draw(inputs((n, nj), link_elem))
                    dt = data.draw(mostly(st.sampled_from(DTS_OK), st.sampled_from(DTS_BAD)))
                    on_error = data.draw(st.sampled_from(["raise", "flag"]))
                    res = b.rollout(
                        steps, dt, refs, q, 0.0, record=("tau_joint", "th1"), on_error=on_error
                    )
                    assert res["tau_joint"].shape == (n, steps, nj)
                    status = np.asarray(b.status)
                    # recorded torques: finite for instances running at the end
                    assert np.all(np.isfinite(res["tau_joint"][status == 0]))
                elif action == "set_param":
                    j = data.draw(st.integers(0, nj - 1))
                    name = data.draw(st.sampled_from([p.name for p in b.specs[j].all_params]))
                    value = data.draw(
                        st.one_of(wild, sane, small, arrays_of(sane, n + 1), arrays_of(wild, n))
                    )
                    b.set_param(j, name, value)
                    got = b.get_param(j, name)
                    assert np.array_equal(got, np.broadcast_to(np.asarray(value, float), (n,)))
                elif action == "reset":
                    b.reset(data.draw(inputs((n, nj), link_elem)))
                    assert b.step_count == 0
                    assert np.all(b.status == 0)
                else:
                    j = data.draw(st.integers(0, nj - 1))
                    b.set_mode(j, data.draw(st.integers(-1, 7)))
                event(f"{action}: ok")
            except asr.SimulationError as e:
                event(f"{action}: SimulationError")
                assert 0 <= e.instance < n and 0 <= e.joint < nj
                assert b.status[e.instance] == e.code != 0
            except (ValueError, TypeError) as e:
                event(f"{action}: {type(e).__name__}")
            check_batch(b, where)
