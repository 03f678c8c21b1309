"""Errors raised by asr, and the meaning of the C core's status codes.

Every failed C call is translated here, by raise_for_status, with one rule: an input error
(INPUT_ERRORS: a value out of range, a non-finite input, a mode or parameter the model does not
have) raises ValueError, ASR_ERR_NOMEM MemoryError, anything else RuntimeError.

User callbacks (a Python compliance model's elastic and refmap functions, called from C): a
non-zero return aborts the evaluation of that point or instance. ASR_ERR_RANGE is reported as a
range error, any other value as ASR_ERR_CALLBACK (a batch freezes the instance). A Python
callback that raises returns ASR_ERR_CALLBACK after storing its exception (the first one of the
call); every caller re-raises that exception, unchanged, as soon as the C call returns and before
translating the status (Batch.step / rollout / reset, Sim, compliance, reference_map).
"""

from asr.core.ffi import lib

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


INPUT_ERRORS = frozenset(
    {lib.ASR_ERR_RANGE, lib.ASR_ERR_INPUT, lib.ASR_ERR_MODEL, lib.ASR_ERR_PARAM}
)


def raise_for_status(code, what, hints=None, detail=""):
    """Raise for a non-OK status of a C call: ``"{what}: {text}{detail}"``, the text from
    ``hints`` (a dict status -> text, for what the caller knows about its failures) or else
    status_text. ValueError for INPUT_ERRORS, MemoryError for ASR_ERR_NOMEM, RuntimeError
    otherwise."""
    code = int(code)
    if code == lib.ASR_OK:
        return
    text = (hints or {}).get(code) or status_text(code)
    if code == lib.ASR_ERR_NOMEM:
        error = MemoryError
    else:
        error = ValueError if code in INPUT_ERRORS else RuntimeError
    raise error(f"{what}: {text}{detail}")
