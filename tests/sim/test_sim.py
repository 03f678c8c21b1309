"""MuJoCo coupling (asr.Sim) on a fixture pendulum: independent references (closed-form static
equilibria solved with brentq), determinism across threads and batch sizes, sweeps of MuJoCo
and actuator parameters, external torques, and the errors of bad robot files and inputs."""

import os
import shutil

import numpy as np
import pytest
from scipy.optimize import brentq

import asr
from tests.support.paths import TESTS  # noqa: E402

HERE = str(TESTS)
PENDULUM = os.path.join(HERE, "data", "robots", "pendulum")
M, L, G = 0.2, 0.04, 9.81  # fixture: 0.2 kg at 0.04 m, q = 0 horizontal


def qbmove_tau(q, th1, th2, k=0.0019, a=8.9992):
    """qbmove_advanced link torque of docs/models.md (no clamp reached here)."""
    return -k * np.sinh(a * (q - th1)) - k * np.sinh(a * (q - th2))


def static_q(eq, preset, mass=M, tau_ext=0.0):
    """Solve tau_elastic(q) + tau_ext - m g l cos(q) = 0 near the reference."""
    f = lambda q: qbmove_tau(q, eq + preset, eq - preset) + tau_ext - mass * G * L * np.cos(q)
    return brentq(f, eq - 1.2, eq + 0.3, xtol=1e-14)


def refs_for(presets, eq=0.8):
    return np.array([[[eq, p]] for p in presets])


def test_static_equilibrium_matches_closed_form():
    presets = [0.2, 0.4, 0.6]
    sim = asr.Sim(PENDULUM, 3)
    out = sim.rollout(4000, refs_for(presets))
    for i, p in enumerate(presets):
        # damping 0.01 N m s/rad on 3.2e-4 kg m^2: the oscillation has decayed by e^-60 at 4 s
        assert out["q"][i, -1, 0] == pytest.approx(static_q(0.8, p), abs=1e-6)
    # soft sags under gravity, stiff reaches the reference ([Mengacci2021] fig. 7)
    assert 0.8 - out["q"][0, -1, 0] > 0.2 and 0.8 - out["q"][2, -1, 0] < 0.02
    assert out["q"].shape == (3, 4000, 1) and set(out) == set(asr.sim.DEFAULT_RECORD)


def test_mass_sweep_through_mujoco_params():
    masses = np.array([0.1, 0.2, 0.4])
    sim = asr.Sim(PENDULUM, 3, mujoco_params={"body_mass": {"link": masses}})
    out = sim.rollout(4000, refs_for([0.3] * 3))
    for i, m in enumerate(masses):
        assert out["q"][i, -1, 0] == pytest.approx(static_q(0.8, 0.3, mass=m), abs=1e-6)


def test_external_torque_is_applied():
    tau = np.array([[0.0], [0.02], [-0.02]])
    sim = asr.Sim(PENDULUM, 3)
    out = sim.rollout(4000, refs_for([0.3] * 3), tau_ext=tau)
    for i in range(3):
        assert out["q"][i, -1, 0] == pytest.approx(static_q(0.8, 0.3, tau_ext=tau[i, 0]), abs=1e-6)
    assert np.allclose(sim.batch.tau_joint - sim.batch.tau_link, tau, rtol=0, atol=1e-15)


def _sweep(threads, n=6, record=("q", "qd", "th1", "tau_joint", "stiffness")):
    presets = np.linspace(0.1, 0.6, n)
    sim = asr.Sim(
        PENDULUM,
        n,
        threads=threads,
        mujoco_params={"dof_damping": {"joint": np.linspace(0.005, 0.02, n)}},
    )
    t = np.arange(500) * 1e-3
    refs = np.zeros((n, 500, 1, 2))
    refs[..., 0, 0] = 0.8 * np.sin(3 * t)
    refs[..., 0, 1] = presets[:, None]
    return sim.rollout(500, refs, record=record)


