"""Tests of asr.core (Batch, models, the C core, threads, SIMD, sanitizers)."""
