"""The CPR solver's failed C calls (asr.cpr.solver's status table): each status of the C solver
becomes the exception of asr's one rule (asr.core.errors.raise_for_status) with a message that
says what failed and what to try, and never a bare status number."""

import pytest

from asr.core.ffi import lib
from asr.cpr import solver


@pytest.mark.parametrize(
    "status, error, words",
    [
        (lib.ASR_ERR_RANGE, ValueError, "n_grid in [2, 100000]"),
        (lib.ASR_ERR_INPUT, ValueError, "NaN or inf"),
        (lib.ASR_ERR_MODEL, ValueError, "check the robot file"),
        (lib.ASR_ERR_NONFINITE, RuntimeError, "solve from a guess nearer it"),
        (lib.ASR_ERR_NOMEM, MemoryError, "lower n_grid or the number of poses"),
    ],
)
def test_cpr_failures_say_what_failed_and_what_to_try(status, error, words):
    with pytest.raises(error) as info:
        solver._check(status, "solve_igm")
    text = str(info.value)
    assert text.startswith("solve_igm: ") and words in text and "status" not in text


def test_a_successful_call_raises_nothing():
    assert solver._check(lib.ASR_OK, "solve_igm") is None
