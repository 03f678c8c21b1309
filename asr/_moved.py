"""Import paths of asr's modules before they were grouped into subpackages, kept working with a
DeprecationWarning: `import asr.batch` gives the module asr.core.batch itself (the same object,
so its names and state are shared). Private modules (a leading underscore) moved without an
alias. Installed by asr/__init__.py."""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

# old module path -> where it lives now
MOVED = {
    "asr.batch": "asr.core.batch",
    "asr.errors": "asr.core.errors",
    "asr.models": "asr.core.models",
    "asr.robot": "asr.robots.robot",
    "asr.gazebo": "asr.engines.gz_shim",
    "asr.interaction": "asr.controllers.interaction",
    "asr.mujoco_plugin": "asr.mujoco.plugin",
    "asr.mujoco_export": "asr.mujoco.export",
    "asr.actuator_datasheet": "asr.analysis.datasheet",
    "asr.frequency": "asr.analysis.frequency.response",
    "asr.identification": "asr.analysis.identification.fit",
    "asr.parameter_sweep": "asr.analysis.sweep.runner",
    "asr.iterative_learning": "asr.learning.iterative_learning",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        warnings.warn(
            f"{spec.name} moved to {self.target}: import it from there",
            DeprecationWarning,
            stacklevel=3,
        )
        return importlib.import_module(self.target)

    def exec_module(self, module):  # type: ignore[no-untyped-def]
        pass  # the target module is loaded already


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(MOVED[fullname]))


class _Package(types.ModuleType):
    """asr's own module type: importing an old path binds it on the package (Python's import sets
    the attribute after loading a submodule); asr.models is the function, whose old module path
    must not replace it."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and callable(self.__dict__.get(name)):
            return  # a function of the public API keeps its name
        super().__setattr__(name, value)


def install() -> None:
    """Put the alias finder on sys.meta_path once, and guard the package's public functions."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    sys.modules["asr"].__class__ = _Package
