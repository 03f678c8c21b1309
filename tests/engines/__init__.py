"""Tests of asr.engines (MuJoCo, Gazebo, engine accessors)."""
