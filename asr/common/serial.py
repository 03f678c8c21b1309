"""One call at a time per batch: a Batch, and a Sim built on it, serialise their calls.

The C core takes no locks. While a batch steps, its worker threads read the parameter arrays
(which set_param may reallocate), the state and the statuses; a Sim's rollout also steps the
MuJoCo data of every instance. Two Python threads inside the same object at once would race on
all of these (use-after-free, or MuJoCo's own fatal errors when two steps share an MjData).

So each Batch owns a BatchLock, a reentrant lock held across its C calls (the GIL is released
during them, the lock is not), and a Sim shares its batch's lock. A call from a second thread
waits until the first returns and then runs: calls from several threads take effect whole, one
after the other, in the order they got the lock. Hold `obj.lock` yourself to make a sequence of
calls (reset then rollout) one unit.

Two ways into a batch are refused rather than waited for, since waiting could not help:
- from inside its own running C call: a Python compliance model's callback runs on the thread
  that holds the lock, so the reentrant lock would let a reset or set_param change (or free) what
  the running step is using;
- in a child process forked while another thread was inside a call: that thread does not exist
  in the child, so the lock would never be released, and the state is a copy from mid-call.
"""

import functools
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

_Method = TypeVar("_Method", bound=Callable[..., Any])


class BatchLock:
    """A batch's lock: a reentrant lock that also knows when the batch must refuse calls.

    refusal: None, or why a call that got the lock is refused (set while a C call that may call
    back into Python runs, and in a forked child for a batch that was in use)."""

    def __init__(self):
        self._rlock = threading.RLock()
        self.refusal = None
        _LOCKS.add(self)

    def acquire(self, blocking=True, timeout=-1):
        return self._rlock.acquire(blocking, timeout)

    def release(self):
        self._rlock.release()

    def __enter__(self):
        self._rlock.acquire()
        return self

    def __exit__(self, *exc):
        self._rlock.release()

    def run_c(self, what, fn, *args):
        """fn(*args), a C call that may call a Python model back: calls into this batch from
        inside it are refused, naming `what` (the running call)."""
        before, self.refusal = (
            self.refusal,
            (
                "called from inside a callback (a Python compliance model) of this batch's "
                f"running {what}: it would change the batch under the call that is using it; "
                f"make the call after {what} returns"
            ),
        )
        try:
            return fn(*args)
        finally:
            self.refusal = before

    def _after_fork_in_child(self):
        """In a forked child: a lock held by another thread of the parent can never be
        released here; replace it, and refuse every call (the state is from mid-call)."""
        if self._rlock.acquire(blocking=False):  # free, or held by this (the forking) thread
            self._rlock.release()
            return
        self._rlock = threading.RLock()
        self.refusal = (
            "this process was forked while another thread was inside a call on this "
            "batch: the child's copy of it is from the middle of that call and cannot "
            "be used; create a new Batch / Sim in the child (or fork while no thread "
            "uses this one)"
        )


_LOCKS: weakref.WeakSet[BatchLock] = weakref.WeakSet()


def _after_fork_in_child():
    for lock in list(_LOCKS):
        lock._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def serialised(method: _Method) -> _Method:
    """Run `method` holding its object's `_lock` (a BatchLock), unless the lock refuses it."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        lock = self._lock
        with lock._rlock:
            if lock.refusal is not None:
                raise RuntimeError(
                    f"{type(self).__name__}.{method.__name__}: refused, {lock.refusal}"
                )
            return method(self, *args, **kwargs)

    return cast(_Method, locked)  # the same signature: wraps passes every argument on