def test_threads_are_bit_identical():
    one, two = _sweep(1), _sweep(2)
    for f in one:
        assert np.array_equal(one[f], two[f]), f


def test_batch_equals_single_instances():
    batch = _sweep(1)
    presets = np.linspace(0.1, 0.6, 6)
    damping = np.linspace(0.005, 0.02, 6)
    t = np.arange(500) * 1e-3
    for i in range(6):
        sim = asr.Sim(PENDULUM, 1, mujoco_params={"dof_damping": {"joint": damping[i]}})
        refs = np.zeros((1, 500, 1, 2))
        refs[..., 0, 0] = 0.8 * np.sin(3 * t)
        refs[..., 0, 1] = presets[i]
        single = sim.rollout(500, refs, record=tuple(batch))
        for f in batch:
            assert np.array_equal(batch[f][i], single[f][0]), (i, f)


def test_callable_references_every_k_steps():
    calls = []

    def refs(sim, t):
        calls.append(t)
        return np.array([[[0.8 * np.sin(t * 1e-3), 0.3]]])

    sim = asr.Sim(PENDULUM, 1)
    got = sim.rollout(100, refs, every=30)
    assert calls == [0, 30, 60, 90]
    held = np.zeros((1, 100, 1, 2))
    for t in range(100):
        held[0, t, 0] = [0.8 * np.sin((t // 30) * 30 * 1e-3), 0.3]
    sim2 = asr.Sim(PENDULUM, 1)
    want = sim2.rollout(100, held)
    for f in want:
        assert np.array_equal(got[f], want[f]), f


def test_actuator_params_per_instance_and_mode6():
    kp = np.array([10.0, 20.0, 40.0])
    sim = asr.Sim(PENDULUM, 3, params={"joint": {"kp": kp}}, variant="sea_pid")
    sim.reset(q0=0.0, refs=[0.5, 0.0])
    out = sim.rollout(6000, [0.5, 0.0], record=("q", "th1"))
    # steady state: spring k (th1 - q) = m g l cos q and kp (0.5 - th1) = k (th1 - q)
    for i in range(3):
        q, th1 = out["q"][i, -1, 0], out["th1"][i, -1, 0]
        assert 5.0 * (th1 - q) == pytest.approx(M * G * L * np.cos(q), abs=1e-6)
        assert kp[i] * (0.5 - th1) == pytest.approx(5.0 * (th1 - q), abs=1e-6)


def test_diverging_instance_is_reported():
    sim = asr.Sim(PENDULUM, 3, params={"joint": {}}, variant="sea_pid")
    sim.batch.set_param(0, "k", np.array([5.0, 1e9, 5.0]))
    with pytest.raises(asr.SimulationError) as err:
        sim.rollout(2000, [0.5, 0.0])
    assert err.value.instance == 1
    assert "instance 1" in str(err.value)


# ------------------------------------------------------------------ bad robot files and inputs


def test_missing_robot(tmp_path):
    with pytest.raises(FileNotFoundError, match="no folder"):
        asr.load_robot(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="robot.toml"):
        asr.load_robot(str(tmp_path / "empty"))


def _copy_fixture(tmp_path, toml_text):
    folder = tmp_path / "robot"
    shutil.copytree(PENDULUM, folder)
    (folder / "robot.toml").write_text(toml_text)
    return str(folder)


GOOD = """
default_variant = "v"
[variants.v]
mjcf = "pendulum.xml"
[[variants.v.joints]]
name = "joint"
model = "sea"
mode = 3
"""


def test_malformed_toml(tmp_path):
    with pytest.raises(ValueError, match="malformed TOML"):
        asr.load_robot(_copy_fixture(tmp_path, "variants = [ unclosed"))


@pytest.mark.parametrize(
    "edit, message",
    [
        (('name = "joint"', 'name = "elbow"'), "'elbow' is not a hinge or slide joint"),
        (('model = "sea"', 'model = "spring"'), "unknown model 'spring'"),
        (("mode = 3", "mode = 9"), "mode: got 9"),
        (("mode = 3", "mode = 3\nparams = { k = -1.0 }"), "k: got -1"),
        (("mode = 3", "mode = 3\nparams = { kk = 1.0 }"), "unknown parameter 'kk'"),
        (('mjcf = "pendulum.xml"', 'mjcf = "missing.xml"'), "no file"),
        (('model = "sea"', 'model = "sea"\ncolour = 1'), "unknown keys"),
    ],
)
def test_bad_robot_entries(tmp_path, edit, message):
    folder = _copy_fixture(tmp_path, GOOD.replace(*edit))
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        asr.Sim(folder, 1)


def test_unknown_variant():
    with pytest.raises(ValueError, match="unknown variant 'x'"):
        asr.load_robot(PENDULUM, "x")


def test_bad_inputs():
    sim = asr.Sim(PENDULUM, 2)
    with pytest.raises(ValueError, match="refs"):
        sim.rollout(10, np.zeros((3, 1, 2)))
    with pytest.raises(ValueError, match="refs"):
        sim.rollout(10, np.zeros((2, 11, 1, 2)))
    with pytest.raises(ValueError, match="must be finite"):
        sim.rollout(10, np.full((2, 1, 2), np.nan))
    with pytest.raises(ValueError, match="unknown field"):
        asr.Sim(PENDULUM, 2, mujoco_params={"body_colour": {"x": 1.0}})
    with pytest.raises(ValueError, match="no joint named 'elbow'"):
        asr.Sim(PENDULUM, 2, mujoco_params={"dof_damping": {"elbow": 1.0}})
    with pytest.raises(ValueError, match="unknown joint 'elbow'"):
        asr.Sim(PENDULUM, 2, params={"elbow": {"k1": 1.0}})
    with pytest.raises(ValueError, match="unknown state field"):
        sim.rollout(10, [0.0, 0.2], record=("nope",))
    sim.rollout(10, [0.0, 0.2])  # still works


def test_gravity_compensation_feed_forward_reaches_the_target():
    """[Kamedula2016] eq. 4 with the exact gravity torque g(q_d) = m g l cos(q_d): the link settles
    at q_d itself (spring k (th - q) = g, motor at th_d = q_d + g/k, PD term zero)."""
    q_d = 0.5
    g = M * G * L * np.cos(q_d)
    sim = asr.Sim(PENDULUM, 2, variant="sea_pid")
    sim.reset(q0=0.0, refs=[q_d, 0.0])
    out = sim.rollout(8000, [q_d, 0.0], tau_ff=np.array([[g], [0.0]]), record=("q", "th1"))
    assert out["q"][0, -1, 0] == pytest.approx(q_d, abs=1e-7)
    assert out["th1"][0, -1, 0] == pytest.approx(q_d + g / 5.0, abs=1e-7)
    assert q_d - out["q"][1, -1, 0] > 0.01  # without it, gravity pulls the link below q_d


def test_reset_of_some_instances_leaves_the_others_running():
    sim = asr.Sim(PENDULUM, 3)
    ref = asr.Sim(PENDULUM, 3)
    refs = refs_for([0.2, 0.4, 0.6])
    sim.rollout(300, refs)
    ref.rollout(300, refs)
    sim.reset(instances=[1])
    assert sim.batch.step_count == 300
    fresh = asr.Sim(PENDULUM, 3)
    assert sim.q[1, 0] == fresh.q[1, 0] and sim.batch.th1[1, 0] == fresh.batch.th1[1, 0]
    a, b = sim.rollout(200, refs), ref.rollout(200, refs)
    for f in a:  # the untouched instances go on exactly as without the reset
        assert np.array_equal(a[f][[0, 2]], b[f][[0, 2]]), f
    c = fresh.rollout(200, refs)
    for f in a:  # and the reset one as a fresh start
        assert np.array_equal(a[f][1], c[f][1]), f
    with pytest.raises(ValueError, match="instances: got 5"):
        sim.reset(instances=[5])
