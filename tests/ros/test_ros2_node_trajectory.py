"""asr.ros.ros2_trajectory: JointTrajectory checks and interpolation, without ROS."""

import numpy as np
import pytest

from asr.ros import ros2_trajectory as T

NAMES = ("joint1", "joint2")


def _traj(points, start=0, q0=(0.0, 0.0), qd0=(0.0, 0.0), joints=(0, 1)):
    return T.build(joints, points, start, np.array(q0), np.array(qd0))


def test_names_map_to_indices_and_bad_names_are_named():
    assert T.check_names(["joint2", "joint1"], NAMES) == (1, 0)
    with pytest.raises(ValueError, match=r"unknown joint 'elbow'; valid names: joint1, joint2"):
        T.check_names(["elbow"], NAMES)
    with pytest.raises(ValueError, match="appears twice"):
        T.check_names(["joint1", "joint1"], NAMES)
    with pytest.raises(ValueError, match="empty"):
        T.check_names([], NAMES)


def test_linear_interpolation_from_the_start_positions():
    t = _traj([([1.0, -1.0], [], 100), ([2.0, 0.0], [], 300)], start=1000, q0=(0.0, 1.0))
    assert np.array_equal(T.sample(t, 900), [0.0, 1.0])  # before the start: start positions
    assert np.allclose(T.sample(t, 1050), [0.5, 0.0])
    assert np.array_equal(T.sample(t, 1100), [1.0, -1.0])
    assert np.allclose(T.sample(t, 1200), [1.5, -0.5])
    assert np.array_equal(T.sample(t, 5000), [2.0, 0.0])  # after the end: the last point
    assert t.end_ns == 1300


def test_hermite_when_every_point_has_velocities():
    # x(s) from 0 to 1 over 1 s with zero end velocities: the smoothstep 3 s^2 - 2 s^3
    t = _traj([([1.0], [0.0], 10**9)], q0=(0.0,), qd0=(0.0,), joints=(0,))
    for s in (0.25, 0.5, 0.75):
        assert T.sample(t, int(s * 1e9))[0] == pytest.approx(3 * s**2 - 2 * s**3, abs=1e-12)
    # a straight line is reproduced exactly when velocities match its slope
    line = _traj([([2.0], [2.0], 10**9)], q0=(0.0,), qd0=(2.0,), joints=(0,))
    assert T.sample(line, 3 * 10**8)[0] == pytest.approx(0.6, abs=1e-12)


def test_bad_points_are_rejected_with_the_point_named():
    with pytest.raises(ValueError, match=r"points\[1\].positions: expected 2 values"):
        _traj([([0.0, 0.0], [], 1), ([0.0], [], 2)])
    with pytest.raises(ValueError, match=r"points\[0\].positions: not finite"):
        _traj([([np.nan, 0.0], [], 1)])
    with pytest.raises(ValueError, match=r"points\[1\].time_from_start: got 5 ns.*increasing"):
        _traj([([0.0, 0.0], [], 5), ([0.0, 0.0], [], 5)])
    with pytest.raises(ValueError, match=r"points: got 0, valid range \[1, 10000\]"):
        _traj([])
    with pytest.raises(ValueError, match="nanosec"):
        T.duration_ns(0, 10**9)


def test_stamps_split_exactly():
    for ns in (0, 1, 999_999_999, 10**9, 3 * 10**9 + 7, 123_456_789_012_345):
        sec, nanosec = T.stamp(ns)
        assert sec * 10**9 + nanosec == ns and 0 <= nanosec < 10**9
        assert T.duration_ns(sec, nanosec) == ns
