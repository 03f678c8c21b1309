"""asr's tests, one folder per subpackage of asr (tests/core for asr.core, ...); helpers in
tests/support, test data in tests/data, the C test programs in tests/c."""
