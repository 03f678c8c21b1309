"""Tests of asr.mujoco (the MuJoCo plugin and export)."""
