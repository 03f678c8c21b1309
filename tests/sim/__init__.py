"""Tests of asr.sim (Sim)."""
