"""Broken robot descriptions (asr/robots/robot.py; robots/README.md, "What asr.load_robot checks"):
every malformed robot.toml or MJCF file raises a ValueError (RobotFileError) that names the file
and the entry, and every robot of robots/ loads in all its variants and steps."""

import os
import pickle
import shutil

import numpy as np
import pytest

import asr
from asr.robots.robot import RobotFileError, load_robot, robot_names, robots_dir, tomllib

ROBOTS = robots_dir()
PEND = "pendulum_1dof"  # first variant [variants.sea]: one joint "joint", model sea, mode 3
ARM = "qbmove_arm_2dof"  # first variant [variants.vertical]: joint1, joint2, qbmove_advanced

SEA_JOINT = (
    '[[variants.sea.joints]]\nname = "joint"\nmodel = "sea"\nmode = 3\n'
    "params = { k = 200.0, max_def = 0.8 }\n"
)
SEA_INITIAL = "[variants.sea.initial]\nq = [-0.000392]\nrefs = [[0.0, 0.0]]\n"
WHOLE = None  # an edit whose `old` is WHOLE replaces the whole robot.toml

# (robot, [(old, new), ...] applied once each, {extra file: text}, entry named, words)
CASES = {
    # ---- top level
    "name-int": (PEND, [('name = "pendulum_1dof"', "name = 5")], {}, "name", "got 5"),
    "name-empty": (PEND, [('name = "pendulum_1dof"', 'name = ""')], {}, "name", "expected a name"),
    "description-int": (
        PEND,
        [("description = ", "description = 3 #")],
        {},
        "description",
        "expected a string",
    ),
    "default-variant-int": (
        PEND,
        [('default_variant = "qbmove_advanced"', "default_variant = 7")],
        {},
        "default_variant",
        "got 7",
    ),
    "default-variant-unknown": (
        PEND,
        [('default_variant = "qbmove_advanced"', 'default_variant = "upright"')],
        {},
        "default_variant",
        "no variant 'upright'; variants: sea, awas2",
    ),
    "top-extra-key": (
        PEND,
        [("default_variant = ", 'colour = "red"\ndefault_variant = ')],
        {},
        "'colour'",
        "unknown keys: 'colour'; allowed: name, description",
    ),
    "variants-missing": (
        PEND,
        [(WHOLE, 'name = "pendulum_1dof"\n')],
        {},
        "'variants'",
        "missing key",
    ),
    "variants-int": (PEND, [(WHOLE, "variants = 5\n")], {}, "variants", "expected a table"),
    "variants-empty": (
        PEND,
        [(WHOLE, "variants = {}\n")],
        {},
        "variants",
        "needs at least one [variants.<name>] table",
    ),
    "variant-not-table": (
        PEND,
        [(WHOLE, "variants = { v = 3 }\n")],
        {},
        "[variants] v",
        "expected a table",
    ),
    "malformed-toml": (
        PEND,
        [("[variants.sea]\n", "[variants.sea\n")],
        {},
        "malformed TOML",
        "line",
    ),
    "nested-too-deeply": (
        PEND,
        [(WHOLE, "x = " + "[" * 5000 + "]" * 5000 + "\n")],
        {},
        "malformed TOML",
        "nested too deeply",
    ),
    # ---- [variants.<v>]
    "mjcf-int": (
        PEND,
        [('mjcf = "pendulum.xml"', "mjcf = 5")],
        {},
        "[variants.sea] mjcf",
        "expected a file name (string), got 5",
    ),
    "mjcf-empty": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = ""')],
        {},
        "[variants.sea] mjcf",
        "expected a file name",
    ),
    "mjcf-array": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = ["pendulum.xml"]')],
        {},
        "[variants.sea] mjcf",
        "expected a file name",
    ),
    "mjcf-missing-key": (
        PEND,
        [('mjcf = "pendulum.xml"\n', "")],
        {},
        "[variants.sea]",
        "missing key 'mjcf'",
    ),
    "mjcf-no-such-file": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = "missing.xml"')],
        {},
        "[variants.sea] mjcf",
        "no file 'missing.xml'",
    ),
    "mjcf-folder": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = "."')],
        {},
        "[variants.sea] mjcf",
        "'.' is a folder",
    ),
    "mjcf-outside": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = "../pendulum.xml"')],
        {},
        "[variants.sea] mjcf",
        "outside the robot's folder",
    ),
    "mjcf-is-robot-toml": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = "robot.toml"')],
        {},
        "[variants.sea] mjcf",
        "'robot.toml' is not well-formed XML",
    ),
    "mjcf-is-readme": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = "README.md"')],
        {},
        "[variants.sea] mjcf",
        "'README.md' is not well-formed XML",
    ),
    "mjcf-not-xml": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = "garbage.xml"')],
        {"garbage.xml": "this is <not xml"},
        "[variants.sea] mjcf",
        "'garbage.xml' is not well-formed XML",
    ),
    "mjcf-bad-mjcf": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = "bad.xml"')],
        {"bad.xml": '<mujoco><worldbody><geom size="a"/></worldbody></mujoco>'},
        "[variants.sea] mjcf",
        "MuJoCo cannot load 'bad.xml'",
    ),
    "variant-extra-key": (
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = "pendulum.xml"\ntimestep = 1')],
        {},
        "[variants.sea]",
        "unknown keys: 'timestep'; allowed: mjcf, joints",
    ),
    "joints-missing": (PEND, [(SEA_JOINT, "")], {}, "[variants.sea]", "missing key 'joints'"),
    "joints-int": (
        PEND,
        [(SEA_JOINT, "joints = 5\n")],
        {},
        "[variants.sea] joints",
        "expected one or more tables",
    ),
    "joints-empty": (
        PEND,
        [(SEA_JOINT, "joints = []\n")],
        {},
        "[variants.sea] joints",
        "expected one or more tables",
    ),
    "joints-numbers": (
        PEND,
        [(SEA_JOINT, "joints = [1, 2]\n")],
        {},
        "[variants.sea] joints",
        "expected one or more tables",
    ),
    "later-variant-broken": (
        ARM,
        [('mjcf = "arm_horizontal.xml"', "mjcf = 1")],
        {},
        "[variants.horizontal] mjcf",
        "got 1",
    ),
    # ---- [[variants.<v>.joints]]
    "joint-name-missing": (
        PEND,
        [('name = "joint"\n', "")],
        {},
        "[[variants.sea.joints]] #1",
        "missing key 'name'",
    ),
    "joint-name-int": (
        PEND,
        [('name = "joint"', "name = 3")],
        {},
        "[[variants.sea.joints]] #1 name",
        "expected a name (string), got 3",
    ),
    "joint-name-unknown": (
        PEND,
        [('name = "joint"', 'name = "elbow"')],
        {},
        "[[variants.sea.joints]] #1 name",
        "'elbow' is not a hinge or slide joint of pendulum.xml",
    ),
    "joint-twice": (
        ARM,
        [('name = "joint2"', 'name = "joint1"')],
        {},
        "[[variants.vertical.joints]] #2 name",
        "'joint1' is listed twice",
    ),
    "joint-extra-key": (
        PEND,
        [('model = "sea"', 'model = "sea"\ncolour = 1')],
        {},
        "[[variants.sea.joints]] #1",
        "unknown keys: 'colour'; allowed: name",
    ),
    "model-missing": (
        PEND,
        [('model = "sea"\n', "")],
        {},
        "[[variants.sea.joints]] #1",
        "missing key 'model'",
    ),
    "model-unknown": (
        PEND,
        [('model = "sea"', 'model = "spring"')],
        {},
        "[[variants.sea.joints]] #1 model",
        "unknown model 'spring'; valid: rigid",
    ),
    "model-int": (
        PEND,
        [('model = "sea"', "model = 1")],
        {},
        "[[variants.sea.joints]] #1 model",
        "unknown model 1",
    ),
    "mode-missing": (
        PEND,
        [("mode = 3\n", "")],
        {},
        "[[variants.sea.joints]] #1",
        "missing key 'mode'",
    ),
    "mode-out-of-range": (
        PEND,
        [("mode = 3", "mode = 9")],
        {},
        "[[variants.sea.joints]] #1 mode",
        "got 9, valid modes 0-6",
    ),
    "mode-string": (
        PEND,
        [("mode = 3", 'mode = "3"')],
        {},
        "[[variants.sea.joints]] #1 mode",
        "expected an operation mode",
    ),
    "mode-bool": (
        PEND,
        [("mode = 3", "mode = true")],
        {},
        "[[variants.sea.joints]] #1 mode",
        "got True",
    ),
    "mode-float": (
        PEND,
        [("mode = 3", "mode = 2.5")],
        {},
        "[[variants.sea.joints]] #1 mode",
        "got 2.5",
    ),
    "mode-without-spring": (
        PEND,
        [('model = "sea"\nmode = 3', 'model = "rigid"\nmode = 3')],
        {},
        "[[variants.sea.joints]] #1 mode",
        "model 'rigid' has no spring",
    ),
    "params-int": (
        PEND,
        [("params = { k = 200.0, max_def = 0.8 }", "params = 7")],
        {},
        "[[variants.sea.joints]] #1 params",
        "expected a table, got 7",
    ),
    "params-unknown-name": (
        PEND,
        [("k = 200.0", "kk = 200.0")],
        {},
        "[[variants.sea.joints]] #1 params",
        "unknown parameter 'kk'",
    ),
    "params-out-of-range": (
        PEND,
        [("k = 200.0", "k = -1.0")],
        {},
        "[[variants.sea.joints]] #1 params",
        "k: got -1, valid range (0, inf)",
    ),
    "params-nan": (
        PEND,
        [("k = 200.0", "k = nan")],
        {},
        "[[variants.sea.joints]] #1 params",
        "k: got nan",
    ),
    "params-string": (
        PEND,
        [("k = 200.0", 'k = "200"')],
        {},
        "[[variants.sea.joints]] #1 params",
        "k: expected a number, got '200'",
    ),
    "params-bool": (
        PEND,
        [("k = 200.0", "k = true")],
        {},
        "[[variants.sea.joints]] #1 params",
        "k: expected a number, got True",
    ),
    "params-array": (
        PEND,
        [("k = 200.0", "k = [1.0, 2.0]")],
        {},
        "[[variants.sea.joints]] #1 params",
        "k: expected a number",
    ),
    "params-second-joint": (
        ARM,
        [("a1 = 3.383", "a1 = -3.383")],
        {},
        "[[variants.vertical.joints]] #2 params",
        "a1: got -3.383",
    ),
    # ---- [variants.<v>.initial]
    "initial-int": (
        PEND,
        [(SEA_INITIAL, ""), ('mjcf = "pendulum.xml"', 'mjcf = "pendulum.xml"\ninitial = 5')],
        {},
        "[variants.sea] initial",
        "expected a table, got 5",
    ),
    "initial-extra-key": (
        PEND,
        [("q = [-0.000392]", "qd = [0.0]")],
        {},
        "[variants.sea.initial]",
        "unknown keys: 'qd'; allowed: q, refs",
    ),
    "q-string": (
        PEND,
        [("q = [-0.000392]", 'q = "a"')],
        {},
        "[variants.sea.initial] q",
        "expected an array of numbers, got 'a'",
    ),
    "q-entry-string": (
        PEND,
        [("q = [-0.000392]", 'q = ["a"]')],
        {},
        "[variants.sea.initial] q",
        "entry 0: expected a number, got 'a'",
    ),
    "q-nan": (
        PEND,
        [("q = [-0.000392]", "q = [nan]")],
        {},
        "[variants.sea.initial] q",
        "entry 0: got nan",
    ),
    "q-inf": (
        PEND,
        [("q = [-0.000392]", "q = [-inf]")],
        {},
        "[variants.sea.initial] q",
        "expected a finite number, got -inf",
    ),
    "q-too-long": (
        PEND,
        [("q = [-0.000392]", "q = [0.0, 0.0]")],
        {},
        "[variants.sea.initial] q",
        "expected one entry per joint (1), got 2",
    ),
    "q-too-short": (
        ARM,
        [("q = [-0.6, -0.27]", "q = [-0.6]")],
        {},
        "[variants.vertical.initial] q",
        "expected one entry per joint (2), got 1",
    ),
    "first-view-too-short": (
        ARM,
        [("first_view = [-1.5707963267948966, 0.0]", "first_view = [-1.57]")],
        {},
        "[variants.vertical.initial] first_view",
        "expected one entry per joint (2), got 1",
    ),
    "first-view-nan": (
        ARM,
        [("first_view = [-1.5707963267948966, 0.0]", "first_view = [nan, 0.0]")],
        {},
        "[variants.vertical.initial] first_view",
        "entry 0: got nan",
    ),
    "refs-short-row": (
        PEND,
        [("refs = [[0.0, 0.0]]", "refs = [[0.0]]")],
        {},
        "[variants.sea.initial] refs",
        "row 0: expected an array of 2 numbers",
    ),
    "refs-flat": (
        PEND,
        [("refs = [[0.0, 0.0]]", "refs = [0.0, 0.0]")],
        {},
        "[variants.sea.initial] refs",
        "row 0: expected an array of 2 numbers, got 0.0",
    ),
    "refs-nan": (
        PEND,
        [("refs = [[0.0, 0.0]]", "refs = [[0.0, nan]]")],
        {},
        "[variants.sea.initial] refs",
        "row 0: entry 1: got nan",
    ),
    "refs-string": (
        PEND,
        [("refs = [[0.0, 0.0]]", 'refs = "none"')],
        {},
        "[variants.sea.initial] refs",
        "expected an array of [a, b] pairs",
    ),
    "refs-too-many": (
        ARM,
        [("refs = [[0.0, 0.2], [0.0, 0.2]]", "refs = [[0.0, 0.2], [0.0, 0.2], [0.0, 0.2]]")],
        {},
        "[variants.vertical.initial] refs",
        "expected one entry per joint (2), got 3",
    ),
}


