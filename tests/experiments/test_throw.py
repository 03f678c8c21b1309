"""asr/Throw-v0 (asr.envs.throw) and the throwing comparison (asr.experiments.throw, [Braun2012]):
the reward is the closed-form ballistic range recomputed here from q, qd and the link lengths
read from the MJCF; gymnasium's checker; NEXT_STEP autoreset; the comparison at a tiny budget
(structure and energy bookkeeping, not the headline result); the notebook runs."""

import json
import os
import warnings
import xml.etree.ElementTree as ET

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import asr
import asr.envs  # noqa: F401  (registers the environments)
from asr.envs.throw import (
    MOTOR_TAU_MAX,
    MOTOR_VEL_MAX,
    PRESET_HI,
    PRESET_LO,
    Throw,
    ThrowEnv,
    rigid_robot,
)
from tests.conftest import require
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

ROOT = str(ROOT_PATH)
G = 9.81


def _arm_geometry():
    """Base height, link 1 length (joint spacing) and joint-2-to-tip length from the MJCF text."""
    root = ET.parse(os.path.join(ROOT, "robots", "qbmove_arm_2dof", "arm_vertical.xml")).getroot()
    bodies = {b.get("name"): b for b in root.iter("body")}
    z0 = float(bodies["link1"].get("pos").split()[2])
    l1 = float(bodies["link2"].get("pos").split()[0])
    l2 = float(next(s for s in root.iter("site") if s.get("name") == "tip").get("pos").split()[0])
    return z0, l1, l2


def _range_numpy(q, qd):
    """Independent reference: planar forward kinematics (q > 0 raises the links), tip velocity
    by differentiation, flight time from z + vz t - g t^2 / 2 = 0, landing x."""
    z0, l1, l2 = _arm_geometry()
    q1, q12 = q[0], q[0] + q[1]
    x = l1 * np.cos(q1) + l2 * np.cos(q12)
    z = z0 + l1 * np.sin(q1) + l2 * np.sin(q12)
    vx = -l1 * np.sin(q1) * qd[0] - l2 * np.sin(q12) * (qd[0] + qd[1])
    vz = l1 * np.cos(q1) * qd[0] + l2 * np.cos(q12) * (qd[0] + qd[1])
    roots = np.roots([-G / 2, vz, z])
    t = max(r.real for r in roots if abs(r.imag) < 1e-12)
    return x + vx * t, (x, z), (vx, vz)


def test_geometry_as_documented():
    assert _arm_geometry() == (0.3, 0.1, 0.133)


def test_spaces_and_preset_range():
    env = Throw(2)
    assert env.single_action_space.shape == (5,) and env.single_observation_space.shape == (5,)
    pre = asr.models()["qbmove_advanced"].preset
    np.testing.assert_array_equal(env.single_action_space.low[2:4], [pre.lo, pre.lo])
    np.testing.assert_array_equal(env.single_action_space.high[2:4], [pre.hi, pre.hi])
    assert (PRESET_LO, PRESET_HI) == (pre.lo, pre.hi)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs[:, :2], np.tile(env.sim.robot.initial_q, (2, 1)))
    np.testing.assert_array_equal(obs[:, 2:], 0.0)
    with pytest.raises(ValueError, match="actuator"):
        Throw(1, actuator="stiff")
    with pytest.raises(ValueError, match=r"actions\[0, 2\]"):
        env.step(np.array([[0.0, 0.0, 0.9, 0.2, -1.0], [0.0, 0.0, 0.2, 0.2, -1.0]]))


@pytest.mark.parametrize("actuator", ["qbmove", "rigid"])
def test_reward_is_closed_form_range(actuator):
    """Three sub-envs swing up and release at different steps: the reward equals the numpy
    range from the link state at the release, and the recorded release state equals the numpy
    kinematics."""
    env = Throw(3, actuator=actuator)
    env.reset(seed=0)
    release_at = [12, 24, 40]
    checked = set()
    for k in range(41):
        a = np.tile([2.5, 0.8, 0.0, 0.0, -1.0], (3, 1))
        for i, kr in enumerate(release_at):
            a[i, 4] = 1.0 if k == kr else -1.0
        obs, r, term, trunc, info = env.step(a)
        for i, kr in enumerate(release_at):
            if k == kr:
                assert term[i] and not trunc[i] and info["released"][i]
                ref, p, v = _range_numpy(obs[i, :2], obs[i, 2:4])
                np.testing.assert_allclose(info["release_pos"][i], p, rtol=0, atol=1e-12)
                np.testing.assert_allclose(info["release_vel"][i], v, rtol=0, atol=1e-12)
                assert r[i] == pytest.approx(ref, abs=1e-10)
                assert abs(r[i]) > 1e-3
                np.testing.assert_allclose(obs[i, 4], (kr + 1) * env.env_dt)
                checked.add(i)
            elif k < kr:
                assert r[i] == 0.0 and not term[i]
    assert checked == {0, 1, 2}


