"""asr's MuJoCo plugin with the motors' state in MuJoCo's act (actdim="4"), for derivatives.

- mjd_transitionFD (centered, eps 1e-6) of a one-joint pendulum with the plugin, in every
  operation mode, agrees (to 1e-10 relative, 1e-12 of the matrix's largest entry; measured:
  2e-16) with centered finite differences of an independent reference step with
  the same state, perturbation and eps: asr's C core (asr.Batch cannot set motor states: its
  state fields are read-only views that only reset() places, so the core's batch is driven
  through cffi with a state record of our own) stepped from the plugin's committed record with
  the perturbed motors, coupled as asr.Sim couples it (mj_step1, the joint torque as
  qfrc_applied, mj_step2) to the same pendulum compiled without the plugin. The control columns
  of B are nonzero where the mode's physics says: the link's rows in the modes whose torque
  follows the references within the step (0-3), the motors' rows in those with motor dynamics
  (4-6, where the link's rows are zero: the torque is the step-start spring's).
- act holds th1, th2, th1d, th2d (asr.mujoco.plugin.act_fields()).
- actdim 4 changes nothing else: 200 steps under Euler, implicitfast and RK4 are bit-identical
  to actdim 0, act equals the plugin state's th1, th2, th1d, th2d after every step, and
  mj_getState / mj_setState with act restore a run exactly.
- A bad actdim (3, or any on the second actuator) is a compile error naming it.
- notebooks/mujoco_plugin_lqr.ipynb (quick mode): a finite-horizon LQR over mjd_transitionFD
  linearisations tracks a reference on the exported qbmove_arm_2dof far better than the open
  loop (measured: final link error 5.6e-5 rad against 0.039 rad).
"""

import json
import os
import re
import shutil

import numpy as np
import pytest

import asr
from asr.core.ffi import ffi, lib
from asr.mujoco import plugin as mujoco_plugin
from asr.robots.robot import robots_dir
from tests.conftest import require
from tests.support.mujoco_plugin import compile_plugin, plugin_mjcf
from tests.support.notebooks import run_notebook

mujoco = require("mujoco")

EPS = 1e-6  # the perturbation of mjd_transitionFD and of the reference
STEPS_BEFORE = 5  # steps before linearising: motors and integrals away from their reset values
# (model, mode, ctrl): every mode; mode 4's references are motor torques (N m)
MODES = [
    ("rigid", 0, (0.2, 0.0)),
    ("rigid", 1, (0.2, 0.0)),
    ("qbmove_advanced", 2, (0.2, 0.3)),
    ("qbmove_advanced", 3, (0.2, 0.3)),
    ("qbmove_advanced", 4, (0.01, 0.02)),
    ("qbmove_advanced", 5, (0.2, 0.3)),
    ("qbmove_advanced", 6, (0.2, 0.3)),
]
ACT = ("th1", "th2", "th1d", "th2d")  # asr.mujoco.plugin.act_fields(), checked below
FIRST = '<plugin name="p_ref1" joint="p" instance="p"/>'
SECOND = '<plugin name="p_ref2" joint="p" instance="p"/>'
ACTUATOR = mujoco.mjtObj.mjOBJ_ACTUATOR


def pendulum(model, mode, integrator="Euler", actdim="4", second=""):
    """One hinge pendulum (asr.actuator instance "p", actuators p_ref1, p_ref2): actdim on the
    first actuator ("" for none), `second`: extra attributes of the second."""
    xml = plugin_mjcf([{"name": "p", "model": model, "mode": mode}], integrator=integrator)
    attr = f' actdim="{actdim}"' if actdim else ""
    xml = xml.replace(FIRST, FIRST.replace("/>", f"{attr}/>"))
    return xml.replace(SECOND, SECOND.replace("/>", f"{second}/>"))


def field_index(name):
    return [ffi.string(lib.asr_state_field_name(k)).decode() for k in range(lib.ASR_NFIELD)].index(
        name
    )


