"""Bit-packed free-slot masks: packing and selection without a per-slot prefix sum.

On CPU, `jnp.cumsum` lowers to reduce_window and runs an order of magnitude slower than a plain
reduction, and a per-slot gather under vmap is slow too. Free slots are therefore packed into
32-bit words per worker (one reduction over the slots), and the slot of the r-th free position
is found per admitted request (at most R of them) by a popcount binary search inside one word.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_BIT = np.uint32(1) << np.arange(32, dtype=np.uint32)  # 1 << j


def pack_bits(mask: jnp.ndarray) -> jnp.ndarray:
    """Pack bool[..., n] into uint32[..., ceil(n / 32)]; bit j of word w is mask[..., 32 w + j]."""
    *lead, n = mask.shape
    nw = -(-n // 32)
    m = jnp.pad(mask, [(0, 0)] * len(lead) + [(0, nw * 32 - n)]).reshape(*lead, nw, 32)
    return jnp.sum(jnp.where(m, _BIT, np.uint32(0)), axis=-1, dtype=jnp.uint32)


def count_bits(words: jnp.ndarray) -> jnp.ndarray:
    """Number of set bits over the last (word) axis, int32."""
    return jnp.sum(jax.lax.population_count(words).astype(jnp.int32), axis=-1)


def select_bit(words: jnp.ndarray, rank: jnp.ndarray) -> jnp.ndarray:
    """Position of the rank-th (0-based) set bit of the packed mask `words` uint32[..., nw].

    rank int32[...] must be below the number of set bits (otherwise the result is meaningless).
    Returns int32[...] in [0, 32 nw).
    """
    nw = words.shape[-1]
    cnt = jax.lax.population_count(words).astype(jnp.int32)  # [..., nw]
    incl = cnt
    for j in range(1, nw):  # nw <= a few dozen words: an unrolled prefix, no reduce_window
        incl = incl.at[..., j].add(incl[..., j - 1])
    w = jnp.sum(incl <= rank[..., None], axis=-1)  # word index
    w = jnp.minimum(w, nw - 1)
    before = jnp.take_along_axis(incl - cnt, w[..., None], -1)[..., 0]
    x = jnp.take_along_axis(words, w[..., None], -1)[..., 0]
    r = rank - before
    b = jnp.zeros_like(r)
    for step in (16, 8, 4, 2, 1):  # largest b with popcount(bits of x below b) <= r
        cand = b + step
        below = jax.lax.population_count(x & ((np.uint32(1) << cand.astype(jnp.uint32)) - np.uint32(1)))
        b = jnp.where(below.astype(jnp.int32) <= r, cand, b)
    return w * 32 + b


def free_slot_rank(mask: jnp.ndarray) -> jnp.ndarray:
    """rank[..., b] = number of True entries of mask[..., :b] (int32, same shape as mask).

    A dense reference for `select_bit` (tests); the engine does not use it per step.
    """
    *lead, n = mask.shape
    words = pack_bits(mask)
    nw = words.shape[-1]
    below_mask = _BIT - np.uint32(1)
    below = jax.lax.population_count(words[..., None] & below_mask).astype(jnp.int32)
    counts = jax.lax.population_count(words).astype(jnp.int32)
    prefix = jnp.cumsum(counts, axis=-1) - counts
    return (below + prefix[..., None]).reshape(*lead, nw * 32)[..., :n]
