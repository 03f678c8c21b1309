"""Continuum parallel robots (asr.cpr): the C rod integrator against closed forms and SciPy, and
the robot solver against independent re-integration, symmetry, DGM/IGM round trips and grid
convergence (model and robots: docs/cpr.md)."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import root

import asr.cpr as cpr

E, G, RAD, L = 200e9, 80e9, 0.001, 1.0
A, I = np.pi * RAD**2, np.pi * RAD**4 / 4


def base_state(n0, m0, R0=None, p0=(0.0, 0.0, 0.0)):
    R0 = np.eye(3) if R0 is None else R0
    return np.concatenate([p0, np.asarray(R0).ravel(), n0, m0])


def rhs(E, G, r, rho=0.0, g=(0, 0, 0), u0=(0, 0, 0), f=(0, 0, 0)):
    """The rod ODE of docs/cpr.md written independently, for solve_ivp."""
    A, I = np.pi * r**2, np.pi * r**4 / 4
    kse, kbt = np.array([G * A, G * A, E * A]), np.array([E * I, E * I, 2 * G * I])
    g, u0, f = map(np.asarray, (g, u0, f))

    def deriv(s, y):
        R, n, m = y[3:12].reshape(3, 3), y[12:15], y[15:18]
        v = R.T @ n / kse + [0, 0, 1]
        u = R.T @ m / kbt + u0
        pd = R @ v
        uh = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
        return np.concatenate([pd, (R @ uh).ravel(), -rho * A * g - f, -np.cross(pd, n)])

    return deriv


def scipy_tip(y0, length, **kw):
    sol = solve_ivp(rhs(**kw), (0, length), y0, method="DOP853", rtol=1e-12, atol=1e-14)
    return sol.y[:, -1]


def cantilever_m0(F, n_grid):
    """Base moment of a cantilever with tip force F (free tip: m(L) = 0), by shooting."""

    def tip_moment(m0):
        return cpr.integrate_rod(base_state(F, m0), L, E, G, RAD, n_grid=n_grid)[-1, 15:18] * 1e3

    m0 = root(tip_moment, np.cross([0, 0, L], F), tol=1e-14).x
    return m0


# ------------------------------------------------------------------ single rod


def test_small_load_cantilever_matches_beam_theory():
    F = np.array([1e-3, 0.0, 0.0])  # deflection 1.7e-3 L: geometric nonlinearity ~ 1e-6
    m0 = cantilever_m0(F, 40)
    tip = cpr.integrate_rod(base_state(F, m0), L, E, G, RAD, n_grid=40)[-1]
    assert tip[0] == pytest.approx(F[0] * L**3 / (3 * E * I), rel=1e-4)


def test_pure_end_moment_gives_circular_arc():
    M = 0.5 * E * I / L  # radius 2 L: the tip turns by 0.5 rad
    path = cpr.integrate_rod(base_state([0, 0, 0], [0, M, 0]), L, E, G, RAD, n_grid=40)
    rho = E * I / M
    th = L / rho
    assert np.allclose(path[-1, :3], [rho * (1 - np.cos(th)), 0.0, rho * np.sin(th)], atol=1e-9)
    # every grid point lies on the circle of centre (rho, 0, 0)
    assert np.allclose(np.hypot(path[:, 0] - rho, path[:, 2]), rho, atol=1e-9)


def test_large_deflection_matches_scipy():
    F = np.array([2.0, 0.5, -1.0])  # tip deflection of the order of the length
    m0 = cantilever_m0(F, 200)
    y0 = base_state(F, m0)
    ours = cpr.integrate_rod(y0, L, E, G, RAD, n_grid=200)[-1]
    ref = scipy_tip(y0, L, E=E, G=G, r=RAD)
    assert np.linalg.norm(ours[:3]) > 0.3 and abs(ours[0]) > 0.3
    assert np.allclose(ours[:3], ref[:3], atol=1e-9)
    assert np.allclose(ours[15:], 0.0, atol=1e-9)  # the shooting reached a free tip
    assert np.allclose(ref[15:], 0.0, atol=1e-7)


def test_gravity_precurvature_and_distributed_force_match_scipy():
    kw = dict(rho=7800.0, g=(0, 0, -9.81), u0=(0.5, -0.2, 0.1), f=(0.01, 0.0, 0.02))
    y0 = base_state([0.1, 0.2, 0.3], [0.01, -0.02, 0.003])
    ours = cpr.integrate_rod(
        y0, 0.6, E, G, RAD, rho=kw["rho"], g=kw["g"], u0=kw["u0"], f_ext=kw["f"], n_grid=200
    )[-1]
    ref = scipy_tip(y0, 0.6, E=E, G=G, r=RAD, **kw)
    assert np.allclose(ours, ref, atol=1e-9)


# ------------------------------------------------------------------ Till's robot


@pytest.fixture(scope="module")
def till():
    return cpr.load_cpr("stewart_till")


@pytest.fixture(scope="module")
def home(till):
    return till.solve_igm([0.0, 0.0, 0.4])


def test_till_igm_converges_and_is_symmetric(till, home):
    assert home.converged and home.residual_norm < 1e-9
    assert home.q.shape == (6,) and home.base_wrenches.shape == (6, 6)
    assert home.centerlines.shape == (6, 40, 3)
    assert np.allclose(home.q, home.q[0], rtol=1e-9)  # the identity pose of a symmetric robot
    assert np.sqrt(0.4**2 + (2 * 0.087 * np.sin(np.radians(20))) ** 2) < home.q[0] < 0.42
    assert np.allclose(home.base_wrenches[:, 5], 0.0)  # free twist in the base holes


def test_till_igm_checked_by_independent_integration(till, home):
    """Re-integrate every rod with SciPy from the returned base state: the tips meet the plate
    holes, stay clamped (tangent along the plate z) and the plate is in equilibrium."""
    P, Rp = home.position, home.rotation
    force, moment = np.zeros(3), np.zeros(3)
    for leg, w, q in zip(till.legs, home.base_wrenches, home.q):
        tip = scipy_tip(
            base_state(w[:3], w[3:], p0=leg["base"]), q, E=leg["E"], G=leg["G"], r=leg["r"]
        )
        pL, RL, nL, mL = tip[:3], tip[3:12].reshape(3, 3), tip[12:15], tip[15:18]
        assert np.allclose(pL, P + Rp @ leg["tip"], atol=1e-8)
        assert np.allclose(RL[:, 2], Rp[:, 2], atol=1e-7)
        force -= nL
        moment -= mL + np.cross(pL - P, nL)
    scale = np.abs(home.base_wrenches[:, :3]).max()
    assert np.allclose(force, 0.0, atol=1e-7 * scale)
    assert np.allclose(moment, 0.0, atol=1e-7 * scale * 0.1)


def test_dgm_of_igm_returns_the_pose(till, home):
    R = cpr.rot_exp([0.05, -0.03, 0.1])
    ig = till.solve_igm([0.01, 0.02, 0.45], R, guess=home)
    dg = till.solve_dgm(ig.q, guess=home)
    assert dg.converged and dg.residual_norm < 1e-9
    assert np.allclose(dg.position, [0.01, 0.02, 0.45], atol=1e-9)
    assert np.allclose(dg.rotation, R, atol=1e-9)
    assert np.allclose(dg.base_wrenches, ig.base_wrenches, atol=1e-6)


def test_grid_convergence(till):
    a = till.solve_igm([0.0, 0.02, 0.48], n_grid=40)
    b = till.solve_igm([0.0, 0.02, 0.48], n_grid=200, guess=a)
    assert np.allclose(a.q, b.q, atol=1e-7)
    assert np.allclose(a.base_wrenches, b.base_wrenches, atol=1e-4 * np.abs(b.base_wrenches).max())


def test_batch_matches_sequential_and_threads(till, home):
    poses = cpr.till_benchmark_poses()
    assert poses.shape == (202, 3)
    assert np.allclose(
        poses[[0, 1, 101, 201]], [[0, 0, 0.4], [0, 0.02, 0.48], [0, 0.12, 0.58], [0, 0.02, 0.48]]
    )
    seq, g = [], home
    for p in poses[1:12]:
        g = till.solve_igm(p, guess=g)
        seq.append(g)
    batch = till.solve_igm_batch(poses[1:12], guess=home)
    threaded = till.solve_igm_batch(poses[1:12], guess=home, threads=3)
    for s, b, t in zip(seq, batch, threaded):
        # the batch carries its Jacobian from pose to pose: another path to the same root
        assert b.converged and b.residual_norm < 1e-10
        assert np.allclose(s.q, b.q, atol=1e-9)
        assert np.allclose(s.base_wrenches, b.base_wrenches, atol=1e-6)
        assert np.array_equal(b.unknowns, t.unknowns)  # threads over legs: same arithmetic


def test_independent_batch_is_one_solve_per_pose_on_any_thread_count(till, home):
    """warm=False: every pose from the guess, threads over poses, each exactly solve_igm."""
    rng = np.random.default_rng(3)
    P = np.array([0.0, 0.0, 0.42]) + rng.uniform(-0.02, 0.02, (5, 3))
    Rs = np.array([cpr.rot_exp(w) for w in rng.uniform(-0.05, 0.05, (5, 3))])
    one = till.solve_igm_batch(P, Rs, guess=home.unknowns, warm=False)
    two = till.solve_igm_batch(P, Rs, guess=home.unknowns, warm=False, threads=2)
    for k in range(5):
        alone = till.solve_igm(P[k], Rs[k], guess=home.unknowns)
        assert np.array_equal(one[k].unknowns, alone.unknowns)
        assert np.array_equal(two[k].unknowns, alone.unknowns)
        assert np.allclose(one[k].position, P[k], atol=1e-12)
        assert np.allclose(one[k].rotation, Rs[k], atol=1e-12)


@pytest.mark.parametrize("warm", [True, False])
def test_dgm_batch_returns_the_poses_of_an_igm_batch(till, home, warm):
    poses = cpr.till_benchmark_poses()[1:9]
    ig = till.solve_igm_batch(poses, guess=home)
    qs = np.array([s.q for s in ig])
    dg = till.solve_dgm_batch(qs, guess=home.unknowns, warm=warm, threads=2)
    for s, p in zip(dg, poses):
        assert s.converged and s.residual_norm < 1e-10
        assert np.allclose(s.position, p, atol=1e-9)
        assert np.allclose(s.rotation, np.eye(3), atol=1e-9)
    if warm:  # the chain's threads share each solve: the same arithmetic as one thread
        one = till.solve_dgm_batch(qs, guess=home.unknowns, warm=True)
        assert all(np.array_equal(a.unknowns, b.unknowns) for a, b in zip(one, dg))
    with pytest.raises(ValueError, match=r"qs: expected shape \(M, 6\)"):
        till.solve_dgm_batch(qs[:, :5])
    with pytest.raises(ValueError, match="qs"):
        till.solve_dgm_batch(np.full((2, 6), np.nan))


def test_far_poses_converge_from_a_cold_start(till):
    """The end of Till's sequence, 12 cm sideways (SciPy's MINPACK LM needs ~2000 residual
    evaluations there), solved from straight rods, and checked by the DGM."""
    far = cpr.till_benchmark_poses()[101]
    ig = till.solve_igm(far)
    assert ig.converged and ig.residual_norm < 1e-10 and ig.iterations < 100
    dg = till.solve_dgm(ig.q, guess=ig.unknowns + 1e-3)
    assert np.allclose(dg.position, far, atol=1e-9)


def test_rotation_vectors_match_scipy_at_every_angle():
    """rot_exp / rot_log against SciPy's Rotation, from 1e-9 rad to pi (where v = vee(R - R^T)
    vanishes and the axis comes from the symmetric part)."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(7)
    for angle in [0.0, 1e-9, 1e-5, 1e-3, 0.3, 2.0, np.pi - 1e-2, np.pi - 1e-4, np.pi - 1e-7]:
        for _ in range(5):
            axis = rng.normal(size=3)
            w = angle * axis / np.linalg.norm(axis)
            R = cpr.rot_exp(w)
            np.testing.assert_allclose(R, Rotation.from_rotvec(w).as_matrix(), atol=1e-15)
            np.testing.assert_allclose(cpr.rot_log(R), w, atol=1e-11)
    R = cpr.rot_exp([0.0, np.pi, 0.0])  # exactly pi: either sign is the same rotation
    np.testing.assert_allclose(cpr.rot_exp(cpr.rot_log(R)), R, atol=1e-15)
    assert np.linalg.norm(cpr.rot_log(R)) == pytest.approx(np.pi, abs=1e-15)
    with pytest.raises(ValueError, match="R: must be a rotation matrix"):
        cpr.rot_log(np.diag([1.0, 1.0, -1.0]))  # orthonormal, det -1
    with pytest.raises(ValueError, match="R: must be a rotation matrix"):
        cpr.rot_log(np.eye(3) * 1.001)


