"""Tests of the assignment kernels (kernels/) and the exact per-step solvers."""
