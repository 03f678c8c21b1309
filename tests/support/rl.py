"""The RL task, tiny hyperparameters and helpers that the training tests share
(tests/rl/test_rl_training.py, test_rl_rsl_rl.py, test_rl_env_kwargs.py, test_rl_onnx.py and
tests/support/ros_export.py): make_model trains a small policy, one_torch_thread an autouse
fixture."""

import numpy as np
import pytest

from tests.conftest import require


def make_model(task_id, learn_steps, seed=0):
    """A small PPO (MlpPolicy) with VecNormalize (observations only) on a task, as asr.rl.train
    would produce it (a few hundred steps: the export does not need a good policy)."""
    import gymnasium
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    import asr  # noqa: F401  (registers the ids)

    venv = VecNormalize(
        DummyVecEnv([lambda: gymnasium.make(task_id) for _ in range(2)]),
        norm_obs=True,
        norm_reward=False,
        clip_obs=3.0,
    )
    venv.seed(seed)
    model = PPO(
        "MlpPolicy",
        venv,
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        seed=seed,
        device="cpu",
        policy_kwargs={"net_arch": [32, 32]},
    )
    model.set_logger(Logger(None, []))  # SB3's default leaves a folder /tmp/SB3-<time>
    if learn_steps:
        model.learn(learn_steps)
    else:  # still give the normaliser non-trivial statistics
        venv.reset()
        for _ in range(64):
            venv.step(np.array([venv.action_space.sample() for _ in range(2)]))
    venv.training = False
    return model, venv


TASK = "asr/Reach2DOF-v0"
TINY = dict(
    n_steps=16,
    batch_size=128,
    n_epochs=2,
    eval_every=1,
    eval_episodes=4,
    final_eval_episodes=8,
    net_arch=[16, 16],
)


@pytest.fixture(autouse=True)
def one_torch_thread():
    torch = require("torch")
    require("stable_baselines3")
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def curve_rows(curve):
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in curve]
