"""Tests of asr.cpr (continuum parallel robots)."""
