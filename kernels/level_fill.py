"""Level fill: a start for the BF-IO H = 0 search that packs every worker up to a common level.

Given a level M (tokens), each worker in turn, the one with the least room M - L_g first, takes
the subset of at most `SUBSET_MAX` waiting requests (and at most its free slots) with the largest
total that keeps it at or below M; when the pool holds more requests than there are free slots
(every slot must then be filled), subsets with more requests come first. Valley fill with target
M then admits whatever the program still requires (the rest of U, beyond the subsets).

Why: the near misses of valley fill followed by local search (notes/bfio-kernel.md; the
"burst" family of benchmarks/instances.py, whose loads come from a running BF-IO simulation
and are balanced to within a few hundred tokens) are subset-sum puzzles: the optimum fills
several workers to within a token of the same maximum with a combination of 2 to 4 requests
that no single move, swap or exchange reaches. An exact best subset per worker at the right
level finds those combinations; the levels come from the maxima of the other starts (see
`kernels.local_search.multi_start_level`).

Subsets are drawn from the `ENUM_MAX` largest waiting requests (all of them when the pool is
that small), as int32 bitmasks over those candidates: `subset_masks(16, 4)` has 2517 entries,
so one level costs G passes over 2517 subsets, independent of the pool size.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from .valley_fill import valley_fill

ENUM_MAX = 16  # candidates for the subsets: the largest waiting requests
SUBSET_MAX = 4  # requests per worker chosen by enumeration (valley fill admits the rest)

_BIG = np.int32(2**31 - 1)


def subset_masks(n: int, kmax: int) -> tuple[np.ndarray, np.ndarray]:
    """All subsets of {0..n-1} with at most kmax elements, the empty one first.

    Returns (mask int32[S], count int32[S]): bit i of mask[r] is set when element i is in
    subset r. n <= 31 (the masks are int32).
    """
    if not 0 < n <= 31:
        raise ValueError(f"subset_masks: n must be in 1..31, got {n}")
    masks, counts = [0], [0]
    for k in range(1, min(kmax, n) + 1):
        for c in itertools.combinations(range(n), k):
            masks.append(sum(1 << i for i in c))
            counts.append(k)
    return np.asarray(masks, np.int32), np.asarray(counts, np.int32)


def candidates(sizes: jnp.ndarray, valid: jnp.ndarray, n: int) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Pool positions of the n largest waiting requests (ties: queue order) and their mask.

    sizes int32[R]; valid bool[R]; returns (pos int32[n], ok bool[n]); ok is False for slots
    beyond the number of waiting requests.
    """
    R = sizes.shape[0]
    order = jnp.lexsort((jnp.arange(R), jnp.where(valid, -sizes, _BIG)))[:n]
    return order.astype(jnp.int32), valid[order]


def level_fill(
    loads: jnp.ndarray,
    free: jnp.ndarray,
    sizes: jnp.ndarray,
    valid: jnp.ndarray,
    level: jnp.ndarray,
    masks: jnp.ndarray,
    counts: jnp.ndarray,
) -> jnp.ndarray:
    """Admit U = min(#valid, sum free) requests, packing workers up to `level` (module docstring).

    loads int32[G] (tokens); free int32[G]; sizes int32[R] (tokens); valid bool[R]; level int32
    scalar (tokens); masks, counts int32[S] from `subset_masks(n, SUBSET_MAX)` with
    n = min(ENUM_MAX, R). Returns worker int32[R] (-1: not admitted).
    """
    G, R = loads.shape[0], sizes.shape[0]
    n = min(ENUM_MAX, R)
    pos, ok_c = candidates(sizes, valid, n)
    bit = jnp.left_shift(jnp.int32(1), jnp.arange(n, dtype=jnp.int32))
    in_subset = (masks[:, None] & bit[None, :]) != 0  # [S, n]
    sums = jnp.sum(jnp.where(in_subset, sizes[pos][None, :], 0), axis=1)  # [S]
    fill_all = jnp.sum(valid) > jnp.sum(free)
    prefer = jnp.where(fill_all, counts, 0)
    order = jnp.argsort(level - loads)  # least room first

    def body(k, carry):
        avail, cand_worker = carry
        g = order[k]
        ok = ((masks & ~avail) == 0) & (counts <= free[g]) & (sums <= level - loads[g])
        best_count = jnp.max(jnp.where(ok, prefer, -1))
        r = jnp.argmax(jnp.where(ok & (prefer == best_count), sums, -1))  # r = 0 (empty) fits
        take = (masks[r] & bit) != 0
        return avail & ~masks[r], jnp.where(take, g, cand_worker)

    avail0 = jnp.sum(jnp.where(ok_c, bit, 0))
    _, cand_worker = jax.lax.fori_loop(0, G, body, (avail0, jnp.full((n,), -1, jnp.int32)))
    worker = jnp.full((R,), -1, jnp.int32).at[pos].set(cand_worker)
    onehot = worker[:, None] == jnp.arange(G)[None, :]
    L = loads + jnp.sum(jnp.where(onehot, sizes[:, None], 0), axis=0)
    rest = valid & (worker < 0)
    rest_w, _ = valley_fill(L, free - jnp.sum(onehot, axis=0), sizes, rest, target=level)
    return jnp.where(worker >= 0, worker, rest_w).astype(jnp.int32)
