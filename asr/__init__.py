"""asr: simulator for articulated soft robots.

Compliant actuator models (SEA, visco-elastic SEA, AwAS-II, BAVS, qbmove Advanced, qbmove and
user-defined ones), DC motors with friction, PID/PD controllers and the seven operation modes of
the reference toolbox, in C, stepped in batches from NumPy with the GIL released.

>>> import asr
>>> r = asr.compliance("sea", q=0.1, theta1=0.0, k=200.0)
>>> float(r.tau_link), float(r.stiffness)
(-20.0, 200.0)
"""

# asr.ilc, asr.sweep, asr.datasheet, asr.identify and asr.frequency_response are functions; their
# modules are asr.learning.iterative_learning, asr.analysis.sweep, asr.analysis.datasheet,
# asr.analysis.identification and asr.analysis.frequency. The rooms (subpackages) and their
# layering: docs/development.md; the old flat module paths still import (asr/_moved.py).
from asr import _moved
from asr.analysis.datasheet import Datasheet, datasheet
from asr.analysis.frequency import FrequencyResponse, frequency_response
from asr.analysis.identification import Identification, identify
from asr.analysis.sweep import SweepResult, sweep
from asr.common.version import __version__
from asr.controllers.interaction import Admittance, DirectForce
from asr.core.batch import FIELD_DOCS, FIELD_UNITS, FIELDS, MODES, Batch, Joint
from asr.core.errors import SimulationError
from asr.core.models import (
    Compliance,
    ModelSpec,
    ParamSpec,
    PresetSpec,
    compliance,
    models,
    reference_map,
    register_model,
    unregister_model,
)
from asr.learning.gym_registry import register_when_imported
from asr.learning.iterative_learning import ILCResult, ilc
from asr.mujoco.export import export_mjcf
from asr.robots.robot import Robot, RobotFileError, RobotJoint, load_robot
from asr.sim.simulation import Sim

# gymnasium.make_vec("asr/<Task>-v0") after `import asr`, without importing gymnasium here
register_when_imported()
del register_when_imported
_moved.install()

__all__ = [
    "Batch",
    "Joint",
    "FIELDS",
    "FIELD_DOCS",
    "FIELD_UNITS",
    "MODES",
    "SimulationError",
    "Compliance",
    "ModelSpec",
    "ParamSpec",
    "PresetSpec",
    "compliance",
    "models",
    "reference_map",
    "register_model",
    "unregister_model",
    "Robot",
    "RobotFileError",
    "RobotJoint",
    "load_robot",
    "export_mjcf",
    "Sim",
    "Admittance",
    "DirectForce",
    "ilc",
    "ILCResult",
    "sweep",
    "SweepResult",
    "datasheet",
    "Datasheet",
    "identify",
    "Identification",
    "frequency_response",
    "FrequencyResponse",
    "__version__",
]
