"""Real-time pacing of the live simulation: how many steps each tick of the runner advances.

The runner ticks `update_hz` times a second, but a tick can start late when the machine is busy
(fifty browsers reading frames, an ILC run beside it). Advancing a fixed `period * speed / dt`
steps per tick would then let simulated time drift behind the wall clock by the lateness.
The Pacer instead advances by the wall time that really passed since the previous tick, so
simulated time follows wall time x speed; the fraction of a step left over carries to the next
tick (a slow speed advances a step every few ticks instead of one step per tick). A single
tick makes up at most `max_catch_up_s` of wall time: a machine too slow for real time falls
behind steadily rather than spending ever longer ticks catching up. The wall time beyond that
bound is added up in `lost_s` (the dashboard's state reports it), so a stalled machine shows
why simulated time fell behind wall time.
"""

MAX_CATCH_UP_S = 1.0  # s of wall time one tick may make up (a stall of a second is still recovered)


class Pacer:
    def __init__(self, max_catch_up_s=MAX_CATCH_UP_S):
        self.max_catch_up_s = max_catch_up_s
        self.lost_s = 0.0  # wall time (s) not made up because a tick came more than the bound late
        self.reset()

    def reset(self):
        """Forget the previous tick (after a pause the next tick advances one period)."""
        self.last = None
        self.carry = 0.0  # steps due but not yet taken, in [0, 1)

    def steps(self, now, period, speed, dt):
        """Steps due at wall time `now` (s) for a tick `period` (s), `speed` (simulated s per
        wall s) and step `dt` (s); zero when less than a step is due yet."""
        elapsed = period if self.last is None else max(now - self.last, 0.0)
        if elapsed > self.max_catch_up_s:
            self.lost_s += elapsed - self.max_catch_up_s
            elapsed = self.max_catch_up_s
        self.last = now
        due = elapsed * speed / dt + self.carry
        n = int(due)
        self.carry = due - n
        return n
