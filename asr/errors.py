"""Errors raised by asr, and the meaning of the C core's status codes."""
from asr._ffi import lib

STATUS_TEXT = {
    lib.ASR_OK: "ok",
    lib.ASR_ERR_NULL: "missing array",
    lib.ASR_ERR_RANGE: "value outside its valid range",
    lib.ASR_ERR_MODEL: "model does not support this operation mode",
    lib.ASR_ERR_PARAM: "unknown parameter",
    lib.ASR_ERR_NONFINITE: "state became non-finite (NaN or inf): the configuration cannot be "
    "integrated at this step; lower dt or max_substep, or check the parameters",
    lib.ASR_ERR_INPUT: "non-finite input (NaN or inf)",
    lib.ASR_ERR_NOMEM: "out of memory",
    lib.ASR_ERR_CALLBACK: "a user-defined model failed",
    lib.ASR_ERR_DIVERGED: "the simulation diverged: the link turned faster than link_vel_max; "
    "the usual cause is a spring too stiff for the time step (the explicit coupling needs "
    "omega dt < 2, omega = sqrt(stiffness / link inertia)): lower the timestep or the stiffness",
}


def status_text(code):
    """Human-readable meaning of a C status code."""
    return STATUS_TEXT.get(int(code), f"unknown status {int(code)}")


class SimulationError(RuntimeError):
    """An instance of a batch stopped: which instance, joint and step, and why.

    Attributes: ``instance``, ``joint``, ``step`` (ints) and ``code`` (C status code). The
    instance is frozen (applies zero torque) until the batch is reset.
    """

    def __init__(self, instance, joint, step, code, more=0, hint=""):
        self.instance, self.joint, self.step, self.code = instance, joint, step, int(code)
        self.hint = hint
        extra = f" ({more} more instance(s) stopped; see Batch.errors())" if more else ""
        cause = f"; {hint}" if hint else ""
        super().__init__(
            f"instance {instance}, joint {joint}, step {step}: {status_text(code)}{cause}{extra}"
        )


def check_status(code, what):
    """Raise for a non-OK status of a C call that validation should have prevented."""
    if code == lib.ASR_ERR_NOMEM:
        raise MemoryError(f"{what}: out of memory")
    if code != lib.ASR_OK:
        raise ValueError(f"{what}: {status_text(code)}")
