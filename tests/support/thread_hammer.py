"""Many Python threads calling into one asr.Sim (or one asr.Batch) at once, for a bounded time.

Run as a script (tests/core/test_threads.py does, in a child process, so that a crash is a failed
test and not a dead test run): python tests/support/thread_hammer.py {sim,batch} SECONDS THREADS.
Every operation keeps the physics unchanged (parameters switched between one shared value and
per-instance arrays of the same value, the same mode set again, the worker thread count changed),
so the simulation must stay finite and running. Prints "ops <count> errors <count>" and exits 0
when no call raised; a crash shows as the child's exit status.
"""

import random
import sys
import threading
import time

import numpy as np

import asr

N = 4


def _sim_ops(sim):
    b = sim.batch
    refs = np.zeros((N, sim.n_joints, 2))
    refs[..., 1] = 0.4
    k = b.get_param(0, "k1")[0]

    def rollout(rng):
        out = sim.rollout(rng.randint(1, 40), refs, record=("q", "tau_joint"))
        assert np.all(np.isfinite(out["q"]))

    def step(rng):
        sim.step(refs)

    def shared_param(rng):
        b.set_param(0, "k1", k)

    def per_instance_param(rng):
        b.set_param(0, "k1", np.full(N, k))

    def reset(rng):
        sim.reset()

    def mode(rng):
        b.set_mode(rng.randrange(sim.n_joints), 6)

    def threads(rng):
        b.threads = rng.choice((1, 2))

    def read(rng):
        assert sim.q.shape == (N, sim.n_joints) and b.get_param(1, "k1").shape == (N,)
        b.errors()

    return (rollout, step, shared_param, per_instance_param, reset, mode, threads, read)


def _batch_ops(b):
    n, nj = b.n_instances, b.n_joints
    refs = np.zeros((n, nj, 2))
    refs[..., 1] = 0.3
    q = np.linspace(-0.5, 0.5, n * nj).reshape(n, nj)

    def rollout(rng):
        out = b.rollout(rng.randint(1, 200), 1e-3, refs, q=q, record=("tau_joint", "th1"))
        assert np.all(np.isfinite(out["tau_joint"]))

    def step(rng):
        b.step(q, 0.0, refs, 1e-3)

    def shared_param(rng):
        b.set_param(rng.randrange(nj), "kp", 80.0)

    def per_instance_param(rng):
        b.set_param(rng.randrange(nj), "kp", np.full(n, 80.0))

    def limits(rng):
        b.set_params(0, pos_min=-3.0, pos_max=3.0)

    def reset(rng):
        b.reset(q, refs)

    def threads(rng):
        b.threads = rng.choice((1, 2, 4))

    return (rollout, step, shared_param, per_instance_param, limits, reset, threads)


def hammer(ops, seconds, n_threads):
    deadline = time.monotonic() + seconds
    counts = [0] * n_threads
    errors = []

    def worker(t):
        rng = random.Random(t)
        while time.monotonic() < deadline:
            try:
                rng.choice(ops)(rng)
            except Exception as exc:  # noqa: BLE001 - counted and printed
                errors.append(f"{type(exc).__name__}: {exc}")
                return
            counts[t] += 1

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts), errors


def main(kind, seconds, n_threads):
    if kind == "sim":
        sim = asr.Sim("qbmove_arm_2dof", N, threads=2)
        ops = _sim_ops(sim)
    else:
        joints = [asr.Joint("qbmove_advanced", 6), asr.Joint("sea", 5), asr.Joint("qbmove", 6)]
        ops = _batch_ops(asr.Batch(joints, 3000, threads=2))
    count, errors = hammer(ops, seconds, n_threads)
    print(f"ops {count} errors {len(errors)}")
    for e in errors[:5]:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3])))
