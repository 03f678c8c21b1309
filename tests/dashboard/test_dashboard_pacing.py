"""The live simulation's pacing (dashboard/pacing.py): simulated time follows wall time x speed
even when ticks come late, within the catch-up bound. Pure arithmetic on given wall times."""

import numpy as np
import pytest

from asr_dashboard.pacing import Pacer

PERIOD, DT = 1 / 30, 1e-3


def simulate(pacer, wall_times, speed):
    return sum(pacer.steps(t, PERIOD, speed, DT) for t in wall_times)


@pytest.mark.parametrize("speed", [1.0, 0.5, 2.0, 0.01])
def test_late_ticks_are_made_up(speed):
    """Ticks late by a random 0 - 40 % of a period (a busy machine): after 60 s of them the
    simulated time is wall time x speed to within one step (a fixed step count per tick would
    fall behind by the mean lateness, about 17 %)."""
    rng = np.random.default_rng(0)
    gaps = PERIOD * (1 + 0.4 * rng.random(1800))
    wall = np.cumsum(gaps)
    p = Pacer()
    first = p.steps(0.0, PERIOD, speed, DT)  # the first tick advances one period
    assert first == int(PERIOD * speed / DT)
    steps = simulate(p, wall, speed)
    assert abs(steps * DT - wall[-1] * speed) <= DT
    fixed = len(wall) * round(PERIOD * speed / DT) * DT
    if speed >= 1:
        assert fixed < 0.9 * wall[-1] * speed  # the lateness the old rule lost


def test_slow_speed_carries_fractions():
    """At 1 % speed a 30 Hz tick is due a third of a step: one step every third tick, none
    lost and none invented."""
    p = Pacer()
    counts = [p.steps(k * PERIOD, PERIOD, 0.01, DT) for k in range(30)]
    assert set(counts) == {0, 1} and sum(counts) in (9, 10)


def test_catch_up_is_bounded_and_reset_forgets():
    """A 5 s stall (a suspended laptop) makes up at most max_catch_up_s and the rest is counted
    in lost_s; after reset() the next tick advances one period, whatever the time since; a
    clock going backwards adds nothing."""
    p = Pacer(max_catch_up_s=0.25)
    p.steps(0.0, PERIOD, 1.0, DT)
    assert p.lost_s == 0.0
    assert p.steps(5.0, PERIOD, 1.0, DT) == 250
    assert p.lost_s == pytest.approx(4.75)
    p.reset()
    assert p.steps(100.0, PERIOD, 1.0, DT) == int(PERIOD / DT)
    assert p.steps(99.0, PERIOD, 1.0, DT) == 0
