"""asr.analysis.identification: parameters recovered from static samples, actuator benches and robot
rollouts with Gaussian noise, the 95 % intervals checked against closed forms and by coverage,
data formats (dict, .npz, .csv, ROS bag) and bad input."""

import json
import subprocess
import sys

import numpy as np
import pytest

import asr
from asr.analysis.identification import Identification, identify, load_data, register_reader
from asr.analysis.identification.data import _READERS
from tests.conftest import require

# [Mengacci2021] sec. 4.3, identified on the real arm (docs/models.md, robots/qbmove_arm_2dof)
MENGACCI = {
    "joint1": dict(k1=0.01038, a1=6.257, k2=0.08918, a2=3.9),
    "joint2": dict(k1=0.1015, a1=3.383, k2=0.05944, a2=7.011),
}
QB_NAMES = ["k1", "a1", "k2", "a2"]


def qbmove_samples(m, sigma, seed, truth=MENGACCI["joint1"]):
    """Static samples of docs/models.md sec. 1's closed form tau = -sum k_i sinh(a_i (q - th_i))
    (written out here, independent of asr.compliance), deflections inside max_def = 0.8 rad,
    plus Gaussian noise of `sigma` N m."""
    rng = np.random.default_rng(seed)
    th1, th2 = rng.uniform(-0.4, 0.4, m), rng.uniform(-0.4, 0.4, m)
    q = rng.uniform(-0.35, 0.35, m)
    tau = -(
        truth["k1"] * np.sinh(truth["a1"] * (q - th1))
        + truth["k2"] * np.sinh(truth["a2"] * (q - th2))
    )
    return dict(q=q, theta1=th1, theta2=th2, tau=tau + rng.normal(0.0, sigma, m))


@pytest.fixture(autouse=True)
def _scipy():
    require("scipy")  # asr.identify's optimiser: a failure in CI when missing


def test_static_qbmove_recovered_within_2_percent_and_inside_ci():
    # sigma 2 mN m on torques up to ~1 N m, M = 800 samples, start at the toolbox defaults
    res = identify("qbmove_advanced", qbmove_samples(800, 0.002, seed=1), QB_NAMES)
    assert res.success
    for name, true in MENGACCI["joint1"].items():
        assert res.estimates[name] == pytest.approx(true, rel=0.02), name
        lo, hi = res.ci95[name]
        assert lo < true < hi, name
    assert res.residual_rms["tau"] == pytest.approx(0.002, rel=0.1)
    assert res.dof == 800 - 4
    assert "k1" in res.summary() and "95% CI" in res.summary()


def test_static_ci_covers_95_percent_and_shrinks_with_data():
    # coverage of the interval over 60 independent noise draws (binomial: 95 % of 60 = 57,
    # standard deviation 1.7; 50 is 4 standard deviations below)
    truth = MENGACCI["joint1"]
    hits = 0
    for seed in range(60):
        res = identify(
            "qbmove_advanced", qbmove_samples(200, 0.005, seed=100 + seed), QB_NAMES, x0=truth
        )
        lo, hi = res.ci95["a2"]
        hits += lo < truth["a2"] < hi
    assert hits >= 50
    width = {
        m: np.diff(
            identify("qbmove_advanced", qbmove_samples(m, 0.005, seed=7), QB_NAMES, x0=truth).ci95[
                "k2"
            ]
        )[0]
        for m in (100, 1600)
    }
    assert width[100] / width[1600] == pytest.approx(4.0, rel=0.25)  # 1 / sqrt(M)


