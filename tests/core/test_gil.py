"""The GIL is released while C steps a batch: Python threads keep running during a rollout."""

import threading

import numpy as np

import asr


def test_rollout_releases_the_gil():
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
    ticks = 0
    while worker.is_alive():
        ticks += 1
    worker.join()
    # If the C call held the GIL, this loop could run only in the few milliseconds around it
    # (one interpreter switch interval, 5 ms: some 1e4-1e5 iterations); with the GIL released it
    # spins during the whole rollout, which takes well over 0.1 s (millions of iterations).
    assert ticks > 1_000_000, ticks
    assert b.step_count == 400 and np.all(b.status == 0)
