"""asr's MuJoCo plugin "asr.actuator" under MuJoCo's own tools and state handling.

The reference everywhere is a plain loop of mj_step on one fresh MjData per run, itself checked
against asr.Batch on the recorded link motion: mujoco.rollout on several threads, mujoco.batch
(persistent or not), mj_getState / mj_setState, mj_copyData, mj_resetData, mj_forward and
mj_step1 / mj_step2 all give that loop's results bit for bit, plugin state included. Runtime
faults (a NaN reference) stop the one actuator with zero torque until the next reset, and user
models registered with C function pointers run as model="<name>" with params="...".

The robot is qbmove_arm_2dof vertical (two qbmove Advanced joints in mode 6, gravity on, joint
friction: MuJoCo's frictionloss constraints) as asr.export_mjcf writes it.
"""

import copy
import uuid

import mujoco
import mujoco.batch
import mujoco.rollout
import numpy as np
import pytest

import asr
from asr.core.ffi import ffi, lib
from asr.mujoco import plugin as mujoco_plugin
from tests.support.mujoco_plugin import (
    batch_replay,
    compile_plugin,
    plugin_mjcf,
    raw_states,
    record_run,
)

STATE = mujoco.mjtState
# state specs as ints (mjtState has no ~): FULL is time, qpos, qvel, act, plugin state
FULL, INTEGRATION = int(STATE.mjSTATE_FULLPHYSICS), int(STATE.mjSTATE_INTEGRATION)
PLUGIN, WARM = int(STATE.mjSTATE_PLUGIN), int(STATE.mjSTATE_WARMSTART)
STEPS = 240  # steps of every run (1 ms each)
NRUN = 5  # runs (initial states and control sequences) per rollout or batch


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """The exported arm's MjModel, with its asr_initial keyframe."""
    path = asr.export_mjcf("qbmove_arm_2dof", "vertical", tmp_path_factory.mktemp("arm") / "a.xml")
    mujoco_plugin.load()
    return mujoco.MjModel.from_xml_path(path)


def get_state(m, d, spec=FULL):
    out = np.empty(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, out, spec)
    return out


def at_key(m):
    """A fresh MjData at the keyframe asr_initial (actuators not started yet)."""
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
    return d


def controls(m, n, steps, seed):
    """(n, steps, nu) references: the keyframe's plus a random walk (rad), kept in ctrlrange."""
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.normal(0.0, 0.01, (n, steps, m.nu)), axis=1)
    lo, hi = m.actuator_ctrlrange.T
    limited = m.actuator_ctrllimited.astype(bool)
    refs = m.key("asr_initial").ctrl + walk
    return np.where(limited, np.clip(refs, lo, hi), refs)


def step_run(m, d, ctrl, spec=FULL):
    """mj_step once per row of ctrl ((steps, nu)); the state after each step, (steps, nstate)."""
    out = np.empty((len(ctrl), mujoco.mj_stateSize(m, spec)))
    for i, c in enumerate(ctrl):
        d.ctrl[:] = c
        mujoco.mj_step(m, d)
        mujoco.mj_getState(m, d, out[i], spec)
    return out


def initial_states(m):
    """(NRUN, nstate) FULLPHYSICS states: the keyframe with other link angles and velocities
    (actuators not started: the first step places the motors), and one taken after 60 steps
    (actuators running)."""
    rng = np.random.default_rng(3)
    states = []
    for k in range(NRUN - 1):
        d = at_key(m)
        d.qpos[:] += rng.uniform(-0.3, 0.3, m.nq) * (k > 0)
        d.qvel[:] = rng.uniform(-1.0, 1.0, m.nv) * (k > 1)
        states.append(get_state(m, d))
    d = at_key(m)
    step_run(m, d, controls(m, 1, 60, seed=9)[0])
    states.append(get_state(m, d))
    return np.array(states)


def serial(m, x0, ctrl):
    """The reference: one fresh MjData per run, set to x0[r], stepped with ctrl[r], on model m
    (or m[r] for a list of models)."""
    out = []
    for r, (x, c) in enumerate(zip(x0, ctrl)):
        model = m[r] if isinstance(m, list) else m
        d = mujoco.MjData(model)
        mujoco.mj_setState(model, d, x, FULL)
        out.append(step_run(model, d, c))
    return np.array(out)


@pytest.fixture(scope="module")
def reference(arm):
    """(x0, ctrl, states): the serial runs every MuJoCo tool is compared with."""
    x0 = initial_states(arm)
    ctrl = controls(arm, NRUN, STEPS, seed=4)
    return x0, ctrl, serial(arm, x0, ctrl)


