"""Frames of the live simulation: one rollout of the Session's Sim as the arrays the page plots
(build_frame, whoever chooses the references: the manual controls here, a watched policy in
dashboard/watch.py), and their decimation into the plotted history."""

import math

import numpy as np

RECORD = ("q", "tau_joint", "stiffness", "th1", "th2", "clamped")


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
