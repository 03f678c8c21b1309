"""Tests of asr.rl (training, ONNX export, every task's policy)."""
