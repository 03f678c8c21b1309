"""Frequency responses of joints and robots (response): the rig that drives them (rig) and the
sine-by-sine measurement (measure)."""

from asr.analysis.frequency.response import FrequencyResponse, frequency_response

__all__ = ["FrequencyResponse", "frequency_response"]
