"""Parameter identification from measured data (fit): the data it reads (data), the parameters
it estimates (params) and its result with uncertainties, saved and loaded (result)."""

from asr.analysis.identification.fit import *  # noqa: F403
from asr.analysis.identification.fit import __all__  # noqa: F401
