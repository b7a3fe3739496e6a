"""Sorted-F's Phase 1 (paper 002, Algorithm 1): the admission order, batch by batch.

Repeat until no request is left: choose a batch X among the remaining requests with
sum_{i in X} (s_i + o_i) <= M that makes F(X) = (sum_{i in X} o_i) / |X|^2 small, sort it by
ascending (o, index), append it to the order. The executor (`engine.py`) then admits requests
in that order, so consecutive batches overlap in time. Solvers of the argmin:
- `local_swap` (Algorithm 4, "Sorted-F (Swap)" in the paper's experiments): a greedy
  maximum-cardinality fill, then first-improvement single swaps that lower sum o.
- `exact_dp` (Algorithm 2): the exact argmin by a knapsack DP over (size, weight), with a
  static table width `cap` >= M (pass it with functools.partial); ties to the larger batch.
- `scaled_dp` (Algorithm 3): the same DP on weights rounded up to a unit lambda = max(1, M / W),
  W = floor(B / eps), static table width W + 1, then a feasibility re-check.
- `quantile_greedy` (Algorithm 5): thresholds from exact numpy-"linear" quantiles of a hashed
  random sample (`quantile_sample`, stream STREAM_QUANTILE), then two greedy passes.
Float options (eps, B, q, frac) are static and read as decimals (`decimal_fraction`), so every
rounding and threshold is decided in exact integer arithmetic (no float32 ratio anywhere).
Tie rules follow tests/reference/offline.py, whose plain-Python solvers are the oracles.
Everything is jittable and vmappable: dense [n] arrays with masks, `lax.while_loop`s.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .. import rng

# A solver: (s, o, avail: bool[n], M) -> bool[n], the chosen batch (a subset of avail).
Solver = Callable[[jnp.ndarray, jnp.ndarray, jnp.ndarray, jnp.ndarray], jnp.ndarray]


def _rank(key: jnp.ndarray) -> jnp.ndarray:
    """Position of each element in the stable ascending sort of `key` (int32[n])."""
    n = key.shape[0]
    return jnp.zeros((n,), jnp.int32).at[jnp.argsort(key, stable=True)].set(jnp.arange(n, dtype=jnp.int32))


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
        return (
            mem + jnp.where(take, w[i], 0),
            count + take,
            chosen.at[i].set(take),
            pos.at[i].set(jnp.where(take, count, n)),
        ), None

    init = (jnp.int32(0), jnp.int32(0), jnp.zeros((n,), bool), jnp.full((n,), n, jnp.int32))
    (_, _, chosen, pos), _ = jax.lax.scan(body, init, walk)
    return chosen, pos


def local_swap(s: jnp.ndarray, o: jnp.ndarray, avail: jnp.ndarray, M) -> jnp.ndarray:
    """Algorithm 4: greedy fill in ascending (s + o, index) order, then `swap_search`."""
    w = s + o
    chosen, pos = greedy_fill(w, w, avail, M)
    return swap_search(s, o, avail, M, chosen, pos)


def swap_search(
    s: jnp.ndarray, o: jnp.ndarray, avail: jnp.ndarray, M, chosen: jnp.ndarray, pos: jnp.ndarray
) -> jnp.ndarray:
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
        ok = (
            chosen[:, None]
            & (avail & ~chosen)[None, :]
            & (mem + w[None, :] - w[:, None] <= M)
            & (o[None, :] < o[:, None])
        )
        rank = jnp.where(ok, pos[:, None] * n + ids[None, :], n * n)  # first in scan order
        flat = jnp.argmin(rank)
        return rank.reshape(-1)[flat] < n * n, flat // n, flat % n

    def cond(carry):
        return carry[3]

    def body(carry):
        chosen, pos, mem, _ = carry
        found, out, inn = best_pair(chosen, pos, mem)
        new = (
            chosen.at[out].set(False).at[inn].set(True),
            pos.at[inn].set(pos[out]).at[out].set(n),
            mem + w[inn] - w[out],
        )
        chosen, pos, mem = jax.tree_util.tree_map(lambda a, b: jnp.where(found, a, b), new, (chosen, pos, mem))
        return chosen, pos, mem, found

    chosen, *_ = jax.lax.while_loop(cond, body, (chosen, pos, mem, jnp.bool_(True)))
    return chosen


def order(s: jnp.ndarray, o: jnp.ndarray, M, solver: Solver) -> jnp.ndarray:
    """Phase 1 of Sorted-F: int32[n], the batches in selection order, each sorted by ascending
    (o, index). Requests with s + o > M are never chosen; they end the order, by index."""
    return phase1(s, o, M, solver)[0]


def phase1(s: jnp.ndarray, o: jnp.ndarray, M, solver: Solver) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Phase 1 of Sorted-F with its batches: (order int32[n] as `order` returns it, batch
    int32[n]: the index of the batch each request joined, in selection order; n for requests
    that never fit alone). The batches serve Lemma 1 and Theorem 4's checks."""
    n = s.shape[0]
    o_key = _rank(o)  # ascending (o, index) as one key

    def cond(carry):
        avail, _, _, _, _, k = carry
        return jnp.any(avail) & (k > 0)

    def body(carry):
        avail, out, label, filled, count, _ = carry
        batch = solver(s, o, avail, M)
        k = jnp.sum(batch).astype(jnp.int32)
        members = jnp.argsort(jnp.where(batch, o_key, n), stable=True)  # batch first, by o
        slot = jnp.arange(n, dtype=jnp.int32) - filled
        take = (slot >= 0) & (slot < k)
        out = jnp.where(take, members[jnp.clip(slot, 0, n - 1)], out)
        label = jnp.where(batch, count, label)
        return avail & ~batch, out, label, filled + k, count + 1, k

    avail = s + o <= M
    _, out, label, filled, _, _ = jax.lax.while_loop(
        cond,
        body,
        (avail, jnp.zeros((n,), jnp.int32), jnp.full((n,), n, jnp.int32), jnp.int32(0), jnp.int32(0), jnp.int32(1)),
    )
    # Requests that never fit alone go last, by index (the engine drops them).
    rest = jnp.argsort(jnp.where(avail, n, jnp.arange(n)), stable=True)
    slot = jnp.arange(n, dtype=jnp.int32) - filled
    return jnp.where(slot >= 0, rest[jnp.clip(slot, 0, n - 1)], out).astype(jnp.int32), label


