"""asr's environment ids in gymnasium's registry, without importing gymnasium for `import asr`.

Gymnasium 1.x no longer loads the "gymnasium.envs" entry points, so `import asr` calls
register_when_imported(): the ids are registered at once when gymnasium is already imported,
else right after gymnasium's own import finishes (a one-shot import hook), so that
`import asr; gymnasium.make_vec("asr/EquilibriumTracking-v0", num_envs=N)` works in either
import order. The entry points are strings: registering imports nothing of asr.envs.
"""

import importlib.abc
import sys

ENVS = {
    "asr/EquilibriumTracking-v0": (
        "asr.envs.tasks:EquilibriumTrackingEnv",
        "asr.envs.tasks:EquilibriumTracking",
    ),
    "asr/Reach2DOF-v0": ("asr.envs.tasks:Reach2DOFEnv", "asr.envs.tasks:Reach2DOF"),
    "asr/Throw-v0": ("asr.envs.throw:ThrowEnv", "asr.envs.throw:Throw"),
    "asr/Impact2DOF-v0": ("asr.envs.impact:Impact2DOFEnv", "asr.envs.impact:Impact"),
    "asr/Periodic2DOF-v0": ("asr.envs.periodic:Periodic2DOFEnv", "asr.envs.periodic:Periodic"),
}


def register_envs():
    """Register asr's environments with gymnasium (again: no-op)."""
    import gymnasium

    for env_id, (entry, vector_entry) in ENVS.items():
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id, entry_point=entry, vector_entry_point=vector_entry, disable_env_checker=False
        )


class _AfterGymnasiumImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of the top-level "gymnasium" module so that
    register_envs() runs once that module has been executed, then removes itself."""

    def find_spec(self, name, path=None, target=None):
        if name != "gymnasium":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_register(module):
            exec_module(module)
            register_envs()

        loader.exec_module = exec_then_register
        return spec


def register_when_imported():
    """register_envs() now if gymnasium is imported, else as soon as it is; nothing if gymnasium
    is not installed."""
    if sys.modules.get("gymnasium") is not None:
        register_envs()
    elif not any(isinstance(f, _AfterGymnasiumImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasiumImport())
