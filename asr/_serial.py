"""One call at a time per batch: a Batch, and a Sim built on it, serialise their calls.

The C core takes no locks. While a batch steps, its worker threads read the parameter arrays
(which set_param may reallocate), the state and the statuses; a Sim's rollout also steps the
MuJoCo data of every instance. Two Python threads inside the same object at once would race on
all of these (use-after-free, or MuJoCo's own fatal errors when two steps share an MjData).

So each Batch owns a reentrant lock, held across its C calls (the GIL is released during them,
the lock is not), and a Sim shares its batch's lock. A call from a second thread waits until
the first returns and then runs: calls from several threads take effect whole, one after the
other, in the order they got the lock. Uncontended, taking the lock costs well under a
microsecond. Hold `obj.lock` yourself to make a sequence of calls (reset then rollout) one unit.
"""
import functools


def serialised(method):
    """Run `method` holding its object's `_lock`."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return locked
