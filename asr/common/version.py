"""asr's version, defined here once: setup.cfg reads it (version = attr:), asr re-exports it, and
the files asr writes record it (ILC results, RL checkpoints, ONNX policies)."""

__version__ = "0.1.0"
