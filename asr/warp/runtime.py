"""Warp, initialised once for asr: the module, its kernel cache and device names.

Compiled kernels are cached on disk so that a machine compiles them once. Where the kernels are
cached, in this order:

- the environment variable ASR_WARP_CACHE, when set (a folder; created if missing);
- running from asr's source tree (a checkout with csrc/ and setup.py next to the package):
  build/warp-cache in that tree, beside the C core's build;
- otherwise Warp's own default cache folder (under the user's cache directory).

`warp()` imports Warp (the extra [warp]: a clear ImportError naming `pip install
'asr-sim[warp]'` when it is missing), sets the cache folder before Warp initialises, and
initialises it once; every asr.warp module gets Warp from here. Warp reads the folder when it
initialises: a program that called wp.init() itself before importing asr.warp keeps the cache
folder it chose.
"""

import os
import pathlib
import threading
from types import ModuleType
from typing import Any

from asr.common.optional import need

CACHE_ENV = "ASR_WARP_CACHE"
_lock = threading.Lock()
_state: dict[str, Any] = {}


def source_tree_cache() -> pathlib.Path | None:
    """build/warp-cache of asr's source tree when the package runs from one, else None."""
    root = pathlib.Path(__file__).resolve().parent.parent.parent
    if (root / "csrc").is_dir() and (root / "setup.py").is_file():
        return root / "build" / "warp-cache"
    return None


def cache_dir() -> pathlib.Path | None:
    """The kernel cache folder asr gives Warp (None: Warp's default), see the module doc."""
    env = os.environ.get(CACHE_ENV, "")
    if env:
        return pathlib.Path(env)
    return source_tree_cache()


def warp() -> ModuleType:
    """The warp module, initialised (once) with asr's kernel cache folder."""
    with _lock:
        if "wp" in _state:
            return _state["wp"]  # type: ignore[no-any-return]
        wp = need("warp", "warp", "asr.warp")
        folder = cache_dir()
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            wp.config.kernel_cache_dir = str(folder)
        wp.init()
        _state["wp"] = wp
        return wp  # type: ignore[no-any-return]


def device(name: object = None) -> Any:
    """The Warp device `name` (None: Warp's default device); ValueError naming the devices this
    machine has for an unknown name."""
    wp = warp()
    if name is None:
        return wp.get_device()
    if not isinstance(name, str) and not hasattr(name, "is_cuda"):
        raise TypeError(f"device: expected a Warp device or its name, got {type(name).__name__}")
    try:
        return wp.get_device(name)
    except (RuntimeError, ValueError) as exc:
        names = ", ".join(d.alias for d in wp.get_devices())
        raise ValueError(
            f"device: unknown Warp device {name!r}; this machine has: {names}"
        ) from exc
