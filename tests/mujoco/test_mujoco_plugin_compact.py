"""The compact MJCF of asr's MuJoCo plugin (issue 44): one asr.actuator instance drives the joints
its key "joints" lists. Its runs equal the long form's (one instance per joint) bit for bit:
asr.export_mjcf(..., compact=True) of every exported robot under Euler and RK4, through
mujoco.rollout, a hand-written instance with one and two actuators per joint in mixed order,
and mjd_transitionFD's matrices; each bad declaration is a compile error naming what is wrong.
Also: a gear edited in place on the 24-actuator snake (plan_matches' byte comparison path) stops
that actuator with status 2 and a warning."""

import ctypes

import mujoco
import mujoco.batch
import mujoco.rollout
import numpy as np
import pytest

import asr
from asr.mujoco import plugin as mujoco_plugin
from tests.conftest import require

ROBOTS = ("qbmove_arm_2dof", "qbmove_arm_5dof", "qbmove_snake", "ur10")
STEPS = 200


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{robot: (long model, compact model)} for every robot that exports."""
    require("mujoco")
    mujoco_plugin.load()
    folder = tmp_path_factory.mktemp("compact")
    out = {}
    for robot in ROBOTS:
        long = asr.export_mjcf(robot, path=folder / f"{robot}.xml")
        compact = asr.export_mjcf(robot, path=folder / f"{robot}_c.xml", compact=True)
        out[robot] = tuple(mujoco.MjModel.from_xml_path(p) for p in (long, compact))
    return out


def per_joint(m, d):
    """{joint: (plugin state record, sensor row)}: states() and sensordata() rearranged by joint
    (a compact key "<instance>/<joint>", a long key the instance, named after its joint)."""
    states = mujoco_plugin.states(m, d)
    rows = mujoco_plugin.sensordata(m, d)
    assert len(rows) == len(states)  # one sensor row per joint, in states() order
    out = {}
    for row, (key, state) in zip(rows, states.items()):
        values = np.array([state[f] for f in mujoco_plugin.fields()])
        out[key.split("/")[-1]] = (values, row)
    return out


def run(m, integrator, steps=STEPS):
    """mj_step from the key asr_initial with swinging references: per step qpos, qvel, act,
    actuator_force, and the per-joint plugin states and sensor rows."""
    m.opt.integrator = integrator
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
    ctrl0 = d.ctrl.copy()
    out = []
    for i in range(steps):
        d.ctrl[:] = ctrl0 + 0.3 * np.sin(0.05 * i + np.arange(m.nu))
        mujoco.mj_step(m, d)
        out.append(
            (d.qpos.copy(), d.qvel.copy(), d.act.copy(), d.actuator_force.copy(), per_joint(m, d))
        )
    return out


def assert_same_runs(a, b):
    for sa, sb in zip(a, b, strict=True):
        for x, y in zip(sa[:4], sb[:4]):
            np.testing.assert_array_equal(x, y)
        assert sa[4].keys() == sb[4].keys()
        for joint, (state, row) in sa[4].items():
            np.testing.assert_array_equal(state, sb[4][joint][0])
            np.testing.assert_array_equal(row, sb[4][joint][1])


@pytest.mark.parametrize(
    "integrator", [mujoco.mjtIntegrator.mjINT_EULER, mujoco.mjtIntegrator.mjINT_RK4]
)
@pytest.mark.parametrize("robot", ROBOTS)
def test_compact_export_steps_as_the_long_one_bit_for_bit(exported, robot, integrator):
    long, compact = exported[robot]
    assert compact.nu == long.nu and compact.na == long.na
    assert compact.nsensordata == long.nsensordata
    runs = [run(m, integrator) for m in (long, compact)]
    assert_same_runs(*runs)
    states = runs[1][-1][4]
    assert all(s[0][1] == 0.0 for s in states.values())  # every joint runs (status 0)


def test_compact_export_groups_joints_alike(exported):
    # the 5-dof arm and the snake: one instance each; joints with their own parameters stay apart
    assert exported["qbmove_arm_5dof"][1].nplugin == 1
    snake = exported["qbmove_snake"][1]
    assert snake.nplugin == 1 and snake.plugin_statenum[0] == 12 * len(mujoco_plugin.fields())
    assert mujoco_plugin.joint_list(snake, 0) == [f"joint{k}" for k in range(1, 13)]
    assert snake.sensor_dim[-1] == 12 * len(mujoco_plugin.sensor_layout())
    keys = list(mujoco_plugin.states(snake, mujoco.MjData(snake)))
    assert keys[:2] == ["joint1/joint1", "joint1/joint2"]
    arm2 = exported["qbmove_arm_2dof"]  # its joints differ: the long form's instances
    assert arm2[1].nplugin == arm2[0].nplugin == 2
    assert list(mujoco_plugin.states(arm2[1], mujoco.MjData(arm2[1]))) == ["joint1", "joint2"]


FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS


def euler_at_key(m):
    """m under Euler and an MjData at its key asr_initial."""
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
    return d


def full_state(m, d):
    x = np.empty(mujoco.mj_stateSize(m, FULL))
    mujoco.mj_getState(m, d, x, FULL)
    return x


def test_compact_export_under_rollout_equals_long(exported):
    long, compact = exported["qbmove_arm_5dof"]
    outs = []
    for m in (long, compact):
        d = euler_at_key(m)
        x0 = full_state(m, d)
        rng = np.random.default_rng(3)
        ctrl = d.ctrl + 0.2 * rng.standard_normal((2, 100, m.nu))
        state, sensor = mujoco.rollout.rollout(m, d, np.stack([x0, x0]), ctrl)
        outs.append((state, sensor))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])  # the plugin state is in it, same order
    np.testing.assert_array_equal(outs[0][1], outs[1][1])  # one sensor of 5 rows = 5 sensors


def test_transition_fd_matrices_equal_long_form(exported):
    # the 5-dof arm: one compact instance for five joints (the 2-dof arm's joints have different
    # parameters, so its compact file is its long one)
    mats = []
    for m in exported["qbmove_arm_5dof"]:
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
        for _ in range(20):
            mujoco.mj_step(m, d)
        nx = 2 * m.nv + m.na
        a, b = np.zeros((nx, nx)), np.zeros((nx, m.nu))
        mujoco.mjd_transitionFD(m, d, 1e-6, 1, a, b, None, None)
        mats.append((a, b))
    np.testing.assert_array_equal(mats[0][0], mats[1][0])
    np.testing.assert_array_equal(mats[0][1], mats[1][1])
    assert np.any(mats[1][1] != 0.0)


# ---------------------------------------------------------------------------- hand-written

SEA = '<config key="model" value="sea"/><config key="mode" value="3"/>'


def chain(instances, actuators, sensors=""):
    """Three hinge links a, b, c (and a ball joint 'ball') with the given plugin instances and
    actuators."""
    bodies = ""
    for name in "abc":
        bodies += (
            f'<body name="{name}_link" pos="0 0.04 0"><joint name="{name}" type="hinge" '
            'axis="1 0 0"/><inertial pos="0 0.04 0" mass="0.2" diaginertia="1e-7 1e-7 1e-7"/>'
        )
    bodies += (
        '<body name="ballb" pos="0 0.04 0"><joint name="ball" type="ball"/>'
        '<inertial pos="0 0.04 0" mass="0.2" diaginertia="1e-7 1e-7 1e-7"/></body>'
    )
    bodies += "</body>" * 3
    return (
        '<mujoco><option timestep="0.001"/>'
        f'<extension><plugin plugin="asr.actuator">{instances}</plugin></extension>'
        f"<worldbody>{bodies}</worldbody><actuator>{actuators}</actuator>"
        f"<sensor>{sensors}</sensor></mujoco>"
    )


def act(name, joint, inst, extra=""):
    return f'<plugin name="{name}" joint="{joint}" instance="{inst}" {extra}/>'


# a: two actuators, b: one, c: two; actuators interleaved, joints listed as c a b
ORDER = [("a_ref1", "a"), ("c_ref1", "c"), ("a_ref2", "a"), ("b_ref1", "b"), ("c_ref2", "c")]


def hand_compact(extra_first=""):
    inst = f'<instance name="all">{SEA}<config key="joints" value=" c  a b "/></instance>'
    acts = "".join(act(n, j, "all", extra_first if n.endswith("ref1") else "") for n, j in ORDER)
    return chain(inst, acts, '<plugin name="s" instance="all"/>')


def hand_long(extra_first=""):
    inst = "".join(f'<instance name="{j}">{SEA}</instance>' for j in "cab")
    acts = "".join(act(n, j, j, extra_first if n.endswith("ref1") else "") for n, j in ORDER)
    sensors = "".join(f'<plugin name="s{j}" instance="{j}"/>' for j in "cab")
    return chain(inst, acts, sensors)


@pytest.mark.parametrize("actdim", ["", 'actdim="4"'])
@pytest.mark.parametrize(
    "integrator", [mujoco.mjtIntegrator.mjINT_EULER, mujoco.mjtIntegrator.mjINT_RK4]
)
def test_hand_written_compact_instance_equals_three_instances(actdim, integrator):
    require("mujoco")
    mujoco_plugin.load()
    models = [mujoco.MjModel.from_xml_string(x(actdim)) for x in (hand_compact, hand_long)]
    compact, long = models
    assert compact.plugin_statenum[0] == 3 * len(mujoco_plugin.fields())
    assert compact.sensor_dim[0] == 3 * len(mujoco_plugin.sensor_layout())
    assert list(mujoco_plugin.states(compact, mujoco.MjData(compact))) == [
        "all/c",
        "all/a",
        "all/b",
    ]
    runs = []
    for m in models:
        m.opt.integrator = integrator
        d = mujoco.MjData(m)
        d.qpos[:3] = (0.3, -0.2, 0.1)
        out = []
        for i in range(100):
            d.ctrl[:] = 0.5 * np.sin(0.07 * i + np.arange(m.nu))
            mujoco.mj_step(m, d)
            out.append(
                (
                    d.qpos.copy(),
                    d.qvel.copy(),
                    d.act.copy(),
                    d.actuator_force.copy(),
                    per_joint(m, d),
                )
            )
        runs.append(out)
    assert_same_runs(*runs)
    last = runs[0][-1]
    np.testing.assert_array_equal(last[3][[2, 4]], 0.0)  # a_ref2, c_ref2: no torque
    assert np.all(last[3][[0, 1, 3]] != 0.0)  # each joint's first actuator carries it
    assert last[4]["b"][0][1] == 0.0  # joint b with one actuator runs (ref2 = 0)


def compile_error(xml):
    require("mujoco")
    mujoco_plugin.load()
    with pytest.raises(ValueError) as info:
        mujoco.MjModel.from_xml_string(xml)
    return str(info.value)


def inst(joints, name="all"):
    return f'<instance name="{name}">{SEA}<config key="joints" value="{joints}"/></instance>'


ACTS_AB = act("a1", "a", "all") + act("b1", "b", "all")

ERRORS = [
    (
        "unknown joint",
        chain(inst("a b nope"), ACTS_AB),
        [
            "instance 'all'",
            "key 'joints' = 'a b nope': 'nope' is not a joint of the model",
            "valid: names of the model's hinge or slide joints",
        ],
    ),
    (
        "listed twice",
        chain(inst("a b a"), ACTS_AB),
        ["instance 'all'", "key 'joints' = 'a b a' lists joint 'a' twice; valid: each joint once"],
    ),
    (
        "no actuator",
        chain(inst("a b c"), ACTS_AB),
        [
            "instance 'all'",
            "joint 'c' (key 'joints') has no actuator of the instance",
            "valid: 1 (ref1) or 2 (ref1, ref2) per listed joint",
        ],
    ),
    (
        "three actuators",
        chain(inst("a b"), ACTS_AB + act("a2", "a", "all") + act("a3", "a", "all")),
        [
            "(actuator 'a3')",
            "joint 'a' has a third actuator of the instance",
            "valid: 1 (ref1) or 2 (ref1, ref2) per listed joint",
        ],
    ),
    (
        "joint not listed",
        chain(inst("a b"), ACTS_AB + act("c1", "c", "all")),
        [
            "(actuator 'c1')",
            "joint 'c' is not in the instance's key 'joints' = 'a b'",
            "valid: an actuator on a listed joint",
        ],
    ),
    (
        "two instances",
        chain(
            inst("a b") + f'<instance name="other">{SEA}</instance>',
            ACTS_AB + act("b_other", "b", "other"),
        ),
        [
            "joint 'b' is also driven by instance",
            "valid: one instance per joint",
        ],
    ),
    (
        "ball joint",
        chain(inst("a ball"), act("a1", "a", "all") + act("ball1", "ball", "all")),
        ["(actuator 'ball1')", "joint 'ball' is a ball joint; valid: a hinge or slide joint"],
    ),
]


@pytest.mark.parametrize("xml, expected", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_bad_compact_declarations_fail_to_compile(xml, expected):
    message = compile_error(xml)
    for text in expected:
        assert text in message, message


def test_an_empty_joints_key_is_the_one_joint_form():
    require("mujoco")
    mujoco_plugin.load()
    xml = chain(inst("  "), act("a1", "a", "all") + act("a2", "a", "all"))
    m = mujoco.MjModel.from_xml_string(xml)
    assert m.plugin_statenum[0] == len(mujoco_plugin.fields())
    assert list(mujoco_plugin.states(m, mujoco.MjData(m))) == ["all"]


# ---------------------------------------------------------------------------- edit in place


def test_gear_edited_in_place_on_the_snake_stops_that_actuator(
    exported, capfd, tmp_path, monkeypatch
):
    """qbmove_snake has 24 actuators: plan_matches compares its actuator arrays as bytes; a gear
    edited between steps must still be read afresh and stop that joint's instance."""
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings to MUJOCO_LOG.TXT in the cwd
    m = exported["qbmove_snake"][0]
    assert m.nu == 24
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
    for _ in range(10):
        mujoco.mj_step(m, d)
    a = m.actuator("joint5_ref1").id
    m.actuator_gear[a, 0] = 2.0
    try:
        for _ in range(5):
            mujoco.mj_step(m, d)
    finally:
        m.actuator_gear[a, 0] = 1.0
    err = capfd.readouterr().err
    assert "actuator 'joint5_ref1' stopped at step 10 with asr status 2" in err, err
    assert "gear = 2; valid: 1" in err
    states = mujoco_plugin.states(m, d)
    assert states["joint5"]["status"] == 2 and states["joint5"]["failed_step"] == 10
    assert d.actuator_force[a] == 0.0
    others = [k for k in states if k != "joint5"]
    assert all(states[k]["status"] == 0 for k in others)


