"""Ranking of set bits along the last axis without `jnp.cumsum` in the hot path.

On CPU, `cumsum` lowers to reduce_window and runs an order of magnitude slower than a plain
reduction. The rank of each set entry among the set entries before it is computed instead by
packing the mask into 32-bit words and counting bits below each position (popcount), plus an
exclusive prefix over the (few) words.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_BIT = np.uint32(1) << np.arange(32, dtype=np.uint32)          # 1 << j
_BELOW = _BIT - np.uint32(1)                                     # bits strictly below j


def free_slot_rank(mask: jnp.ndarray) -> jnp.ndarray:
    """rank[..., b] = number of True entries of mask[..., :b]; int32, same shape as mask."""
    *lead, n = mask.shape
    nw = -(-n // 32)
    m = jnp.pad(mask, [(0, 0)] * len(lead) + [(0, nw * 32 - n)])
    m = m.reshape(*lead, nw, 32)
    words = jnp.sum(jnp.where(m, _BIT, np.uint32(0)), axis=-1, dtype=jnp.uint32)   # [..., nw]
    below = jax.lax.population_count(words[..., None] & _BELOW).astype(jnp.int32)   # [..., nw, 32]
    if nw > 1:
        counts = jax.lax.population_count(words).astype(jnp.int32)
        prefix = jnp.cumsum(counts, axis=-1) - counts                                # nw is small
        below = below + prefix[..., None]
    return below.reshape(*lead, nw * 32)[..., :n]


def masked_rank(mask: jnp.ndarray) -> jnp.ndarray:
    """Alias of free_slot_rank for 1-d masks (rank of each True entry among earlier ones)."""
    return free_slot_rank(mask)
