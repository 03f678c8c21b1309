"""Frames of the live simulation: one rollout of the Session's Sim as the arrays the page plots
(build_frame, whoever chooses the references: the manual controls here, a watched policy in
dashboard/watch.py), their decimation for the stream (decimate), and the record of every step
that the history and the exports read (record, keep_newest), and the archive of the run's
older steps that the page scrubs back over (Archive, run_frames).

The record holds every simulation step of the last `window_s` of simulated time (the stream's
frames are decimated, the record never is), bounded in memory: at most RECORD_MAX_BYTES of
arrays; where a full window would take more (many instances and joints, a small time step, a
long window) it holds the newest steps that fit. The steps it drops go to its Archive (one per
record deque, that is per run: a reset starts a new deque), min/max decimated by halves whenever
it would pass ARCHIVE_MAX_BYTES: the run's whole past stays viewable, coarser the longer it
runs; sample_at reads the link angles of one past step there, for the 3-D view's replay.

A robot with a free base (the snake's head: a MuJoCo free joint, not actuated) has its pose
recorded too, after every step ("base": position m, unit quaternion w x y z, 7 numbers per free
joint and instance), so that the replay draws the base where it was, not where it is now."""

import ctypes
import math
import time
import weakref

import numpy as np

from .figure import decimate_time, decimate_values

RECORD = ("q", "tau_joint", "stiffness", "th1", "th2", "clamped")
# the record's arrays (t and the frame fields, float64): at most 64 MiB; the default arm's
# 10 s window at dt = 1 ms takes 1.2 MB (the first view's two instances: 2.3 MB)
RECORD_MAX_BYTES = 64 * 2**20
# a free joint's pose (asr.Sim.free_base_adr: position (3) m, then a unit quaternion (4) w x y z)
# is kept as float64 per instance and step: 56 bytes per free joint (the snake's one free joint
# beside its 12 actuated joints' 672 bytes of frame fields and 8 of time: +8 %)


def build_frame(t, dt, out, eq):
    """The frame of one rollout from start times t (T,) (s), step dt (s), the rollout's recorded
    arrays `out` (N, T, J) (RECORD; and "base" (N, T, 7 F) of a free base: rollout) and its
    equilibria eq (N, T, J): {t: (T,) end times, q, eq, defl, tau, stiffness, th1, th2,
    clamped: (N, T, J)}, and base (N, T, 7 F) where `out` has it."""
    q = out["q"]
    base = {"base": out["base"]} if "base" in out else {}
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
        **base,
    }


def rollout(sim, steps, refs, tau_ext, record):
    """sim.rollout(steps, refs (N, steps, J, 2), tau_ext=tau_ext, record=record): {field: (N,
    steps, J)}, with "base" (N, steps, 7 F), the free base's pose after every step
    (sim.free_base_adr), for a robot that has one: recorded in the same C call
    (asr.Sim.rollout's record_qpos), so every robot's frame is one call."""
    adr = sim.free_base_adr
    if not adr.size:
        return sim.rollout(steps, refs, tau_ext=tau_ext, record=record)
    out = sim.rollout(steps, refs, tau_ext=tau_ext, record=record, record_qpos=adr)
    out["base"] = out.pop("qpos")
    return out


def advance(session, steps, lock):
    """Advance the session's Sim `steps` steps; its frame. The references and the pending push
    are read under `lock`, the rollout runs outside it."""
    sim = session.sim
    t = session.time + sim.dt * np.arange(steps)  # start time of each step
    with lock:
        refs = session.refs_at(t)
        eq = np.array(session.last_eq)
        tau_ext = session.take_push(steps)
    out = rollout(sim, steps, refs, tau_ext, RECORD)
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
        k: (v[idx] if k == "t" else v[:, idx])
        for k, v in frame.items()
        if k not in ("clamped", "base")
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
    """Move the oldest steps of the deque of record frames `history` beyond `steps` to its
    archive (archive_of): whole frames, then the oldest one cut (copies: frames are never
    modified once kept). The memory freed meanwhile goes back to the system every
    PERIODIC_TRIM_S (give_back_memory)."""
    give_back_memory(PERIODIC_TRIM_S)
    extra = sum(f["t"].size for f in history) - steps
    archive = archive_of(history) if extra > 0 else None
    while extra > 0:
        first = history[0]
        n = first["t"].size
        if n <= extra:
            archive.add(history.popleft())
            extra -= n
            continue
        archive.add(_copy(cut(first, 0, extra)))
        history[0] = _copy(cut(first, extra, n))
        extra = 0


