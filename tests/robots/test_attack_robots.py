"""Issue 28 (robot files, engines, envs): what a careless or hostile robot folder, a corrupted
MuJoCo state, the Gazebo engine's libraries or a closed environment must not do.

Loads that could hang (FIFOs) run in a subprocess with a generous timeout (60 s; a healthy load
takes well under a second), so a hang fails the test instead of stalling the suite."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import asr
from asr.learning.gym_registry import ENVS  # the ids only: imports nothing of gymnasium
from asr.robots.robot import RobotFileError
from tests.conftest import need_gazebo, require
from tests.support.paths import TESTS  # noqa: E402

HERE = str(TESTS)
ROOT = os.path.dirname(HERE)
PENDULUM = os.path.join(HERE, "data", "robots", "pendulum")
GZ_PENDULUM = os.path.join(HERE, "data", "robots", "gz_pendulum")
TIMEOUT_S = 60  # generous: a load takes well under a second; only a hang reaches it


def run_python(code, timeout=TIMEOUT_S):
    """Run `code` in a fresh interpreter in the repository; (returncode, stdout + stderr). A hang
    past the timeout fails the test."""
    try:
        res = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for more than {timeout} s:\n{code}")
    return res.returncode, res.stdout + res.stderr


# ---------------------------------------------------------------- robot files

MESH = """v 0 0 0
v 0.01 0 0
v 0 0.01 0
v 0 0 0.01
f 1 3 2
f 1 2 4
f 1 4 3
f 2 3 4
"""  # a tetrahedron (Wavefront OBJ)


def load_in_subprocess(folder):
    """load_robot(folder) in a fresh interpreter: 'OK' or '<exception type>: <message>'. A
    hang (a FIFO opened for reading) fails the test after TIMEOUT_S."""
    rc, out = run_python(f"""
        import asr
        try:
            asr.load_robot({str(folder)!r}).mj_model()
            print('OK')
        except Exception as exc:
            print(f'{{type(exc).__name__}}: {{exc}}')
        """)
    assert rc == 0, out
    return out.strip().splitlines()[-1]


def robot_with(tmp_path, xml_edit=None, files=None):
    """A copy of the pendulum fixture; xml_edit: (old, new) in its MJCF; files: {name: text}."""
    folder = tmp_path / "robot"
    shutil.copytree(PENDULUM, folder)
    if xml_edit:
        xml = (folder / "pendulum.xml").read_text()
        assert xml_edit[0] in xml
        (folder / "pendulum.xml").write_text(xml.replace(*xml_edit))
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    return folder


MESH_GEOM = ("</body>", '<geom type="mesh" mesh="m" contype="0" conaffinity="0"/></body>')


def with_mesh(file, meshdir=None):
    compiler = f'<compiler meshdir="{meshdir}"/>' if meshdir else ""
    return (
        MESH_GEOM[0],
        MESH_GEOM[1] + f'</worldbody>{compiler}<asset><mesh name="m" '
        f'file="{file}"/></asset><worldbody>',
    )


def fifo(path):
    os.mkfifo(path)


@pytest.mark.parametrize(
    "case",
    [
        "toml-fifo",
        "toml-dev-null",
        "toml-loop",
        "mjcf-fifo",
        "include-fifo",
        "include-etc-passwd",
        "include-outside-link",
        "mesh-fifo",
        "mesh-outside",
        "meshdir-outside",
        "mesh-loop",
    ],
)
@pytest.mark.slow
def test_robot_files_must_be_regular_files_inside_the_folder(tmp_path, case):
    """Every file a robot names is checked before anything opens it (before: a FIFO hung the
    load forever, /etc/passwd was opened by MuJoCo as an include, a mesh outside the folder was
    read, a link loop or /dev/null as robot.toml said 'not found')."""
    include = ("</worldbody>", '</worldbody><include file="part.xml"/>')
    folder = tmp_path / "robot"
    setups = {
        "toml-fifo": (
            lambda f: (os.remove(f / "robot.toml"), fifo(f / "robot.toml")),
            None,
            {},
            "'robot.toml' is a FIFO",
        ),
        "toml-dev-null": (
            lambda f: (os.remove(f / "robot.toml"), os.symlink("/dev/null", f / "robot.toml")),
            None,
            {},
            "'robot.toml' is outside the robot's folder",
        ),
        "toml-loop": (
            lambda f: (os.remove(f / "robot.toml"), os.symlink(f / "robot.toml", f / "robot.toml")),
            None,
            {},
            "'robot.toml' is a symbolic link loop",
        ),
        "mjcf-fifo": (
            lambda f: (os.remove(f / "pendulum.xml"), fifo(f / "pendulum.xml")),
            None,
            {},
            "'pendulum.xml' is a FIFO",
        ),
        "include-fifo": (lambda f: fifo(f / "part.xml"), include, {}, "'part.xml' is a FIFO"),
        "include-etc-passwd": (
            None,
            ("</worldbody>", '</worldbody><include file="/etc/passwd"/>'),
            {},
            "<include> '/etc/passwd' is outside the robot's folder",
        ),
        "include-outside-link": (
            lambda f: (
                shutil.copy(f / "pendulum.xml", tmp_path / "o.xml"),
                os.symlink(tmp_path / "o.xml", f / "part.xml"),
            ),
            include,
            {},
            "<include> 'part.xml' is outside",
        ),
        "mesh-fifo": (lambda f: fifo(f / "m.obj"), with_mesh("m.obj"), {}, "'m.obj' is a FIFO"),
        "mesh-outside": (
            lambda f: (tmp_path / "m.obj").write_text(MESH),
            with_mesh("../m.obj"),
            {},
            "'../m.obj' is outside the robot's folder",
        ),
        "meshdir-outside": (
            lambda f: (tmp_path / "m.obj").write_text(MESH),
            with_mesh("m.obj", meshdir=".."),
            {},
            "<compiler> folder '..' is outside the robot's folder",
        ),
        "mesh-loop": (
            lambda f: os.symlink(f / "m.obj", f / "m.obj"),
            with_mesh("m.obj"),
            {},
            "'m.obj' is a symbolic link loop",
        ),
    }
    setup, xml_edit, files, expected = setups[case]
    robot_with(tmp_path, xml_edit, files)
    if setup:
        setup(folder)
    text = load_in_subprocess(folder)
    assert text.startswith("RobotFileError: ") and expected in text, text
    assert "regular files inside the robot's folder" in text, text
    assert str(tmp_path) not in text.split(": ", 2)[-1], text  # the problem: no server path


def test_a_mesh_inside_the_folder_still_loads(tmp_path):
    """The checks let ordinary assets through: a mesh in a meshdir sub-folder, an include."""
    folder = robot_with(tmp_path, with_mesh("m.obj", meshdir="meshes"))
    (folder / "meshes").mkdir()
    (folder / "meshes" / "m.obj").write_text(MESH)
    assert asr.load_robot(str(folder)).mj_model().nmesh == 1


@pytest.mark.slow
def test_a_robot_folder_with_a_fifo_does_not_hang_the_dashboard_listing(tmp_path):
    """robot_names() and load_robot(name, allow_path=False), as /api/robots uses them, answer
    with a FIFO as a robot's robot.toml and as its MJCF."""
    for name, target in (("a", "robot.toml"), ("b", "pendulum.xml")):
        shutil.copytree(PENDULUM, tmp_path / name)
        os.remove(tmp_path / name / target)
        os.mkfifo(tmp_path / name / target)
    rc, out = run_python(f"""
        import os
        os.environ['ASR_ROBOTS'] = {str(tmp_path)!r}
        import asr
        from asr.robots.robot import robot_names
        print('NAMES', robot_names())
        try:
            asr.load_robot('b', allow_path=False)
        except Exception as exc:
            print('ERROR', exc)
        """)
    assert rc == 0, out
    assert "NAMES ['b']" in out and "ERROR robot 'b' (robot.toml): [variants." in out, out
    assert "'pendulum.xml' is a FIFO" in out and str(tmp_path) not in out.split("ERROR")[1], out