def test_poses_with_bad_rotations_are_refused(till):
    with pytest.raises(ValueError, match="rotation: must be a rotation matrix"):
        till.solve_igm([0, 0, 0.4], np.diag([1.0, -1.0, 1.0]))
    Rs = np.array([np.eye(3), np.eye(3) + 1e-6])
    with pytest.raises(ValueError, match=r"rotations\[1\]: must be a rotation matrix"):
        till.solve_igm_batch([[0, 0, 0.4], [0, 0, 0.41]], Rs)
    with pytest.raises(ValueError, match="w: must be finite"):
        cpr.rot_exp([0.0, np.nan, 0.0])


def test_residual_refuses_a_bad_grid(till, home):
    with pytest.raises(ValueError, match=r"n_grid: expected an integer in \[2, 100000\], got 1"):
        till.residual(home.unknowns, n_grid=1)
    assert np.linalg.norm(till.residual(home.unknowns)) == pytest.approx(
        home.residual_norm, rel=1e-9, abs=1e-15
    )


def test_not_converged_carries_the_last_iterate(till):
    with pytest.raises(cpr.NotConverged) as exc:
        till.solve_igm([0.0, 0.02, 0.48], max_iter=1)
    assert not exc.value.solution.converged and exc.value.solution.residual_norm > 1e-10
    rfr = cpr.load_cpr("3rfr")
    with pytest.raises(cpr.NotConverged):
        rfr.solve_igm([5.0, 0.0, 0.0])  # 1 m rods from a 1 m base circle cannot reach