def cut(frame, i, j):
    """Steps i..j-1 of a record frame (views)."""
    return {k: (v[i:j] if k == "t" else v[:, i:j]) for k, v in frame.items()}


def _copy(frame):
    return {k: v.copy() for k, v in frame.items()}


def nbytes(frame):
    return sum(v.nbytes for v in frame.values())


# ---------------------------------------------------------------- the run's archive

# the archive's arrays: at most 32 MiB per run (the default arm's 1 kHz steps: about 4.5 min at
# full resolution; each halving doubles the span at half the resolution)
ARCHIVE_MAX_BYTES = 32 * 2**20
# evicted frames are merged into chunks of at most this many frames or (from several frames)
# steps: a halving works on one chunk, so it costs about a millisecond, never the whole archive
MERGE_FRAMES = 256
CHUNK_STEPS = 8192


def halve(frame):
    """A record frame at half its steps: each 4 steps -> their minimum and maximum (in the order
    they occurred) at the 4 steps' first and last time (figure's min/max decimation); the free
    base's pose (a pose, not a value to bound) -> its poses at those two steps themselves."""
    return {
        k: decimate_time(v, 4)
        if k == "t"
        else (_pose_ends(v) if k == "base" else decimate_values(v, 4))
        for k, v in frame.items()
    }


def _pose_ends(v):
    """(N, T, C) -> (N, 2 B, C): of each 4 steps the first and last (decimate_time's buckets:
    padded at the start with the first step, the last bucket ending on the newest)."""
    pad = (-v.shape[1]) % 4
    if pad:
        v = np.concatenate([np.repeat(v[:, :1], pad, axis=1), v], axis=1)
    return v[:, np.sort(np.r_[0 : v.shape[1] : 4, 3 : v.shape[1] : 4])]


class Archive:
    """The steps of one run older than its record: chunks of record frames, oldest first, each
    with its level (halved `level` times). Over its bound, the newest chunk of the lowest level
    is halved (a chunk too short to halve counts one level up), so the resolution stays about
    even over the run. Frames are never modified once kept (readers hold references outside
    the lock): a merge or a halving replaces the list."""

    def __init__(self, max_bytes=ARCHIVE_MAX_BYTES):
        self.max_bytes = max_bytes
        self.chunks = []  # [(level, frame)]
        self.tail = []  # frames added since the last merge (level 0)
        self.nbytes = 0
        self.halvings = 0

    def add(self, frame):
        self.tail.append(frame)
        self.nbytes += nbytes(frame)
        if len(self.tail) >= MERGE_FRAMES or sum(f["t"].size for f in self.tail) >= CHUNK_STEPS:
            self._merge_tail()
        while self.nbytes > self.max_bytes and self._halve():
            pass

    def _merge_tail(self):
        if self.tail:
            self.chunks = [*self.chunks, (0, join(self.tail))]
            self.tail = []

    def _halve(self):
        """Halve one chunk (see the class doc); False when none can be halved."""
        self._merge_tail()
        chunks = list(self.chunks)
        if not chunks or all(f["t"].size < 8 for _, f in chunks):
            return False
        low = min(level for level, _ in chunks)
        i = max(k for k, (level, _) in enumerate(chunks) if level == low)
        f = chunks[i][1]
        if f["t"].size >= 8:
            h = halve(f)
            self.nbytes += nbytes(h) - nbytes(f)
            self.halvings += 1
            f = h
        chunks[i] = (low + 1, f)
        # a neighbour of the same level, the two small enough together: one chunk
        for j in (i, i - 1):
            if 0 <= j < len(chunks) - 1 and chunks[j][0] == chunks[j + 1][0]:
                a, b = chunks[j][1], chunks[j + 1][1]
                if a["t"].size + b["t"].size <= CHUNK_STEPS:
                    chunks[j : j + 2] = [(chunks[j][0], join([a, b]))]
        self.chunks = chunks
        return True

    def frames(self):
        return [f for _, f in self.chunks] + self.tail