def test_time_limit_releases_and_next_step_autoreset():
    """At the time limit the hand opens: the last step releases (terminated, its reward the
    closed-form range of the state then), whatever the release action says."""
    env = Throw(2, max_episode_steps=3)
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    env.reset(seed=0)
    act = np.tile([1.0, 0.5, 0.4, 0.4, -1.0], (2, 1))
    for _ in range(2):
        _, r, term, trunc, _ = env.step(act)
        assert not (term | trunc).any() and np.all(r == 0)
    obs, r, term, trunc, info = env.step(act)
    assert term.all() and not trunc.any() and info["released"].all()
    for i in range(2):
        ref, _, _ = _range_numpy(obs[i, :2], obs[i, 2:4])
        assert r[i] == pytest.approx(ref, abs=1e-10) and r[i] != 0.0
    act[:, 4] = 1.0
    obs, r, term, trunc, info = env.step(act)  # autoreset step: action ignored, no release
    assert np.array_equal(r, [0.0, 0.0]) and not (term | trunc).any()
    assert not info["_distance"].any()
    np.testing.assert_array_equal(obs[:, :2], np.tile(env.sim.robot.initial_q, (2, 1)))
    np.testing.assert_array_equal(obs[:, 2:], 0.0)
    obs, r, term, trunc, info = env.step(act)  # now it releases
    assert term.all() and info["released"].all()


def test_make_vec_and_check_env():
    env = gymnasium.make_vec("asr/Throw-v0", num_envs=2, vectorization_mode="vector_entry_point")
    assert isinstance(env, Throw) and env.num_envs == 2
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(gymnasium.make("asr/Throw-v0").unwrapped, skip_render_check=True)
    assert isinstance(gymnasium.make("asr/Throw-v0").unwrapped, ThrowEnv)


def test_arms_have_the_published_motor_limits():
    """Every motor of the three arms: 6 N m and 6 rad/s (the toolbox's qbmove template); the
    rigid arm's shaft carries two of them (12 N m, inertia, damping, friction and PID gains
    doubled) through a 2000 N m/rad transmission."""
    qb = asr.Sim("qbmove_arm_2dof", 1, variant="vertical")
    env = Throw(1)
    for j in range(2):
        assert env.sim.batch.get_param(j, "tau_max")[0] == MOTOR_TAU_MAX == 6.0
        assert env.sim.batch.get_param(j, "vel_max")[0] == MOTOR_VEL_MAX == 6.0
    robot = rigid_robot()
    assert [(j.model, j.mode) for j in robot.joints] == [("sea", 6), ("sea", 6)]
    for j, joint in enumerate(robot.joints):
        for name in ("motor_J", "motor_D", "friction", "kp", "kd"):
            assert joint.params[name] == pytest.approx(2 * qb.batch.get_param(j, name)[0])
        assert joint.params["tau_max"] == 2 * MOTOR_TAU_MAX
        assert joint.params["vel_max"] == MOTOR_VEL_MAX
        assert joint.params["k"] == 2000.0


