"""Frames of the live simulation: one rollout of the Session's Sim as the arrays the page plots
(build_frame, whoever chooses the references: the manual controls here, a watched policy in
dashboard/watch.py), their decimation for the stream (decimate), and the record of every step
that the history and the exports read (record, keep_newest).

The record holds every simulation step of the last `window_s` of simulated time (the stream's
frames are decimated, the record never is), bounded in memory: at most RECORD_MAX_BYTES of
arrays; where a full window would take more (many instances and joints, a small time step, a
long window) it holds the newest steps that fit."""

import math

import numpy as np

RECORD = ("q", "tau_joint", "stiffness", "th1", "th2", "clamped")
# the record's arrays (t and the frame fields, float64): at most 64 MiB; the default arm's
# 10 s window at dt = 1 ms takes 1.2 MB (the first view's two instances: 2.3 MB)
RECORD_MAX_BYTES = 64 * 2**20


def build_frame(t, dt, out, eq):
    """The frame of one rollout from start times t (T,) (s), step dt (s), the rollout's recorded
    arrays `out` (N, T, J) (RECORD) and its equilibria eq (N, T, J): {t: (T,) end times, q, eq,
    defl, tau, stiffness, th1, th2, clamped: (N, T, J)}."""
    q = out["q"]
    return {
        "t": t + dt,
        "q": q,
        "eq": eq,
        "defl": q - eq,
        "tau": out["tau_joint"],
        "stiffness": out["stiffness"],
        "th1": out["th1"],
        "th2": out["th2"],
        "clamped": out["clamped"],
    }


def advance(session, steps, lock):
    """Advance the session's Sim `steps` steps; its frame. The references and the pending push
    are read under `lock`, the rollout runs outside it."""
    sim = session.sim
    t = session.time + sim.dt * np.arange(steps)  # start time of each step
    with lock:
        refs = session.refs_at(t)
        eq = np.array(session.last_eq)
        tau_ext = session.take_push(steps)
    out = sim.rollout(steps, refs, tau_ext=tau_ext, record=RECORD)
    session.time += steps * sim.dt
    return build_frame(t, sim.dt, out, eq)


def join(parts):
    """One frame of consecutive frames."""
    return {
        k: np.concatenate([p[k] for p in parts])
        if k == "t"
        else np.concatenate([p[k] for p in parts], axis=1)
        for k in parts[0]
    }


def decimate(frame, names, max_samples):
    """(frame with at most max_samples samples, its last one kept; the names of the joints whose
    spring reached its deflection clamp in any sample of the frame, before decimation drops
    samples, in any instance)."""
    hit = np.any(frame["clamped"] > 0, axis=(0, 1))  # (J,)
    clamped = [name for name, h in zip(names, hit) if h]
    T = frame["t"].size
    stride = int(math.ceil(T / max_samples))
    idx = np.arange(T - 1, -1, -stride)[::-1]
    return {
        k: (v[idx] if k == "t" else v[:, idx]) for k, v in frame.items() if k != "clamped"
    }, clamped


def record(frame):
    """The frame as the record keeps it: every step, without the per-step `clamped` flags (the
    stream reports them)."""
    return {k: v for k, v in frame.items() if k != "clamped"}


def record_steps(frame, window_s, dt):
    """Steps the record keeps: the window_s of simulated time (window_s / dt steps), fewer
    where they would take more than RECORD_MAX_BYTES (the bytes of one step from `frame`)."""
    per_step = sum(v.nbytes for v in frame.values()) / max(1, frame["t"].size)
    return max(1, min(int(round(window_s / dt)), int(RECORD_MAX_BYTES // per_step)))


def keep_newest(history, steps):
    """Drop the oldest steps of the deque of record frames `history` beyond `steps`: whole
    frames, then the oldest one cut (a copy: frames are never modified once kept)."""
    extra = sum(f["t"].size for f in history) - steps
    while extra > 0:
        first = history[0]
        n = first["t"].size
        if n <= extra:
            history.popleft()
            extra -= n
            continue
        history[0] = {k: (v[extra:] if k == "t" else v[:, extra:]).copy() for k, v in first.items()}
        extra = 0