def plugin_block(m, states, inst, field):
    """One plugin state value of instance inst from FULLPHYSICS states (..., nstate)."""
    start = mujoco.mj_stateSize(m, FULL) - mujoco.mj_stateSize(m, PLUGIN)
    adr = start + int(m.plugin_stateadr[inst]) + mujoco_plugin.fields().index(field)
    return states[..., adr]


def test_serial_reference_is_asr_batch_and_records_the_plugin_state(arm, reference):
    """The reference loop is asr itself: the plugin's states in it are asr.Batch's on the same
    link motion; FULLPHYSICS holds the plugin state (steps counts every step)."""
    x0, ctrl, states = reference
    assert states.shape == (NRUN, STEPS, mujoco.mj_stateSize(arm, FULL))
    for inst in range(arm.nplugin):
        steps = plugin_block(arm, states, inst, "steps")
        np.testing.assert_array_equal(steps[:-1], np.tile(np.arange(1, STEPS + 1), (NRUN - 1, 1)))
        np.testing.assert_array_equal(steps[-1], 60 + np.arange(1, STEPS + 1))
        assert np.ptp(plugin_block(arm, states, inst, "th1")) > 0.01  # the motors moved
    d = mujoco.MjData(arm)
    mujoco.mj_setState(arm, d, x0[1], FULL)
    run = record_run(arm, d, ctrl[1])
    robot = asr.load_robot("qbmove_arm_2dof", "vertical")
    joints = [{"model": j.model, "mode": j.mode, "params": j.params} for j in robot.joints]
    refs = ctrl[1].reshape(STEPS, 2, 2)
    ref = batch_replay(joints, run["q"], run["qd"], refs, arm.opt.timestep, asr.FIELDS)
    nh = len(mujoco_plugin.header())
    for k, field in enumerate(asr.FIELDS):
        np.testing.assert_array_equal(run["state"][:, :, nh + k], ref[field], err_msg=field)


@pytest.mark.parametrize("nthread", [2, 4])
def test_rollout_on_threads_equals_serial_mj_step(arm, reference, nthread):
    """mujoco.rollout, each thread's MjData running several runs in turn (chunk_size 1)."""
    x0, ctrl, states = reference
    datas = [mujoco.MjData(arm) for _ in range(nthread)]
    out, _ = mujoco.rollout.rollout(arm, datas, x0, ctrl, chunk_size=1)
    np.testing.assert_array_equal(out, states)
    again, _ = mujoco.rollout.rollout(arm, datas, x0[::-1], ctrl[::-1], chunk_size=1)
    np.testing.assert_array_equal(again, states[::-1])  # nothing carried over between calls


def load_batch(batch, m, x0):
    """Write FULLPHYSICS states x0 into the batch's rows (time, qpos, qvel, act, plugin state)."""
    for r, x in enumerate(x0):
        d = mujoco.MjData(m)
        mujoco.mj_setState(m, d, x, FULL)
        for name in ("time", "qpos", "qvel", "act", "plugin_state"):
            batch.bind(name)[r] = getattr(d, name)


@pytest.mark.parametrize("persistent", [False, True], ids=["shared", "persistent"])
def test_mujoco_batch_equals_serial_mj_step(arm, reference, persistent):
    x0, ctrl, states = reference
    batch = mujoco.batch.Batch(arm, NRUN, nthread=2, persistent=persistent)
    batch.reset()
    load_batch(batch, arm, x0)
    out = batch.rollout(STEPS, control=ctrl, record=(FULL,))
    np.testing.assert_array_equal(out[FULL], states)
    batch.reset()
    load_batch(batch, arm, x0)
    qpos, qvel, plugin = (batch.bind(n) for n in ("qpos", "qvel", "plugin_state"))
    npl = len(plugin[0])
    for t in range(STEPS):
        batch.ctrl = ctrl[:, t]
        batch.step()
        np.testing.assert_array_equal(qpos, states[:, t, 1 : 1 + arm.nq])
        np.testing.assert_array_equal(qvel, states[:, t, 1 + arm.nq : 1 + arm.nq + arm.nv])
        np.testing.assert_array_equal(plugin, states[:, t, -npl:])


def chain_models(params, masses):
    """One model per run: a 1-DOF sea link (mode 3) with config keys params[r] and link mass
    masses[r] (kg); their reset states (nrun, nstate) and references (nrun, STEPS, 2)."""
    models = []
    for p, mass in zip(params, masses):
        joint = {"name": "j", "model": "sea", "mode": 3, "params": p, "mass": mass, "length": 0.1}
        models.append(compile_plugin(plugin_mjcf([joint]))[0])
    x0 = np.array([get_state(m, mujoco.MjData(m)) for m in models])
    ctrl = np.tile([0.5, 0.0], (len(models), STEPS, 1))
    return models, x0, ctrl