@pytest.mark.parametrize("timestep", ["-1", "0", "1e9", "nan"])
def test_mjcf_timestep_is_checked_at_load(tmp_path, timestep):
    """An MJCF timestep of -1 loaded and failed later as 'steps: got -1' / 'dt: got -1.0'; now
    load_robot names the file, the option, the value and the valid range."""
    folder = robot_with(tmp_path, ('timestep="0.001"', f'timestep="{timestep}"'))
    with pytest.raises(
        RobotFileError,
        match=r"'pendulum.xml': option timestep = .* valid range "
        r"\(0, 1\]",
    ) as err:
        asr.load_robot(str(folder))
    assert err.value.entry.endswith("mjcf")


def test_sdf_uris_must_name_robot_files(tmp_path):
    """An SDF <uri> that SDFormat would look up on SDF_PATH or download (model://, https://)
    or a file outside the folder is refused before SDFormat reads the file."""
    folder = tmp_path / "robot"
    shutil.copytree(GZ_PENDULUM, folder)
    sdf = (folder / "pendulum.sdf").read_text()
    for uri, words in (
        ("https://example.invalid/m.dae", "only files inside the robot's folder"),
        ("model://m/m.dae", "only files inside the robot's folder"),
        ("/etc/passwd", "outside the robot's folder"),
    ):
        (folder / "pendulum.sdf").write_text(
            sdf.replace("</model>", f"<include><uri>{uri}</uri></include></model>", 1)
        )
        with pytest.raises(RobotFileError, match=words):
            asr.load_robot(str(folder))