def test_compact_form_adds_no_per_step_plan_work(exported):
    """asr_mujoco_work (configuration bytes compared, actuators and units scanned) per step of the
    snake: the compact file's one instance costs no more than the long file's twelve (seen: 187
    against 816 per step; the units' joints are checked as the instances' were)."""
    lib = ctypes.CDLL(mujoco_plugin.path())
    lib.asr_mujoco_work.restype = ctypes.c_longlong
    per_step = []
    for m in exported["qbmove_snake"]:
        d = mujoco.MjData(m)
        mujoco.mj_step(m, d)
        before = lib.asr_mujoco_work()
        for _ in range(10):
            mujoco.mj_step(m, d)
        per_step.append((lib.asr_mujoco_work() - before) / 10)
    assert 0 < per_step[1] <= per_step[0], per_step


def test_set_state_mid_run_continues_bit_for_bit(exported):
    m = exported["qbmove_snake"][1]
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
    # the integration state: the snake touches the floor, whose solver starts from the warmstart
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    for _ in range(30):
        mujoco.mj_step(m, d)
    saved = np.empty(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, saved, spec)
    ends = []
    for _ in range(2):
        mujoco.mj_setState(m, d, saved, spec)
        for _ in range(30):
            mujoco.mj_step(m, d)
        end = np.empty_like(saved)
        mujoco.mj_getState(m, d, end, spec)
        ends.append(end)
    np.testing.assert_array_equal(ends[0], ends[1])
    assert not np.array_equal(ends[0], saved)


