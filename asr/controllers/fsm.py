"""The interaction controller's finite state machine ([Storiale2022] sec. 2.2.1; the C table
asr_ic_transition): its states, events, transitions and the error for a rejected input."""

from asr.core.ffi import lib

# The FSM: state names by value, events by name.
FSM_STATES = ("static", "trajectory", "joint")
EVENTS = {
    "init": lib.ASR_EV_INIT,
    "trajectory_received": lib.ASR_EV_TRAJECTORY_RECEIVED,
    "setpoint_received": lib.ASR_EV_SETPOINT_RECEIVED,
    "trajectory_completed": lib.ASR_EV_TRAJECTORY_COMPLETED,
    "setpoint_reached": lib.ASR_EV_SETPOINT_REACHED,
}


def transition(state: str, event: str) -> str | None:
    """The FSM state after `event` (a name of EVENTS) in `state` (a name of FSM_STATES), or None
    when the event is rejected there."""
    if state not in FSM_STATES:
        raise ValueError(f"state: got {state!r}, valid: {', '.join(FSM_STATES)}")
    if event not in EVENTS:
        raise ValueError(f"event: got {event!r}, valid: {', '.join(EVENTS)}")
    s = lib.asr_ic_transition(FSM_STATES.index(state), EVENTS[event])
    return None if s < 0 else FSM_STATES[s]


class ControllerBusy(RuntimeError):
    """A setpoint or trajectory was sent while one runs ([Storiale2022]: no other input is
    accepted then)."""


__all__ = ["FSM_STATES", "EVENTS", "transition", "ControllerBusy"]
