"""Loading a training folder never runs code from it (docs/learning.md, "What loading a training
folder trusts"): crafted folders whose files carry a payload that would create a marker file if
it ran (a pickle whose __reduce__ calls os.system) go through every loader, asr.rl.load_checkpoint,
asr.rl.export_onnx(folder), the ONNX exporter's folder loader, `asr train --resume` of both
backends (a subprocess), asr.ros.export and the dashboard's export child; the marker never
appears and the error names the file and says it was refused. Links leading out of the folder
and a deeply nested config.json are refused clearly; a folder of an earlier asr (a pickle) is
refused, and converts only with trust=True. Real torch, SB3, rsl-rl-lib and subprocesses."""

import base64
import io
import json
import os
import pickle
import shlex
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from tests.conftest import require
from tests.support.paths import ROOT as ROOT_PATH  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = str(ROOT_PATH)
TASK = "asr/Reach2DOF-v0"
SETTINGS = {
    "n_steps": "16",
    "batch_size": "128",
    "n_epochs": "2",
    "net_arch": "16,16",
    "eval_every": "0",
    "final_eval_episodes": "0",
}
MODEL = {"sb3": "model.zip", "rsl_rl": "model.pt"}


class Payload:
    """Unpickled, it runs `touch marker` (the pickle names os.system itself: it needs nothing
    of this module to run)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


def _train_args(algo, out, total):
    args = [sys.executable, "-m", "asr.cli", "train", "--algo", algo, "--task", TASK]
    args += ["--total-steps", str(total), "--num-envs", "8", "--seed", "1"]
    args += ["--out", str(out), "--no-progress"]
    for key, value in SETTINGS.items():
        args += ["--set", f"{key}={value}"]
    return args


def _env():
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A folder trained by `asr train` for each backend (one PPO update)."""
    require("torch")
    require("stable_baselines3")
    require("rsl_rl")
    root = tmp_path_factory.mktemp("trained")
    out = {}
    for algo in ("sb3", "rsl_rl"):
        out[algo] = root / algo
        done = subprocess.run(
            _train_args(algo, out[algo], 128),
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    return out


def _copy(folders, algo, tmp_path):
    dst = tmp_path / algo
    shutil.copytree(folders[algo], dst, symlinks=True)
    return dst


def _real(folder, name):
    """The checkpoint's file behind folder/name (replaced, not written through the link)."""
    return os.path.realpath(folder / name)


def _poisoned_pt(path, marker):
    """model.pt (rsl_rl) as a torch file whose actor is a payload."""
    import torch

    state = torch.load(path, weights_only=True)
    state["actor"] = {"payload": Payload(marker)}
    os.remove(path)
    torch.save(state, path)


def _poisoned_zip(path, marker, where):
    """model.zip (sb3) with a payload: where="data", a cloudpickled entry of its data (as
    SB3's save writes them, which PPO.load unpickles); "policy", a torch file whose state dict
    holds one."""
    import torch

    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    if where == "data":
        data = json.loads(members["data"])
        blob = base64.b64encode(pickle.dumps(Payload(marker))).decode()
        data["observation_space"] = {":type:": "<class 'x'>", ":serialized:": blob}
        members["data"] = json.dumps(data).encode()
    else:
        buf = io.BytesIO()
        torch.save({"payload": Payload(marker)}, buf)
        members["policy.pth"] = buf.getvalue()
    os.remove(path)
    with zipfile.ZipFile(path, "w") as z:
        for name, body in members.items():
            z.writestr(name, body)


def _poison(folder, algo, marker, where="policy"):
    """Put a payload into the folder's model file; returns the name the errors must give."""
    path = _real(folder, MODEL[algo])
    if algo == "rsl_rl":
        _poisoned_pt(path, marker)
    else:
        _poisoned_zip(path, marker, where)
    return str(folder / MODEL[algo])


def _legacy_pickle(folder, marker):
    """An sb3 folder as an earlier asr wrote it, but crafted: vecnormalize.pkl a payload."""
    os.remove(_real(folder, "vecnormalize.json"))
    os.remove(folder / "vecnormalize.json")
    with open(
        os.path.join(os.path.dirname(_real(folder, "model.zip")), "vecnormalize.pkl"), "wb"
    ) as f:
        pickle.dump(Payload(marker), f)
    os.symlink("checkpoint/vecnormalize.pkl", folder / "vecnormalize.pkl")
    return str(folder / "vecnormalize.pkl")


CASES = [("rsl_rl", "policy"), ("sb3", "policy"), ("sb3", "data"), ("sb3", "pickle")]


def _crafted(folders, tmp_path, algo, where):
    folder = _copy(folders, algo, tmp_path)
    marker = tmp_path / "PAYLOAD-RAN"
    if where == "pickle":
        shown = _legacy_pickle(folder, marker)
    else:
        shown = _poison(folder, algo, marker, where)
    return folder, marker, shown


def _refused(text, shown, where):
    """The error names the file and says it was refused (a payload in data is never decoded:
    that folder loads)."""
    assert shown in text or os.path.basename(shown) in text, text
    assert "refused" in text, text
    assert "missing, truncated or corrupted" not in text, text
    if where == "pickle":
        assert "pickle" in text and "convert_pickled_folder" in text, text


@pytest.mark.parametrize("algo,where", CASES)
def test_load_checkpoint_and_export_never_run_a_payload(folders, tmp_path, algo, where):
    from asr.rl import export_onnx, load_checkpoint
    from asr.rl.onnx_policy import load_training

    folder, marker, shown = _crafted(folders, tmp_path, algo, where)
    loaders = [
        lambda: load_checkpoint(folder),
        lambda: export_onnx(folder, tmp_path / "p.onnx"),
        lambda: load_training(folder),
    ]
    for load in loaders:
        if where == "data":  # the cloudpickled entry is never decoded: the folder loads
            load()
        else:
            with pytest.raises(ValueError) as err:
                load()
            _refused(str(err.value), shown, where)
        assert not marker.exists()


@pytest.mark.parametrize("algo,where", CASES)
def test_train_resume_never_runs_a_payload(folders, tmp_path, algo, where):
    """`asr train --resume` on a crafted folder: exit 2 naming the file (a payload in model.zip's
    data: never decoded, the run goes on)."""
    folder, marker, shown = _crafted(folders, tmp_path, algo, where)
    done = subprocess.run(
        _train_args(algo, folder, 256) + ["--resume"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert not marker.exists()
    if where == "data":
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 2, done.stderr
    _refused(done.stderr, shown, where)


@pytest.mark.parametrize("algo,where", [("rsl_rl", "policy"), ("sb3", "pickle")])
def test_ros_export_and_dashboard_export_never_run_a_payload(folders, tmp_path, algo, where):
    """asr.ros.export.export_zip of a crafted folder, and the dashboard's export child (what
    POST /api/rl/policy.onnx and watch run): refused, the file named (the child by its name
    only: the dashboard sends no server path)."""
    from asr.ros.export import export_zip

    folder, marker, shown = _crafted(folders, tmp_path, algo, where)
    with pytest.raises(ValueError) as err:
        export_zip(str(folder), "qbmove_arm_2dof")
    _refused(str(err.value), shown, where)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "asr_dashboard.exports",
            "onnx",
            str(tmp_path / "x.onnx"),
            str(folder),
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["status"] == 422
    from asr_dashboard.errors import public_message

    detail = public_message(answer["detail"])
    _refused(detail, os.path.basename(shown), where)
    assert str(tmp_path) not in detail
    assert not marker.exists()


def test_what_asr_writes_is_data_only(folders):
    """model.pt loads with weights_only=True; model.zip's data has no cloudpickled entry and
    its state dicts load with weights_only=True; no pickle in either folder."""
    import torch

    pt = torch.load(folders["rsl_rl"] / "model.pt", weights_only=True)
    assert set(pt) == {"actor", "critic", "optimizer", "steps", "learning_rate"}
    with zipfile.ZipFile(folders["sb3"] / "model.zip") as z:
        assert ":serialized:" not in z.read("data").decode()
        for name in ("policy.pth", "policy.optimizer.pth"):
            torch.load(io.BytesIO(z.read(name)), weights_only=True)
    stats = json.loads((folders["sb3"] / "vecnormalize.json").read_text())
    assert len(stats["obs_mean"]) == 8 and stats["asr_num_timesteps"] == 128
    for folder in folders.values():
        assert not [n for n in os.listdir(folder) if n.endswith(".pkl")]


@pytest.mark.parametrize("algo", ["sb3", "rsl_rl"])
def test_links_leading_out_of_the_folder_are_refused(folders, tmp_path, algo):
    """checkpoint -> a complete checkpoint outside the folder, and a file of the checkpoint
    linked to a file outside: refused, naming the link (not its target)."""
    from asr.rl import load_checkpoint

    folder = _copy(folders, algo, tmp_path)
    outside = tmp_path / "other-place"
    shutil.copytree(os.path.realpath(folder / "checkpoint"), outside)
    link = folder / "checkpoint"
    os.remove(link)
    os.symlink(outside, link)
    with pytest.raises(ValueError) as err:
        load_checkpoint(folder)
    text = str(err.value)
    assert str(link) in text and "outside" in text and "other-place" not in text
    # the checkpoint link inside again, its config.json a link to a file outside
    os.remove(link)
    hidden = next(n for n in os.listdir(folder) if n.startswith(".checkpoint-"))
    os.symlink(hidden, link)
    cfg = folder / hidden / "config.json"
    shutil.copy(cfg, tmp_path / "config-outside.json")
    os.remove(cfg)
    os.symlink(tmp_path / "config-outside.json", cfg)
    with pytest.raises(ValueError, match="config.json: a symbolic link that leads outside"):
        load_checkpoint(folder)


def test_a_deeply_nested_config_is_a_clear_error(folders, tmp_path):
    from asr.rl import load_checkpoint
    from asr_dashboard.rl import read_curve
    from asr_dashboard.rl_runs import config_from_disk

    folder = _copy(folders, "rsl_rl", tmp_path)
    for name in ("config.json", "curve.json"):
        path = _real(folder, name)
        os.remove(path)
        with open(path, "w") as f:
            f.write("[" * 100_000)
    with pytest.raises(ValueError) as err:
        load_checkpoint(folder)
    assert str(folder / "config.json") in str(err.value) and "nested too deeply" in str(err.value)
    assert config_from_disk(folder) == {}
    assert read_curve(folder / "curve.json")["steps"] == []


def test_a_pickled_folder_converts_only_when_trusted(tmp_path):
    """A folder as the earlier asr wrote it (SB3's model.save, vecnormalize.pkl): refused;
    convert_pickled_folder needs trust=True, then it loads with the same policy."""
    require("stable_baselines3")
    from asr.rl import convert_pickled_folder, load_checkpoint, train

    out = tmp_path / "old"
    res = train(
        TASK,
        algo="sb3",
        total_steps=256,
        num_envs=8,
        seed=2,
        out_dir=out,
        n_steps=16,
        batch_size=128,
        n_epochs=2,
        net_arch=[16, 16],
        eval_every=0,
        final_eval_episodes=0,
    )
    files = os.path.realpath(out / "checkpoint")
    os.remove(os.path.join(files, "vecnormalize.json"))
    os.remove(out / "vecnormalize.json")
    os.remove(os.path.join(files, "model.zip"))
    res.model.save(os.path.join(files, "model.zip"))  # SB3's own, cloudpickled entries
    res.vecnormalize.asr_num_timesteps = res.model.num_timesteps
    with open(os.path.join(files, "vecnormalize.pkl"), "wb") as f:
        pickle.dump(res.vecnormalize, f)
    os.symlink("checkpoint/vecnormalize.pkl", out / "vecnormalize.pkl")
    with pytest.raises(ValueError, match="vecnormalize.pkl: refused: a pickle"):
        load_checkpoint(out)
    with pytest.raises(ValueError, match="trust: got False"):
        convert_pickled_folder(out)
    convert_pickled_folder(out, trust=True)
    assert not os.path.lexists(out / "vecnormalize.pkl")
    back = load_checkpoint(out)
    obs = np.random.default_rng(0).normal(size=(5, 8))
    assert np.array_equal(back.predict(obs), res.predict(obs))
    assert back.model.num_timesteps == res.model.num_timesteps


@pytest.mark.parametrize(
    "key,value,words",
    [
        ("obs_var", [-1.0] * 8, "obs_var: expected 8 finite numbers"),
        ("obs_mean", [0.0] * 3, "obs_mean: expected 8 finite numbers"),
        ("epsilon", 0.0, r"epsilon: got 0.0, valid range \(0.0, inf\]"),
        ("asr_num_timesteps", 1.5, "asr_num_timesteps: got '1.5', expected an int"),
        ("format", "x", "not asr's observation normalisation"),
    ],
)
def test_bad_normalisation_statistics_name_the_entry(folders, tmp_path, key, value, words):
    """vecnormalize.json is data, checked entry by entry: a value that would make the policy's
    input NaN or wrong is a ValueError naming the file, the entry and the range."""
    from asr.rl import load_checkpoint

    folder = _copy(folders, "sb3", tmp_path)
    path = _real(folder, "vecnormalize.json")
    doc = json.loads(open(path).read())
    doc[key] = value
    os.remove(path)
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(ValueError, match=words) as err:
        load_checkpoint(folder)
    assert str(folder / "vecnormalize.json") in str(err.value)
