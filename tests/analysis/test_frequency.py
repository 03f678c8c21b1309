"""asr.analysis.frequency: stepped-sine frequency responses against closed forms
(docs/frequency.md).

Rig: tests/data/robots/link_1dof, one horizontal link without gravity, I = 1.0001e-3 kg m^2 (read
from MuJoCo below), joint damping b = 0.005 N m s/rad, dt = 1 ms. With the motor an ideal
position source (mode 3 or 2) an SEA of stiffness k gives

    q / eq = k / (I s^2 + b s + k),   q / tau_ext = 1 / (I s^2 + b s + k)

k = 0.25 N m/rad: natural frequency 2.52 Hz, damping ratio 0.16. Measured from 0.25 to 7.5 Hz
(3x the natural frequency): magnitude within 0.46 %, phase within 0.26 deg (largest next to the
resonance). Tolerance 2 % and 1 deg: the explicit coupling delays the spring torque by about one
step (docs/integration.md), a phase of omega dt = 2.7 deg at 7.5 Hz if it were not accounted
for by the samples' time stamps; what remains is the discretisation, below a tenth of that.
"""

import os

import numpy as np
import pytest

import asr
from asr.analysis.frequency import FrequencyResponse, frequency_response
from tests.conftest import require
from tests.support.paths import TESTS  # noqa: E402

ROBOT = os.path.join(str(TESTS), "data", "robots", "link_1dof")
K_SEA = 0.25  # N m/rad, the SEA variant's k
FREQS = np.geomspace(0.25, 7.5, 10)
MAG_TOL, PHASE_TOL_DEG = 0.02, 1.0


def _link():
    """(I, b): inertia about the joint (MuJoCo's mass matrix) and joint damping."""
    import mujoco

    m = asr.load_robot(ROBOT, "sea").mj_model()
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    return float(full[0, 0]), float(m.dof_damping[0])


def _second_order(freqs, k, num):
    inertia, damping = _link()
    s = 2j * np.pi * np.asarray(freqs)
    return num / (inertia * s**2 + damping * s + k)


def _assert_matches(fr, expected):
    mag_err = fr.magnitude[0] / np.abs(expected) - 1
    phase_err = np.degrees(fr.phase[0] - np.unwrap(np.angle(expected)))
    assert np.max(np.abs(mag_err)) < MAG_TOL, mag_err
    assert np.max(np.abs(phase_err)) < PHASE_TOL_DEG, phase_err
    assert np.max(fr.residual) < 1e-3, fr.residual  # settled, linear: pure sines


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["sea", "sea_mode2"])
def test_sea_equilibrium_to_q_closed_form(variant):
    fr = frequency_response(ROBOT, 0, "equilibrium", "q", FREQS, [K_SEA], variant=variant)
    assert isinstance(fr, FrequencyResponse)
    assert fr.magnitude.shape == fr.phase.shape == fr.residual.shape == (1, len(FREQS))
    assert np.allclose(fr.freqs, FREQS, rtol=2e-3)  # snapped to whole cycles only
    assert fr.unit == "rad/rad" and fr.dt == 1e-3
    _assert_matches(fr, _second_order(fr.freqs, K_SEA, K_SEA))


def test_sea_tau_ext_to_q_compliance():
    fr = frequency_response(ROBOT, "joint", "tau_ext", "q", FREQS, [K_SEA], variant="sea")
    assert fr.unit == "rad/(N m)"
    assert fr.amplitude == pytest.approx(0.01 * K_SEA)  # deflects the spring by 0.01 rad
    _assert_matches(fr, _second_order(fr.freqs, K_SEA, 1.0))


def test_sea_equilibrium_to_tau_link_from_a_sim():
    """tau_link = k (eq - q) = k (1 - q / eq) eq: the same plant seen through the spring, with
    the system given as an asr.Sim (its parameters carried to the batch)."""
    sim = asr.Sim(ROBOT, 2, variant="sea", params={0: {"k": 0.5}})
    fr = frequency_response(sim, 0, "equilibrium", "tau_link", FREQS, [0.5])
    expected = 0.5 * (1 - _second_order(fr.freqs, 0.5, 0.5))
    _assert_matches(fr, expected)


def test_batch_dynamic_stiffness_of_a_sea():
    """Actuators alone, link angle prescribed: tau_link / q = -k at every frequency (the
    spring opposes the motion; the motor is an ideal position source in mode 3)."""
    batch = asr.Batch([asr.Joint("sea", 3, {"k": 5.0})], 1)
    fr = frequency_response(batch, 0, "q", "tau_link", [1.0, 10.0, 100.0], [5.0, 20.0])
    assert np.allclose(fr.magnitude, [[5.0] * 3, [20.0] * 3], rtol=1e-9)
    assert np.allclose(np.abs(fr.phase), np.pi, atol=1e-6)
    assert fr.unit == "N m/rad"


