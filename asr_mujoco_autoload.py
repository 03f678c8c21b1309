"""Opt-in registration of asr's MuJoCo plugin "asr.actuator" when `import mujoco` runs
(docs/mujoco_plugin.md, "Loading automatically").

MuJoCo's package, at the end of its own import, calls every entry point of the group
"mujoco.plugins"; asr-sim declares this module's register() there (setup.cfg). With
ASR_MUJOCO_AUTOLOAD=1 it loads the plugin library (asr.mujoco.plugin.load); unset, empty or 0 it
does nothing. It is a top-level module of its own, not a module of the asr package, because
importing any module of asr runs asr/__init__.py (asr's public names, about 0.1 to 0.4 s) and
every `import mujoco` of a user who did not opt in would pay for it; this module imports only
os until the variable says to load.
"""

import os

VARIABLE = "ASR_MUJOCO_AUTOLOAD"
LOAD = "1"  # the value that loads the plugin
OFF = ("", "0")  # the values (besides unset) that do nothing


def register() -> None:
    """Load asr's MuJoCo plugin library if ASR_MUJOCO_AUTOLOAD is 1; unset, empty or 0, do
    nothing. Runs inside `import mujoco` (the mujoco module is not finished yet), so nothing
    here raises: another value, or a library that cannot be loaded (built for another MuJoCo,
    say), is a RuntimeWarning that names the variable, and `import mujoco` goes on."""
    value = os.environ.get(VARIABLE)
    if value is None or value in OFF:
        return
    # imported here, not at the top: a user who did not opt in pays for neither
    import warnings

    if value != LOAD:
        warnings.warn(
            f"{VARIABLE}={value!r} is not a valid value; valid: {LOAD!r} (register asr's MuJoCo "
            f"plugin when mujoco is imported), {OFF[1]!r}, empty or unset (do not); asr's "
            "MuJoCo plugin was not loaded",
            RuntimeWarning,
            stacklevel=2,
        )
        return
    try:
        from asr.mujoco import plugin

        plugin.load()
    except Exception as exc:  # noqa: BLE001 - a warning, never a failed `import mujoco`
        warnings.warn(
            f"{VARIABLE}={LOAD}: asr's MuJoCo plugin was not loaded when mujoco was imported "
            f"({type(exc).__name__}: {exc}); MJCF naming the plugin will not compile. Unset "
            f"{VARIABLE} to stop trying",
            RuntimeWarning,
            stacklevel=2,
        )


__all__ = ["LOAD", "OFF", "VARIABLE", "register"]
