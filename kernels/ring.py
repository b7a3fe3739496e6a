"""Prefix sums and ranks over a ring buffer in id order, without sorting.

A table of Q slots holds item `id` in slot id mod Q, so slot order is id order rotated by
`base` (the slot of the oldest id that can be present). Exclusive prefix sums and prefix maxima
in id order then need one cumsum / cummax in slot order plus a correction at the wrap: O(Q)
instead of a sort. `group_rank` is the general O(Q log Q) definition by sorting, kept as the
yardstick for the O(Q) rank forms that callers derive from these sums.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_BIG = np.int32(2**31 - 1)


def prefix_by_id(x: jnp.ndarray, base) -> jnp.ndarray:
    """Exclusive prefix sums of x (int32[Q], ring slots) in id order: sum of x over the slots
    holding smaller ids. One cumsum in slot order, corrected for the ring's wrap at `base`."""
    ex = jnp.cumsum(x) - x
    slot = jnp.arange(x.shape[0], dtype=jnp.int32)
    return ex - ex[base] + jnp.where(slot < base, jnp.sum(x), 0)


def group_rank(group: jnp.ndarray, ids: jnp.ndarray, valid: jnp.ndarray) -> jnp.ndarray:
    """int32[Q]: rank of each valid request within its group by id (0 = oldest), by sorting.

    The general definition (docs/kv-semantics.md §6), O(Q log Q); the kv policies use O(Q)
    forms built from `prefix_by_id` and `suffix_sums`, which rely on no request overtaking an
    older one of its group, and tests check them against this. Empty slots get large ranks.
    """
    Q = group.shape[0]
    pos = jnp.arange(Q, dtype=jnp.int32)
    g = jnp.where(valid, group, _BIG)
    i = jnp.where(valid, ids, _BIG)
    gs, _, slot = jax.lax.sort((g, i, pos), num_keys=2)
    start = jnp.concatenate([jnp.ones((1,), bool), gs[1:] != gs[:-1]])
    first = jax.lax.cummax(jnp.where(start, pos, 0))
    return jnp.zeros((Q,), jnp.int32).at[slot].set(pos - first)


def suffix_sums(count: jnp.ndarray) -> jnp.ndarray:
    """above[..., k] = sum of count[..., k'] over k' > k (int32, last axis = stages)."""
    return jnp.cumsum(count[..., ::-1], axis=-1)[..., ::-1] - count


def prefix_max_by_id(x: jnp.ndarray, base) -> jnp.ndarray:
    """Inclusive prefix maxima of x (int32[Q] >= 0, ring slots) in id order."""
    slot = jnp.arange(x.shape[0], dtype=jnp.int32)
    first = slot >= base  # the older half of the ring
    a = jax.lax.cummax(jnp.where(first, x, 0))
    b = jax.lax.cummax(jnp.where(first, 0, x))
    return jnp.where(first, a, jnp.maximum(jnp.max(jnp.where(first, x, 0)), b))