def exact_dp(s: jnp.ndarray, o: jnp.ndarray, avail: jnp.ndarray, M, *, cap: int) -> jnp.ndarray:
    """Algorithm 2: the exact argmin of F(X) = sum o / |X|^2 over X within `avail` with
    sum(s + o) <= M, for a static table width `cap` >= M (tokens).

    `_min_f_dp` on the true weights s + o and the budget M; see it for the tie rules. Cost per
    instance: O(n^2 cap) work, (n + 1)(cap + 1)(4 + 4 ceil(n / 32)) bytes.
    """
    return _min_f_dp(s + o, o, avail, M, cap=cap)


def _min_f_dp(w: jnp.ndarray, o: jnp.ndarray, avail: jnp.ndarray, budget, *, cap: int) -> jnp.ndarray:
    """The knapsack DP shared by `exact_dp` and `scaled_dp`: argmin of sum o / |X|^2 over X
    within `avail` with sum w <= budget (w: int32[n] weights, budget <= static `cap`).

    dp[k][m] = least sum of o over sets of k available requests of weight sum exactly m; the
    requests are taken in index order and an entry changes only on a strict improvement, so the
    set kept for an entry is the one the plain-Python `_min_f_dp` backtracks to (the bits of
    `sets[k][m]` are the set that produced dp[k][m] when it was written). The answer minimises
    dp[k][m] / k^2, compared exactly by cross-multiplication; ties go to the larger k, then the
    smaller m. Returns bool[n] (all False when nothing is available).
    """
    n = w.shape[0]
    words = -(-n // 32)
    inf = jnp.iinfo(jnp.int32).max // 2
    dp = jnp.full((n + 1, cap + 1), inf, jnp.int32).at[0, 0].set(0)
    sets = jnp.zeros((n + 1, cap + 1, words), jnp.uint32)
    m_idx = jnp.arange(cap + 1, dtype=jnp.int32)

    def item(carry, q):
        dp, sets = carry
        use = avail[q] & (w[q] <= budget)
        shifted = jnp.roll(dp, w[q], axis=1)  # shifted[k][m] = dp[k][m - w]
        cand = jnp.where((m_idx >= w[q]) & (shifted < inf), shifted + o[q], inf)[:-1]
        better = use & (cand < dp[1:])  # rows k + 1 = 1..n
        bit = jnp.zeros((words,), jnp.uint32).at[q // 32].set(jnp.uint32(1) << (q % 32).astype(jnp.uint32))
        moved = jnp.roll(sets, w[q], axis=1)[:-1] | bit
        dp = dp.at[1:].set(jnp.where(better, cand, dp[1:]))
        sets = sets.at[1:].set(jnp.where(better[..., None], moved, sets[1:]))
        return (dp, sets), None

    (dp, sets), _ = jax.lax.scan(item, (dp, sets), jnp.arange(n))
    # For each size k the best entry is the least dp[k][m] over m <= budget (the smallest such
    # m); sizes are then compared exactly: v_k / k^2 against v_j / j^2 by 64-bit cross
    # products, ties to the larger size.
    row = jnp.where(m_idx[None, :] <= budget, dp, inf)
    vmin = jnp.min(row, axis=1)
    mbest = jnp.argmin(row, axis=1).astype(jnp.int32)

    def pick(best, k):
        v, bv = vmin[k], vmin[best]
        a, b = _mul64(v, best * best), _mul64(bv, k * k)  # v / k^2 <= bv / best^2 ?
        le = (a[0] < b[0]) | ((a[0] == b[0]) & (a[1] <= b[1]))
        take = (v < inf) & ((bv >= inf) | le)  # "<=": ties to the larger k
        return jnp.where(take, k, best), None

    best, _ = jax.lax.scan(pick, jnp.int32(0), jnp.arange(1, n + 1, dtype=jnp.int32))
    bits = sets[best, mbest[best]]
    ids = jnp.arange(n)
    chosen = ((bits[ids // 32] >> (ids % 32).astype(jnp.uint32)) & 1).astype(bool)
    return chosen & (best > 0)


# --------------------------------------------------------------------------------------------
# Scaled DP (Algorithm 3)
# --------------------------------------------------------------------------------------------
def decimal_fraction(x: float | int) -> Fraction:
    """A host option read as the shortest decimal that round-trips (Python's repr): 0.1 is
    exactly 1/10, not the binary double just above it. Ints are exact already."""
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    return Fraction(repr(float(x)))


def scaled_width(eps: float, B: float) -> int:
    """W = floor(B / eps) (eps and B read by `decimal_fraction`), the scaled DP's budget in
    rounded units when it rounds at all, so its table width is W + 1. Raises ValueError unless
    1 <= W <= 2^20."""
    e, b = decimal_fraction(eps), decimal_fraction(B)
    if e <= 0 or b <= 0:
        raise ValueError(f"scaled DP: eps and B must be positive, got eps={eps!r}, B={B!r}")
    W = math.floor(b / e)
    if not 1 <= W <= 1 << 20:
        raise ValueError(f"scaled DP: floor(B / eps) = {W} must lie in [1, 2^20]")
    return W


def _ceil_scaled(w: jnp.ndarray, W: int, M: jnp.ndarray) -> jnp.ndarray:
    """ceil(w W / M) for int32 0 <= w <= M < 2^31 and a static 1 <= W <= 2^20, exactly.

    w W needs up to 51 bits, so the quotient (at most W) is found bit by bit from the top: x is
    the largest value with x M < w W, compared as 64-bit products (`_mul64`); the ceiling is
    x + 1 (and 0 for w = 0). Entries with w > M come out as garbage and must be masked.
    """
    th, tl = _mul64(w, jnp.int32(W))
    x = jnp.zeros_like(w)
    for b in reversed(range(W.bit_length())):  # static: at most 21 rounds
        cand = x | (1 << b)
        ph, pl = _mul64(cand, M)
        x = jnp.where((ph < th) | ((ph == th) & (pl < tl)), cand, x)
    return jnp.where(w > 0, x + 1, 0)


def scaled_dp(
    s: jnp.ndarray, o: jnp.ndarray, avail: jnp.ndarray, M, *, eps: float = 0.1, B: float = 100
) -> jnp.ndarray:
    """Algorithm 3: `_min_f_dp` on weights rounded UP to a coarser unit, then a feasibility
    re-check on the true weights. s, o: int32[n] (tokens); avail: bool[n]; M: KV limit (tokens,
    traced, < 2^31); eps, B: static options (the paper's accuracy and scale). Returns bool[n].

    Rounding, exact in integers (the plain-Python `scaled_dp` uses the same definition with
    Fractions): with W = floor(B / eps) (`scaled_width`), the unit is lambda = max(1, M / W),
    i.e. eps M / B when B / eps is an integer (the default 100 / 0.1 = 1000). If M <= W
    (lambda = 1) the weights and budget are the true ones and this is `exact_dp`; otherwise
    w_hat = ceil((s + o) W / M) and M_hat = W. As M_hat <= W either way, the static table width
    W + 1 suffices for every M. Rounding up makes every set with sum w_hat <= M_hat feasible
    (sum w <= lambda sum w_hat <= lambda M_hat <= M), so the re-check can only fail if that
    argument is broken; it then falls back to the best single request (least (o, index)), which
    always fits, rather than return an infeasible batch. Requests with s + o > M are never
    chosen. Tie rules: exact_dp's, on (|X|, sum w_hat).
    Cost per call: O(n^2 W) work, (n + 1)(W + 1)(4 + 4 ceil(n / 32)) bytes.
    """
    W = scaled_width(eps, B)
    w = s + o
    M = jnp.asarray(M, jnp.int32)
    avail = avail & (w <= M)
    scaled = M > W
    w_hat = jnp.where(scaled, _ceil_scaled(jnp.where(avail, w, 0), W, M), w)
    chosen = _min_f_dp(w_hat, o, avail, jnp.where(scaled, W, M), cap=W)
    ok = jnp.sum(jnp.where(chosen, w, 0)) <= M
    single = jnp.arange(s.shape[0]) == jnp.argmin(jnp.where(avail, _rank(o), s.shape[0]))
    return jnp.where(ok, chosen, single & avail)


# --------------------------------------------------------------------------------------------
# Quantile greedy (Algorithm 5)
# --------------------------------------------------------------------------------------------
# hash3 stream tag of the quantile sample (`jaxsched.rng` uses tags 6 and 10 directly and
# 64 * stream + sub, i.e. 64..703, through `uniform`; 11 is free). The index hashed is
# round * 2^16 + i, round = the number of requests not available at the call, which rises with
# every Phase-1 batch, so successive calls draw fresh samples (n <= 2^16, as OfflineConfig
# requires, keeps this injective).
STREAM_QUANTILE = 11
# Denominator bound of the quantile's exact threshold test: every gap v_hi - v_lo between two
# sampled values is below 2^31.
_DEN_LIMIT = (1 << 31) - 1


def _floor_fraction(x: Fraction, limit: int) -> tuple[int, int]:
    """The largest fraction p / q <= x (0 <= x < 1) with q <= limit, as (p, q); a Stern-Brocot
    walk with whole runs of steps at once (O(log limit) rounds)."""
    if x.denominator <= limit:
        return x.numerator, x.denominator
    a, b, c, d = 0, 1, 1, 0  # lo = a / b <= x < hi = c / d
    while True:
        # Move lo toward hi: the most steps k with (a + k c) / (b + k d) <= x, b + k d <= limit.
        k = math.floor((x * b - a) / (c - x * d))
        if d:
            k = min(k, (limit - b) // d)
        a, b = a + k * c, b + k * d
        if x * b == a:
            return a, b
        # Move hi toward lo: the most steps k with (c + k a) / (d + k b) > x, d + k b <= limit.
        k2 = math.ceil((c - x * d) / (x * b - a)) - 1
        k2 = min(k2, (limit - d) // b)
        c, d = c + k2 * a, d + k2 * b
        if k == 0 and k2 == 0:
            return a, b


@functools.lru_cache(maxsize=64)
def _quantile_tables(n: int, q: float, frac: float) -> tuple[np.ndarray, ...]:
    """Host tables of Algorithm 5 for n requests (each int32[n + 1], indexed by a count):
    size[m] = max(1, floor(frac m)) (size[0] = 0), the sample size for m available requests;
    for a sample of k sorted values v_0..v_{k-1}: lo[k], hi[k] (the two order statistics of the
    numpy-"linear" quantile at h = (k - 1) q: lo = floor(h), hi = lo + 1, both k - 1 when h =
    k - 1) and gp[k] / gq[k], the largest fraction with denominator <= _DEN_LIMIT at most
    g = h - floor(h). q and frac are read by `decimal_fraction`."""
    qf, ff = decimal_fraction(q), decimal_fraction(frac)
    if not (0 <= qf <= 1 and 0 < ff <= 1):
        raise ValueError(f"quantile greedy: need 0 <= q <= 1 and 0 < frac <= 1, got {q}, {frac}")
    size = np.array([0] + [max(1, math.floor(ff * m)) for m in range(1, n + 1)], np.int32)
    lo, hi, gp, gq = (np.zeros(n + 1, np.int32) for _ in range(4))
    gq[:] = 1
    for k in sorted(set(size[1:].tolist())):
        h = (k - 1) * qf
        f = math.floor(h)
        if f >= k - 1:
            lo[k] = hi[k] = k - 1
        else:
            lo[k], hi[k] = f, f + 1
            gp[k], gq[k] = _floor_fraction(h - f, _DEN_LIMIT)
    return size, lo, hi, gp, gq


def _at_most_quantile(x: jnp.ndarray, v_lo, v_hi, gp, gq) -> jnp.ndarray:
    """x <= v_lo + g (v_hi - v_lo) exactly, for int32 x and sorted sample values v_lo <= v_hi.

    With t = x - v_lo and d = v_hi - v_lo (0 < t <= d < 2^31 in the only case that needs
    thought), x <= Q iff t / d <= g; as t / d has denominator <= d <= _DEN_LIMIT, that holds iff
    t / d <= gp / gq (the largest such fraction below g), i.e. t gq <= gp d in 64 bits.
    """
    x, v_lo, v_hi, gp, gq = (jnp.asarray(a, jnp.int32) for a in (x, v_lo, v_hi, gp, gq))
    t, d = x - v_lo, v_hi - v_lo
    a, b = _mul64(jnp.maximum(t, 0), gq), _mul64(gp, d)
    le = (a[0] < b[0]) | ((a[0] == b[0]) & (a[1] <= b[1]))
    return (x <= v_lo) | ((x <= v_hi) & le)


def ratio_rank(s: jnp.ndarray, o: jnp.ndarray) -> jnp.ndarray:
    """Position of each request in ascending (o / (s + o), index) order, exactly (int32[n]);
    needs 0 <= s, 1 <= s + o < 2^31.

    float32 ratios would collide; instead the key is floor(o 2^62 / (s + o)), a 63-bit fixed
    point number built by long division (two uint32 words). Two different ratios with
    denominators below 2^31 differ by more than 2^-62, so their keys differ in the same
    direction; equal ratios give equal keys, then the index decides. Cost: 62 vector rounds.
    """
    n = s.shape[0]
    w = jnp.maximum(s + o, 1).astype(jnp.uint32)
    num = o.astype(jnp.uint32)
    whole = (num >= w).astype(jnp.uint32)  # o / w <= 1: the integer part
    rem = num - whole * w

    def bit(_, carry):
        hi, lo, rem = carry
        rem = rem << 1  # rem < w < 2^31: no overflow
        b = (rem >= w).astype(jnp.uint32)
        return (hi << 1) | (lo >> 31), (lo << 1) | b, rem - b * w

    hi, lo, _ = jax.lax.fori_loop(0, 62, bit, (jnp.zeros_like(w), whole, rem))
    ids = jnp.arange(n, dtype=jnp.int32)
    _, _, perm = jax.lax.sort((hi, lo, ids), num_keys=3)
    return jnp.zeros((n,), jnp.int32).at[perm].set(ids)


def quantile_sample(avail: jnp.ndarray, seed, size, n_real=None) -> jnp.ndarray:
    """Algorithm 5's random sample: the `size` available requests with the least
    (hash3(seed, round 2^16 + i, STREAM_QUANTILE), i), round = number of unavailable requests.
    Returns bool[n]. tests/reference/offline.py's `hash_quantile_solver` draws the same.
    n_real (int32 scalar or None): the instance's own requests when entries i >= n_real are
    padding (never available); the round counts the instance's own requests only."""
    n = avail.shape[0]
    ids = jnp.arange(n, dtype=jnp.int32)
    rnd = ((n if n_real is None else n_real) - jnp.sum(avail)).astype(jnp.uint32)
    keys = rng.hash3(seed, (rnd << 16) | ids.astype(jnp.uint32), STREAM_QUANTILE)
    _, _, perm = jax.lax.sort(((~avail).astype(jnp.int32), keys, ids), num_keys=3)
    pos = jnp.zeros((n,), jnp.int32).at[perm].set(ids)
    return avail & (pos < size)


def quantile_greedy(
    s: jnp.ndarray,
    o: jnp.ndarray,
    avail: jnp.ndarray,
    M,
    *,
    seed,
    q: float = 0.3,
    frac: float = 0.5,
    ratios: jnp.ndarray | None = None,
    n_real=None,
) -> jnp.ndarray:
    """Algorithm 5 (quantile greedy). s, o: int32[n] (tokens, s + o < 2^31); avail: bool[n];
    M: KV limit (tokens); seed: the run's uint32 seed; q, frac: static options (paper: 0.3,
    0.5), read as decimals (`decimal_fraction`); ratios: `ratio_rank(s, o)` if already
    computed (it depends only on the instance; the policy computes it once per run);
    n_real: the instance's own requests when the arrays are padded (`quantile_sample`).
    Returns bool[n].

    1. Sample: max(1, floor(frac m)) of the m available requests (`quantile_sample`).
    2. Q_p, Q_o: numpy-"linear" q-quantiles of s + o and of o over the sample, with h = (k - 1)
       q exact, so membership (w <= Q_p, o <= Q_o) is decided exactly (`_at_most_quantile`).
    3. Phase 1: walk the members in ascending (o, index), adding each that fits (sum(s + o) <=
       M); Phase 2: walk the rest in ascending (o / (s + o), index), adding each that fits. One
       greedy scan does both, as a member that did not fit in Phase 1 cannot fit later (memory
       only grows).
    Cost per call: O(n log n) (three sorts and one scan).
    """
    n = s.shape[0]
    w = s + o
    size_t, lo_t, hi_t, gp_t, gq_t = (jnp.asarray(t) for t in _quantile_tables(n, q, frac))
    size = size_t[jnp.sum(avail)]
    sample = quantile_sample(avail, seed, size, n_real)
    big = jnp.iinfo(jnp.int32).max
    ws, os_ = jnp.sort(jnp.where(sample, w, big)), jnp.sort(jnp.where(sample, o, big))
    k = jnp.maximum(size, 1)
    lo, hi, gp, gq = lo_t[k], hi_t[k], gp_t[k], gq_t[k]
    member = avail & _at_most_quantile(w, ws[lo], ws[hi], gp, gq) & _at_most_quantile(o, os_[lo], os_[hi], gp, gq)
    if ratios is None:
        ratios = ratio_rank(s, o)
    key = jnp.where(member, _rank(o), n + ratios)
    chosen, _ = greedy_fill(w, key, avail, M)
    return chosen


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
