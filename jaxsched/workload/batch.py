"""A batch of jobs all present at time 0 (offline scheduling: papers 002 and 003).

`Batch(base, num_requests)` gives every run `num_requests` jobs whose (prompt, output) lengths
come from any unbounded length law (`lengths.py`, `traces.py`), all arriving at t = 0. It is a
`Finite` stream with arrival times: like every generator a pure function of (seed, ids), so an
engine reads job i of run `seed` without storing the batch per run, or materializes all of it
(`jobs`) when its state is per job anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from .lengths import Finite


@dataclass(frozen=True)
class Batch(Finite):
    """num_requests jobs at t = 0, lengths from `base` (an unbounded length law)."""

    @property
    def name(self) -> str:
        return f"{self.base.name}_batch{self.num_requests}"

    def arrival_s(self, seed, ids) -> jnp.ndarray:
        """float32 arrival times (s) of jobs `ids`: all 0."""
        return jnp.zeros(jnp.shape(ids), jnp.float32)

    def jobs(self, seed) -> tuple[jnp.ndarray, jnp.ndarray]:
        """(prompt, output) int32[num_requests] (tokens) of every job of run `seed`."""
        return self.sample(seed, jnp.arange(self.num_requests, dtype=jnp.int32))
