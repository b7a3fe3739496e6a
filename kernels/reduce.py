"""Sums over a run's own axes: float sums whose rounding does not depend on the batch shape, and
integer sums fused into one pass.

A `jnp.sum` lowers to an XLA reduce, which the CPU backend tiles according to the whole
(vmapped) shape, so a float32 sum over a run's own axis can round differently when the same run
sits in a chunk of 32 seeds or of 64. Seeds must give bitwise the same results however they are
chunked or sharded, so per-run float sums go through `ordered_sum`: a fixed tree of elementwise
adds, which XLA evaluates the same way for every batch shape. Integer sums are exact and need
none of this, but several of them over one array (the dp engine's per-worker counts, loads and
free-slot words) are faster as one variadic reduce: `fused_sums`.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp

# Width of the row vectors in `ordered_sum`: its upper levels add whole rows of this many
# elements, which XLA fuses into one pass; 256 was the fastest of 32-256 on [1024, 1152].
_ROW = 256


def ordered_sum(x: jnp.ndarray) -> jnp.ndarray:
    """float[..., n] -> [...]: the sum over the last axis by pairwise halving (elementwise adds
    of the two halves, zero-padded to a power of two); the same rounding for any batch shape.

    The padding is not built for x: the upper levels of the tree add rows of `_ROW` elements
    and skip the all-zero rows (adding a zero row would change nothing but the sign of a -0.0),
    and only the last, partial row is zero-padded, so XLA reads x once instead of writing and
    rereading a padded copy of it (15x faster on [1024, 1152]).
    """
    n = x.shape[-1]
    width = 1 << max(0, (n - 1).bit_length())
    row = min(width, _ROW)
    m = -(-n // row)  # rows holding data; the rest are zero
    rows = [x[..., r * row : (r + 1) * row] for r in range(m)] + [None] * (width // row - m)
    if m * row > n:
        rows[m - 1] = jnp.pad(rows[m - 1], [(0, 0)] * (x.ndim - 1) + [(0, m * row - n)])
    while len(rows) > 1:
        half = len(rows) // 2
        rows = [a if b is None else a + b for a, b in zip(rows[:half], rows[half:])]
    x = rows[0]
    while x.shape[-1] > 1:
        half = x.shape[-1] // 2
        x = x[..., :half] + x[..., half:]
    return x[..., 0]


def fused_sums(operands: Sequence[jnp.ndarray], axis: int = -1) -> tuple[jnp.ndarray, ...]:
    """Integer sums over `axis` of several same-shape arrays, in one pass (one variadic reduce).

    operands: int/uint arrays [..., n, ...] of one shape (dtypes may differ). Returns one array
    per operand, with `axis` removed. XLA's CPU backend rewrites every large plain reduce into a
    reduce_window tree over a materialized copy of its operand; a variadic reduce is emitted as
    one loop that reads its inputs once (7x faster for three sums over [1024, 16, 72]). Integer
    sums are exact, so the grouping cannot change a result; float sums go through `ordered_sum`.
    """
    operands = tuple(operands)
    for x in operands:
        if not (jnp.issubdtype(x.dtype, jnp.integer) and x.shape == operands[0].shape):
            raise ValueError(
                "fused_sums: operands must be integer arrays of one shape, got "
                f"{[(str(o.dtype), o.shape) for o in operands]}"
            )
    ax = axis % operands[0].ndim
    zeros = tuple(jnp.zeros((), x.dtype) for x in operands)
    out = jax.lax.reduce(operands, zeros, lambda a, b: tuple(x + y for x, y in zip(a, b)), (ax,))
    return tuple(out)


def ordered_mean(x: jnp.ndarray) -> jnp.ndarray:
    """float[..., n] -> [...]: ordered_sum(x) / n."""
    return ordered_sum(x) / x.shape[-1]
