"""Tests of asr.analysis (datasheet, frequency response, identification, sweeps)."""