def broken_robot(tmp_path, robot, edits, files):
    """A copy of robots/<robot> in tmp_path with robot.toml edited and extra files written."""
    folder = tmp_path / robot
    shutil.copytree(os.path.join(ROBOTS, robot), folder)
    shutil.copy(
        folder / "pendulum.xml" if robot == PEND else folder / "arm_vertical.xml",
        tmp_path / "pendulum.xml",
    )  # a valid MJCF file just outside the folder
    toml = folder / "robot.toml"
    text = toml.read_text()
    for old, new in edits:
        if old is WHOLE:
            text = new
        else:
            assert old in text, old
            text = text.replace(old, new, 1)
    toml.write_text(text)
    for name, content in files.items():
        (folder / name).write_text(content)
    return folder


@pytest.mark.parametrize("robot, edits, files, entry, words", CASES.values(), ids=CASES.keys())
def test_broken_robot_file_names_file_and_entry(tmp_path, robot, edits, files, entry, words):
    folder = broken_robot(tmp_path, robot, edits, files)
    with pytest.raises(ValueError) as err:
        load_robot(str(folder))
    text = str(err.value)
    assert isinstance(err.value, RobotFileError), text
    assert text.startswith(os.path.join(str(folder), "robot.toml") + ": "), text
    assert entry in text and words in text, text
    assert err.value.file.endswith("robot.toml")
    assert entry in f"{err.value.entry} {err.value.problem}"


