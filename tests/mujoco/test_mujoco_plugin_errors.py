"""Bad configurations of asr's MuJoCo plugin "asr.actuator" fail MuJoCo's model compilation.

Every case is a ValueError from mujoco.MjModel.from_xml_string whose message names the instance
(or its actuator), the key, the value and the valid range, raised in this process: nothing
aborts it, and a good model compiles and steps right after each bad one.
"""

import mujoco
import numpy as np
import pytest

import asr
from asr.mujoco import plugin as mujoco_plugin

GOOD = '<config key="model" value="sea"/><config key="mode" value="3"/>'
INSTANCE, FIRST = "asr.actuator instance 'j1'", "(actuator 'j1_ref1')"
ONE = '<plugin name="j1_ref1" joint="j1" instance="j1"/>'
TWO = ONE + '<plugin name="j1_ref2" joint="j1" instance="j1"/>'
MODELS = "valid: rigid, sea, sea_damped, awas2, bavs, qbmove_advanced, qbmove, or a registered user"


def mjcf(config=GOOD, actuators=TWO, joint="hinge", instances="", body="", tendon=""):
    """A one-link MJCF (timestep 1 ms) whose joint j1 is driven by the instance j1 with `config`
    (its <config> elements; None: no instance j1); the other arguments are raw MJCF pieces."""
    if config is not None:
        instances = f'<instance name="j1">{config}</instance>{instances}'
    extension = f'<extension><plugin plugin="asr.actuator">{instances}</plugin></extension>'
    return (
        f'<mujoco><option timestep="0.001"/>{extension}'
        f'<worldbody><body name="b1"><joint name="j1" type="{joint}"/>'
        f'<geom type="sphere" size="0.05" pos="0 0.1 0"/><site name="s1"/>{body}</body></worldbody>'
        f"{tendon}<actuator>{actuators}</actuator></mujoco>"
    )


def key(name, value):
    return f'<config key="{name}" value="{value}"/>'


def sea(**keys):
    """GOOD plus config keys."""
    return GOOD + "".join(key(k, v) for k, v in keys.items())


# (id, MJCF, pieces the message must hold besides the instance's and its actuator's names)
CONFIG_CASES = [
    ("missing model", mjcf(config=key("mode", 3)), ["key 'model' is missing", MODELS]),
    (
        "unknown model",
        mjcf(config=key("model", "nope") + key("mode", 3)),
        ["key 'model' = 'nope' is not a model", MODELS],
    ),
    ("missing mode", mjcf(config=key("model", "sea")), ["key 'mode' is missing", "[0, 6]"]),
    (
        "mode out of range",
        mjcf(config=key("model", "sea") + key("mode", 7)),
        ["key 'mode' = '7'", "valid: integer in [0, 6]"],
    ),
    (
        "mode not an integer",
        mjcf(config=key("model", "sea") + key("mode", "3.5")),
        ["key 'mode' = '3.5'", "valid: integer in [0, 6]"],
    ),
    (
        "rigid has no spring for mode 3",
        mjcf(config=key("model", "rigid") + key("mode", 3)),
        ["key 'mode' = '3' for model 'rigid'", "valid: integer in [0, 1]"],
    ),
    (
        "parameter of another model",
        mjcf(config=sea(k1=1.0)),
        ["key 'k1' is not a parameter of model 'sea'", "valid: its own (k, max_def)"],
    ),
    (
        "k out of range",
        mjcf(config=sea(k=-1)),
        ["key 'k' = '-1' is out of range", "(0, inf) N m/rad"],
    ),
    ("k NaN", mjcf(config=sea(k="nan")), ["key 'k' = 'nan' is out of range", "(0, inf) N m/rad"]),
    (
        "k not a number",
        mjcf(config=sea(k="stiff")),
        ["key 'k' = 'stiff' is not a number", "(0, inf)"],
    ),
    (
        "integer parameter given 0.5",
        mjcf(config=sea(drive=0.5)),
        ["key 'drive' = '0.5' is out of range", "valid: integer in [0, 1]"],
    ),
    (
        "max_substep zero",
        mjcf(config=sea(max_substep=0)),
        ["key 'max_substep' = '0' is out of range", "valid: (0, inf) s"],
    ),
    (
        "max_substep negative",
        mjcf(config=sea(max_substep="-1e-3")),
        ["key 'max_substep' = '-1e-3' is out of range", "valid: (0, inf) s"],
    ),
    (
        "max_substep too small for the timestep",
        mjcf(config=sea(max_substep=1e-10)),
        [
            "key 'max_substep' = '1e-10'",
            "timestep 0.001 s",
            "more than 1000000 motor sub-steps",
            "valid: >= 1e-09 s",
        ],
    ),
    (
        "unknown motor_scheme",
        mjcf(config=sea(motor_scheme="rk4")),
        ["key 'motor_scheme' = 'rk4'", "valid: euler, trapezoid"],
    ),
    (
        "params without a value",
        mjcf(config=sea(params="k=50 max_def")),
        ["key 'params': 'max_def' is not name=value", "valid: name=value pairs"],
    ),
    (
        "params without a name",
        mjcf(config=sea(params="=50")),
        ["key 'params': '=50' is not name=value"],
    ),
    (
        "params value out of range",
        mjcf(config=sea(params="k=50 max_def=-0.1")),
        ["key 'max_def' = '-0.1' is out of range", "valid: (0, inf) rad"],
    ),
    (
        "params value not a number",
        mjcf(config=sea(params="k=abc")),
        ["key 'k' = 'abc' is not a number"],
    ),
    (
        "params unknown name",
        mjcf(config=sea(params="zz=1")),
        ["key 'zz' is not a parameter of model 'sea'"],
    ),
    (
        "motor limits not ordered",
        mjcf(config=sea(pos_min=1, pos_max=0.5)),
        ["key 'pos_min' = 1 is not below key 'pos_max' = 0.5", "valid: pos_min < pos_max"],
    ),
    (
        "motor limits equal",
        mjcf(config=sea(params="pos_min=0.5 pos_max=0.5")),
        ["key 'pos_min' = 0.5 is not below key 'pos_max' = 0.5"],
    ),
    ("blank value", mjcf(config=sea(k=" ")), ["key 'k' = ' ' is not a number", "(0, inf)"]),
    (
        "space inside a number",
        mjcf(config=sea(k="6 0")),
        ["key 'k' = '6 0' is not a number", "(0, inf)"],
    ),
    ("space inside the mode", mjcf(config=key("model", "sea") + key("mode", "3 1")), ["'3 1'"]),
]

