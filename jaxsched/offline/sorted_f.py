"""Sorted-F's Phase 1 (paper 002, Algorithm 1): the admission order, batch by batch.

Repeat until no request is left: choose a batch X among the remaining requests with
sum_{i in X} (s_i + o_i) <= M that makes F(X) = (sum_{i in X} o_i) / |X|^2 small, sort it by
ascending (o, index), append it to the order. The executor (`engine.py`) then admits requests
in that order, so consecutive batches overlap in time. Solvers of the argmin:
- `local_swap` (Algorithm 4, "Sorted-F (Swap)" in the paper's experiments): a greedy
  maximum-cardinality fill, then first-improvement single swaps that lower sum o.
- `exact_dp` (Algorithm 2): the exact argmin by a knapsack DP over (size, weight), with a
  static table width `cap` >= M (pass it with functools.partial); ties to the larger batch.
Tie rules follow tests/reference/offline.py, whose plain-Python solvers are the oracles.
Everything is jittable and vmappable: dense [n] arrays with masks, `lax.while_loop`s.
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

# A solver: (s, o, avail: bool[n], M) -> bool[n], the chosen batch (a subset of avail).
Solver = Callable[[jnp.ndarray, jnp.ndarray, jnp.ndarray, jnp.ndarray], jnp.ndarray]


def _rank(key: jnp.ndarray) -> jnp.ndarray:
    """Position of each element in the stable ascending sort of `key` (int32[n])."""
    n = key.shape[0]
    return jnp.zeros((n,), jnp.int32).at[jnp.argsort(key, stable=True)].set(
        jnp.arange(n, dtype=jnp.int32))


def greedy_fill(w: jnp.ndarray, key: jnp.ndarray, avail: jnp.ndarray, M) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Walk the available requests in ascending (key, index) order and add each whose weight w
    still fits (sum w <= M; skip, not stop). Returns (chosen bool[n], list position int32[n]:
    the order of insertion, large for requests not chosen)."""
    n = w.shape[0]
    big = jnp.iinfo(jnp.int32).max
    walk = jnp.argsort(jnp.where(avail, key, big), stable=True)

    def body(carry, i):
        mem, count, chosen, pos = carry
        take = avail[i] & (mem + w[i] <= M)
        return (mem + jnp.where(take, w[i], 0), count + take,
                chosen.at[i].set(take), pos.at[i].set(jnp.where(take, count, n))), None

    init = (jnp.int32(0), jnp.int32(0), jnp.zeros((n,), bool), jnp.full((n,), n, jnp.int32))
    (_, _, chosen, pos), _ = jax.lax.scan(body, init, walk)
    return chosen, pos


def local_swap(s: jnp.ndarray, o: jnp.ndarray, avail: jnp.ndarray, M) -> jnp.ndarray:
    """Algorithm 4: greedy fill in ascending (s + o, index) order, then `swap_search`."""
    w = s + o
    chosen, pos = greedy_fill(w, w, avail, M)
    return swap_search(s, o, avail, M, chosen, pos)


def swap_search(s: jnp.ndarray, o: jnp.ndarray, avail: jnp.ndarray, M, chosen: jnp.ndarray,
                pos: jnp.ndarray) -> jnp.ndarray:
    """The swap loop of Algorithm 4 from the batch `chosen` (bool[n]) whose list positions are
    `pos` (int32[n], from `greedy_fill`): first-improvement swaps, r_out scanned over the batch
    in list order, r_in over the other available requests in index order; the first pair with
    memory + w_in - w_out <= M and o_in < o_out is applied (r_in takes r_out's list position)
    and the scan restarts. Ends when no pair improves (sum o falls with every swap). Each round
    looks at all pairs at once: O(n^2). Also LP-Swap's (Algorithm 7) inner loop."""
    w = s + o
    n = s.shape[0]
    mem = jnp.sum(jnp.where(chosen, w, 0))
    ids = jnp.arange(n, dtype=jnp.int32)

    def best_pair(chosen, pos, mem):
        ok = (chosen[:, None] & (avail & ~chosen)[None, :]
              & (mem + w[None, :] - w[:, None] <= M) & (o[None, :] < o[:, None]))
        rank = jnp.where(ok, pos[:, None] * n + ids[None, :], n * n)   # first in scan order
        flat = jnp.argmin(rank)
        return rank.reshape(-1)[flat] < n * n, flat // n, flat % n

    def cond(carry):
        return carry[3]

    def body(carry):
        chosen, pos, mem, _ = carry
        found, out, inn = best_pair(chosen, pos, mem)
        new = (chosen.at[out].set(False).at[inn].set(True),
               pos.at[inn].set(pos[out]).at[out].set(n), mem + w[inn] - w[out])
        chosen, pos, mem = jax.tree_util.tree_map(lambda a, b: jnp.where(found, a, b), new,
                                                  (chosen, pos, mem))
        return chosen, pos, mem, found

    chosen, *_ = jax.lax.while_loop(cond, body, (chosen, pos, mem, jnp.bool_(True)))
    return chosen


