"""Parameter sweeps run as batched rollouts (runner): the parameter space (space), the batches
(batches) and the results file, resumable after a crash (results)."""

from asr.analysis.sweep.runner import *  # noqa: F403
from asr.analysis.sweep.runner import __all__  # noqa: F401