def test_planar_3rfr_solves_and_stays_planar():
    rfr = cpr.load_cpr("3rfr")
    s = rfr.solve_igm([0.05, 0.0, 0.0])
    assert s.residual_norm < 1e-9
    assert np.allclose(s.centerlines[:, :, 2], 0.0, atol=1e-12)
    d = rfr.solve_dgm(s.q, guess=s)
    assert np.allclose(d.position, [0.05, 0, 0], atol=1e-9)


# ------------------------------------------------------------------ descriptions

GOOD = """
[plate]
mass = 0.1
gravity = [0.0, 0.0, -9.81]
[rod_defaults]
E = 200e9
G = 80e9
r = 0.001
L = 1.0
base_joint = "prismatic"
[[rods]]
base = [0.0, 0.0, 0.0]
tip = [0.0, 0.0, 0.0]
"""


@pytest.mark.parametrize(
    "text, message",
    [
        (GOOD.replace('base_joint = "prismatic"', 'base_joint = "hinge"'), "base_joint"),
        (GOOD.replace("E = 200e9", ""), "'E'"),
        (GOOD.replace("r = 0.001", "r = -1.0"), "must be > 0"),
        (GOOD.replace("tip = [0.0, 0.0, 0.0]", "tip = [0.0, 0.0]"), "tip"),
        (GOOD + 'tip_joint = "spherical"\nfree_twist = true\n', "free_twist"),
        (GOOD + "colour = 3\n", "unknown keys"),
        (GOOD.replace("[plate]", "[plate"), "malformed TOML"),
        (GOOD.replace("[[rods]]", "[other]"), "unknown top-level"),
    ],
)
def test_bad_descriptions_raise_clear_errors(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        cpr.load_cpr(str(path))


def test_missing_robot_names_the_known_ones():
    with pytest.raises(FileNotFoundError, match="stewart_till"):
        cpr.load_cpr("no_such_robot")


@pytest.mark.parametrize(
    "name, pose, rotvec",
    [
        ("3pfr", [0.04, -0.03, 0.0], [0.0, 0.0, -0.1]),
        ("3efr", [0.04, -0.03, 0.0], [0.0, 0.0, -0.1]),
        ("3rfr", [0.02, 0.01, 0.0], [0.0, 0.0, 0.05]),
        ("6pff", [0.04, -0.03, 0.85], [0.05, -0.03, 0.1]),
        ("6pfr", [0.04, -0.03, 0.85], [0.05, -0.03, 0.1]),
        ("6pfs", [0.04, -0.03, 0.85], [0.05, -0.03, 0.1]),
    ],
)
def test_reference_robots_igm_dgm_round_trip(name, pose, rotvec):
    robot = cpr.load_cpr(name)
    home = robot.solve_igm(robot.home_position)
    R = cpr.rot_exp(rotvec)
    ig = robot.solve_igm(pose, R, guess=home)
    assert ig.residual_norm < 1e-9
    dg = robot.solve_dgm(ig.q, guess=home)
    assert np.allclose(dg.position, pose, atol=1e-9)
    assert np.allclose(dg.rotation, R, atol=1e-9)


def test_plate_weight_is_carried_by_the_rods():
    robot = cpr.load_cpr("6pfs")
    s = robot.solve_igm([0.0, 0.0, 0.9])
    # weightless rods in compression carry 0.1 kg: the internal force n (of the material above
    # on the material below) points down, and sums to the plate's weight
    assert s.base_wrenches[:, 2].sum() == pytest.approx(-0.1 * 9.81, rel=1e-9)
    assert np.allclose(s.base_wrenches[:, 2], s.base_wrenches[0, 2], rtol=1e-9)


def test_warm_start_with_a_solution_reuses_its_jacobian(till, home):
    """A CPRSolution guess hands its Jacobian on: same root as a plain vector guess."""
    assert home.jacobian is not None and home.problem == "solve_igm"
    a = till.solve_igm([0.0, 0.021, 0.481], guess=home)
    b = till.solve_igm([0.0, 0.021, 0.481], guess=home.unknowns)
    assert a.residual_norm < 1e-10 and b.residual_norm < 1e-10
    assert np.allclose(a.q, b.q, atol=1e-9)
