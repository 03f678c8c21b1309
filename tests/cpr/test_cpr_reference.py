"""asr's continuum-parallel-robot IGM against an independent SciPy reference
(benchmarks/cpr_scipy.py) on Till's continuum Stewart-Gough robot (docs/cpr.md).

Both integrate the same Cosserat rod equations with fixed-step RK4 over N = 40 grid points, so
at converged solutions they solve the same discrete equations and should agree to the solvers'
tolerances, not to a discretisation error."""

import os
import sys

import numpy as np
import pytest

from tests.conftest import IN_CI, require
from tests.support.paths import ROOT  # noqa: E402

BENCH = os.path.join(str(ROOT), "benchmarks")
sys.path.insert(0, BENCH)

import cpr_scipy  # noqa: E402

HOME = np.array([0.0, 0.0, 0.4])
SECOND = np.array([0.0, 0.02, 0.48])
# Axial stiffness EA / L of one rod at L ~ 0.4 m (about 7e5 N/m): a tip position residual of
# e metres allows a base force error of about EA/L * e newtons.
AXIAL_STIFFNESS = cpr_scipy.E * cpr_scipy.AREA / 0.4


@pytest.fixture(scope="module")
def reference():
    """SciPy solutions at the protocol's first two poses (cold, then warm-started)."""
    cold = cpr_scipy.solve_igm(HOME, np.eye(3))
    second = cpr_scipy.solve_igm(SECOND, np.eye(3), guess=cold[1])
    # the calls and their answers (L, x, residual norm, evaluations), for the benchmark's smoke
    # test, whose first two SciPy solves are these same calls
    calls = [((HOME, np.eye(3), None), cold), ((SECOND, np.eye(3), cold[1]), second)]
    return {"home": cold[:3], "second": second[:3], "calls": calls}


@pytest.mark.slow
def test_reference_home_pose_symmetric(reference):
    L, x, r = reference["home"]
    assert r < 1e-8
    # the hole patterns are symmetric under the dihedral group of order 6 that permutes the
    # rods: at the centred, unrotated pose all six rods are alike
    np.testing.assert_allclose(L, L[0], rtol=0, atol=1e-9)
    # each rod is an S-curve from base hole to plate hole (0.0595 m apart sideways), longer
    # than the 0.4 m plate height, and unstressed axially (no load): much shorter than 0.41 m
    assert 0.4 < L[0] < 0.41
    w = cpr_scipy.base_wrenches(x)
    np.testing.assert_allclose(np.abs(w[:, 2]), abs(w[0, 2]), rtol=1e-6, atol=1e-9)
    # plate equilibrium without load: the base forces sum to zero
    np.testing.assert_allclose(w[:, :3].sum(axis=0), 0.0, atol=1e-9)


@pytest.mark.slow
def test_reference_second_pose(reference):
    L, x, r = reference["second"]
    assert r < 1e-8
    assert np.all((L > 0.48) & (L < 0.5))
    # the converged centrelines end at the plate holes
    c = cpr_scipy.centerlines(x)
    np.testing.assert_allclose(c[:, -1], SECOND + cpr_scipy.PLATE_HOLES, atol=1e-9)
    np.testing.assert_allclose(c[:, 0], cpr_scipy.BASE_HOLES, atol=0)


def test_reference_sequence():
    pos, rot = cpr_scipy.till_sequence()
    assert pos.shape == (202, 3) and rot.shape == (202, 3, 3)
    np.testing.assert_allclose(pos[0], HOME)
    np.testing.assert_allclose(pos[1], SECOND)
    np.testing.assert_allclose(pos[101], [0.0, 0.12, 0.58], atol=1e-12)
    np.testing.assert_allclose(pos[201], SECOND, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("pose", ["home", "second"])
def test_asr_matches_reference(reference, pose):
    cpr = require("asr.cpr")
    robot = cpr.load_cpr("stewart_till")
    L_ref, x_ref, r_ref = reference[pose]
    sol0 = robot.solve_igm(HOME, np.eye(3), tol=1e-12)
    sol = (
        sol0
        if pose == "home"
        else robot.solve_igm(SECOND, np.eye(3), guess=sol0.unknowns, tol=1e-12)
    )
    assert sol.converged
    q = np.asarray(sol.q, dtype=float)
    np.testing.assert_allclose(q, L_ref, rtol=0, atol=1e-6)
    # Base forces: both solve the same discrete equations; their difference is bounded by the
    # residual left by either solver times the rods' axial stiffness (7e5 N/m), plus 1e-9 N.
    # With both residuals ~1e-12 that is ~1e-6 N on forces of ~0.7 N.
    tol_f = 1e-9 + 2.0 * AXIAL_STIFFNESS * (float(sol.residual_norm) + r_ref)
    w = np.asarray(sol.base_wrenches, dtype=float)
    assert w.shape == (6, 6)
    np.testing.assert_allclose(w[:, :3], cpr_scipy.base_wrenches(x_ref)[:, :3], rtol=0, atol=tol_f)
    np.testing.assert_allclose(w[:, 5], 0.0, atol=1e-12)  # free twist at the base


@pytest.mark.slow
def test_bench_cpr_smoke(reference, monkeypatch):
    """The benchmark runs and reports its figures. Its SciPy part starts with the cold solve of
    pose 0 and the warm one of pose 1 (the module fixture's calls, 5.5 s of the test's 13 s): a
    call with exactly those arguments gets the fixture's answer, any other is solved."""
    if IN_CI:
        require("asr.cpr")
    import bench_cpr

    solve = cpr_scipy.solve_igm

    def same(a, b):
        return a is b if a is None or b is None else np.array_equal(a, b)

    def solve_once(pos, rot=None, guess=None, **kw):
        for (p, r, g), answer in reference["calls"]:
            if not kw and same(pos, p) and same(rot, r) and same(guess, g):
                return answer
        return solve(pos, rot, guess=guess, **kw)

    monkeypatch.setattr(cpr_scipy, "solve_igm", solve_once)
    fig = bench_cpr.main(quick=True, write=False, quiet=True)
    assert fig["scipy_solves_per_s"] > 0
    assert fig["scipy_worst_residual_norm"] < 1e-8
    if bench_cpr._load_asr() is not None:
        for key in (
            "igm_solves_per_s_t1",
            "igm_solves_per_s_t2",
            "cold_solve_ms",
            "ratio_vs_scipy",
        ):
            assert fig[key] > 0
