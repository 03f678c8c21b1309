"""Shim: setuptools reads everything from setup.cfg except cffi's `cffi_modules` keyword, which
it accepts only as a setup() argument."""
from setuptools import setup

setup(cffi_modules=["asr/_build.py:ffibuilder"])