# ---------------------------------------------------------------- the Gazebo engine's ports

LISTENING = """
import os

def listening_sockets():
    # inodes of this process's sockets that listen on TCP (IPv4 or IPv6): /proc/net/tcp{,6}
    # state 0A is LISTEN
    mine = set()
    for fd in os.listdir('/proc/self/fd'):
        try:
            target = os.readlink(f'/proc/self/fd/{fd}')
        except OSError:
            continue
        if target.startswith('socket:['):
            mine.add(target[8:-1])
    found = []
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == '0A' and cols[9] in mine:
                    found.append(cols[1])
    return found
"""


@pytest.mark.slow
@pytest.mark.gazebo
def test_gazebo_engine_opens_no_port():
    """Debian's ignition-common starts a Remotery profiler server on 0.0.0.0:17815 at the DART
    plugin's first profiled call; the shim disables the profiler, so stepping Gazebo worlds
    leaves the process without a listening socket."""
    need_gazebo()
    code = (
        LISTENING
        + f"""
import numpy as np, asr
sim = asr.Sim(asr.load_robot({GZ_PENDULUM!r}), 2, engine='gazebo')
sim.rollout(20, np.zeros((2, 1, 2)))
print('LISTENING', listening_sockets())
"""
    )
    rc, out = run_python(code)
    assert rc == 0, out
    assert "LISTENING []" in out, out
    assert "Can't bind" not in out and "Remotery" not in out, out


# ---------------------------------------------------------------- closed Gymnasium envs


@pytest.mark.parametrize("kind", ["single", "vector"])
@pytest.mark.parametrize("env_id", list(ENVS))
def test_step_and_reset_after_close_say_closed(env_id, kind):
    """step / reset after close(): ClosedEnvironmentError "the environment is closed" (before:
    AttributeError 'NoneType' object has no attribute ... from the vector env; the single env
    kept stepping, close() released nothing)."""
    gymnasium = require("gymnasium")
    from gymnasium.error import ClosedEnvironmentError

    if kind == "single":
        env = gymnasium.make(env_id)
    else:
        env = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point")
    env.reset(seed=0)
    action = env.action_space.sample()
    env.close()
    with pytest.raises(ClosedEnvironmentError, match="the environment is closed"):
        env.step(action)
    with pytest.raises(ClosedEnvironmentError, match="the environment is closed"):
        env.reset(seed=1)
    env.close()  # closing twice stays harmless


# ---------------------------------------------------------------- MuJoCo's warnings


