"""The GIL is released while C steps a batch: Python threads keep running during a rollout."""

import sys
import threading
import time

import numpy as np
import pytest

import asr


def spin_while_alive(worker):
    """Iterations of a Python loop while `worker` runs (the loop needs the GIL)."""
    ticks = 0
    while worker.is_alive():
        ticks += 1
    return ticks


def per_switch_interval():
    """The loop's iterations in one GIL switch interval, measured here and now (beside a thread
    that sleeps, releasing the GIL), so that the judgement does not depend on how fast or busy
    this machine is."""
    sleeper = threading.Thread(target=time.sleep, args=(0.2,))
    sleeper.start()
    return spin_while_alive(sleeper) / 0.2 * sys.getswitchinterval()


def test_the_judgement_catches_a_call_that_holds_the_gil():
    per_switch = per_switch_interval()
    worker = threading.Thread(target=sum, args=(range(30_000_000),))  # one C call, GIL held
    worker.start()
    assert spin_while_alive(worker) < 20 * per_switch


@pytest.mark.slow
def test_rollout_releases_the_gil():
    per_switch = per_switch_interval()

    b = asr.Batch([asr.Joint("qbmove_advanced", 6)], 50000)
    refs = np.array([0.3, 0.4])
    b.reset(refs=refs)
    entering = threading.Event()

    def run():
        entering.set()
        b.rollout(400, 1e-3, refs, record=())  # 2e7 joint-steps in one C call

    worker = threading.Thread(target=run)
    worker.start()
    entering.wait()
    ticks = spin_while_alive(worker)
    worker.join()
    # If the C call held the GIL, this loop could run only around it: a few switch intervals'
    # worth of iterations. Released, it spins during the whole rollout, which lasts well over a
    # hundred switch intervals (0.5 s at 5 ms); 20 intervals' worth is the margin.
    assert ticks > 20 * per_switch, (ticks, per_switch)
    assert b.step_count == 400 and np.all(b.status == 0)
