"""Window fill: the BF-IO step of the theory semantics, by contiguous windows of the sorted pool.

In the proofs of the BF-IO paper's Theorems 2 and 3, BF-IO minimizes the spread D = max - min of
the post-admission loads while every worker g receives exactly c_g = free_g new requests. The IO
kernels (valley fill, local search, round LPT) aim at the IO objective J = G max L' - sum L'
instead, which ignores the minimum; window fill aims at D directly:

1. Sort the valid requests ascending (ties: earlier pool position first); n of them, total S.
2. U = min(n, sum free) requests are admitted: c_g = free_g, trimmed in worker order (lowest
   index keeps its slots) when the pool is short.
3. Target level T = (sum_g L_g + U * S / n) / G (every worker level after admitting U requests of
   the mean size; all G workers count, those without a free slot too); need X_g = T - L_g
   (tokens, exact rational).
4. Workers with c_g > 0 in order of |X_g / c_g - S / n| descending (ties: lowest index): the most
   extreme average needs go first, while the whole size range is still there.
5. Each takes, among the remaining sorted requests, the contiguous run ("window") of c_g requests
   whose sum is closest to X_g (ties: the window of smaller requests, i.e. the lower start).

Why windows: over the remaining requests a_0 <= a_1 <= ..., the window sums W_j = a_j + ... +
a_{j+c-1} are nondecreasing in j and W_{j+1} - W_j = a_{j+c} - a_j <= s_max - s_min. So a worker
whose need lies in [W_first, W_last] gets within (s_max - s_min) / 2 of it, and otherwise the end
window nearest to it (tests/kernels/test_window_fill.py checks exactly this). The order (step 4) is a
heuristic: it does not bound D for the later workers, which only see what remains.

Exactness. T = tq + tf / (G n) with integers tq and 0 <= tf < G n, computed without overflow
(`_mul_divmod`); window sums are integers, so the closest one is chosen exactly, in int32. Only the
worker order (step 4) uses float32: key_g = |(float(X_int) + float(tf) / float(G n)) / float(c_g) -
(float(S // n) + float(S % n) / float(n))|, each operation one IEEE float32 op. Requires
G * n < 2^30 and sum of all loads plus sizes < 2^31.

Cost: the ascending sort (O(R log R)), then G sequential iterations of O(R) vector work (a prefix
sum over the remaining requests, a count, and one gather that removes the chosen window): O(G R)
per step. The remaining requests are kept compacted in a carried index array; a taken window moves
to the tail (which never moves again), tagged with its worker and rank, so the result needs one
final scatter, and no [R, G] one-hot. Measured, vmapped over 4 pools, sizes 1..20: at G = 256,
R = 28210 (U about 26000) 7.7 ms per call on an H200 and 256 ms on 16 CPU cores; at G = 64,
R = 2138, 2.3 ms and 8 ms.

Jittable and vmappable; int32 throughout except the float32 order key.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .round_lpt import _descending_requests


def _mul_divmod(a: jnp.ndarray, b: jnp.ndarray, n: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(a * b // n, a * b % n) for int32 scalars 0 <= a, 0 <= b < n < 2^30, without forming a * b
    (which overflows int32 for pools above 46340): binary long multiplication modulo n, 31 steps
    of scalar work. Needs a * b // n < 2^31."""

    def body(i, qr):
        q, r = qr
        r, q = 2 * r, 2 * q  # r < n < 2^30, so 2r fits
        over = r >= n
        q, r = q + over, r - jnp.where(over, n, 0)
        bit = (a >> (30 - i)) & 1
        r = r + bit * b
        over = r >= n
        return q + over, r - jnp.where(over, n, 0)

    return jax.lax.fori_loop(0, 31, body, (jnp.int32(0), jnp.int32(0)))


def _target(loads, S, n, U, G):
    """T = (sum loads + U * S / n) / G as (tq, tf, D): T = tq + tf / D, 0 <= tf < D = G n."""
    qS, rS = S // n, S % n
    a1, b1 = _mul_divmod(U, rS, n)  # U * rS = a1 n + b1
    M = jnp.sum(loads) + U * qS + a1  # G T = M + b1 / n
    return M // G, (M % G) * n + b1, G * n


def _order_key(X_int, tf, D, c, qS, rS, n):
    """float32 |X_g / c_g - mean size| (module docstring); -1 for workers with no slot."""
    f = jnp.float32
    X = X_int.astype(f) + tf.astype(f) / D.astype(f)
    mean = qS.astype(f) + rS.astype(f) / n.astype(f)
    return jnp.where(c > 0, jnp.abs(X / jnp.maximum(c, 1).astype(f) - mean), f(-1))


