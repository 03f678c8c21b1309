"""Commands queued for a worker thread (the simulation runner, the interaction session): each
is (callable, concurrent.futures.Future); the worker applies them in order and sets the Future.
When the worker stops, the commands it will never apply fail instead of leaving their callers
waiting."""

import queue


def _drain(commands):
    """The queued (callable, Future) pairs, in order, until the queue is empty."""
    while True:
        try:
            yield commands.get_nowait()
        except queue.Empty:
            return


def fail_pending(commands, exc):
    """Fail every Future still waiting in the queue `commands` with `exc`."""
    for _, fut in _drain(commands):
        if not fut.done():
            fut.set_exception(exc)


def apply_pending(commands, run):
    """Apply the queued commands in order: each Future gets run(fn)'s result or its exception;
    a cancelled one is skipped."""
    for fn, fut in _drain(commands):
        if not fut.set_running_or_notify_cancel():
            continue
        try:
            fut.set_result(run(fn))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            fut.set_exception(exc)
