"""Tests of asr.envs (gymnasium environments and their notebooks)."""