def pendulum_with_motor(tmp_path):
    """The pendulum fixture with a MuJoCo motor on its joint (MjData.ctrl: one entry)."""
    folder = tmp_path / "pendulum_motor"
    shutil.copytree(PENDULUM, folder)
    xml = (folder / "pendulum.xml").read_text()
    (folder / "pendulum.xml").write_text(
        xml.replace("</mujoco>", '<actuator><motor joint="joint"/></actuator>\n</mujoco>')
    )
    return str(folder)


def corrupt_qpos(sim, i):
    sim.datas[i].qpos[:] = np.nan


def corrupt_qvel(sim, i):
    sim.datas[i].qvel[:] = np.inf


def corrupt_force(sim, i):  # a force written into the MjData: NaN accelerations
    sim.datas[i].xfrc_applied[1, 0] = np.nan


def corrupt_ctrl(sim, i):
    sim.datas[i].ctrl[:] = np.nan


@pytest.mark.parametrize(
    "corrupt,warning",
    [
        (corrupt_qpos, "mjWARN_BADQPOS"),
        (corrupt_qvel, "mjWARN_BADQVEL"),
        (corrupt_force, "mjWARN_BADQACC"),
        (corrupt_ctrl, "mjWARN_BADCTRL"),
    ],
)
def test_mujoco_warning_stops_exactly_that_instance(tmp_path, corrupt, warning):
    """MuJoCo resets (or zeroes the controls of) an instance with a bad state and only prints a
    WARNING; asr freezes exactly that instance with ASR_ERR_NONFINITE (before: status 0, no
    error, for every warning but BADQACC), the others run on as in a clean run."""
    robot = asr.load_robot(pendulum_with_motor(tmp_path))
    refs = np.full((3, 1, 2), 0.3)
    clean = asr.Sim(robot, 3).rollout(40, refs)["q"]
    sim = asr.Sim(robot, 3)
    sim.rollout(20, refs)
    corrupt(sim, 1)
    out = sim.rollout(20, refs, on_error="flag")
    assert list(sim.batch.status) == [0, asr_lib().ASR_ERR_NONFINITE, 0]
    assert [(e["instance"], e["step"]) for e in sim.batch.errors()] == [(1, 20)]
    np.testing.assert_array_equal(out["q"][[0, 2]], clean[[0, 2], 20:])

    sim.reset()
    sim.rollout(5, refs)
    corrupt(sim, 2)
    with pytest.raises(asr.SimulationError, match=f"instance 2, .*step 5: .*{warning}") as err:
        sim.rollout(5, refs)
    assert err.value.instance == 2
    assert sim.datas[2].warning[int(getattr(mujoco().mjtWarning, warning))].number >= 1


def test_repeated_mujoco_reset_is_reported_each_time():
    """MuJoCo's reset zeroes its warning counters before counting 1: a second reset of the same
    instance left the count at 1 and went unreported (before: 'count > count before')."""
    sim = asr.Sim(asr.load_robot(PENDULUM), 2)
    refs = np.zeros((2, 1, 2))
    for _ in range(3):
        corrupt_qpos(sim, 0)
        sim.rollout(3, refs, on_error="flag")
        assert list(sim.batch.status) == [asr_lib().ASR_ERR_NONFINITE, 0]
        sim.batch.reset(sim.q, instances=[0])  # the actuators only: MjData keeps its counters


def test_nonfinite_inputs_are_refused():
    """NaN in what asr passes to MuJoCo (references, tau_ext, tau_ff) is refused before the run,
    naming the input."""
    sim = asr.Sim(asr.load_robot(PENDULUM), 2)
    refs = np.zeros((2, 1, 2))
    bad = np.zeros((2, 1))
    bad[1, 0] = np.nan
    for kwargs, name in ((dict(tau_ext=bad), "tau_ext"), (dict(tau_ff=bad), "tau_ff")):
        with pytest.raises(ValueError, match=name):
            sim.rollout(3, refs, **kwargs)
    refs_bad = refs.copy()
    refs_bad[1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="refs"):
        sim.rollout(3, refs_bad)


def asr_lib():
    from asr.core.ffi import lib

    return lib


def mujoco():
    import mujoco as mj

    return mj