# settings of the actuators that MuJoCo would apply behind the plugin's back
PLUGIN_ACTUATOR = '<plugin name="j1_ref1" joint="j1" instance="j1" {}/>'
UNHONOURED = [
    ("gear", 'gear="2"', ["gear = 2", "valid: 1"]),
    ("forcerange", 'forcerange="-1 1"', ["forcerange = [-1, 1]", "valid: none"]),
    ("dyntype", 'dyntype="filter" dynprm="0.1"', ["dyntype = filter", "valid: none"]),
    ("actdim", 'actdim="1"', ["actdim = 1", "valid: 0"]),
    ("delay", 'delay="0.01" nsample="5"', ["delay = 0.01 s", "valid: 0"]),
    ("nsample", 'nsample="3"', ["nsample = 3", "valid: 0"]),
]

ACTUATOR_CASES = [
    (
        "ball joint",
        mjcf(joint="ball", actuators=ONE),
        ["joint 'j1' is a ball joint", "valid: a hinge or slide joint"],
    ),
    (
        "free joint",
        mjcf(joint="free", actuators=ONE),
        ["joint 'j1' is a free joint", "valid: a hinge or slide joint"],
    ),
    (
        "gear 2",
        mjcf(actuators='<plugin name="j1_ref1" joint="j1" instance="j1" gear="2"/>'),
        ["gear = 2", "valid: 1"],
    ),
    (
        "tendon transmission",
        mjcf(
            actuators='<plugin name="j1_ref1" tendon="t1" instance="j1"/>',
            tendon='<tendon><fixed name="t1"><joint joint="j1" coef="1"/></fixed></tendon>',
        ),
        ["transmission must be a joint"],
    ),
    (
        "site transmission",
        mjcf(actuators='<plugin name="j1_ref1" site="s1" instance="j1"/>'),
        ["transmission must be a joint"],
    ),
    (
        "three actuators",
        mjcf(actuators=TWO + '<plugin name="j1_ref3" joint="j1" instance="j1"/>'),
        ["drives more than two actuators", "valid: 1 (ref1) or 2 (ref1, ref2)"],
    ),
    (
        "two instances on one joint",
        mjcf(
            instances=f'<instance name="j1b">{GOOD}</instance>',
            actuators=ONE + '<plugin name="j1b_ref1" joint="j1" instance="j1b"/>',
        ),
        [
            "joint 'j1' is also driven by instance 'j1b' (actuator 'j1b_ref1')",
            "valid: one instance per joint",
        ],
    ),
    (
        "actuators on two joints",
        mjcf(
            body='<body name="b2"><joint name="j2"/><geom type="sphere" size="0.05"/></body>',
            actuators=ONE + '<plugin name="j1_ref2" joint="j2" instance="j1"/>',
        ),
        ["(actuator 'j1_ref2')", "joint 'j2' differs from the instance's first actuator's joint"],
    ),
]


def compile_error(xml):
    mujoco_plugin.load()
    with pytest.raises(ValueError) as caught:
        mujoco.MjModel.from_xml_string(xml)
    return str(caught.value)


