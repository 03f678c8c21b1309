"""Tests of the wheel and its installation."""
