"""Float sums whose rounding does not depend on the batch shape.

A `jnp.sum` lowers to an XLA reduce, which the CPU backend tiles according to the whole
(vmapped) shape, so a float32 sum over a run's own axis can round differently when the same run
sits in a chunk of 32 seeds or of 64. Seeds must give bitwise the same results however they are
chunked or sharded, so per-run float sums go through `ordered_sum`: a fixed tree of elementwise
adds, which XLA evaluates the same way for every batch shape. (Integer sums are exact and need
none of this.)
"""
from __future__ import annotations

import jax.numpy as jnp


def ordered_sum(x: jnp.ndarray) -> jnp.ndarray:
    """float[..., n] -> [...]: the sum over the last axis by pairwise halving (elementwise adds
    of the two halves, zero-padded to a power of two); the same rounding for any batch shape."""
    n = x.shape[-1]
    width = 1 << max(0, (n - 1).bit_length())
    x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, width - n)])
    while x.shape[-1] > 1:
        half = x.shape[-1] // 2
        x = x[..., :half] + x[..., half:]
    return x[..., 0]


def ordered_mean(x: jnp.ndarray) -> jnp.ndarray:
    """float[..., n] -> [...]: ordered_sum(x) / n."""
    return ordered_sum(x) / x.shape[-1]
