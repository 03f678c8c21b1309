"""asr.rl.onnx_policy: PPO policies (with VecNormalize) exported as ONNX and run with
onnxruntime, compared with the torch policy they come from (SB3's model.predict(deterministic=True)
on VecNormalize-normalised observations, an independent reference: float64 normalisation, torch
network).

Tolerances: the ONNX graph computes in float32 throughout (the normalisation too), SB3 normalises
in float64 and runs the network in float32, so actions differ by float32 rounding: asserted within
1e-5 (absolute, actions of order 1); the closed-loop link trajectories of the two policies on the
asr vector env are asserted within 1e-4 rad (measured figures printed with -s)."""

import os

import numpy as np
import pytest

from tests.conftest import require
from tests.support.rl import make_model  # noqa: E402

TASK_ID = "asr/EquilibriumTracking-v0"
ACTION_ATOL = 1e-5
TRAJ_ATOL = 1e-4


def _deps():
    for m in ("torch", "stable_baselines3", "onnx", "onnxscript", "onnxruntime"):
        require(m)
    import torch

    torch.set_num_threads(1)


def save_folder(model, venv, folder, task_id):
    """The training folder of asr.rl.train (its files as asr's sb3 backend writes them, data
    only) of a model trained by SB3 itself."""
    from asr.common.files import write_version
    from asr.rl._safe_load import json_writer
    from asr.rl._sb3 import normalisation_state, save_model

    os.makedirs(folder, exist_ok=True)
    hp = {"n_steps": 64, "batch_size": 64, "n_epochs": 1, "net_arch": [32, 32]}
    config = {"task": task_id, "algo": "ppo", "backend": "sb3", "seed": 0, "hyperparameters": hp}
    stats = normalisation_state(venv, model.num_timesteps)
    write_version(
        folder,
        [
            ("config.json", json_writer(config)),
            ("model.zip", lambda f: save_model(model, f)),
            ("vecnormalize.json", json_writer(stats)),
            ("curve.json", json_writer([])),
        ],
    )
    return folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    _deps()
    import torch

    from asr.rl.onnx_policy import export_onnx

    model, venv = make_model(TASK_ID, 128)
    with torch.no_grad():  # a bolder policy: it swings the pendulum and leaves the action Box
        model.policy.action_net.weight.mul_(300.0)
    root = tmp_path_factory.mktemp("onnx")
    folder = save_folder(model, venv, str(root / "run"), TASK_ID)
    path = export_onnx(folder, root / "policy.onnx")
    return model, venv, folder, path


def torch_actions(model, venv, obs):
    return model.predict(venv.normalize_obs(obs), deterministic=True)[0]


def rollout(env, act, steps, seed):
    obs, _ = env.reset(seed=seed)
    qs, acts = [], []
    for _ in range(steps):
        a = act(obs)
        obs, *_ = env.step(a)
        acts.append(np.asarray(a, np.float64))
        qs.append(env.q.copy())
    return np.array(qs), np.array(acts)


@pytest.mark.slow
def test_rollout_matches_torch(trained):
    from asr.envs.tasks import EquilibriumTracking
    from asr.rl.onnx_policy import OnnxPolicy

    model, venv, _, path = trained
    policy = OnnxPolicy(path, env=EquilibriumTracking)
    steps = EquilibriumTracking.max_episode_steps  # one whole episode, 2 s
    envs = [EquilibriumTracking(8), EquilibriumTracking(8)]
    try:
        q_onnx, a_onnx = rollout(envs[0], policy, steps, seed=11)
        q_torch, a_torch = rollout(envs[1], lambda o: torch_actions(model, venv, o), steps, 11)
    finally:
        for e in envs:
            e.close()
    # actions along the ONNX trajectory, one call each: no drift between the two
    da = np.max(np.abs(a_onnx - a_torch))
    dq = np.max(np.abs(q_onnx - q_torch))
    print(f"\nONNX vs torch over {steps} steps x 8 envs: actions {da:.2e}, q {dq:.2e} rad")
    assert da <= ACTION_ATOL, da
    assert dq <= TRAJ_ATOL, dq
    assert np.ptp(q_onnx) > 0.05  # the pendulum moved: the comparison means something
    low, high = (
        EquilibriumTracking.single_action_space.low,
        EquilibriumTracking.single_action_space.high,
    )
    assert np.all(a_onnx >= low) and np.all(a_onnx <= high)


