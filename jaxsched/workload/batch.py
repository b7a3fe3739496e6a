"""A batch of jobs all present at time 0 (offline scheduling: papers 002 and 003).

`Batch(lengths, num_jobs)` gives every run `num_jobs` requests whose (prompt, output) lengths
come from any length law (`lengths.py`, `traces.py`), all arriving at t = 0. Like every
generator it is a pure function of (seed, ids), so an engine reads job i of run `seed` without
storing the batch per run, or materializes all of it (`jobs`) when its state is per job anyway.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp

from ..errors import ConfigError, require_int
from .lengths import INT32_MAX


@dataclass(frozen=True)
class Batch:
    """num_jobs requests at t = 0, lengths from `lengths` (an unbounded length law)."""
    lengths: Any
    num_jobs: int

    def __post_init__(self):
        require_int(self.num_jobs, "Batch.num_jobs", lo=1, hi=INT32_MAX // 2)
        if not hasattr(self.lengths, "sample"):
            raise ConfigError(f"Batch.lengths must be a length law with sample(seed, ids), "
                              f"got {self.lengths!r}")
        if getattr(self.lengths, "num_requests", None) is not None:
            raise ConfigError("Batch.lengths must be an unbounded length law (a resampled trace "
                              "or a distribution)")

    @property
    def name(self) -> str:
        return f"{self.lengths.name}_batch{self.num_jobs}"

    @property
    def num_requests(self) -> int:
        return self.num_jobs

    @property
    def max_prompt(self) -> int:
        return self.lengths.max_prompt

    @property
    def max_output(self) -> int:
        return self.lengths.max_output

    def sample(self, seed, ids) -> tuple[jnp.ndarray, jnp.ndarray]:
        """(prompt, output) int32 of jobs `ids` of run `seed` (tokens)."""
        return self.lengths.sample(seed, ids)

    def arrival_s(self, seed, ids) -> jnp.ndarray:
        """float32 arrival times of jobs `ids`: all 0 s."""
        return jnp.zeros(jnp.shape(ids), jnp.float32)

    def jobs(self, seed) -> tuple[jnp.ndarray, jnp.ndarray]:
        """(prompt, output) int32[num_jobs] of every job of run `seed`."""
        return self.sample(seed, jnp.arange(self.num_jobs, dtype=jnp.int32))