_ARCHIVES: dict[
    int, Archive
] = {}  # id(record deque) -> its Archive, dropped when the deque is collected


def archive_of(history):
    """The Archive of the record deque `history` (made on first use). Kept beside the deque,
    not in it: the exports and first views read the deque as the record alone. When the deque
    goes (a reset, a robot switch, a compare change, a workspace load: a new run), its archive
    goes with it and the memory they held is given back to the system (_released)."""
    key = id(history)
    archive = _ARCHIVES.get(key)
    if archive is None:
        archive = _ARCHIVES[key] = Archive()
        weakref.finalize(history, _released, key)
    return archive


def _released(key):
    _ARCHIVES.pop(key, None)
    give_back_memory(RELEASE_TRIM_S)


# ---------------------------------------------------------------- memory given back

# What Python frees (a run's record and archive, a robot's Sim, an export's bytes, an
# interaction session's Sim) goes back to the C allocator, and glibc keeps freed heap pages
# (in the main heap below its top, in every thread's arena) for reuse instead of returning them
# to the system: the server's resident memory rose over a tour of every feature and never came
# back (issue 46: 107 -> 314 MB). malloc_trim(0) returns them (measured over a soak cycle of
# every robot and feature, in one process: 200 -> 137 MB, 12 MB of it Python objects); it is
# called when a run is released and every PERIODIC_TRIM_S while the simulation runs, never more
# often than its interval. A trim takes TRIM_COST measured below.
RELEASE_TRIM_S = 1.0  # s: after a run is released, malloc_trim at most this often
PERIODIC_TRIM_S = 2.0  # s: while the simulation runs (keep_newest), malloc_trim this often
_TRIM = {"at": -math.inf, "trims": 0}  # monotonic time of the last trim, trims so far


def _malloc_trim():
    """glibc's malloc_trim, or None elsewhere (another C library: nothing to call)."""
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_MALLOC_TRIM = _malloc_trim()


def give_back_memory(min_interval_s):
    """Return the C heap's free pages to the system (malloc_trim(0)) unless the last trim was
    less than `min_interval_s` (s) ago; True when it trimmed."""
    now = time.monotonic()
    if _MALLOC_TRIM is None or now - _TRIM["at"] < min_interval_s:
        return False
    _TRIM["at"] = now
    _TRIM["trims"] += 1
    _MALLOC_TRIM(0)
    return True


def run_frames(history, t0, t1):
    """The run's frames (archive, then record) cut to the steps with t0 <= t <= t1 (s): views,
    call under the lock that guards `history`; nothing is copied."""
    out = []
    for f in [*archive_of(history).frames(), *history]:
        t = f["t"]
        if not t.size or t[-1] < t0 or t[0] > t1:
            continue
        i, j = np.searchsorted(t, t0, "left"), np.searchsorted(t, t1, "right")
        if j > i:
            out.append(cut(f, i, j))
    return out


def run_span(history):
    """(first, last) step time of the run kept (archive and record), s, or None."""
    parts = [f["t"] for f in [*archive_of(history).frames(), *history] if f["t"].size]
    return (float(parts[0][0]), float(parts[-1][-1])) if parts else None


def sample_at(history, t):
    """(time, q, base) of the kept step (archive or record) nearest to t (s): time (s), q (N, J)
    rad, the link angles of every instance at that step (a copy), at the resolution the run is
    kept at there (the archive's halved chunks: a minimum or maximum of the steps it stands
    for); base (N, 7 F), the free base's pose at that step (position m, quaternion; a halved
    chunk's is that of the step whose time it has), or None for a robot without one; None when
    nothing is kept. Call under the lock that guards `history`."""
    best = None  # (distance s, frame, index)
    for f in [*archive_of(history).frames(), *history]:  # oldest first
        ts = f["t"]
        if not ts.size:
            continue
        if best is not None and ts[0] - t > best[0]:
            break  # this frame and every later one are farther
        i = int(np.searchsorted(ts, t))
        for k in (i - 1, i):
            if 0 <= k < ts.size and (best is None or abs(float(ts[k]) - t) < best[0]):
                best = (abs(float(ts[k]) - t), f, k)
    if best is None:
        return None
    _, f, k = best
    base = np.array(f["base"][:, k, :], float) if "base" in f else None
    return float(f["t"][k]), np.array(f["q"][:, k, :], float), base
