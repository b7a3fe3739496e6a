"""Routers of the `parallel` topology (paper 004 §4.1, docs/network-semantics.md §4).

`router(config, params, agents, seed, request_id, num_agents) -> int32 agent`: one arriving
request at a time joins one agent's queue, judged on the per-agent counts the state keeps
(`Agents.active`: tasks not leaving; `Agents.tokens`: their unprocessed tokens) or on the
traced NetworkParams (`weighted` reads `params.route_cuts`). num_agents: the run's K, config.K
(an int), or the traced int32 K of a run padded into a size bucket, whose agents from K on
must never be chosen. The dp engine's routers solve a different
problem (a queue of requests onto free sticky slots at a barrier), so they do not apply here.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import rng


def random(config, params, agents, seed, request_id, num_agents) -> jnp.ndarray:
    """Uniform random agent, floor(u K) with u = rng.uniform(seed, id, STREAM_ROUTE)."""
    u = rng.uniform(seed, request_id, rng.STREAM_ROUTE)
    K = num_agents
    # A traced K gives the same product: u * float32(K) is one rounded multiplication either way.
    k_f = np.float32(K) if isinstance(K, int) else K.astype(jnp.float32)
    return jnp.minimum((u * k_f).astype(jnp.int32), K - 1)


def weighted(config, params, agents, seed, request_id, num_agents) -> jnp.ndarray:
    """Agent k with probability w_k / sum(w): the number of cuts c_k <= r, r = floor(u 2^24)
    the 24 bits of the random router's draw and c = params.route_cuts (int32[K], from 0 to
    2^24, `config.weight_cuts`), i.e. the first k with r < c_k. Integer comparisons only, so
    a reference reproduces every pick; a padded agent's cut is 2^24, never passed (r < 2^24)."""
    return pick_by_cuts(rng.uniform(seed, request_id, rng.STREAM_ROUTE), params.route_cuts)


def pick_by_cuts(u: jnp.ndarray, cuts: jnp.ndarray) -> jnp.ndarray:
    """int32 scalar: the number of cuts c_k <= r for r = u 2^24 (u: a float32 scalar draw of
    `rng.uniform`, a multiple of 2^-24 in [0, 1); cuts: int32 [K], non-decreasing, last 2^24)."""
    # u = (h >> 8) 2^-24 exactly, so the product is the 24-bit integer itself.
    r = (u * np.float32(2.0**24)).astype(jnp.int32)
    return jnp.sum(cuts <= r).astype(jnp.int32)


def _own(config, x, num_agents) -> jnp.ndarray:
    """x (int32[K]) with the agents past a padded run's own at the int32 maximum (never the
    argmin, which takes the lowest index among ties, so the run's own indices are unchanged)."""
    if isinstance(num_agents, int):
        return x
    return jnp.where(jnp.arange(config.K) < num_agents, x, jnp.iinfo(jnp.int32).max)


def fewest_requests(config, params, agents, seed, request_id, num_agents) -> jnp.ndarray:
    """The agent with the fewest tasks not leaving (ties: lowest index)."""
    return jnp.argmin(_own(config, agents.active, num_agents)).astype(jnp.int32)


def fewest_tokens(config, params, agents, seed, request_id, num_agents) -> jnp.ndarray:
    """The agent with the fewest unprocessed tokens (ties: lowest index)."""
    return jnp.argmin(_own(config, agents.tokens, num_agents)).astype(jnp.int32)