def test_static_sea_stderr_equals_linear_regression_closed_form():
    # tau = -k (q - th1) is linear in k: k_hat = -sum(d tau) / sum(d^2),
    # s^2 = SS / (M - 1), stderr = s / sqrt(sum d^2), CI with Student's t(M - 1)
    from scipy.stats import t as student_t

    rng = np.random.default_rng(4)
    m = 50
    q, th1 = rng.uniform(-0.3, 0.3, m), rng.uniform(-0.3, 0.3, m)
    d = q - th1
    tau = -150.0 * d + rng.normal(0.0, 0.5, m)
    k_hat = -np.sum(d * tau) / np.sum(d * d)
    s2 = np.sum((tau + k_hat * d) ** 2) / (m - 1)
    se = np.sqrt(s2 / np.sum(d * d))
    res = identify("sea", dict(q=q, theta1=th1, tau=tau), ["k"], x0={"k": 100.0})
    assert res.estimates["k"] == pytest.approx(k_hat, rel=1e-7)
    assert res.stderr["k"] == pytest.approx(se, rel=1e-5)
    half = student_t.ppf(0.975, m - 1) * se
    assert res.ci95["k"] == pytest.approx((k_hat - half, k_hat + half), rel=1e-5)


def rollout_data(robot, variant, refs, sigma, seed, params=None, record=("q",)):
    """A robot's rollout from its initial state with Gaussian noise on the recorded fields."""
    rng = np.random.default_rng(seed)
    sim = asr.Sim(robot, 1, variant=variant, params=params)
    sim.reset(None, refs[0])
    out = sim.rollout(len(refs), refs[None], record=record)
    return {f: v[0] + rng.normal(0.0, sigma, v[0].shape) for f, v in out.items()}


