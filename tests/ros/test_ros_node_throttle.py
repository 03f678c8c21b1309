"""The rejection log of asr's live nodes (asr.ros.rejections, through NodeCore.reject, which
the ROS 1 and ROS 2 nodes share): throttled per topic and reason, not per topic, with the
rejections held back counted and reported. The throttle's clock is stepped by the test, so
nothing here waits on wall time."""

import pytest

from asr.ros.node_core import NodeCore
from asr.ros.rejections import MAX_KEYS, WARN_PERIOD_S, RejectionLog, reason_key


class Clock:
    """Seconds that the test advances."""

    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


@pytest.fixture(scope="module")
def core():
    return NodeCore("qbmove_arm_2dof", "horizontal", rate=100)


def logged(core):
    clock, lines = Clock(), []
    core.rejections = RejectionLog(lines.append, clock=clock)
    return clock, lines


def test_a_nan_after_a_1e300_on_the_same_topic_is_reported(core):
    """The issue's case: 1e300 then NaN 0.3 s later on one topic: two reasons, two lines (one
    line per topic a second hid the NaN)."""
    clock, lines = logged(core)
    topic = "/joint2/equilibrium_position"
    assert not core.set_command(1, "ref1", 1e300, topic)
    clock.t += 0.3
    assert not core.set_command(1, "ref1", float("nan"), topic)
    assert len(lines) == 2, lines
    assert "= 1e+300: valid range" in lines[0] and "= nan: not finite" in lines[1]
    assert core.rejected == 2 and core.rejections.suppressed == 0


def test_a_flood_of_one_reason_gives_one_line_a_period_and_the_count(core):
    """100 out-of-range values 0.0099 s apart (different values, one reason): one line per
    WARN_PERIOD_S, each later line with the number held back since the one before."""
    clock, lines = logged(core)
    topic, start = "/joint1/equilibrium_position", clock.t
    for k in range(100):
        assert not core.set_command(0, "ref1", 10.0 + k, topic)
        clock.t += 0.0099
    assert WARN_PERIOD_S == 1.0
    assert len(lines) == 1, lines  # 0 .. 0.99 s: within one period
    clock.t = start + WARN_PERIOD_S
    assert not core.set_command(0, "ref1", 1e3, topic)  # at 1.0 s: the next line, with count
    assert len(lines) == 2
    assert "= 1000.0: valid range" in lines[1]
    assert "(99 similar rejections suppressed since the last line)" in lines[1], lines[1]
    assert core.rejected == 101 and core.rejections.suppressed == 99
    # another reason on the same topic meanwhile is its own line, the count stays its own
    assert not core.set_command(0, "ref1", float("inf"), topic)
    assert len(lines) == 3 and "not finite" in lines[2] and "suppressed" not in lines[2]
    # another topic with the same reason: its own line too
    assert not core.set_command(1, "ref1", 50.0, "/joint2/equilibrium_position")
    assert len(lines) == 4


def test_arrays_of_any_length_share_one_reason(core):
    """A wrong length is one reason whatever the length (the numbers are not the reason), so a
    peer varying it still gets one line a period."""
    assert reason_key("expected 2 values (joints: joint1, joint2), got 3") == reason_key(
        "expected 2 values (joints: joint1, joint2), got 17"
    )
    clock, lines = logged(core)
    for n in (3, 5, 7):
        assert not core.set_references(0, [0.0] * n, "/reference_1")
    assert len(lines) == 1 and core.rejections.suppressed == 2
    clock.t += WARN_PERIOD_S
    assert not core.set_references(0, [0.0] * 9, "/reference_1")
    assert "got 9" in lines[1] and "2 similar rejections suppressed" in lines[1]


def test_the_keys_are_bounded():
    """A peer inventing reasons (unknown joint names are quoted, hence blanked; every topic
    is the node's own) cannot grow the table past MAX_KEYS: the oldest go, their count
    logged."""
    clock, lines = Clock(), []
    log = RejectionLog(lines.append, clock=clock)
    log.reject("/t0", 1.0, "a reason")
    log.reject("/t0", 2.0, "a reason")  # held back: counted
    for k in range(MAX_KEYS + 10):
        log.reject(f"/t{k + 1}", 1.0, f"reason {chr(65 + k % 26)}{chr(65 + k // 26 % 26)}")
    assert len(log._keys) == MAX_KEYS
    assert any("1 similar rejection suppressed on /t0" in ln for ln in lines)
    assert reason_key("unknown joint 'elbow'") == reason_key("unknown joint 'x'")
