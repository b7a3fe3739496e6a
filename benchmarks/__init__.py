"""Benchmarks and their NumPy baselines; run from the repository root as `python -m benchmarks.NAME`."""
