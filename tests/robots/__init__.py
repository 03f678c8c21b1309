"""Tests of asr.robots (robot files, paths, SDF, the UR10)."""