class CoreStep:
    """asr's C core, one joint with its defaults (those of the plugin's MJCF), stepped from a
    given state record: the plugin's step without the plugin."""

    def __init__(self, model, mode):
        defs = [lib.asr_model_get(k) for k in range(lib.asr_model_count())]
        cdef = next(x for x in defs if ffi.string(x.name).decode() == model)
        self.state = np.zeros(lib.ASR_NFIELD)
        self.modes = np.array([mode], dtype=np.intc)
        self.code, self.joint = ffi.new("int[1]"), ffi.new("int[1]")
        self.step_at = ffi.new("long long[1]")
        out = ffi.new("asr_batch**")
        st = lib.asr_batch_create(
            out,
            1,
            1,
            ffi.new("const asr_model_def*[]", [cdef]),
            ffi.from_buffer("int[]", self.modes),
            ffi.from_buffer("double[]", self.state, require_writable=True),
            {"code": self.code, "joint": self.joint, "step": self.step_at},
        )
        assert st == lib.ASR_OK
        self.b = ffi.gc(out[0], lib.asr_batch_destroy)
        assert lib.asr_batch_set_max_substep(self.b, 1e-3) == lib.ASR_OK

    def __call__(self, record, q, qd, refs, dt):
        """The record after one step from `record` (ASR_NFIELD values) with link angle q (rad),
        velocity qd (rad/s) and references refs (2,)."""
        self.state[:] = record
        self.code[0], self.joint[0], self.step_at[0] = 0, -1, -1
        keep = [np.array([q]), np.array([qd]), np.array(refs, dtype=float)]
        st = lib.asr_batch_step(
            self.b, dt, *(ffi.from_buffer("double[]", a) for a in keep), ffi.NULL, ffi.NULL
        )
        assert st == lib.ASR_OK
        return self.state.copy()


class Reference:
    """The transition (qpos, qvel, act), ctrl -> next of the pendulum stepped as asr.Sim steps
    it (the core's torque as qfrc_applied between mj_step1 and mj_step2), from the plugin's
    committed record with the motors taken from act."""

    def __init__(self, xml, model, mode, record, time):
        plain = re.sub(r"<extension>.*</extension>|<actuator>.*</actuator>", "", xml)
        self.m = mujoco.MjModel.from_xml_string(plain)
        self.d = mujoco.MjData(self.m)
        self.core, self.record, self.time = CoreStep(model, mode), record, time
        self.th = [field_index(n) for n in ACT]

    def __call__(self, x, u):
        m, d = self.m, self.d
        d.time, d.qpos[0], d.qvel[0] = self.time, x[0], x[1]
        rec = self.record.copy()
        rec[self.th] = x[2:]
        mujoco.mj_step1(m, d)
        out = self.core(rec, d.qpos[0], d.qvel[0], u, m.opt.timestep)
        d.qfrc_applied[0] = out[field_index("tau_joint")]
        mujoco.mj_step2(m, d)
        return np.concatenate([[d.qpos[0], d.qvel[0]], out[self.th]]), out

    def jacobians(self, x, u):
        """Centered differences in x (6,) and u (2,): A (6, 6), B (6, 2)."""

        def column(f, v, i):
            e = np.zeros_like(v)
            e[i] = EPS
            return (f(v + e)[0] - f(v - e)[0]) / (2 * EPS)

        a = np.column_stack([column(lambda v: self(v, u), x, i) for i in range(len(x))])
        b = np.column_stack([column(lambda v: self(x, v), u, i) for i in range(len(u))])
        return a, b


def linearised(model, mode, ctrl):
    """The plugin's pendulum after STEPS_BEFORE steps: (m, d, A, B) from mjd_transitionFD."""
    m, d = compile_plugin(pendulum(model, mode))
    d.qpos[0] = 0.3
    d.ctrl[:] = ctrl
    for _ in range(STEPS_BEFORE):
        mujoco.mj_step(m, d)
    nx = 2 * m.nv + m.na
    a, b = np.zeros((nx, nx)), np.zeros((nx, m.nu))
    mujoco.mjd_transitionFD(m, d, EPS, True, a, b, None, None)
    return m, d, a, b


def committed_record(m, d):
    """The asr state record in instance 0's plugin state (after the header), (ASR_NFIELD,)."""
    start = int(m.plugin_stateadr[0]) + len(mujoco_plugin.header())
    return np.array(d.plugin_state[start : start + lib.ASR_NFIELD])