def test_by_name_errors_name_the_robot_not_the_folder(tmp_path, monkeypatch):
    """Robots looked up by name: 'robot <name> (<file>)', never the robots folder's path (also
    inside MuJoCo's messages); the error survives pickling (worker processes)."""
    broken_robot(
        tmp_path,
        PEND,
        [('mjcf = "pendulum.xml"', 'mjcf = "bad.xml"')],
        {"bad.xml": '<mujoco><include file="nothere.xml"/></mujoco>'},
    )
    monkeypatch.setenv("ASR_ROBOTS", str(tmp_path))
    with pytest.raises(RobotFileError) as err:
        load_robot(PEND, allow_path=False)
    text = str(err.value)
    assert text.startswith(
        f"robot '{PEND}' (robot.toml): [variants.sea] mjcf: MuJoCo cannot load 'bad.xml'"
    ), text
    assert "nothere.xml" in text and str(tmp_path) not in text
    again = pickle.loads(pickle.dumps(err.value))
    assert type(again) is RobotFileError and str(again) == text and again.entry == err.value.entry


def test_the_unknown_variant_is_the_callers_error():
    with pytest.raises(ValueError, match=f"robot '{ARM}' \\(robot.toml\\): unknown variant 'x'"):
        load_robot(ARM, "x")
    with pytest.raises(TypeError, match="variant: expected a variant name"):
        load_robot(ARM, 3)


def variants_of(name):
    with open(os.path.join(ROBOTS, name, "robot.toml"), "rb") as f:
        return list(tomllib.load(f)["variants"])


@pytest.mark.parametrize("name", robot_names())
def test_every_robot_loads_and_steps(name):
    for variant in variants_of(name):
        robot = load_robot(name, variant, allow_path=False)
        assert robot.variant == variant and robot.name == name and robot.joints
        refs = robot.initial_refs or [[0.0, 0.0]] * len(robot.joints)
        out = asr.Sim(robot, 2).rollout(5, refs)
        assert np.isfinite(out["q"]).all()
