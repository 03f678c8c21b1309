"""Tests of the dashboard (API, page in Chromium, security, RL panels)."""
