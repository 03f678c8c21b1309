"""The sensors of asr's MuJoCo plugin: <sensor><plugin instance="<joint>"/> puts the joint's
committed values (asr.mujoco.plugin.sensor_layout()) into d.sensordata.

Timing: MuJoCo computes sensors in the first forward pass of mj_step, before the integrator and
before the plugin's advance commits the step, so the sensordata after mj_step n is the plugin
state committed by step n - 1 (the record asr.Sim gives after step n - 1; after step 1, the
reset state). Every comparison below is with the record of that same moment, bit for bit:
states() read just before the step, asr.Sim's rollout records (Euler and implicitfast, where
asr.Sim couples exactly), asr.Batch replaying the link motion (RK4, which asr.Sim does not run).
"""

import dataclasses
import os

import mujoco
import mujoco.rollout
import numpy as np
import pytest

import asr
from asr.mujoco import plugin as mujoco_plugin
from tests.support.mujoco_plugin import batch_replay, compile_plugin, plugin_mjcf

STEPS = 120  # 1 ms steps per run
JOINTS = [  # two kinds of actuator in one chain: a SEA (mode 3) and a qbmove (mode 6)
    {"name": "a", "model": "sea", "mode": 3, "params": {"k": 40.0}},
    {"name": "b", "model": "qbmove_advanced", "mode": 6},
]
FULL = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
PLUGIN_STATE = int(mujoco.mjtState.mjSTATE_PLUGIN)


def layout_names():
    return [name for name, _ in mujoco_plugin.sensor_layout()]


def with_sensors(xml, sensors):
    """xml with a <sensor> section holding `sensors` (MJCF text) before </mujoco>."""
    return xml.replace("</mujoco>", f"<sensor>{sensors}</sensor></mujoco>")


