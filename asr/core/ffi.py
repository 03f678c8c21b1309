"""The single import point of the compiled core: ``ffi`` and ``lib`` of ``asr._core``."""

try:
    from asr._core import ffi, lib  # noqa: F401
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "asr's C core (asr._core) is not built: install the package with `pip install .` "
        "or `pip install -e .` from the source tree"
    ) from exc