@pytest.mark.slow
def test_batch_with_clipping(trained):
    """Observations far outside the normaliser's clip and actions outside the Box: both clipped
    in the graph as VecNormalize / predict clip them."""
    from asr.rl.onnx_policy import OnnxPolicy

    model, venv, _, path = trained
    policy = OnnxPolicy(path)
    obs = np.random.default_rng(2).normal(0, 5, (500, 4))
    a = policy(obs)
    assert a.shape == (500, 4 // 2) and a.dtype == np.float32
    ref = torch_actions(model, venv, obs)
    d = np.max(np.abs(a - ref))
    print(f"\nbatch of 500 wide observations: actions {d:.2e}")
    assert d <= ACTION_ATOL
    assert np.allclose(policy(obs[3]), a[3], rtol=0, atol=0)  # one observation: (act_dim,)
    norm = venv.normalize_obs(obs)
    assert np.any(np.abs(norm) == venv.clip_obs)  # the obs clip is exercised
    # the Box clip is exercised, at the float32 bounds rounded into the float64 Box
    lo, hi = np.float32([-1.5, 0.2]), np.float32([1.5, 0.59999996])
    assert np.float64(hi[1]) < 0.6 < np.float64(np.float32(0.6))
    assert np.all(np.any(a == lo, axis=0)) and np.all(np.any(a == hi, axis=0))


@pytest.mark.slow
def test_metadata(trained):
    import onnx

    from asr import __version__
    from asr.rl.onnx_policy import FORMAT, OnnxPolicy

    _, _, _, path = trained
    p = OnnxPolicy(path)
    assert (p.obs_dim, p.act_dim) == (4, 2)
    assert p.task == "EquilibriumTracking" and p.metadata["task_id"] == TASK_ID
    assert (p.robot, p.variant) == ("pendulum_1dof", "qbmove_advanced")
    assert p.control_period_s == pytest.approx(0.02, abs=1e-12)
    assert p.observation == [
        ["q", "rad"],
        ["qd", "rad/s"],
        ["target", "rad"],
        ["q - target", "rad"],
    ]
    assert p.action == [["equilibrium", "rad", -1.5, 1.5], ["preset", "rad", 0.2, 0.6]]
    assert p.metadata["format"] == FORMAT and p.metadata["asr_version"] == __version__
    assert p.metadata["obs_normalization"] == {"clip_obs": 3.0, "epsilon": 1e-8}
    m = onnx.load(path)
    onnx.checker.check_model(m)
    assert [i.name for i in m.graph.input] == ["obs"]
    assert [o.name for o in m.graph.output] == ["action"]
    assert {e.key for e in m.metadata_props} >= {
        "task",
        "robot",
        "variant",
        "observation",
        "action",
        "control_period_s",
        "asr_version",
    }
    # no temporary file left beside it (atomic write)
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".onnx-")]


@pytest.mark.slow
def test_objects_equal_folder_and_reach(tmp_path):
    """(model, vec_normalize) objects export the same graph as the folder; Reach2DOF too (an
    untrained model: its task is found from its spaces)."""
    _deps()
    from asr.envs.tasks import Reach2DOF
    from asr.rl.onnx_policy import OnnxPolicy, export_onnx

    model, venv = make_model("asr/Reach2DOF-v0", 0, seed=1)
    a = export_onnx(model, tmp_path / "a.onnx", vec_normalize=venv)
    b = export_onnx(
        save_folder(model, venv, str(tmp_path / "run"), "asr/Reach2DOF-v0"), tmp_path / "b.onnx"
    )
    pa, pb = OnnxPolicy(a), OnnxPolicy(b, env=Reach2DOF)
    assert pa.task == pb.task == "Reach2DOF" and pa.metadata == pb.metadata
    assert len(pa.observation) == 8 and pa.observation[6] == ["q1 - target1", "rad"]
    env = Reach2DOF(4)
    try:
        obs, _ = env.reset(seed=3)
        assert np.array_equal(pa(obs), pb(obs))
        d = np.max(np.abs(pa(obs) - torch_actions(model, venv, obs)))
        assert d <= ACTION_ATOL, d
    finally:
        env.close()