def steps_refs(steps, period, levels, presets=None, nj=1):
    """(steps, J, 2) references: equilibrium levels held `period` steps each (per joint)."""
    seg = (np.arange(steps) // period) % len(levels[0])
    refs = np.zeros((steps, nj, 2))
    for j in range(nj):
        refs[:, j, 0] = np.asarray(levels[j])[seg]
        if presets is not None:
            refs[:, j, 1] = np.asarray(presets)[seg]
    return refs


def test_sea_stiffness_from_pendulum_rollouts():
    # pendulum_1dof (sea, mode 3), steps of 0.3 rad ring at sqrt(k / I): the fit needs a start
    # inside the basin of that ringing (15 % off; docs/identification.md), q noise 0.1 mrad
    refs = steps_refs(3000, 500, [[0.0, 0.3]])
    q = rollout_data("pendulum_1dof", "sea", refs, 1e-4, seed=2)["q"]
    res = identify(
        None, dict(refs=refs, q=q), ["k"], robot="pendulum_1dof", variant="sea", x0={"k": 170.0}
    )
    assert res.estimates["k"] == pytest.approx(200.0, rel=0.005)
    assert res.ci95["k"][0] < 200.0 < res.ci95["k"][1]


def test_sea_damped_stiffness_damping_and_motor_damping_from_rollouts():
    # rrbot_sea k188 (Kt 188 N m/rad, Dt 0.5 N m s/rad, motor_D 24.768 N m s/rad), mode 5
    # steps of 0.5 rad; all three start 20-100 % off
    refs = steps_refs(2000, 500, [[0.0, 0.5]])
    q = rollout_data("rrbot_sea", "k188", refs, 1e-4, seed=5)["q"]
    res = identify(
        "sea_damped",
        dict(refs=refs, q=q),
        ["Kt", "Dt", "motor_D"],
        robot="rrbot_sea",
        x0={"Kt": 120.0, "Dt": 1.0, "motor_D": 15.0},
    )
    truth = dict(Kt=188.0, Dt=0.5, motor_D=24.768)
    for name, true in truth.items():
        assert res.estimates[name] == pytest.approx(true, rel=0.01), name
        assert res.ci95[name][0] < true < res.ci95[name][1], name


def test_motor_inertia_from_actuator_bench():
    # sea_damped alone (asr.Batch, mode 5: motor PD and dynamics), the link moved on a 2 Hz
    # sine; the measured link torque depends on the motor's inertia through its lag
    steps, dt = 2000, 1e-3
    t = (np.arange(steps) + 1) * dt
    q = 0.3 * np.sin(2 * np.pi * 2.0 * t)
    qd = 0.3 * 2 * np.pi * 2.0 * np.cos(2 * np.pi * 2.0 * t)
    refs = np.zeros((steps, 2))
    refs[:, 0] = 0.4 * np.sign(np.sin(2 * np.pi * 1.0 * t))
    truth = dict(motor_J=0.0742, kp=1000.0, kd=0.0, motor_D=24.768, friction=0.0)
    batch = asr.Batch([asr.Joint("sea_damped", 5, truth)])
    batch.reset(q[0], refs[0])
    tau = batch.rollout(
        steps, dt, refs[None, :, None], q[None, :, None], qd[None, :, None], record=("tau_link",)
    )["tau_link"][0, :, 0]
    tau = tau + np.random.default_rng(6).normal(0.0, 0.01, steps)
    fixed = {k: v for k, v in truth.items() if k != "motor_J"}
    res = identify(
        "sea_damped",
        dict(refs=refs, q=q, qd=qd, tau=tau, dt=dt),
        ["motor_J"],
        mode=5,
        fixed=fixed,
        x0={"motor_J": 0.02},
    )
    assert res.kind == "bench"
    assert res.estimates["motor_J"] == pytest.approx(0.0742, rel=0.01)
    assert res.ci95["motor_J"][0] < 0.0742 < res.ci95["motor_J"][1]


def arm_refs(steps=4000):
    """Equilibrium steps on both joints of qbmove_arm_2dof with presets 0.2-0.6 rad, so that
    the two springs of each joint see different deflections."""
    return steps_refs(
        steps,
        500,
        [[0, 0.4, -0.3, 0.2, 0.5, -0.2, 0.1, 0.3], [0, -0.3, 0.4, 0.1, -0.4, 0.3, 0.2, -0.1]],
        presets=[0.2, 0.2, 0.4, 0.4, 0.6, 0.6, 0.3, 0.5],
        nj=2,
    )


@pytest.mark.slow
def test_refit_mengacci_arm_from_toolbox_defaults():
    # data: rollouts of the arm with the sec. 4.3 parameters, q noise 1 mrad; start: every
    # spring at the toolbox default (k 0.0019 N m, a 8.9992 1/rad); tolerance 1 %
    refs = arm_refs()
    q = rollout_data("qbmove_arm_2dof", "vertical", refs, 1e-3, seed=3)["q"]
    spec = asr.models()["qbmove_advanced"]
    names = [f"{j}.{p}" for j in MENGACCI for p in QB_NAMES]
    x0 = {n: spec.param(n.split(".")[1]).default for n in names}
    res = identify(None, dict(refs=refs, q=q), names, robot="qbmove_arm_2dof", x0=x0)
    assert res.success
    for n in names:
        joint, p = n.split(".")
        assert res.estimates[n] == pytest.approx(MENGACCI[joint][p], rel=0.01), n
    assert res.residual_rms["q"] == pytest.approx(1e-3, rel=0.1)


def test_data_files_and_result_round_trip(tmp_path):
    data = qbmove_samples(300, 0.002, seed=9)
    np.savez(tmp_path / "d.npz", **data)
    with open(tmp_path / "d.csv", "w") as f:
        f.write("q,theta1,theta2,tau\n")
        for row in zip(*(data[k] for k in ("q", "theta1", "theta2", "tau"))):
            f.write(",".join(repr(float(x)) for x in row) + "\n")
    ref = identify("qbmove_advanced", data, QB_NAMES)
    for path in (tmp_path / "d.npz", str(tmp_path / "d.csv")):
        got = identify("qbmove_advanced", path, QB_NAMES)
        assert got.estimates == pytest.approx(ref.estimates, rel=1e-12)
    for ext in ("json", "npz"):
        saved = ref.save(tmp_path / f"r.{ext}")
        back = Identification.load(saved)
        assert back.estimates == ref.estimates and back.ci95 == ref.ci95
        np.testing.assert_array_equal(back.covariance, ref.covariance)
    assert json.load(open(tmp_path / "r.json"))["estimates"] == ref.estimates


def test_ros_bag_as_data(tmp_path):
    require("rosbags")
    from asr.ros.bags import write_bag

    refs = steps_refs(1000, 250, [[0.0, 0.5]])
    noisy = rollout_data("rrbot_sea", "k188", refs, 1e-4, seed=8, record=("q", "qd"))
    rollout = {"q": noisy["q"][None], "ref1": refs[None, :, :, 0], "ref2": refs[None, :, :, 1]}
    robot = asr.load_robot("rrbot_sea")
    path = write_bag(
        rollout,
        tmp_path / "run.bag",
        dt=robot.mj_model().opt.timestep,
        joint_names=robot.joint_names,
        instance=0,
    )
    res = identify(None, path, ["Kt"], robot=robot, x0={"Kt": 150.0})
    assert res.estimates["Kt"] == pytest.approx(188.0, rel=0.01)


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda d: identify("nope", d, ["k"]), "model"),
        (lambda d: identify("sea", d, ["k2"]), "params"),
        (lambda d: identify("sea", d, []), "params"),
        (lambda d: identify("sea", d, ["motor_J"]), "params"),
        (lambda d: identify("sea", {**d, "tau": d["tau"][:-1]}, ["k"]), "tau"),
        (lambda d: identify("sea", {**d, "q": np.r_[np.nan, d["q"][1:]]}, ["k"]), "q"),
        (lambda d: identify("sea", {k: v for k, v in d.items() if k != "tau"}, ["k"]), "tau"),
        (lambda d: identify("sea", d, ["k"], x0={"k": -1.0}), "k"),
        (lambda d: identify("sea", d, ["k"], fixed={"k": 3.0}), "fixed"),
        (lambda d: identify("sea", d, ["k"], bounds={"k": (500.0, 600.0)}), "bounds"),
        (lambda d: identify("sea", d, ["k"], kind="robot"), "kind"),
        (lambda d: identify("qbmove", d, ["k"], robot="qbmove_arm_2dof"), "model"),
        (lambda d: identify(None, d, ["joint9.k1"], robot="qbmove_arm_2dof"), "params"),
        (lambda d: identify("sea", "missing.npz", ["k"]), "data"),
    ],
)
def test_bad_input_names_the_parameter(call, word):
    d = dict(q=np.linspace(-0.2, 0.2, 20), theta1=np.zeros(20), tau=np.linspace(4, -4, 20))
    with pytest.raises(ValueError, match=word):
        call(d)