@pytest.mark.parametrize("actuator", ["qbmove", "rigid"])
def test_motors_never_exceed_their_speed_but_springs_let_the_link(actuator):
    """A bang-bang swing (equilibria +3 then -3 rad): no motor turns faster than 6 rad/s; the
    qbmove links outrun their motors (> 7 rad/s, the springs' release), the rigid links stay
    within 6 rad/s plus the transmission's 6 mrad of deflection (< 6.6 rad/s)."""
    env = Throw(1, actuator=actuator)
    env.reset(seed=0)
    motor, link = 0.0, 0.0
    for k in range(55):
        eq = 3.0 if k < 25 else -3.0
        env.step(np.array([[eq, eq, 0.1, 0.1, -1.0]]))
        b = env.sim.batch
        motor = max(motor, np.abs(b.field("th1d")).max(), np.abs(b.field("th2d")).max())
        link = max(link, np.abs(env.qd).max())
    assert motor <= 6.0 + 1e-12
    assert (link > 7.0) if actuator == "qbmove" else (link < 6.6)


def test_fixed_preset_and_release_threshold():
    """preset=P holds P whatever the preset actions; a release needs r > 0.5."""
    env = Throw(2, preset=0.3)
    env.reset(seed=0)
    a = np.array([[1.0, 0.5, 0.8, 0.0, 0.5], [1.0, 0.5, 0.0, 0.8, -1.0]])
    _, _, term, _, _ = env.step(a)
    np.testing.assert_array_equal(env.sim.batch.ref2, 0.3)
    assert not term.any()
    a[0, 4] = 0.51
    _, r, term, _, info = env.step(a)
    assert term.tolist() == [True, False] and info["released"][0] and r[0] != 0.0
    for bad, err in ((0.9, ValueError), (-0.1, ValueError), ("soft", TypeError)):
        with pytest.raises(err, match="preset"):
            Throw(1, preset=bad)
    with pytest.raises(ValueError, match="preset"):
        Throw(1, actuator="rigid", preset=0.2)


@pytest.mark.slow
def test_comparison_tiny_budget():
    from asr.experiments import throw

    res = throw.run(iterations=2, population=6, presets=(0.2, 0.6))
    assert set(res["fixed"]) == {0.2, 0.6} and res["best_preset"] in (0.2, 0.6)
    assert res["best_fixed"] == max(res["fixed"].values())
    # CEM keeps its best: the variable policy is initialised from the best fixed one
    assert res["variable"] >= res["best_fixed"]
    rows = {r["strategy"]: r for r in res["rows"]}
    for name in ("variable", "best fixed", "rigid", "fixed 0.2", "fixed 0.6"):
        assert rows[name]["distance"] > 0, rows[name]
    # the replay on asr.Sim at 1 ms gives the env's distances, and the numpy range
    assert rows["variable"]["distance"] == pytest.approx(res["variable"], abs=1e-9)
    assert rows["rigid"]["distance"] == pytest.approx(res["rigid"], abs=1e-9)
    for name in ("variable", "rigid"):
        tr = res["traces"][name]
        ref, _, _ = _range_numpy(tr["q"][-1], tr["qd"][-1])
        assert tr["distance"] == pytest.approx(ref, abs=1e-10)
    # energy bookkeeping: closed form from the deflections == from the elastic torques, and the
    # work integral -int tau_el d(defl) agrees to its trapezoid error
    tr = res["traces"]["variable"]
    assert tr["energy"].max() > 0
    np.testing.assert_allclose(tr["energy_from_torque"], tr["energy"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        tr["energy_work"], tr["energy"], rtol=0, atol=2e-3 * tr["energy"].max()
    )
    assert rows["variable"]["peak_spring_energy"] == pytest.approx(tr["energy"].max())
    assert 0.0 <= rows["rigid"]["peak_spring_energy"] < 0.05  # its stiff transmission
    # the fixed-preset strategies hold their preset
    assert np.all(res["traces"]["fixed 0.6"]["preset"] == 0.6)
    text = throw.summary(res)
    assert "variable" in text and "rigid" in text


@pytest.mark.slow
@pytest.mark.notebooks
def test_throw_notebook(tmp_path, monkeypatch):
    nbformat = require("nbformat")
    nbclient = require("nbclient")
    require("ipykernel")
    require("plotly")
    out = tmp_path / "throw.json"
    monkeypatch.setenv("ASR_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("ASR_NOTEBOOK_OUT", str(out))
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "throw_stiffness.ipynb"), as_version=4)
    nbclient.NotebookClient(
        nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    summary = json.loads(out.read_text())
    assert summary["variable"] >= summary["best_fixed"] > 0
    assert any("plotly" in str(o.get("data", {})) for c in nb.cells for o in c.get("outputs", []))