@pytest.mark.slow
def test_vsa_presets_bandwidth():
    """qbmove Advanced, soft and stiff presets (0.2 / 0.6 rad): the stiff one has the higher
    -3 dB frequency, by about the square root of the stiffness ratio at the equilibrium
    (measured 2.38 and 15.2 Hz, ratio 6.41, against sqrt(35.6) = 5.97; the damping ratios
    differ, 0.24 and 0.04); each
    within 5 % of the linearised closed form's -3 dB frequency."""
    fr = frequency_response(ROBOT, 0, variant="qbmove_advanced", freqs=np.geomspace(0.5, 30, 24))
    assert list(fr.presets) == [0.2, 0.6]
    th1, th2 = asr.reference_map("qbmove_advanced", 0.0, fr.presets)
    k = asr.compliance("qbmove_advanced", 0.0, th1, th2).stiffness
    bw = fr.bandwidth()
    assert bw[1] > bw[0]
    assert bw[1] / bw[0] == pytest.approx(np.sqrt(k[1] / k[0]), rel=0.15)
    fine = np.geomspace(0.05, 50, 20001)
    for p in range(2):
        mag = np.abs(_second_order(fine, k[p], k[p]))
        linear_bw = fine[np.argmax(mag < 10 ** (-3 / 20))]
        assert bw[p] == pytest.approx(linear_bw, rel=0.05), (p, bw[p], linear_bw)
    assert np.all(fr.residual < 0.01)


def test_figure():
    require("plotly")
    fr = frequency_response(ROBOT, 0, "equilibrium", "q", [1.0, 2.0], [K_SEA], variant="sea")
    fig = fr.figure()
    assert len(fig.data) == 2  # magnitude and phase of the one preset
    assert "rad/rad" in fig.layout.yaxis.title.text
    assert "deg" in fig.layout.yaxis2.title.text
    assert fig.layout.xaxis.type == "log"
    assert np.allclose(fig.data[1].y, np.degrees(fr.phase[0]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(input="speed"), r"input: got 'speed'; valid .*equilibrium, tau_ext"),
        (dict(output="tau_x"), r"output: got 'tau_x'; valid .*q, tau_link, tau_joint"),
        (dict(input="q"), r"input: got 'q'"),  # a robot's link is not prescribed
        (dict(freqs=[1.0, 0.0]), r"freqs: got 0 Hz, valid range \(0, 500\) Hz"),
        (dict(freqs=[-2.0]), r"freqs: got -2 Hz"),
        (dict(freqs=[500.0]), r"freqs: got 500 Hz, .*Nyquist"),
        (dict(freqs=[1e-4]), r"freqs: .*max_steps"),
        (dict(joint=1), r"joint: got 1, valid range \[0, 0\]"),
        (dict(joint="elbow"), r"joint: unknown joint 'elbow'"),
        (dict(presets=[-1.0]), r"presets: sea parameter k: got -1"),
        (dict(amplitude=0.0), r"amplitude: got 0.0"),
        (dict(cycles=0), r"cycles: got 0"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        frequency_response(ROBOT, **{"variant": "sea", **kwargs})


def test_bad_input_batch_and_type():
    batch = asr.Batch([asr.Joint("sea", 3)], 1)
    with pytest.raises(ValueError, match=r"output: got 'q'; valid for an asr.Batch"):
        frequency_response(batch, output="q")
    with pytest.raises(ValueError, match=r"input: got 'tau_ext'"):
        frequency_response(batch, input="tau_ext", output="tau_link")
    with pytest.raises(ValueError, match=r"presets: got 0.9, valid range \[0, 0.8\]"):
        frequency_response(ROBOT, variant="qbmove_advanced", presets=[0.9])
    with pytest.raises(TypeError, match="system: expected"):
        frequency_response(42)
    rigid = asr.Batch([asr.Joint("rigid", 1)], 1)
    with pytest.raises(ValueError, match="joint: .*is rigid"):
        frequency_response(rigid, input="q", output="tau_link")


@pytest.mark.slow
@pytest.mark.notebooks
def test_notebook(tmp_path, monkeypatch):
    """notebooks/frequency_response.ipynb (quick mode, the pendulum_1dof rig under gravity):
    the stiff preset's bandwidth is higher, by roughly the square root of the stiffness ratio
    at the static link angles (measured 10.4 / 26.4 Hz, ratio 2.54 against 2.33)."""
    require("plotly")
    import json

    from tests.support.notebooks import run_notebook

    out = tmp_path / "summary.json"
    run_notebook("frequency_response.ipynb", tmp_path, monkeypatch, ASR_NOTEBOOK_OUT=str(out))
    s = json.loads(out.read_text())
    bw, k = np.array(s["bandwidth_hz"]), np.array(s["stiffness"])
    assert s["quick"] is True and bw[1] > bw[0]
    assert bw[1] / bw[0] == pytest.approx(np.sqrt(k[1] / k[0]), rel=0.2)
    assert s["max_residual"] < 0.05
