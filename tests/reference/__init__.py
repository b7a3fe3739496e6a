"""Plain-Python reference simulators and exact solvers: the oracles of the tests and benchmarks."""