def chain_refs(steps):
    """(steps, 2 joints, 2) references: a step of both joints' first reference at a quarter of
    the run; qbmove's second (the stiffness preset) held."""
    refs = np.zeros((steps, 2, 2))
    refs[:, 1, 1] = 0.3
    refs[steps // 4 :, :, 0] = (0.4, -0.3)
    return refs


def run_with_sensors(m, d, ctrl):
    """mj_step per row of ctrl; per step (sensordata of m's asr sensors (S, V), the asr
    instances' states() just before the step, as (S, V) in sensor_layout order, the link q, qd
    before the step)."""
    names = layout_names()
    got, before, q, qd = [], [], [], []
    for c in ctrl:
        d.ctrl[:] = c
        states = mujoco_plugin.states(m, d)
        before.append([[states[j["name"]][n] for n in names] for j in JOINTS])
        q.append(d.qpos.copy())
        qd.append(d.qvel.copy())
        mujoco.mj_step(m, d)
        got.append(mujoco_plugin.sensordata(m, d))
    return np.array(got), np.array(before), np.array(q), np.array(qd)


def test_layout_names_fields_and_units():
    layout = mujoco_plugin.sensor_layout()
    assert layout_names() == [
        "defl1",
        "defl2",
        "stiffness",
        "tau_el1",
        "tau_el2",
        "tau_joint",
        "th1",
        "th2",
        "status",
    ]
    fields = mujoco_plugin.fields()
    for name, unit in layout:
        assert name in fields, name
        if name in asr.FIELDS:
            assert unit == asr.FIELD_UNITS[name], name
    assert dict(layout)["status"] == "" and dict(layout)["th2"] == "rad or m"


@pytest.mark.parametrize("actdim", ["", "4"], ids=["no act", "actdim 4"])
@pytest.mark.parametrize("integrator", ["Euler", "implicit", "implicitfast", "RK4"])
def test_sensordata_is_the_committed_record(integrator, actdim):
    """A jointpos sensor first (so that the asr sensors' sensordata addresses are not 0), one
    asr sensor per joint: after every mj_step, sensordata equals states() read before it and
    asr.Batch's record of the step before on the recorded link motion, bit for bit; also with
    the motors' state in MuJoCo's act (actdim="4" on each joint's first actuator)."""
    xml = plugin_mjcf(JOINTS, integrator=integrator)
    if actdim:
        for j in JOINTS:
            first = f'<plugin name="{j["name"]}_ref1"'
            xml = xml.replace(first, f'{first} actdim="{actdim}"')
    sensors = '<jointpos joint="a"/>' + "".join(
        f'<plugin name="{j["name"]}_asr" instance="{j["name"]}"/>' for j in JOINTS
    )
    m, d = compile_plugin(with_sensors(xml, sensors))
    assert m.na == (8 if actdim else 0)
    assert mujoco_plugin.sensors(m) == [1, 2]
    assert list(m.sensor_dim) == [1, 9, 9] and list(m.sensor_needstage) == [1, 1, 1]  # POS
    refs = chain_refs(STEPS)
    got, before, q, qd = run_with_sensors(m, d, refs.reshape(STEPS, 4))
    assert got.shape == (STEPS, 2, 9)
    np.testing.assert_array_equal(got, before)
    np.testing.assert_array_equal(got[0], 0.0)  # the reset state: nothing committed yet
    names = layout_names()
    ref = batch_replay(JOINTS, q, qd, refs, m.opt.timestep, tuple(names[:-1]))
    for k, name in enumerate(names[:-1]):
        np.testing.assert_array_equal(got[1:, :, k], ref[name][:-1], err_msg=name)
    np.testing.assert_array_equal(got[..., -1], 0.0)  # status: running
    assert np.ptp(got[:, 0, names.index("tau_joint")]) > 0.1  # the torque changed
    # the jointpos sensor is of the same moment: the link angle before the step
    np.testing.assert_array_equal(d.sensordata[0], q[-1][0])
    if integrator == "RK4":
        # MuJoCo's actuator_force after an RK4 step is its last stage's; the sensor gives the
        # committed (step-start) torque, as asr's coupling defines it
        committed = mujoco_plugin.states(m, d)["a"]["tau_joint"]
        assert d.actuator_force[0] != committed
        mujoco.mj_step(m, d)
        assert mujoco_plugin.sensordata(m, d)[0, names.index("tau_joint")] == committed


def test_step1_step2_forward_and_a_stopped_actuator():
    """mj_step1 (which computes position-stage sensors) then mj_step2 gives mj_step's
    sensordata; mj_forward after a step shows the record just committed; an actuator stopped by
    a NaN reference (status 6) shows its status in the next step's sensordata."""
    xml = plugin_mjcf(JOINTS[:1])
    m, d = compile_plugin(with_sensors(xml, '<plugin name="a_asr" instance="a"/>'))
    d2 = mujoco.MjData(m)
    status = layout_names().index("status")
    for t in range(30):
        ref = np.nan if t == 20 else 0.2
        d.ctrl[:] = (ref, 0.0)
        mujoco.mj_step(m, d)
        mujoco.mj_step1(m, d2)
        d2.ctrl[:] = (ref, 0.0)
        mujoco.mj_step2(m, d2)
        np.testing.assert_array_equal(d2.sensordata, d.sensordata)
        assert d.sensordata[status] == (6.0 if t > 20 else 0.0), t
        if t == 10:  # a forward pass between steps (the viewer's) changes nothing else
            before = d.sensordata.copy()
            mujoco.mj_forward(m, d)
            now = mujoco_plugin.states(m, d)["a"]
            np.testing.assert_array_equal(d.sensordata, [now[n] for n in layout_names()])
            assert not np.array_equal(d.sensordata, before)


def robot_copy(tmp_path, integrator):
    """qbmove_arm_2dof (vertical) with its MJCF's integrator set to `integrator`, in tmp_path."""
    robot = asr.load_robot("qbmove_arm_2dof", "vertical")
    with open(robot.mjcf) as f:
        xml = f.read()
    assert 'integrator="Euler"' in xml
    path = tmp_path / os.path.basename(robot.mjcf)
    path.write_text(xml.replace('integrator="Euler"', f'integrator="{integrator}"'))
    return dataclasses.replace(robot, folder=str(tmp_path), mjcf=str(path))


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast"])
def test_sensordata_equals_asr_sim_records(tmp_path, integrator):
    """The exported robot (one sensor per joint by default) run by mj_step from its keyframe
    and asr.Sim with the same references: sensordata after step t + 1 is Sim's record after
    step t, every value bit for bit."""
    robot = robot_copy(tmp_path, integrator)
    m, d = compile_plugin(open(asr.export_mjcf(robot, path=tmp_path / "arm.xml")).read())
    assert m.opt.integrator == int(getattr(mujoco.mjtIntegrator, f"mjINT_{integrator.upper()}"))
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SENSOR, s) for s in range(m.nsensor)]
    assert names == [f"{j}_asr" for j in robot.joint_names]
    mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
    refs = np.repeat(np.array(robot.initial_refs)[None], STEPS, axis=0)
    refs[STEPS // 4 :, :, 0] += 0.3
    got = []
    for t in range(STEPS):
        d.ctrl[:] = refs[t].reshape(-1)
        mujoco.mj_step(m, d)
        got.append(mujoco_plugin.sensordata(m, d))
    got = np.array(got)  # (steps, J, V)
    sim = asr.Sim(robot, 1)
    sim.reset(q0=robot.initial_q, refs=refs[0])
    layout = layout_names()
    want = sim.rollout(STEPS, refs=refs[None], record=tuple(layout[:-1]))
    for k, name in enumerate(layout[:-1]):
        np.testing.assert_array_equal(got[1:, :, k], want[name][0, :-1], err_msg=name)
    np.testing.assert_array_equal(got[..., -1], 0.0)
    assert np.ptp(got[:, :, layout.index("th1")]) > 0.1  # the motors moved


def test_rollout_sensordata_carries_them(tmp_path):
    """mujoco.rollout's sensordata output (2 threads, runs of an MjData in turn) holds the asr
    sensors: at step t the plugin state of rollout's own state output at step t - 1, and the
    same as a serial mj_step loop."""
    path = asr.export_mjcf("qbmove_arm_2dof", "vertical", tmp_path / "arm.xml")
    m, _ = compile_plugin(open(path).read())
    nrun = 3
    x0 = []
    for r in range(nrun):
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
        d.qpos[:] += 0.1 * r
        state = np.empty(mujoco.mj_stateSize(m, FULL))
        mujoco.mj_getState(m, d, state, FULL)
        x0.append(state)
    x0 = np.array(x0)
    ctrl = m.key("asr_initial").ctrl + np.linspace(0.0, 0.2, STEPS)[None, :, None] * np.ones(
        (nrun, 1, m.nu)
    )
    datas = [mujoco.MjData(m) for _ in range(2)]
    states, sensordata = mujoco.rollout.rollout(m, datas, x0, ctrl, chunk_size=1)
    assert sensordata.shape == (nrun, STEPS, m.nsensordata) and m.nsensordata == 2 * 9
    start = mujoco.mj_stateSize(m, FULL) - mujoco.mj_stateSize(m, PLUGIN_STATE)
    index = [mujoco_plugin.fields().index(n) for n in layout_names()]
    for k, s in enumerate(mujoco_plugin.sensors(m)):
        adr = start + int(m.plugin_stateadr[k])
        values = sensordata[:, 1:, m.sensor_adr[s] : m.sensor_adr[s] + 9]
        np.testing.assert_array_equal(values, states[:, :-1, adr + np.array(index)])
    d = mujoco.MjData(m)
    mujoco.mj_setState(m, d, x0[2], FULL)
    for t in range(STEPS):
        d.ctrl[:] = ctrl[2, t]
        mujoco.mj_step(m, d)
    np.testing.assert_array_equal(sensordata[2, -1], d.sensordata)
    assert np.ptp(sensordata[..., layout_names().index("th1")]) > 0.05


def test_mjcf_without_sensors_steps_the_same(tmp_path):
    """export_mjcf(sensors=False) writes the file as before the sensors (no <sensor>); it and
    the file with sensors step to the same states, bit for bit, plugin state included."""
    plain = asr.export_mjcf("rrbot_sea", "k188", tmp_path / "plain.xml", sensors=False)
    sensed = asr.export_mjcf("rrbot_sea", "k188", tmp_path / "sensed.xml")
    text = open(plain).read()
    assert "<sensor" not in text
    m0, d0 = compile_plugin(text)
    m1, d1 = compile_plugin(open(sensed).read())
    assert (m0.nsensor, m1.nsensor) == (0, len(mujoco_plugin.instances(m1)))
    assert mujoco_plugin.sensordata(m0, d0).shape == (0, 9)
    for m, d in ((m0, d0), (m1, d1)):
        mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
    out = []
    for m, d in ((m0, d0), (m1, d1)):
        states = np.empty((STEPS, mujoco.mj_stateSize(m, FULL)))
        for t in range(STEPS):
            d.ctrl[:] = m.key("asr_initial").ctrl + 0.3 * (t > STEPS // 4)
            mujoco.mj_step(m, d)
            mujoco.mj_getState(m, d, states[t], FULL)
        out.append(states)
    np.testing.assert_array_equal(out[0], out[1])
    assert np.ptp(out[0][:, 1]) > 0.01  # the first link moved
    with pytest.raises(TypeError, match="sensors: expected True or False, got 'no'"):
        asr.export_mjcf("rrbot_sea", "k188", tmp_path / "x.xml", sensors="no")


def test_two_sensors_on_one_instance_give_the_same_values():
    xml = plugin_mjcf(JOINTS[:1])
    sensors = '<plugin name="a1" instance="a"/><plugin name="a2" instance="a" cutoff="0"/>'
    m, d = compile_plugin(with_sensors(xml, sensors))
    d.ctrl[:] = (0.3, 0.0)
    mujoco.mj_step(m, d, nstep=5)
    got = mujoco_plugin.sensordata(m, d)
    assert got.shape == (2, 9) and got[0, layout_names().index("th1")] == 0.3
    np.testing.assert_array_equal(got[0], got[1])


BAD_SENSORS = [
    (
        '<plugin name="s" plugin="asr.actuator"/>',
        r"asr.actuator: sensor 's' \(#0\) names instance #3, which drives no actuator: .*"
        "<sensor><plugin instance=.*key 'model' is missing",
    ),
    ('<plugin name="s" instance="nope"/>', "unrecognized name 'nope' for plugin instance"),
    ('<plugin name="s"/>', "neither 'plugin' nor 'instance' is specified for sensor"),
    ('<plugin name="s" instance="pid"/>', "plugin 'mujoco.pid' does not support sensors"),
    ('<plugin name="s" instance="lone"/>', "instance 'lone': drives no actuator"),
]


@pytest.mark.parametrize("sensor,message", BAD_SENSORS, ids=[m[:24] for _, m in BAD_SENSORS])
def test_bad_sensor_declarations_fail_to_compile(sensor, message):
    xml = plugin_mjcf(JOINTS[:1])
    other = (
        '<instance name="lone"><config key="model" value="sea"/><config key="mode" value="3"/>'
        '<config key="k" value="40"/></instance></plugin>'
        '<plugin plugin="mujoco.pid"><instance name="pid"><config key="kp" value="1"/></instance>'
    )
    xml = xml.replace("</plugin></extension>", f"{other}</plugin></extension>")
    with pytest.raises(ValueError, match=message):
        compile_plugin(with_sensors(xml, sensor))


def test_sensor_work_is_linear_in_the_instances():
    """The plugin's work counter (asr_mujoco_work) over 10 steps of N and 4 N sea pendulums,
    each with its sensor: about 4 times, not 16 (one instance writes every sensor per pass)."""
    import ctypes

    work = ctypes.CDLL(mujoco_plugin.load()).asr_mujoco_work
    work.restype = ctypes.c_longlong
    per_run = []
    for n in (25, 100):
        joints = [
            {"name": f"j{i}", "model": "sea", "mode": 3, "params": {"k": 40.0}} for i in range(n)
        ]
        sensors = "".join(f'<plugin instance="j{i}"/>' for i in range(n))
        m, d = compile_plugin(with_sensors(plugin_mjcf(joints), sensors))
        d.ctrl[:] = 0.1
        mujoco.mj_step(m, d)
        before = work()
        mujoco.mj_step(m, d, nstep=10)
        per_run.append(work() - before)
        assert mujoco_plugin.sensordata(m, d).shape == (n, 9)
    assert per_run[0] > 0 and per_run[1] / per_run[0] < 5.0, per_run
