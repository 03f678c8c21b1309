"""Tests of asr.controllers (interaction control)."""