@pytest.mark.slow
def test_size_mismatch(trained):
    from asr.envs.tasks import Reach2DOF
    from asr.rl.onnx_policy import OnnxPolicy

    _, _, _, path = trained
    with pytest.raises(ValueError) as err:
        OnnxPolicy(path, env=Reach2DOF)
    msg = str(err.value)
    assert "Reach2DOF has observation size 8 and action size 4" in msg
    assert "observations of size 4 and gives actions of size 2" in msg and str(path) in msg
    env = Reach2DOF(2)
    try:
        with pytest.raises(ValueError, match="observation size 8"):
            OnnxPolicy(path).check_task(env)
    finally:
        env.close()
    with pytest.raises(ValueError, match=r"obs: shape \(3, 8\), expected \(N, 4\)"):
        OnnxPolicy(path)(np.zeros((3, 8)))


@pytest.mark.slow
def test_bad_files(tmp_path, trained):
    from asr.rl.onnx_policy import OnnxPolicy

    _, _, _, path = trained
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not an onnx model\x00\x01" * 10)
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(open(path, "rb").read()[:200])
    for bad in (junk, cut):
        with pytest.raises(ValueError) as err:
            OnnxPolicy(bad)
        assert str(bad) in str(err.value) and "not a valid ONNX model" in str(err.value)
    with pytest.raises(FileNotFoundError):
        OnnxPolicy(tmp_path / "missing.onnx")


@pytest.mark.slow
def test_export_bad_input(tmp_path, trained):
    from asr.rl.onnx_policy import export_onnx

    model, venv, folder, _ = trained
    with pytest.raises(ValueError, match="Reach2DOF has observation size 8"):
        export_onnx(model, tmp_path / "x.onnx", vec_normalize=venv, task="Reach2DOF")
    with pytest.raises(ValueError, match="task: got 'Nope'"):
        export_onnx(model, tmp_path / "x.onnx", vec_normalize=venv, task="Nope")
    with pytest.raises(TypeError, match="model: expected a Stable-Baselines3 PPO"):
        export_onnx(object(), tmp_path / "x.onnx")
    with pytest.raises(ValueError, match="is not a training folder"):
        export_onnx(str(tmp_path), tmp_path / "x.onnx")
    with pytest.raises(ValueError, match="vec_normalize: give None with a training folder"):
        export_onnx(folder, tmp_path / "x.onnx", vec_normalize=venv)
    with pytest.raises(ValueError, match="its folder does not exist"):
        export_onnx(model, tmp_path / "no" / "x.onnx", vec_normalize=venv)
    assert not os.path.exists(tmp_path / "x.onnx")


@pytest.mark.slow
def test_a_training_folder_exports_as_a_ros_package_zip(trained):
    """asr.ros.export.export_zip straight from a training folder: the ONNX graph exported on the
    way (in a temporary folder) is in the zip and equals the folder's own export."""
    import io
    import zipfile

    from asr.ros.export import export_zip

    _, _, folder, path = trained
    from asr.rl.onnx_policy import OnnxPolicy

    robot = OnnxPolicy(path).robot
    with zipfile.ZipFile(io.BytesIO(export_zip(folder, robot))) as z:
        names = z.namelist()
        onnx = next(n for n in names if n.endswith(".onnx"))
        assert any(n.endswith("package.xml") for n in names)
        assert z.read(onnx) == open(path, "rb").read()


@pytest.mark.slow
def test_the_dynamo_exporter_where_torch_has_no_tracing_one(trained, tmp_path, monkeypatch):
    """export_onnx traces the actor with torch's tracing exporter; where a torch lacks it (torch
    deprecates it), the dynamo exporter writes a policy acting the same (float32 precision)."""
    import torch

    from asr.rl.onnx_policy import OnnxPolicy, export_onnx

    _, _, folder, path = trained
    real = torch.onnx.export

    def no_tracing(*args, dynamo=True, **kwargs):
        if not dynamo:
            raise TypeError("the tracing exporter was removed")
        return real(*args, dynamo=dynamo, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", no_tracing)
    dynamo_path = export_onnx(folder, tmp_path / "dynamo.onnx")
    obs = np.random.default_rng(3).normal(0.0, 1.0, (64, 4))
    a, b = OnnxPolicy(path)(obs), OnnxPolicy(dynamo_path)(obs)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    assert OnnxPolicy(dynamo_path).metadata["task"] == OnnxPolicy(path).metadata["task"]
