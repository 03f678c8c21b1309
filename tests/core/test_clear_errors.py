"""Small API corners that used to answer with the wrong exception, a silent truncation or a NaN:
each now gives a clear error naming the argument, the value and what is valid (or, for rot_exp,
the right answer)."""

import numpy as np
import pytest

import asr
from asr.analysis.sweep import sweep
from asr.core.ffi import lib
from asr.cpr import solver as cpr


def test_a_subnormal_max_substep_is_a_value_error_not_an_overflow():
    b = asr.Batch("sea", 1, max_substep=5e-324)
    with pytest.raises(
        ValueError,
        match=r"dt: 0.001 s with max_substep 5e-324 s needs inf "
        r"motor sub-steps",
    ):
        b.step(0.0, 0.0, np.zeros((1, 1, 2)), 1e-3)


def _register(name, elastic):
    asr.unregister_model(name) if name in asr.models() else None
    return asr.register_model(name, elastic, nmotor=1)


def test_a_python_model_without_stiffness_names_the_missing_output():
    _register("no_stiffness", lambda q, qd, th1, th2, th1d, th2d: {"tau1": th1 - q})
    try:
        with pytest.raises(ValueError, match="'stiffness' is missing"):
            asr.compliance("no_stiffness", 0.1, 0.2)
    finally:
        asr.unregister_model("no_stiffness")


def test_a_python_model_output_that_is_not_a_number_is_named():
    _register("text_output", lambda q, qd, th1, th2, th1d, th2d: {"tau1": "a", "stiffness": 1})
    try:
        with pytest.raises(TypeError, match="compliance output 'tau1': expected a real number"):
            asr.compliance("text_output", 0.1, 0.2)
    finally:
        asr.unregister_model("text_output")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(name="k", default=1.0, lo=2.0, hi=1.0), r"lo = 2.0 > hi = 1.0"),
        (
            dict(name="k", default=5.0, lo=0.0, hi=1.0),
            r"default 5.0 outside its valid range \[0, 1\]",
        ),
        (dict(name="k", default=float("nan")), r"default must be a real number"),
        (dict(name="k", default=0.0, lo=float("nan")), r"lo must be a real number"),
        (dict(name="k\0x", default=0.0), r"name must be a Python identifier"),
        (dict(name="2k", default=0.0), r"name must be a Python identifier"),
        (dict(name="k", default=0.0, unit="N\0m"), r"unit: contains a NUL character at index 1"),
    ],
)
def test_param_spec_refuses_what_c_cannot_hold(kwargs, message):
    with pytest.raises(ValueError, match=message):
        asr.ParamSpec(**kwargs)


def test_model_names_with_nul_are_refused_not_truncated():
    with pytest.raises(ValueError, match="name: contains a NUL character at index 3"):
        asr.register_model("sea\0x", lambda *a: {"tau1": 0.0, "stiffness": 0.0}, nmotor=1)
    assert "sea\0x" not in asr.models()


@pytest.mark.parametrize("angle", [1e8, 3.3e9, 1e154, 1e200, 1e308])
def test_rot_exp_of_huge_angles_is_the_rotation_by_that_angle(angle):
    """Independent check: orthonormal with det +1 and the axis fixed; about a coordinate axis
    (where |w| is exactly the angle: at 1e200 rad one rounding of |w| moves it by 1e184 rad)
    the rotation in its plane is (cos, sin) of the angle as libm computes them."""
    for axis in (np.array([2.0, -1.0, 2.0]) / 3.0, np.array([0.0, 1.0, 0.0])):
        R = cpr.rot_exp(axis * angle)
        assert np.all(np.isfinite(R))
        assert np.abs(R @ R.T - np.eye(3)).max() < 1e-14
        assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-14)
        assert np.abs(R @ axis - axis).max() < 1e-14
    c, s = np.cos(angle), np.sin(angle)
    assert np.abs(R - [[c, 0, s], [0, 1, 0], [-s, 0, c]]).max() < 1e-15


def test_rot_exp_whose_angle_overflows_is_refused():
    with pytest.raises(ValueError, match=r"w: the rotation angle \|w\| .* overflows a double"):
        cpr.rot_exp([1.5e308, 1.5e308, 0.0])


