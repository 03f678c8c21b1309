"""Tests of asr.cli and asr.demo."""