def _best_start(rem, n, c, xq, tf, D):
    """Start (compact index) of the window of c remaining requests whose sum is closest to
    X = xq + tf / D (0 <= tf < D); ties: the lower start. rem int32[R]: the remaining sizes,
    ascending, the first n meaningful; c <= n."""
    R = rem.shape[0]
    j = jnp.arange(R + 1, dtype=jnp.int32)
    P = jnp.concatenate([jnp.zeros((1,), jnp.int32), jnp.cumsum(jnp.where(j[:R] < n, rem, 0))])
    W = P[jnp.minimum(j + c, R)] - P  # window sums, nondecreasing in the start
    ok = j <= n - c
    k = jnp.sum(ok & (W <= xq), dtype=jnp.int32)  # windows with sum <= floor(X)
    w1 = W[jnp.maximum(k - 1, 0)]  # largest such sum ...
    j1 = jnp.sum(ok & (W < w1), dtype=jnp.int32)  # ... at its lowest start
    w2 = W[jnp.minimum(k, R)]  # smallest sum > floor(X), at start k
    # |w1 - X| <= |w2 - X|  <=>  m D >= 2 tf with m = w1 + w2 - 2 xq; 0 <= 2 tf < 2 D decides
    # every m outside {0, 1} without the product (which could overflow).
    m = w1 + w2 - 2 * xq
    low_wins = (m >= 2) | ((m == 1) & (2 * tf <= D)) | ((m == 0) & (tf == 0))
    return jnp.where(k == 0, 0, jnp.where((k > n - c) | low_wins, j1, k))


def window_fill(
    loads: jnp.ndarray,
    free: jnp.ndarray,
    sizes: jnp.ndarray,
    valid: jnp.ndarray,
    num_workers: jnp.ndarray | None = None,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Window-fill assignment for the BF-IO step (module docstring).

    loads int32[G] current loads (tokens); free int32[G] free slots (>= 0); sizes int32[R]
    request prompt lengths (tokens, >= 1); valid bool[R] which pool entries wait. Returns
    (worker, rank) int32[R]: worker -1 = not admitted (rank 0); rank = 0-based index of the
    request among its worker's new requests, in ascending size order. num_workers: None, or
    the traced number of workers of a run padded into G (the first num_workers are its own,
    the others have load 0 and no free slot): the target level divides by it (exact integer
    arithmetic, so the same T as the unpadded run), and the padded workers, taking no request,
    sort after every worker that does.
    """
    G, R = loads.shape[0], sizes.shape[0]
    pos = jnp.arange(R, dtype=jnp.int32)
    # Ascending, ties by pool position: the descending order of the negated sizes.
    perm, neg = _descending_requests(-sizes, valid)
    n = jnp.sum(valid, dtype=jnp.int32)
    asc = jnp.where(pos < n, -neg, 0)
    U = jnp.minimum(n, jnp.sum(free))
    before = jnp.cumsum(free) - free
    c = jnp.clip(U - before, 0, free)  # trimmed in worker order
    n1 = jnp.maximum(n, 1)
    S = jnp.sum(asc)
    tq, tf, D = _target(loads, S, n1, U, G if num_workers is None else num_workers)
    X_int = tq - loads  # X_g = X_int + tf / D
    key = _order_key(X_int, tf, D, c, S // n1, S % n1, n1)
    order = jnp.argsort(-key, stable=True).astype(jnp.int32)

    def body(i, carry):
        idx, rem, tag, left = carry  # compact slot -> sorted position, size
        g = order[i]
        cg = c[g]
        jb = _best_start(rem, left, cg, X_int[g], tf, D)
        # Remove [jb, jb + cg): later requests shift down by cg and the window moves to
        # [left - cg, left), in front of the earlier windows (slots >= left never move).
        tail = left - cg
        src = jnp.where(pos < jb, pos, jnp.where(pos < tail, pos + cg, jnp.where(pos < left, pos - tail + jb, pos)))
        src = jnp.minimum(src, R - 1)
        in_tail = (pos >= tail) & (pos < left)
        tag = jnp.where(in_tail, g + G * (pos - tail), tag)
        return idx[src], rem[src], tag, tail

    init = (pos, asc, jnp.full((R,), -1, jnp.int32), n)
    idx, _, tag, _ = jax.lax.fori_loop(0, G, body, init)
    # Back to pool order: perm[idx] is a permutation of the pool.
    dest = perm[idx]
    worker = jnp.zeros((R,), jnp.int32).at[dest].set(jnp.where(tag >= 0, tag % G, -1), unique_indices=True)
    rank = jnp.zeros((R,), jnp.int32).at[dest].set(jnp.where(tag >= 0, tag // G, 0), unique_indices=True)
    return worker, rank
