"""JointTrajectory support for asr's ROS 2 node, without ROS: checking a trajectory's joint names
and points, and interpolating it onto position commands at a simulated time.

A trajectory starts at `start_ns` (simulated time, integer ns) from the joints' positions then
(`q0`, rad); point p is reached at start_ns + times_ns[p]. Between points the position is
linear in time, or a cubic Hermite spline when every point carries velocities (the start
velocity is then `qd0`). After the last point the last positions hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

MAX_POINTS = 10_000  # a trajectory longer than this is refused: the node keeps it in memory
MAX_DURATION_NS = 24 * 3600 * 10**9  # one day of simulated time: later points are a mistake


@dataclass(frozen=True)
class Trajectory:
    """A checked trajectory: joints (K,) node joint indices; times_ns (P,) int ns from start,
    strictly increasing, > 0 for the first unless it is 0; positions (P, K) rad; velocities
    (P, K) rad/s or None; q0, qd0 (K,) rad, rad/s at start_ns."""

    joints: tuple[int, ...]
    start_ns: int
    times_ns: tuple[int, ...]
    positions: FloatArray
    velocities: FloatArray | None
    q0: FloatArray
    qd0: FloatArray

    @property
    def end_ns(self) -> int:
        """Simulated time (ns) at which the last point is reached."""
        return self.start_ns + self.times_ns[-1]


def check_names(names: Sequence[str], joint_names: Sequence[str]) -> tuple[int, ...]:
    """Node joint indices of a trajectory's joint names; ValueError naming the first unknown or
    repeated name and the valid ones."""
    if not names:
        raise ValueError(f"joint_names: empty; valid names: {', '.join(joint_names)}")
    index = {n: j for j, n in enumerate(joint_names)}
    out = []
    for n in names:
        if n not in index:
            raise ValueError(
                f"joint_names: unknown joint {n[:64]!r}; valid names: {', '.join(joint_names)}"
            )
        if index[n] in out:
            raise ValueError(f"joint_names: {n!r} appears twice")
        out.append(index[n])
    return tuple(out)


def _row(values: Sequence[float], k: int, what: str, allow_empty: bool) -> FloatArray | None:
    arr = np.asarray(values, dtype=np.float64).ravel()
    if allow_empty and arr.size == 0:
        return None
    if arr.shape != (k,):
        raise ValueError(f"{what}: expected {k} values (one per joint name), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: not finite: {arr.tolist()}")
    return arr


def build(
    joints: tuple[int, ...],
    points: Sequence[tuple[Sequence[float], Sequence[float], int]],
    start_ns: int,
    q0: FloatArray,
    qd0: FloatArray,
) -> Trajectory:
    """A Trajectory from points (positions (K,) rad, velocities (K,) rad/s or empty,
    time_from_start ns); ValueError naming the point and what is wrong."""
    k = len(joints)
    if not 1 <= len(points) <= MAX_POINTS:
        raise ValueError(f"points: got {len(points)}, valid range [1, {MAX_POINTS}]")
    pos: list[FloatArray] = []
    vel: list[FloatArray | None] = []
    times: list[int] = []
    for p, (positions, speeds, t_ns) in enumerate(points):
        row = _row(positions, k, f"points[{p}].positions", allow_empty=False)
        assert row is not None
        pos.append(row)
        vel.append(_row(speeds, k, f"points[{p}].velocities", allow_empty=True))
        last = times[-1] if times else -1
        if not (last < t_ns <= MAX_DURATION_NS):
            raise ValueError(
                f"points[{p}].time_from_start: got {t_ns} ns, valid range ({last}, "
                f"{MAX_DURATION_NS}] ns (strictly increasing)"
            )
        times.append(int(t_ns))
    velocities = np.array(vel, dtype=np.float64) if all(v is not None for v in vel) else None
    return Trajectory(
        joints=joints,
        start_ns=int(start_ns),
        times_ns=tuple(times),
        positions=np.array(pos, dtype=np.float64),
        velocities=velocities,
        q0=np.asarray(q0, dtype=np.float64).copy(),
        qd0=np.asarray(qd0, dtype=np.float64).copy(),
    )


def sample(traj: Trajectory, t_ns: int) -> FloatArray:
    """(K,) rad: the trajectory's positions at simulated time t_ns (the start positions before
    start_ns, the last point's after its time)."""
    rel = t_ns - traj.start_ns
    if rel <= 0:
        return traj.q0.copy()
    times = traj.times_ns
    if rel >= times[-1]:
        return traj.positions[-1].copy()
    p = next(i for i, t in enumerate(times) if t > rel)  # the segment ends at point p
    t_a = times[p - 1] if p else 0
    x_a = traj.positions[p - 1] if p else traj.q0
    x_b = traj.positions[p]
    h = (times[p] - t_a) * 1e-9  # segment duration, s
    s = (rel - t_a) / (times[p] - t_a)  # in [0, 1): exact ratio of integers
    if traj.velocities is None:
        return np.asarray(x_a + s * (x_b - x_a), dtype=np.float64)
    v_a = traj.velocities[p - 1] if p else traj.qd0
    v_b = traj.velocities[p]
    s2, s3 = s * s, s * s * s  # cubic Hermite basis on [0, 1], velocities scaled by h
    out = (
        (2 * s3 - 3 * s2 + 1) * x_a
        + (s3 - 2 * s2 + s) * h * v_a
        + (-2 * s3 + 3 * s2) * x_b
        + (s3 - s2) * h * v_b
    )
    return np.asarray(out, dtype=np.float64)


def duration_ns(sec: int, nanosec: int) -> int:
    """Integer ns of a builtin_interfaces Duration / Time (sec, nanosec); ValueError when
    nanosec is outside [0, 1e9) or the result is negative."""
    if not 0 <= nanosec < 10**9:
        raise ValueError(f"nanosec: got {nanosec}, valid range [0, 999999999]")
    total = int(sec) * 10**9 + int(nanosec)
    if total < 0:
        raise ValueError(f"time: got {total} ns, must be >= 0")
    return total


def stamp(t_ns: int) -> tuple[int, int]:
    """(sec, nanosec) of a builtin_interfaces/Time from integer ns >= 0 (exact)."""
    sec, nanosec = divmod(int(t_ns), 10**9)
    return sec, nanosec


__all__ = [
    "MAX_DURATION_NS",
    "MAX_POINTS",
    "Trajectory",
    "build",
    "check_names",
    "duration_ns",
    "sample",
    "stamp",
]
