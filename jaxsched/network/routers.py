"""Routers of the `parallel` topology (paper 004 §4.1, docs/network-semantics.md §4).

`router(config, agents, seed, request_id, num_agents) -> int32 agent`: one arriving request at
a time joins one agent's queue, judged on the per-agent counts the state keeps (`Agents.active`:
tasks not leaving; `Agents.tokens`: their unprocessed tokens). num_agents: the run's K, config.K
(an int), or the traced int32 K of a run padded into a size bucket, whose agents from K on
must never be chosen. The dp engine's routers solve a different
problem (a queue of requests onto free sticky slots at a barrier), so they do not apply here.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import rng


def random(config, agents, seed, request_id, num_agents) -> jnp.ndarray:
    """Uniform random agent, floor(u K) with u = rng.uniform(seed, id, STREAM_ROUTE)."""
    u = rng.uniform(seed, request_id, rng.STREAM_ROUTE)
    K = num_agents
    # A traced K gives the same product: u * float32(K) is one rounded multiplication either way.
    k_f = np.float32(K) if isinstance(K, int) else K.astype(jnp.float32)
    return jnp.minimum((u * k_f).astype(jnp.int32), K - 1)


def _own(config, x, num_agents) -> jnp.ndarray:
    """x (int32[K]) with the agents past a padded run's own at the int32 maximum (never the
    argmin, which takes the lowest index among ties, so the run's own indices are unchanged)."""
    if isinstance(num_agents, int):
        return x
    return jnp.where(jnp.arange(config.K) < num_agents, x, jnp.iinfo(jnp.int32).max)


def fewest_requests(config, agents, seed, request_id, num_agents) -> jnp.ndarray:
    """The agent with the fewest tasks not leaving (ties: lowest index)."""
    return jnp.argmin(_own(config, agents.active, num_agents)).astype(jnp.int32)


def fewest_tokens(config, agents, seed, request_id, num_agents) -> jnp.ndarray:
    """The agent with the fewest unprocessed tokens (ties: lowest index)."""
    return jnp.argmin(_own(config, agents.tokens, num_agents)).astype(jnp.int32)
