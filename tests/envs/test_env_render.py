"""render_mode="rgb_array" of asr's tasks: gymnasium's RecordVideo records a Throw episode into an
mp4 file that imageio reads back, frame for frame what the env rendered (MuJoCo's offscreen
Renderer); bad render settings are refused naming them.

MuJoCo picks its GL back end when it is first imported, so the recording runs in a child process
with MUJOCO_GL=egl (as tests/mujoco/test_mujoco_render.py does); where EGL is missing the test
skips, and fails when CI is set."""

import os
import subprocess
import sys

import numpy as np
import pytest

from asr.envs.tasks import EquilibriumTracking, Reach2DOF
from asr.envs.throw import Throw
from tests.conftest import IN_CI, require
from tests.support.paths import ROOT

WIDTH, HEIGHT, STEPS = 96, 64, 25  # a small picture, a short episode (the hand opens at step 25)
NO_GL = 3  # the child's exit status when no GL context can be made

# The child: a Throw episode under RecordVideo; the frames the env renders are saved beside it.
CHILD = """
import sys
import numpy as np
try:  # with MUJOCO_GL=egl, mujoco loads EGL when it is imported
    import mujoco
except Exception as exc:
    print(f"no GL back end ({type(exc).__name__}: {exc})")
    sys.exit(3)
import gymnasium
from gymnasium.wrappers import RecordVideo
import asr
folder, out, width, height, steps = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
env = gymnasium.make(
    "asr/Throw-v0", render_mode="rgb_array", render_width=width, render_height=height,
    max_episode_steps=steps,
)
env = RecordVideo(env, folder, episode_trigger=lambda e: e == 0, name_prefix="throw",
                  disable_logger=True)
try:
    env.reset(seed=0)
except RuntimeError as exc:
    if "MuJoCo cannot render" in str(exc):
        print(exc)
        sys.exit(3)
    raise
frames = [env.unwrapped.render()]
q = []
for t in range(steps):
    # swing joint 1 up hard, hand closed: the arm moves across the picture
    _, _, terminated, truncated, _ = env.step(np.array([3.0, 1.0, 0.8, 0.8, -1.0]))
    frames.append(env.unwrapped.render())
    q.append(env.unwrapped._vec.q[0].copy())
    if terminated or truncated:
        break
fps = env.metadata["render_fps"]
env.close()
np.savez(out, frames=np.array(frames), q=np.array(q), fps=fps)
"""


def _record(tmp_path):
    """Run CHILD under EGL: its frames (N, H, W, 3) uint8, link angles (N - 1, 2) rad and the
    env's render_fps; a skip (a failure when CI is set) where EGL cannot render."""
    out = tmp_path / "frames.npz"
    sizes = [str(v) for v in (WIDTH, HEIGHT, STEPS)]
    command = [sys.executable, "-c", CHILD, str(tmp_path / "videos"), str(out), *sizes]
    egl = {**os.environ, "MUJOCO_GL": "egl"}
    run = {"cwd": str(ROOT), "env": egl, "capture_output": True, "text": True, "timeout": 300}
    done = subprocess.run(command, **run)
    if done.returncode == NO_GL:
        why = f"MuJoCo cannot render with EGL here: {done.stdout.strip()}"
        (pytest.fail if IN_CI else pytest.skip)(why + (" (CI is set)" if IN_CI else ""))
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(np.load(out))


def test_record_video_writes_a_throw_episode(tmp_path):
    require("moviepy")
    require("imageio_ffmpeg")
    import imageio.v3 as iio

    got = _record(tmp_path)
    frames = got["frames"]
    # the reset's frame and one per step, until the hand opened at the time limit
    assert frames.shape == (STEPS + 1, HEIGHT, WIDTH, 3) and frames.dtype == np.uint8
    assert int(got["fps"]) == 100  # one frame per env step of 10 ms
    videos = sorted((tmp_path / "videos").glob("*.mp4"))
    assert [v.name for v in videos] == ["throw-episode-0.mp4"]
    assert videos[0].stat().st_size > 0
    video = iio.imread(videos[0], index=None)
    assert video.shape == frames.shape, video.shape
    # the video holds the env's frames, up to the codec's loss
    err = np.abs(video.astype(int) - frames.astype(int))
    assert err.mean() < 6.0, err.mean()
    # the arm is in the picture and moves: both joints swung by tenths of a radian in 0.25 s and
    # the frames changed with them, in the video too
    assert np.all(np.abs(got["q"][-1] - got["q"][0]) > 0.3), got["q"]
    assert frames[0].std() > 10
    for pictures in (frames, video):
        moved = np.abs(pictures[-1].astype(int) - pictures[0].astype(int)).max(axis=2) > 24
        assert moved.mean() > 0.005, moved.mean()


@pytest.mark.parametrize("cls", [EquilibriumTracking, Reach2DOF, Throw])
def test_render_settings(cls):
    """render_mode None renders nothing; the frame rate is one frame per env step; bad modes
    and sizes are refused naming them (no GL needed)."""
    env = cls(2)
    assert env.render_mode is None and env.render() is None
    assert env.metadata["render_modes"] == ["rgb_array"]
    assert env.metadata["render_fps"] == round(1 / env.env_dt)
    env.close()
    with pytest.raises(ValueError, match=r"render_mode: got 'human', valid: None or one of"):
        cls(1, render_mode="human")
    with pytest.raises(ValueError, match=r"render_width: got 8, expected an int in \[16, 2048\]"):
        cls(1, render_mode="rgb_array", render_width=8)
    with pytest.raises(ValueError, match=r"render_height: got 1.5, expected an int"):
        cls(1, render_mode="rgb_array", render_height=1.5)
