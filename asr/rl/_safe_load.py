"""Reading a training folder without running code from it (docs/learning.md, "What loading a
training folder trusts"). A shared folder (a colleague's run, a download) is data: asr reads its
JSON with the JSON reader, its tensors with torch.load(weights_only=True) (tensors, numbers,
strings and plain containers; no other Python object), and never unpickles anything. Links are
followed only while they stay inside the folder (asr.common.files.inside_folder).

The errors name the file and say what was refused and why, apart from the files that are
missing, truncated or corrupted."""

import io
import json
import os

from asr.common.files import inside_folder, parse_json

# the files the versions of asr before data-only folders wrote, and what replaced them
PICKLED_FILES = {"vecnormalize.pkl": "vecnormalize.json"}

SEE_DOCS = 'docs/learning.md, "What loading a training folder trusts"'


def folder_file(out_dir, files, name):
    """(real path, shown) of file `name` of the checkpoint folder `files` of out_dir: shown is
    out_dir/name (what the errors say); ValueError naming it when a link on the way leads
    outside out_dir."""
    shown = os.path.join(out_dir, name)
    return inside_folder(out_dir, os.path.join(files, name), shown), shown


def read_json(path, what, shown):
    """The JSON value of a file (shown: its name in the errors); ValueError when it is missing,
    not JSON or nested too deeply (asr.common.files.parse_json: never a RecursionError)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ValueError(
            f"{shown}: cannot read the {what} ({type(exc).__name__}: {exc}); the file is missing"
        ) from None
    return json_bytes(data, what, shown)


def json_writer(obj):
    """A writer(f) of obj as indented JSON (what asr writes of a training folder's data)."""
    return lambda f: f.write((json.dumps(obj, indent=1) + "\n").encode())


def json_bytes(data, what, shown):
    """The JSON value of `data` (bytes) with read_json's errors; NaN is allowed (Python's json
    writes it for a missing value of a curve)."""
    return parse_json(data, shown, f"the {what}", allow_nan=True)


def _unpickling_detail(text):
    """The line of torch's weights_only error that says what it met (its advice left out)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "GLOBAL" in ln or "global" in ln.split(":")[0] or ln.startswith("Unsupported"):
            return ln
    return lines[-1] if lines else text


def torch_data(data, what, shown):
    """torch.load(weights_only=True) of bytes or a path: tensors, numbers, strings and plain
    containers only. ValueError naming `shown`: "refused" for a file holding any other Python
    object (unpickling it would run code that its author chose), else missing / truncated /
    corrupted."""
    import pickle

    import torch

    source = io.BytesIO(data) if isinstance(data, bytes) else data
    try:
        return torch.load(source, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        detail = _unpickling_detail(str(exc))
        if "GLOBAL" in detail or "global" in detail.lower():
            raise ValueError(
                f"{shown}: refused: the {what} holds Python objects other than tensors and "
                f"plain data ({detail}); loading them would run code chosen by whoever wrote "
                f"the file, which asr never does (see {SEE_DOCS})"
            ) from None
        raise ValueError(
            f"{shown}: cannot load the {what} ({detail}); the file is missing, truncated or "
            "corrupted"
        ) from None
    except Exception as exc:  # noqa: BLE001  (torch raises many kinds for a bad file)
        raise ValueError(
            f"{shown}: cannot load the {what} ({type(exc).__name__}: {exc}); the file is "
            "missing, truncated or corrupted"
        ) from None


def refuse_pickled(out_dir, files):
    """ValueError for a folder an earlier asr wrote with pickles (vecnormalize.pkl): asr does
    not unpickle them (it would run any code the file carries); it says how to go on."""
    for old, new in PICKLED_FILES.items():
        if os.path.lexists(os.path.join(files, old)) and not os.path.lexists(
            os.path.join(files, new)
        ):
            raise ValueError(
                f"{os.path.join(out_dir, old)}: refused: a pickle (what earlier versions of asr "
                f"wrote, now {new}); unpickling runs any code its author put in it, so asr does "
                "not load it. Train the policy again, or, for a folder you wrote yourself and "
                "trust, convert it once with asr.rl.convert_pickled_folder(folder, "
                f"trust=True) (see {SEE_DOCS})"
            )