@pytest.mark.parametrize(("model", "mode", "ctrl"), MODES, ids=[f"mode{m[1]}" for m in MODES])
def test_transition_fd_matches_the_core(model, mode, ctrl):
    m, d, a, b = linearised(model, mode, ctrl)
    assert m.na == 4 and a.shape == (6, 6) and b.shape == (6, 2)
    x = np.concatenate([d.qpos, d.qvel, d.act])
    ref = Reference(pendulum(model, mode), model, mode, committed_record(m, d), d.time)

    # the reference's unperturbed step is the plugin's, bit for bit
    before = mujoco.MjData(m)
    mujoco.mj_copyData(before, m, d)
    mujoco.mj_step(m, before)
    nxt, _ = ref(x, np.array(ctrl))
    assert np.array_equal(nxt[2:], before.act)
    np.testing.assert_allclose(nxt[:2], [before.qpos[0], before.qvel[0]], rtol=1e-14, atol=1e-16)

    a_ref, b_ref = ref.jacobians(x, np.array(ctrl, dtype=float))
    for got, want in ((a, a_ref), (b, b_ref)):
        scale = np.abs(want).max()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * scale)

    # the controls reach the state where the mode's physics says
    link, motors = b[:2], b[2:]
    nref = 1 if model == "rigid" else 2
    if mode <= 3:  # the torque follows the references within the step
        assert np.all(np.abs(link[1, :nref]) > 1e-3)
    else:  # the torque is the step-start spring's; the references drive the motors
        assert np.all(link == 0.0)
        assert np.all(np.abs(motors[2:, :2]).max(axis=0) > 1e-2)
    if model != "rigid" and mode >= 4:  # the motors' state moves the link: the spring
        assert np.abs(a[1, 2:4]).min() > 1e-3
    if model == "rigid":  # no motors: act is carried unchanged
        np.testing.assert_allclose(a[2:, 2:], np.eye(4), rtol=0, atol=1e-9)


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast", "RK4"])
def test_act_changes_nothing_else(integrator):
    runs = []
    for actdim in ("", "4"):
        m, d = compile_plugin(pendulum("qbmove_advanced", 6, integrator, actdim))
        assert m.na == (4 if actdim else 0)
        d.qpos[0] = 0.3
        rows = []
        for i in range(200):
            d.ctrl[:] = (0.5 * np.sin(0.05 * i), 0.3)
            mujoco.mj_step(m, d)
            rows.append(np.concatenate([d.qpos, d.qvel, d.plugin_state]))
            if actdim:
                s = mujoco_plugin.states(m, d)["p"]
                assert list(d.act) == [s[n] for n in ACT]
        runs.append(np.array(rows))
    assert np.array_equal(runs[0], runs[1])
    assert np.abs(runs[1][:, 1]).max() > 0.1  # the link moved


def test_get_and_set_state_with_act():
    m, d = compile_plugin(pendulum("qbmove_advanced", 5, "RK4"))
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    d.qpos[0], d.ctrl[:] = 0.3, (0.4, -0.2)
    for _ in range(50):
        mujoco.mj_step(m, d)
    state = np.zeros(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, state, spec)

    def run():
        out = []
        for _ in range(30):
            mujoco.mj_step(m, d)
            out.append(np.concatenate([d.qpos, d.qvel, d.act, d.plugin_state]))
        return np.array(out)

    first = run()
    mujoco.mj_setState(m, d, state, spec)
    assert np.array_equal(run(), first)
    # act is the state the step starts from: another act, another step
    mujoco.mj_setState(m, d, state, spec)
    d.act[0] += 1e-3
    assert not np.array_equal(run()[0], first[0])


@pytest.mark.parametrize(
    ("first", "second", "expect"),
    [
        ("3", "", ["p_ref1", "actdim = 3", "valid: 0", "or 4"]),
        ("", ' actdim="4"', ["p_ref2", "actdim = 4", "valid: 0 (only the instance's first"]),
        ("4", ' actdim="4"', ["p_ref2", "actdim = 4", "valid: 0 (only the instance's first"]),
    ],
    ids=["actdim3", "second", "both"],
)
def test_bad_actdim_is_a_compile_error(first, second, expect):
    with pytest.raises(ValueError) as err:
        compile_plugin(pendulum("sea", 5, actdim=first, second=second))
    for text in expect:
        assert text in str(err.value)


def test_act_fields_are_the_motor_states():
    assert mujoco_plugin.act_fields() == ACT


def with_act(xml, joints):
    """xml with actdim="4" on the first actuator of each joint named in `joints`."""
    for j in joints:
        first = f'<plugin name="{j}_ref1" joint="{j}" instance="{j}"/>'
        assert first in xml
        xml = xml.replace(first, first.replace("/>", ' actdim="4"/>'))
    return xml


