"""Tests of asr.experiments (reproduced papers, the Throw task)."""