def assert_good_model_runs():
    """The plugin still compiles and steps a good model (nothing was left half-registered)."""
    m = mujoco.MjModel.from_xml_string(mjcf())
    d = mujoco.MjData(m)
    d.ctrl[0] = 0.3
    for _ in range(20):
        mujoco.mj_step(m, d)
    state = mujoco_plugin.states(m, d)["j1"]
    assert state["status"] == 0 and state["steps"] == 20 and np.isfinite(d.qpos).all()
    assert d.actuator_force[0] != 0.0


@pytest.mark.parametrize(
    "xml,pieces",
    [c[1:] for c in CONFIG_CASES + ACTUATOR_CASES],
    ids=[c[0] for c in CONFIG_CASES + ACTUATOR_CASES],
)
def test_bad_configuration_fails_compilation_naming_it(xml, pieces):
    message = compile_error(xml)
    # the instance's first actuator is named unless the case names another one
    who = [INSTANCE] + ([] if any("(actuator " in p for p in pieces) else [FIRST])
    for piece in who + pieces:
        assert piece in message, f"{piece!r} not in {message!r}"
    assert_good_model_runs()


@pytest.mark.parametrize(
    "attributes,pieces", [c[1:] for c in UNHONOURED], ids=[c[0] for c in UNHONOURED]
)
def test_actuator_setting_the_plugin_cannot_honour_fails_compilation(attributes, pieces):
    message = compile_error(mjcf(actuators=PLUGIN_ACTUATOR.format(attributes)))
    for piece in [INSTANCE, FIRST, *pieces]:
        assert piece in message, f"{piece!r} not in {message!r}"
    assert_good_model_runs()


def test_actuator_in_a_disabled_group_fails_compilation():
    xml = mjcf(actuators=PLUGIN_ACTUATOR.format('group="3"'))
    mujoco.MjModel.from_xml_string(xml)  # an enabled group compiles
    disabled = xml.replace(
        '<option timestep="0.001"/>', '<option timestep="0.001" actuatorgroupdisable="3"/>'
    )
    message = compile_error(disabled)
    for piece in [INSTANCE, FIRST, "group 3 is disabled (option disableactuator = 8)"]:
        assert piece in message, f"{piece!r} not in {message!r}"
    assert_good_model_runs()


def test_numbers_and_names_may_have_surrounding_spaces():
    """Every value is read the same way: surrounding white space is ignored (mode=" 6" and
    k="60 " alike), white space inside is refused; an empty value is MuJoCo's absent key."""
    mujoco_plugin.load()
    spaced = key("model", " sea ") + key("mode", " 3") + key("k", "60 ") + key("max_def", "")
    spaced += key("motor_scheme", " trapezoid ") + key("params", "  max_def=0.4   ")
    plain = key("model", "sea") + key("mode", "3") + key("k", "60") + key("max_def", "0.4")
    plain += key("motor_scheme", "trapezoid")
    runs = []
    for config in (spaced, plain):
        m = mujoco.MjModel.from_xml_string(mjcf(config=config))
        d = mujoco.MjData(m)
        d.ctrl[0] = 0.3
        mujoco.mj_step(m, d, nstep=20)
        runs.append(d.qpos.copy())
    np.testing.assert_array_equal(runs[0], runs[1])


def test_undeclared_key_is_mujocos_own_error():
    message = compile_error(mjcf(config=sea(stiffness=3)))
    assert "unrecognized attribute 'plugin:stiffness'" in message and "asr.actuator" in message
    assert_good_model_runs()


def test_instance_without_actuator_names_the_instance():
    message = compile_error(mjcf(actuators='<motor name="m" joint="j1"/>'))
    assert "asr.actuator instance 'j1'" in message
    assert "drives no actuator; valid: 1 (ref1) or 2 (ref1, ref2)" in message
    assert "actuator #" not in message  # no actuator to name
    assert_good_model_runs()


def test_inline_instance_is_named_by_its_actuator():
    """An actuator's own <plugin> element (an unnamed instance) is named by the actuator."""
    solo = f'<plugin name="solo" plugin="asr.actuator" joint="j1">{sea(k=-2)}</plugin>'
    message = compile_error(mjcf(config=None, actuators=solo))
    assert "asr.actuator on actuator 'solo'" in message
    assert "key 'k' = '-2' is out of range" in message
    assert_good_model_runs()


def test_many_bad_models_in_a_row_leave_the_process_sound():
    """Compilation failures free what init allocated: 300 of them, then a good model runs."""
    for k in range(300):
        compile_error(mjcf(config=sea(k=-1 - k)))
    assert_good_model_runs()


def test_register_model_refuses_builtin_and_unknown_names():
    with pytest.raises(ValueError, match="'sea' is a built-in model"):
        mujoco_plugin.register_model("sea")
    with pytest.raises((KeyError, ValueError), match="no_such_model_xyz"):
        mujoco_plugin.register_model("no_such_model_xyz")
    assert "no_such_model_xyz" not in asr.models()
