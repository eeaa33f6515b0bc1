"""Benchmarks of the focused crawler (``python -m bench.quality``)."""