def check_models(models, x0, ctrl):
    """mujoco.rollout over the models on 2 threads (1 is enough to share an MjData), and
    mujoco.batch with set_models (shared and persistent), equal the serial runs."""
    states = serial(models, x0, ctrl)
    assert np.ptp(states[:, -1, 1]) > 1e-3  # the models move the link differently
    datas = [mujoco.MjData(models[0]) for _ in range(2)]
    np.testing.assert_array_equal(mujoco.rollout.rollout(models, datas, x0, ctrl)[0], states)
    for persistent in (False, True):
        batch = mujoco.batch.Batch(models[0], len(models), nthread=2, persistent=persistent)
        batch.set_models(models)
        batch.reset()
        out = batch.rollout(STEPS, control=ctrl, record=(FULL,))
        np.testing.assert_array_equal(out[FULL], states, err_msg=f"persistent={persistent}")


def test_runs_on_models_with_other_masses_equal_serial_mj_step():
    check_models(*chain_models([{"k": 50.0}] * 3, [0.2, 0.5, 1.0]))


def test_runs_on_models_with_other_plugin_parameters_equal_serial_mj_step():
    """One MjData steps models whose actuators differ (the plugin re-reads its configuration
    when the model it is stepped with is not the one it was configured from)."""
    check_models(*chain_models([{"k": 5.0}, {"k": 50.0}, {"k": 500.0}], [0.5] * 3))


SPLIT = STEPS // 2


@pytest.mark.parametrize(
    "spec",
    [INTEGRATION, FULL | WARM, "physics, then plugin"],
    ids=["integration", "fullphysics+warmstart", "plugin separately"],
)
def test_get_and_set_state_mid_run_continue_bit_for_bit(arm, spec):
    """Saved after SPLIT steps and restored into the same MjData (after other steps) or into a
    fresh one, the state continues as the uninterrupted run. The solver warmstart is saved too:
    the arm's joint friction is a constraint whose solution starts from it."""
    ctrl = controls(arm, 1, STEPS, seed=5)[0]
    d = at_key(arm)
    step_run(arm, d, ctrl[:SPLIT])
    if spec == "physics, then plugin":
        parts = [FULL & ~PLUGIN | WARM, PLUGIN]
    else:
        parts = [spec]
    saved = [(p, get_state(arm, d, p)) for p in parts]
    rest = step_run(arm, d, ctrl[SPLIT:])
    step_run(arm, d, ctrl[::-1][:50])  # somewhere else
    for target in (d, mujoco.MjData(arm)):
        for p, s in saved:
            mujoco.mj_setState(arm, target, s, p)
        np.testing.assert_array_equal(step_run(arm, target, ctrl[SPLIT:]), rest)


def test_state_without_the_plugin_part_restarts_the_actuators(arm):
    """The negative control: restoring everything but mjSTATE_PLUGIN into a fresh MjData
    leaves its actuators at their reset state, so the continuation differs."""
    ctrl = controls(arm, 1, STEPS, seed=6)[0]
    d = at_key(arm)
    step_run(arm, d, ctrl[:SPLIT])
    spec = INTEGRATION & ~PLUGIN
    saved = get_state(arm, d, spec)
    rest = step_run(arm, d, ctrl[SPLIT:])
    fresh = mujoco.MjData(arm)
    mujoco.mj_setState(arm, fresh, saved, spec)
    assert all(s["started"] == 0 for s in mujoco_plugin.states(arm, fresh).values())
    other = step_run(arm, fresh, ctrl[SPLIT:])
    assert np.abs(other[:, 1 : 1 + arm.nq] - rest[:, 1 : 1 + arm.nq]).max() > 1e-6


def test_fullphysics_alone_is_exact_without_constraints():
    """Where no constraint needs the solver's warmstart, FULLPHYSICS alone restores a run."""
    joints = [{"name": n, "model": "qbmove_advanced", "mode": 6} for n in ("a", "b")]
    m, d = compile_plugin(plugin_mjcf(joints))
    ctrl = np.tile([0.3, 0.4, -0.2, 0.1], (STEPS, 1))
    step_run(m, d, ctrl[:SPLIT])
    saved = get_state(m, d)
    rest = step_run(m, d, ctrl[SPLIT:])
    fresh = mujoco.MjData(m)
    mujoco.mj_setState(m, fresh, saved, FULL)
    np.testing.assert_array_equal(step_run(m, fresh, ctrl[SPLIT:]), rest)


