"""Helpers every room of asr shares, none of them part of asr's public API: argument checks with
clear errors (validate), crash-safe files and bounded JSON (files), optional dependencies named
by their extra (optional), executors (executors) and the pickling refusals of C-backed objects
(serial). This package imports nothing else of asr."""
