"""The torch_threads hyperparameter: both backends run torch on that many threads while they
train (asr's batch keeps train's `threads`), and train() gives torch its former count back."""

import pytest

from tests.conftest import require

TASK = "asr/Reach2DOF-v0"
# one update of 32 env-steps on 2 sub-envs, asr's batch on 2 threads, nothing evaluated
TINY = dict(total_steps=32, num_envs=2, threads=2, n_steps=16, batch_size=32, n_epochs=1)
TINY.update(eval_every=0, final_eval_episodes=0, tensorboard=False)


@pytest.mark.parametrize("backend", ["sb3", "rsl_rl"])
def test_torch_threads_while_training_and_restored(backend):
    require("torch")
    require("stable_baselines3" if backend == "sb3" else "rsl_rl")
    import torch

    from asr.rl import train
    from asr.rl.training import _backend_class

    seen = []
    cls = _backend_class(backend)
    real = cls.learn

    def learn(self, *a, **k):
        seen.append(torch.get_num_threads())
        return real(self, *a, **k)

    before = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cls, "learn", learn)
        res = train(TASK, algo=backend, torch_threads=1, **TINY)
    assert seen == [1]
    assert res.config["hyperparameters"]["torch_threads"] == 1
    assert torch.get_num_threads() == before


def test_torch_threads_checked():
    from asr.rl._config import validate_hyperparameters

    with pytest.raises(ValueError, match=r"torch_threads: got -1, valid range \[0, inf\)"):
        validate_hyperparameters({"torch_threads": -1})
    with pytest.raises(TypeError, match=r"torch_threads: got 1.5, expected an int"):
        validate_hyperparameters({"torch_threads": 1.5})
