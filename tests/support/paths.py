"""The folders the tests read from, in one place: ROOT (the repository), TESTS (tests/),
SUPPORT (tests/support: helpers and the ROS 2 peers), TEST_DATA (tests/data) and TEST_ROBOTS
(tests/data/robots: the test-only robot fixtures)."""

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
TESTS = SUPPORT.parent
ROOT = TESTS.parent
TEST_DATA = TESTS / "data"
TEST_ROBOTS = TEST_DATA / "robots"
