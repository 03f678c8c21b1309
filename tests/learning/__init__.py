"""Tests of asr.learning (iterative learning control)."""
