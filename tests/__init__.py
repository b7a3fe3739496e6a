"""Tests of jaxsched and kernels; run `python -m pytest` from the repository root."""
