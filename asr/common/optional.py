"""The optional dependencies: setup.cfg's extras. A feature whose extra is not installed raises one
ModuleNotFoundError (an ImportError) naming the extra and the pip command that installs it, e.g.
"asr.identify needs the extra [identify] (no module 'scipy'): pip install 'asr-sim[identify]'"."""

import importlib

DISTRIBUTION = "asr-sim"  # setup.cfg [metadata] name (`asr` on PyPI is another project)


def install_hint(extra):
    """The pip command that installs `extra`."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing_extra(feature, extra, missing):
    """The error for `feature` when module `missing` of extra `extra` is not installed."""
    return ModuleNotFoundError(
        f"{feature} needs the extra [{extra}] (no module {missing!r}): {install_hint(extra)}",
        name=missing,
    )


def need(module, extra, feature):
    """import_module(module); when it (not something it imports) is missing, the error of
    missing_extra(feature, extra, module)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != module.split(".")[0]:
            raise  # the module is there but broken: its own error says more
        raise missing_extra(feature, extra, module) from exc