def test_a_bad_header_stops_only_that_joint(exported, capfd, tmp_path, monkeypatch):
    """A restored plugin state whose third joint's header no step writes (status 0.5): that joint
    stops with status 2, the warning names its actuator, the instance's other joints run on."""
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warnings to MUJOCO_LOG.TXT in the cwd
    m = exported["qbmove_snake"][1]
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.key("asr_initial").id)
    for _ in range(5):
        mujoco.mj_step(m, d)
    nstate = len(mujoco_plugin.fields())
    d.plugin_state[int(m.plugin_stateadr[0]) + 2 * nstate + 1] = 0.5  # joint3's status
    for _ in range(3):
        mujoco.mj_step(m, d)
    err = capfd.readouterr().err
    assert "actuator 'joint3_ref1' stopped at step 5 with asr status 2" in err, err
    states = mujoco_plugin.states(m, d)
    assert states["joint1/joint3"]["status"] == 2
    assert d.actuator_force[m.actuator("joint3_ref1").id] == 0.0
    assert all(s["status"] == 0 for k, s in states.items() if k != "joint1/joint3")


def test_mujoco_batch_of_the_compact_form_equals_long_rollout(exported):
    full = FULL
    long, compact = exported["qbmove_arm_5dof"]
    compact.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = euler_at_key(long)
    x0 = []
    for _ in range(3):
        x0.append(full_state(long, d))
        mujoco.mj_step(long, d, nstep=7)
    x0 = np.array(x0)
    ctrl = d.ctrl + 0.2 * np.random.default_rng(5).standard_normal((3, 60, long.nu))
    want, _ = mujoco.rollout.rollout(long, mujoco.MjData(long), x0, ctrl)
    batch = mujoco.batch.Batch(compact, 3, nthread=2)
    batch.reset()
    for r, x in enumerate(x0):
        dc = mujoco.MjData(compact)
        mujoco.mj_setState(compact, dc, x, full)
        for name in ("time", "qpos", "qvel", "act", "plugin_state"):
            batch.bind(name)[r] = getattr(dc, name)
    out = batch.rollout(60, control=ctrl, record=(full,))
    assert out[full].shape == want.shape
    np.testing.assert_array_equal(out[full], want)