@pytest.mark.parametrize("integrator", ["Euler", "RK4"])
def test_grouped_instances_with_and_without_act(integrator):
    """Three joints of one model and mode, stepped together in one group: with act on none, all
    or some of them, the runs are bit-identical and each act is its instance's motors."""
    joints = [{"name": f"j{k}", "model": "sea", "mode": 6, "mass": 0.1} for k in range(3)]
    plain = plugin_mjcf(joints, integrator=integrator)
    runs = []
    for chosen in ([], ["j0", "j1", "j2"], ["j0", "j2"]):
        m, d = compile_plugin(with_act(plain, chosen))
        assert m.na == 4 * len(chosen)
        d.qpos[:] = (0.2, -0.1, 0.3)
        rows = []
        for i in range(100):
            d.ctrl[:] = 0.4 * np.sin(0.1 * i + np.arange(6))
            mujoco.mj_step(m, d)
            rows.append(np.concatenate([d.qpos, d.qvel, d.plugin_state]))
            states = mujoco_plugin.states(m, d)
            for j in chosen:
                adr = int(m.actuator_actadr[mujoco.mj_name2id(m, ACTUATOR, f"{j}_ref1")])
                assert list(d.act[adr : adr + 4]) == [states[j][n] for n in ACT]
        runs.append(np.array(rows))
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])


def test_exported_robot_has_act(tmp_path):
    """asr.export_mjcf declares actdim 4 on each joint's first actuator: after a reset to the
    asr_initial key, act is the plugin state's motors after every step."""
    path = asr.export_mjcf("qbmove_arm_2dof", "vertical", str(tmp_path / "arm.xml"))
    m, d = compile_plugin(open(path).read())
    assert m.na == 8 and list(m.actuator_actnum) == [4, 0, 4, 0]
    mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
    for _ in range(20):
        mujoco.mj_step(m, d)
        states = mujoco_plugin.states(m, d)
        want = [states[j][n] for j in ("joint1", "joint2") for n in ACT]
        assert list(d.act) == want
    assert np.ptp(d.act[:2]) > 0  # joint1's two motors differ (a preset)


def test_export_after_the_mjcf_own_act(tmp_path):
    """A robot MJCF with its own stateful actuator (a filter, act 1) and a key giving its act:
    the joint's act follows it, and the key's act gets the joint's 4 values at 0."""
    folder = tmp_path / "pendulum"
    shutil.copytree(os.path.join(robots_dir(), "pendulum_1dof"), folder)
    xml = folder / "pendulum.xml"
    own = (
        '<actuator><general name="own" joint="joint" dyntype="filter" dynprm="0.1"/></actuator>'
        '<keyframe><key name="up" qpos="0.5" ctrl="0.25" act="0.125"/></keyframe></mujoco>'
    )
    xml.write_text(xml.read_text().replace("</mujoco>", own))
    m, d = compile_plugin(open(asr.export_mjcf(str(folder), None, str(tmp_path / "o.xml"))).read())
    assert m.na == 5 and list(m.actuator_actadr) == [0, 1, -1]
    np.testing.assert_array_equal(m.key("up").act, [0.125, 0.0, 0.0, 0.0, 0.0])
    mujoco.mj_resetDataKeyframe(m, d, m.key("up").id)
    mujoco.mj_step(m, d)
    assert list(d.act[1:]) == [mujoco_plugin.states(m, d)["joint"][n] for n in ACT]


@pytest.mark.notebooks
def test_lqr_notebook(tmp_path, monkeypatch):
    """The LQR only works because B reaches the motors (mode 6): it must bring the link error
    (0.18 rad at the start) far below the open loop's by the end of the horizon."""
    out = tmp_path / "summary.json"
    run_notebook("mujoco_plugin_lqr.ipynb", tmp_path, monkeypatch, ASR_NOTEBOOK_OUT=str(out))
    got = json.loads(out.read_text())
    assert got["quick"] and got["steps"] == 600
    assert got["open_loop_final"] > 0.01  # the open loop has not caught up
    assert got["lqr_final"] < 1e-3 and got["lqr_final"] < 0.01 * got["open_loop_final"]
    assert got["lqr_rms_second_half"] < 0.1 * got["open_loop_rms_second_half"]