def test_copy_data_continues_bit_for_bit(arm):
    ctrl = controls(arm, 1, STEPS, seed=7)[0]
    d = at_key(arm)
    step_run(arm, d, ctrl[:SPLIT])
    target = mujoco.MjData(arm)
    mujoco.mj_copyData(target, arm, d)
    np.testing.assert_array_equal(
        step_run(arm, target, ctrl[SPLIT:]), step_run(arm, d, ctrl[SPLIT:])
    )
    shallow, deep = copy.copy(d), copy.deepcopy(d)  # each with its own plugin data
    again = step_run(arm, d, ctrl[:SPLIT])
    np.testing.assert_array_equal(step_run(arm, shallow, ctrl[:SPLIT]), again)
    np.testing.assert_array_equal(step_run(arm, deep, ctrl[:SPLIT]), again)


def test_reset_data_restarts_the_actuators(arm):
    """mj_resetData zeroes the plugin state (started 0, failed_step -1); the run after it is a
    fresh MjData's, whose first step placed the motors as asr.Batch.reset does (checked above)."""
    ctrl = controls(arm, 1, STEPS, seed=8)[0]
    fresh = step_run(arm, at_key(arm), ctrl)
    d = at_key(arm)
    step_run(arm, d, ctrl[::-1])
    mujoco.mj_resetData(arm, d)
    for state in mujoco_plugin.states(arm, d).values():
        assert state["started"] == 0 and state["steps"] == 0 and state["failed_step"] == -1
        assert state["th1"] == 0 and state["status"] == 0
    mujoco.mj_resetDataKeyframe(arm, d, arm.key("asr_initial").id)
    np.testing.assert_array_equal(step_run(arm, d, ctrl), fresh)


def test_forward_between_steps_changes_nothing(arm):
    """mj_forward calls with other references before each mj_step (and after it) leave the
    committed plugin state alone, and the run is the plain loop's."""
    ctrl = controls(arm, 1, STEPS, seed=10)[0]
    plain = step_run(arm, at_key(arm), ctrl)
    d = at_key(arm)
    rng = np.random.default_rng(11)
    for t in range(STEPS):
        committed = raw_states(arm, d)
        for _ in range(3):
            d.ctrl[:] = ctrl[t] + rng.normal(0.0, 0.3, arm.nu)
            mujoco.mj_forward(arm, d)
        np.testing.assert_array_equal(raw_states(arm, d), committed)
        d.ctrl[:] = ctrl[t]
        mujoco.mj_step(arm, d)
        mujoco.mj_forward(arm, d)
        np.testing.assert_array_equal(get_state(arm, d), plain[t])


