"""Tests of benchmarks/ (the baselines the benchmarks compare against)."""
