"""ONNX files carry the task's env_kwargs (asr.rl.export_onnx's metadata "env_kwargs"): a
Periodic2DOF policy trained at 1 Hz (not the default 2 Hz) exports, from its training folder,
from `asr export-onnx` (asr.rl.evaluation.export_checked) and through the dashboard's ROS export
of the cached ONNX file (asr_dashboard.exports' "ros-zip" child), a node whose data file tracks
the 1 Hz reference. A tiny training (16 env-steps): the policy need not be good."""

import io
import json
import zipfile

import pytest

from asr.envs.periodic import Periodic
from asr.ros.export import policy_data
from tests.conftest import require
from tests.support.rl import one_torch_thread  # noqa: F401  (autouse: one torch thread)

PERIODIC = "asr/Periodic2DOF-v0"
ROBOT = "qbmove_arm_2dof"
AT_1HZ = {"frequency": 1.0}
TINY = dict(
    n_steps=8, batch_size=16, n_epochs=1, eval_every=0, final_eval_episodes=0, tensorboard=False
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A training folder of Periodic2DOF at 1 Hz (sb3, 16 env-steps)."""
    for module in ("torch", "stable_baselines3", "onnx", "onnxruntime"):
        require(module)
    from asr.rl import train

    out = tmp_path_factory.mktemp("periodic") / "run"
    train(
        PERIODIC,
        algo="sb3",
        total_steps=16,
        num_envs=2,
        seed=0,
        out_dir=out,
        env_kwargs=AT_1HZ,
        **TINY,
    )
    return str(out)


def node_frequency(d):
    """(env_kwargs, reference frequency (Hz), episode env-steps) of a node's data."""
    return d.get("env_kwargs"), d["reference"]["frequency"], d["max_steps"]


def test_the_file_records_the_folders_env_kwargs_and_the_node_tracks_them(run, tmp_path):
    from asr.rl.onnx_policy import OnnxPolicy, export_onnx

    steps_1hz = Periodic(1, **AT_1HZ).max_episode_steps
    assert steps_1hz != Periodic(1).max_episode_steps  # 1 Hz is not the default
    path = export_onnx(run, tmp_path / "p.onnx")
    policy = OnnxPolicy(path)
    assert policy.env_kwargs == AT_1HZ
    assert json.loads(policy.session.get_modelmeta().custom_metadata_map["env_kwargs"]) == AT_1HZ
    assert node_frequency(policy_data(path, ROBOT)) == (AT_1HZ, 1.0, steps_1hz)
    # the caller's keys replace the folder's; a value the task refuses fails at export
    other = OnnxPolicy(export_onnx(run, tmp_path / "q.onnx", env_kwargs={"frequency": 2.5}))
    assert other.env_kwargs == {"frequency": 2.5}
    with pytest.raises(ValueError, match=r"env_kwargs: \{'frequency': 3.0\} for Periodic: .*3.0"):
        export_onnx(run, tmp_path / "r.onnx", env_kwargs={"frequency": 3.0})
    assert not (tmp_path / "r.onnx").exists()


def test_a_file_without_env_kwargs_reads_as_the_defaults(run, tmp_path):
    import onnx

    from asr.rl.onnx_policy import OnnxPolicy, export_onnx

    proto = onnx.load(export_onnx(run, tmp_path / "p.onnx"))
    kept = [e for e in proto.metadata_props if e.key != "env_kwargs"]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    onnx.save(proto, tmp_path / "old.onnx")
    old = OnnxPolicy(tmp_path / "old.onnx")
    assert old.env_kwargs == {} and "env_kwargs" not in old.metadata
    assert node_frequency(policy_data(str(tmp_path / "old.onnx"), ROBOT))[1] == 2.0
    d = policy_data(str(tmp_path / "old.onnx"), ROBOT, env_kwargs=AT_1HZ)
    assert node_frequency(d)[:2] == (AT_1HZ, 1.0)


def test_the_cli_export_and_the_dashboards_ros_export_carry_them(run, tmp_path):
    from asr.rl.evaluation import export_checked
    from asr.rl.onnx_policy import OnnxPolicy

    exports = require("asr_dashboard.exports")
    path = str(tmp_path / "cli.onnx")
    export_checked(run, path, envs=2)  # `asr export-onnx`
    assert OnnxPolicy(path).env_kwargs == AT_1HZ
    out = tmp_path / "pkg.zip"
    # the child of /api/rl/policy.ros.zip, given the ONNX file the server keeps
    assert exports.main(["ros-zip", str(out), path, ROBOT, "", "2"]) == 0
    z = zipfile.ZipFile(io.BytesIO(out.read_bytes()))
    (name,) = [n for n in z.namelist() if n.endswith("policy_node.json")]
    d = json.loads(z.read(name))
    assert node_frequency(d)[:2] == (AT_1HZ, 1.0)
