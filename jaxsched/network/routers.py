"""Routers of the `parallel` topology (paper 004 §4.1, docs/network-semantics.md §4).

`router(config, agents, seed, request_id) -> int32 agent`: one arriving request at a time joins
one agent's queue, judged on the per-agent counts the state keeps (`Agents.active`: tasks not
leaving; `Agents.tokens`: their unprocessed tokens). The dp engine's routers solve a different
problem (a queue of requests onto free sticky slots at a barrier), so they do not apply here.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import rng


def random(config, agents, seed, request_id) -> jnp.ndarray:
    """Uniform random agent, floor(u K) with u = rng.uniform(seed, id, STREAM_ROUTE)."""
    u = rng.uniform(seed, request_id, rng.STREAM_ROUTE)
    K = config.K
    return jnp.minimum((u * np.float32(K)).astype(jnp.int32), K - 1)


def fewest_requests(config, agents, seed, request_id) -> jnp.ndarray:
    """The agent with the fewest tasks not leaving (ties: lowest index)."""
    return jnp.argmin(agents.active).astype(jnp.int32)


def fewest_tokens(config, agents, seed, request_id) -> jnp.ndarray:
    """The agent with the fewest unprocessed tokens (ties: lowest index)."""
    return jnp.argmin(agents.tokens).astype(jnp.int32)


ROUTERS = {"random": random, "fewest_requests": fewest_requests, "fewest_tokens": fewest_tokens}
