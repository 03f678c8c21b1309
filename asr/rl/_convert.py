"""convert_pickled_folder: the explicit opt-in for a training folder that an earlier asr wrote
with a pickle (vecnormalize.pkl), which asr otherwise refuses (asr.rl._safe_load). Converting
unpickles it and the model.zip's cloudpickled entries (PPO.load): it runs whatever code the
files carry, so it is for a folder you wrote yourself and trust, never for one you were sent.
The folder is then rewritten, as one new checkpoint, in the data-only format."""

import contextlib
import os

from asr.common.files import current_version, write_version
from asr.rl._results import read_config
from asr.rl._safe_load import PICKLED_FILES, folder_file, json_writer, read_json


def convert_pickled_folder(folder, *, trust=False):
    """Rewrite the sb3 training folder `folder` of an earlier asr (model.zip and the pickle
    vecnormalize.pkl) as data only (model.zip without cloudpickled entries, vecnormalize.json).
    trust=True is required: this unpickles the folder's files, running any code they hold (see
    docs/learning.md, "What loading a training folder trusts"). Returns the folder."""
    if trust is not True:
        raise ValueError(
            f"trust: got {trust!r}; converting unpickles the folder's files, which runs any "
            "code they hold: pass trust=True only for a folder you wrote yourself"
        )
    import pickle

    from stable_baselines3 import PPO

    from asr.rl._sb3 import MODEL_FILE, normalisation_state, save_model

    folder = os.fspath(folder)
    files = current_version(folder)  # a link out of the folder is refused here too
    config = read_config(folder, files)
    old = next(iter(PICKLED_FILES))
    pickled, shown = folder_file(folder, files, old)
    if not os.path.isfile(pickled):
        raise ValueError(f"{shown}: missing; {folder} holds no pickle to convert")
    with open(pickled, "rb") as f:
        vecnorm = pickle.load(f)  # trusted by the caller
    model = PPO.load(folder_file(folder, files, MODEL_FILE)[0], device="cpu")
    curve_path, curve_shown = folder_file(folder, files, "curve.json")
    curve = read_json(curve_path, "learning curve", curve_shown)
    steps = int(getattr(vecnorm, "asr_num_timesteps", model.num_timesteps))
    write_version(
        folder,
        [
            ("config.json", json_writer(config)),
            (PICKLED_FILES[old], json_writer(normalisation_state(vecnorm, steps))),
            (MODEL_FILE, lambda f: save_model(model, f)),
            ("curve.json", json_writer(curve)),
        ],
    )
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(folder, old))  # the plain file, or the link into checkpoint/
    return folder