def test_rot_exp_is_unchanged_for_ordinary_angles():
    from scipy.spatial.transform import Rotation

    w = np.array([0.3, -1.2, 2.1])
    assert np.abs(cpr.rot_exp(w) - Rotation.from_rotvec(w).as_matrix()).max() < 1e-15


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_grid=1), r"n_grid: expected an integer in \[2, 100000\], got 1"),
        (dict(n_grid=10**9), r"n_grid: expected an integer in \[2, 100000\], got 1000000000"),
        (dict(E=-1.0), r"E: got -1.0, valid range \(0, inf\)"),
        (dict(r=0.0), r"r: got 0.0, valid range \(0, inf\)"),
        (dict(L=float("inf")), r"L: got inf, valid range \(0, inf\)"),
        (dict(rho=-2.0), r"rho: expected a finite density >= 0"),
        (dict(g=(0.0, np.nan, 0.0)), r"g: must be finite"),
    ],
)
def test_rod_integration_names_the_bad_argument(kwargs, message):
    args = dict(y0=np.r_[0, 0, 0, np.eye(3).ravel(), np.zeros(6)], L=0.5, E=200e9, G=80e9, r=5e-4)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        cpr.integrate_rod(**args)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(n_grid=2**31), r"n_grid: expected an integer in \[2, 100000\]"),
        (dict(max_iter=2**40), r"max_iter: expected an integer in \[1, 1000000\]"),
        (dict(threads=0), r"threads: expected an integer in \[1, 1024\]"),
        (dict(tol=float("inf")), r"tol: expected a finite number > 0"),
    ],
)
def test_cpr_solver_options_are_checked_with_their_ranges(kwargs, message):
    till = cpr.load_cpr("stewart_till")
    with pytest.raises(ValueError, match=message):
        till.solve_igm([0.0, 0.0, 0.4], **kwargs)


def test_one_rule_turns_a_status_into_an_exception():
    from asr.core.errors import raise_for_status

    raise_for_status(lib.ASR_OK, "x")
    for code in (lib.ASR_ERR_RANGE, lib.ASR_ERR_INPUT, lib.ASR_ERR_MODEL, lib.ASR_ERR_PARAM):
        with pytest.raises(ValueError, match="^what: "):
            raise_for_status(code, "what")
    with pytest.raises(MemoryError, match="^what: out of memory$"):
        raise_for_status(lib.ASR_ERR_NOMEM, "what")
    for code in (lib.ASR_ERR_NULL, lib.ASR_ERR_NONFINITE, lib.ASR_ERR_CALLBACK, 99):
        with pytest.raises(RuntimeError, match="^what: "):
            raise_for_status(code, "what")
    with pytest.raises(ValueError, match="^what: a hint; more$"):
        raise_for_status(lib.ASR_ERR_RANGE, "what", {lib.ASR_ERR_RANGE: "a hint"}, "; more")


def test_a_huge_sweep_grid_is_refused_with_its_size_before_allocating():
    space = {
        "joint.kp": np.linspace(1, 100, 100),
        "joint.kd": np.linspace(0.1, 1, 100),
        "joint.k1": np.linspace(1e-3, 2e-3, 100),
        "joint.ki": np.linspace(0, 1, 100),
    }
    with pytest.raises(
        ValueError,
        match=r"space \(grid\): 100,000,000 samples \(about "
        r"[0-9,]+ MB .* more than max_samples = 10,000,000",
    ):
        sweep("pendulum_1dof", space, steps=10, refs=None, progress=False)
    with pytest.raises(ValueError, match=r"samples: 20,000,000 samples"):
        sweep(
            "pendulum_1dof",
            {"joint.kp": (1.0, 2.0)},
            method="random",
            samples=20_000_000,
            steps=10,
            refs=None,
            progress=False,
        )


def test_a_grid_keeps_the_order_of_itertools_product():
    res = sweep(
        "pendulum_1dof",
        {"joint.kp": [1.0, 2.0], "joint.kd": [0.1, 0.2, 0.3]},
        steps=2,
        refs=None,
        progress=False,
        metrics="max_tau",
    )
    assert res.params.tolist() == [
        [1.0, 0.1],
        [1.0, 0.2],
        [1.0, 0.3],
        [2.0, 0.1],
        [2.0, 0.2],
        [2.0, 0.3],
    ]


def test_sim_reset_refuses_positions_mujoco_would_reset():
    sim = asr.Sim("pendulum_1dof", 2)
    with pytest.raises(ValueError, match=r"q0: got 1e\+308 rad, valid range \[-1e\+10, 1e\+10\]"):
        sim.reset(q0=1e308)
    sim.reset(q0=[[0.3], [-0.2]])
    assert sim.q.tolist() == [[0.3], [-0.2]]
