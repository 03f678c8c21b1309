"""Repository-wide checks: the Python and C layout, the README, the C tables."""
