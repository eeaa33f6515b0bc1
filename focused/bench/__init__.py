"""Benchmarks of the focused crawler (``python -m focused.bench.quality``)."""