def test_identification_reads_a_bag_through_the_reader_asr_ros_registers(tmp_path):
    """asr.identify imports nothing of asr.ros (the core API below the applications): in a
    fresh interpreter a bag path is a ValueError saying what registers its reader, and
    `import asr.ros` registers it without importing the bag module itself."""
    bag = tmp_path / "run.bag"
    bag.write_bytes(b"")
    code = (
        "import sys, asr\n"
        "from asr.analysis.identification import load_data\n"
        "try:\n"
        f"    load_data({str(bag)!r})\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n"
        "print('ros imported:', 'asr.ros' in sys.modules)\n"
        "import asr.ros\n"
        "print('bags imported:', 'asr.ros.bags' in sys.modules)\n"
        "from asr.analysis.identification.data import _reader_for\n"
        f"print('reader:', _reader_for({str(bag)!r}).__module__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "refused: data: " in out and "`import asr.ros` registers its reader" in out
    assert "ros imported: False" in out
    assert "bags imported: False" in out and "reader: asr.ros" in out


def test_a_registered_reader_reads_its_suffix(tmp_path):
    d = dict(q=np.linspace(-0.2, 0.2, 20), theta1=np.zeros(20), tau=np.linspace(4, -4, 20))
    path = tmp_path / "samples.rig"
    path.write_text("rig data")
    read = []

    def reader(p):
        read.append(p)
        return d

    with pytest.raises(ValueError, match=r"data: got .*samples\.rig.*register_reader"):
        load_data(path)
    register_reader(reader, ".rig")
    try:
        assert load_data(path).keys() == d.keys() and load_data(path)["q"] is d["q"]
        assert read == [str(path)] * 2
        res = identify("sea", path, ["k"], kind="static")
        assert res.estimates["k"] == pytest.approx(identify("sea", d, ["k"]).estimates["k"])
    finally:
        _READERS[:] = [r for r in _READERS if r[2] is not reader]
    with pytest.raises(TypeError, match="reader"):
        register_reader("not callable", ".rig")
    with pytest.raises(ValueError, match="suffixes"):
        register_reader(reader, "rig")
