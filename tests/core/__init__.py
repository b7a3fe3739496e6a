"""Tests of the shared modules: clock, rng, workloads, sweeps, sharding, multi-host, command line."""