def order(s: jnp.ndarray, o: jnp.ndarray, M, solver: Solver) -> jnp.ndarray:
    """Phase 1 of Sorted-F: int32[n], the batches in selection order, each sorted by ascending
    (o, index). Requests with s + o > M are never chosen; they end the order, by index."""
    n = s.shape[0]
    o_key = _rank(o)                                     # ascending (o, index) as one key

    def cond(carry):
        avail, _, _, k = carry
        return jnp.any(avail) & (k > 0)

    def body(carry):
        avail, out, filled, _ = carry
        batch = solver(s, o, avail, M)
        k = jnp.sum(batch).astype(jnp.int32)
        members = jnp.argsort(jnp.where(batch, o_key, n), stable=True)   # batch first, by o
        slot = jnp.arange(n, dtype=jnp.int32) - filled
        take = (slot >= 0) & (slot < k)
        out = jnp.where(take, members[jnp.clip(slot, 0, n - 1)], out)
        return avail & ~batch, out, filled + k, k

    avail = s + o <= M
    _, out, filled, _ = jax.lax.while_loop(
        cond, body, (avail, jnp.zeros((n,), jnp.int32), jnp.int32(0), jnp.int32(1)))
    # Requests that never fit alone go last, by index (the engine drops them).
    rest = jnp.argsort(jnp.where(avail, n, jnp.arange(n)), stable=True)
    slot = jnp.arange(n, dtype=jnp.int32) - filled
    return jnp.where(slot >= 0, rest[jnp.clip(slot, 0, n - 1)], out).astype(jnp.int32)


def exact_dp(s: jnp.ndarray, o: jnp.ndarray, avail: jnp.ndarray, M, *, cap: int) -> jnp.ndarray:
    """Algorithm 2: the exact argmin of F(X) = sum o / |X|^2 over X within `avail` with
    sum(s + o) <= M, for a static table width `cap` >= M (tokens).

    dp[k][m] = least sum of o over sets of k available requests of weight sum exactly m; the
    requests are taken in index order and an entry changes only on a strict improvement, so the
    set kept for an entry is the one the plain-Python `exact_dp` backtracks to (the bits of
    `sets[k][m]` are the set that produced dp[k][m] when it was written). The answer minimises
    dp[k][m] / k^2, compared exactly by cross-multiplication; ties go to the larger k, then the
    smaller m. Cost per instance: O(n^2 cap) work, (n + 1)(cap + 1)(4 + 4 ceil(n / 32)) bytes.
    """
    n = s.shape[0]
    words = -(-n // 32)
    w = s + o
    inf = jnp.iinfo(jnp.int32).max // 2
    dp = jnp.full((n + 1, cap + 1), inf, jnp.int32).at[0, 0].set(0)
    sets = jnp.zeros((n + 1, cap + 1, words), jnp.uint32)
    m_idx = jnp.arange(cap + 1, dtype=jnp.int32)

    def item(carry, q):
        dp, sets = carry
        use = avail[q] & (w[q] <= M)
        shifted = jnp.roll(dp, w[q], axis=1)                 # shifted[k][m] = dp[k][m - w]
        cand = jnp.where((m_idx >= w[q]) & (shifted < inf), shifted + o[q], inf)[:-1]
        better = use & (cand < dp[1:])                       # rows k + 1 = 1..n
        bit = jnp.zeros((words,), jnp.uint32).at[q // 32].set(jnp.uint32(1) << (q % 32).astype(jnp.uint32))
        moved = jnp.roll(sets, w[q], axis=1)[:-1] | bit
        dp = dp.at[1:].set(jnp.where(better, cand, dp[1:]))
        sets = sets.at[1:].set(jnp.where(better[..., None], moved, sets[1:]))
        return (dp, sets), None

    (dp, sets), _ = jax.lax.scan(item, (dp, sets), jnp.arange(n))
    # For each size k the best entry is the least dp[k][m] over m <= M (the smallest such m);
    # sizes are then compared exactly: v_k / k^2 against v_j / j^2 by 64-bit cross products,
    # ties to the larger size.
    row = jnp.where(m_idx[None, :] <= M, dp, inf)
    vmin = jnp.min(row, axis=1)
    mbest = jnp.argmin(row, axis=1).astype(jnp.int32)

    def pick(best, k):
        v, bv = vmin[k], vmin[best]
        a, b = _mul64(v, best * best), _mul64(bv, k * k)      # v / k^2 <= bv / best^2 ?
        le = (a[0] < b[0]) | ((a[0] == b[0]) & (a[1] <= b[1]))
        take = (v < inf) & ((bv >= inf) | le)                  # "<=": ties to the larger k
        return jnp.where(take, k, best), None

    best, _ = jax.lax.scan(pick, jnp.int32(0), jnp.arange(1, n + 1, dtype=jnp.int32))
    bits = sets[best, mbest[best]]
    ids = jnp.arange(n)
    chosen = ((bits[ids // 32] >> (ids % 32).astype(jnp.uint32)) & 1).astype(bool)
    return chosen & (best > 0)


def _mul64(a: jnp.ndarray, b: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """a * b for non-negative int32 a, b < 2^31 as (high, low) uint32 words, exactly."""
    a, b = a.astype(jnp.uint32), b.astype(jnp.uint32)
    a0, a1 = a & 0xFFFF, a >> 16
    b0, b1 = b & 0xFFFF, b >> 16
    lo = a0 * b0
    mid1, mid2 = a1 * b0, a0 * b1
    hi = a1 * b1
    mid = mid1 + mid2
    carry_mid = (mid < mid1).astype(jnp.uint32) << 16
    lo_new = lo + (mid << 16)
    carry_lo = (lo_new < lo).astype(jnp.uint32)
    return hi + (mid >> 16) + carry_mid + carry_lo, lo_new
