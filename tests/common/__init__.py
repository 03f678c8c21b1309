"""Tests of asr.common (results files, file safety)."""