def test_step1_and_step2_equal_mj_step(arm):
    ctrl = controls(arm, 1, STEPS, seed=12)[0]
    d = at_key(arm)
    out = np.empty((STEPS, mujoco.mj_stateSize(arm, FULL)))
    for t in range(STEPS):
        mujoco.mj_step1(arm, d)
        d.ctrl[:] = ctrl[t]  # between the two halves, as a controller does
        mujoco.mj_step2(arm, d)
        mujoco.mj_getState(arm, d, out[t], FULL)
    np.testing.assert_array_equal(out, step_run(arm, at_key(arm), ctrl))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_reference_stops_only_that_actuator(arm, bad, capfd, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings to MUJOCO_LOG.TXT in the cwd
    ctrl = controls(arm, 1, 200, seed=13)[0]
    d = at_key(arm)
    step_run(arm, d, ctrl[:20])
    d.ctrl[0] = bad  # joint1's first reference
    mujoco.mj_step(arm, d)
    assert d.warning[mujoco.mjtWarning.mjWARN_BADCTRL].number >= 1
    assert "actuator 'joint1_ref1' stopped at step 20 with asr status 6" in capfd.readouterr().err
    forces = []
    for c in ctrl[21:]:
        d.ctrl[:] = c
        mujoco.mj_step(arm, d)
        forces.append(d.actuator_force.copy())
    forces = np.array(forces)
    j1, j2 = mujoco_plugin.states(arm, d)["joint1"], mujoco_plugin.states(arm, d)["joint2"]
    assert j1["status"] == lib.ASR_ERR_INPUT and j1["failed_step"] == 20
    assert "non-finite" in j1["status_text"] and j1["tau_joint"] == 0.0
    np.testing.assert_array_equal(forces[:, 0], 0.0)  # no torque on joint 1 until the reset
    assert j2["status"] == 0 and np.all(forces[:, 2] != 0.0)  # joint 2 runs on
    assert np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()
    mujoco.mj_resetDataKeyframe(arm, d, arm.key("asr_initial").id)
    np.testing.assert_array_equal(step_run(arm, d, ctrl), step_run(arm, at_key(arm), ctrl))


# ---------------------------------------------------------------------------- user models

USER_PARAMS = (  # the built-in sea's parameters under names that have no config key of their own
    asr.ParamSpec("u_k", 10.0, lo=0.0, hi=np.inf, lo_open=True, hi_open=True, unit="N m/rad"),
    asr.ParamSpec("u_def", 0.8, lo=0.0, hi=np.inf, lo_open=True, hi_open=True, unit="rad"),
)


@pytest.fixture(scope="module")
def user_sea():
    """A user model registered with C function pointers (the built-in sea's elastic and
    reference map, taken from asr's C core through cffi), made known to the plugin."""
    sea = next(
        lib.asr_model_get(k)
        for k in range(lib.asr_model_count())
        if ffi.string(lib.asr_model_get(k).name) == b"sea"
    )
    name = f"user_sea_{uuid.uuid4().hex[:8]}"
    asr.register_model(name, sea.elastic, sea.refmap, params=USER_PARAMS, nmotor=1)
    mujoco_plugin.register_model(name)
    mujoco_plugin.register_model(name)  # again: the same definition is accepted
    yield name
    asr.unregister_model(name)  # the plugin keeps its definition alive


def sea_mjcf(model, keys, listed="", mode=3):
    """One hinge link (0.5 kg at 0.1 m) driven by `model` in `mode`, with config keys `keys`
    ({name: value}, SI) and, if `listed` is given, the key params="name=value ..."."""
    joint = {"name": "j", "model": model, "mode": mode, "mass": 0.5, "length": 0.1, "params": keys}
    xml = plugin_mjcf([joint])
    mode_key = f'<config key="mode" value="{mode}"/>'
    return xml.replace(
        mode_key, mode_key + f'<config key="params" value="{listed}"/>' * bool(listed)
    )


@pytest.mark.parametrize("mode", [3, 6])
def test_user_c_model_runs_in_mujoco_as_asr_batch(user_sea, mode):
    steps = 400
    t = np.arange(steps) * 1e-3
    refs = np.stack([0.6 * np.sin(8 * t), np.full(steps, 0.2)], axis=1)  # (steps, 2) rad
    m, d = compile_plugin(sea_mjcf(user_sea, {"kp": 300.0}, "u_k=5.0 u_def=0.15", mode))
    run = record_run(m, d, refs)
    assert mujoco_plugin.states(m, d)["j"]["status"] == 0
    joint = {"model": user_sea, "mode": mode, "params": {"u_k": 5.0, "u_def": 0.15, "kp": 300.0}}
    ref = batch_replay([joint], run["q"], run["qd"], refs[:, None], 1e-3, asr.FIELDS)
    nh = len(mujoco_plugin.header())
    for k, field in enumerate(asr.FIELDS):
        np.testing.assert_array_equal(run["state"][:, 0, nh + k], ref[field][:, 0], err_msg=field)
    assert ref["clamped"].any()  # the deflection limit u_def was reached
    # the same C functions as the built-in sea with k, max_def: the same run
    m2, d2 = compile_plugin(sea_mjcf("sea", {"k": 5.0, "max_def": 0.15, "kp": 300.0}, mode=mode))
    np.testing.assert_array_equal(record_run(m2, d2, refs)["state"], run["state"])


def test_user_model_params_are_checked(user_sea):
    with pytest.raises(ValueError, match=r"key 'u_k' = '-1' is out of range; valid: \(0, inf\)"):
        compile_plugin(sea_mjcf(user_sea, {}, "u_k=-1"))
    with pytest.raises(ValueError, match="key 'u_k' is not a parameter of model 'sea'"):
        compile_plugin(sea_mjcf("sea", {}, "u_k=3"))


def test_python_callable_model_is_refused(tmp_path):
    def cubic(q, qd, th1, th2, th1d, th2d, k):
        return {"tau1": -k * (q - th1) ** 3, "stiffness": 3 * k * (q - th1) ** 2}

    name = f"py_cubic_{uuid.uuid4().hex[:8]}"
    asr.register_model(name, cubic, params=(asr.ParamSpec("k", 5.0, lo=0.0, hi=np.inf),))
    try:
        with pytest.raises(ValueError, match=f"model '{name}' is a Python callable"):
            mujoco_plugin.register_model(name)
        with pytest.raises(ValueError, match=f"key 'model' = '{name}' is not a model"):
            compile_plugin(sea_mjcf(name, {}))
    finally:
        asr.unregister_model(name)
