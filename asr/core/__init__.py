"""The actuator core (csrc/core): the C extension's handle (ffi), compliance models and their
registry (models, model_registry, model_callbacks, user_models), the batch of joints stepped
in C (batch, with its inputs, status and state fields), and the errors a C status becomes
(errors). Only this package and the parts that wrap their own C (engines, controllers, cpr,
mujoco) touch the extension."""

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
]
