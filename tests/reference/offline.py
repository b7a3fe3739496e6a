"""Plain-Python reference of the offline Sorted-F model (notes/002.md), the test oracle.

Model: n requests, all present at t = 0, one worker whose KV cache holds at most M tokens.
Request i has a prompt of s_i tokens and o_i output tokens (integers, s_i >= 0, o_i >= 1,
s_i + o_i <= M). Time is counted in decode steps t = 1, 2, ...; memory in tokens.

Time convention (notes section 2.1, the paper's IP (6), Example 1):
- a request admitted at step t has start p = t - 1 (steps are numbered from 1, starts from 0);
- its j-th output token (j = 1..o) is generated at step p + j and needs s + j tokens then;
- it completes at step c = p + o, the step of its peak s + o, and frees its memory after it.
TEL (total end-to-end latency) is sum_i c_i, in steps.

Everything here is Python ints and lists, written for clarity, not speed: the JAX engine is
property-tested against it; it needs nothing beyond the standard library. The exact optimum
(the OPT integer program) is `jaxsched.offline.lp.opt_ip`, checked against the brute force of
tests/reference/offline_lp.py.

Entry points:
- `execute(s, o, order, M)`: the Phase-2 executor (future-peak check, strict prefix admission).
- `memory_trajectory`, `tel`, `separate_tel` (Theorem 4's bound).
- Orders: `order_fcfs`, `order_mcsf`, `order_mcsf2`, and `sorted_f` (Phase 1 of Algorithm 1).
- Phase-1 solvers `exact_dp`, `brute_force`, `scaled_dp`, `local_swap` (its swap loop alone:
  `swap_scan`), `quantile_greedy` (with `quantile_exact`, `quantile_linear`, and the solver
  builders `quantile_solver` (any sampler) and `hash_quantile_solver` (jaxsched's sample)).
- `best_order_tel`: the best executor order (tiny n).

Every tie is broken by a stated rule, never by dictionary or set iteration order, so the engine
can reproduce each choice exactly. "Index" always means the request's index in s and o.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction
from typing import Callable, Optional, Sequence

from .rng import _mix32

__all__ = [
    "execute",
    "memory_trajectory",
    "tel",
    "order_fcfs",
    "order_mcsf",
    "order_mcsf2",
    "separate_tel",
    "fits_knapsack",
    "f_metric",
    "exact_dp",
    "brute_force",
    "scaled_dp",
    "scaled_lambda",
    "scaled_width",
    "decimal",
    "local_swap",
    "quantile_linear",
    "quantile_exact",
    "quantile_greedy",
    "quantile_solver",
    "stdlib_sampler",
    "hash3",
    "hash_quantile_solver",
    "sorted_f",
    "swap_scan",
    "best_order_tel",
    "Solver",
]

# A Phase-1 solver: (remaining indices, s, o, M) -> chosen batch (request indices).
Solver = Callable[[Sequence[int], Sequence[int], Sequence[int], int], list]

QUANTILE_LEVEL = 0.3  # Algorithm 5's quantile for both thresholds
SAMPLE_FRACTION = 0.5  # Algorithm 5's sample size: max(1, floor(0.5 |I|))


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------
def _check_instance(s: Sequence[int], o: Sequence[int], M: int) -> None:
    """Raise ValueError unless s, o are equal-length integer lists that each fit alone in M.

    A request with s + o > M could never start, so every schedule of it would be infinite.
    """
    if len(s) != len(o):
        raise ValueError(f"s and o differ in length ({len(s)} != {len(o)})")
    if int(M) != M or M < 1:
        raise ValueError(f"M must be a positive integer, got {M!r}")
    for i, (si, oi) in enumerate(zip(s, o)):
        if int(si) != si or int(oi) != oi or si < 0 or oi < 1:
            raise ValueError(f"request {i}: need integers s >= 0 and o >= 1, got ({si}, {oi})")
        if si + oi > M:
            raise ValueError(f"request {i}: s + o = {si + oi} > M = {M}; it could never start")


def _check_perm(order: Sequence[int], n: int) -> None:
    """Raise ValueError unless `order` is a permutation of range(n)."""
    if sorted(order) != list(range(n)):
        raise ValueError(f"order must be a permutation of range({n}), got {list(order)}")


# --------------------------------------------------------------------------------------------
# Phase 2: the executor
# --------------------------------------------------------------------------------------------
def _peaks_fit(members: Sequence[tuple[int, int, int]], M: int) -> bool:
    """True iff M(X, c_j) <= M for every j in X, X given as (s, p, c) triples.

    M(X, c_j) = sum over l in X with c_l >= c_j of (s_l + c_j - p_l) tokens. Between two
    completions the memory of X only grows, so its maximum over future steps is reached at
    some c_j (notes section 2.0): checking these points is checking every future step.
    """
    for _, _, cj in members:
        if sum(sl + cj - pl for sl, pl, cl in members if cl >= cj) > M:
            return False
    return True


def execute(s: Sequence[int], o: Sequence[int], order: Sequence[int], M: int) -> tuple[list[int], list[int]]:
    """Run the Phase-2 executor (notes section 2.1) on `order`; return starts and completions.

    At each step t = 1, 2, ...: the active set V is every admitted request with c >= t
    (completed ones are dropped). Then the pending requests are walked in `order` from the
    head; candidate r (tentatively p_r = t - 1, c_r = p_r + o_r) is admitted iff, with r
    included, M(X, c_j) <= M tokens for every j in X = V + U + {r}, U being the requests admitted
    earlier in this step. Admission is a strict prefix: the walk stops at the first candidate
    that does not fit, and nobody behind it is tried (head-of-line blocking). When V is empty
    the head always fits (s + o <= M), so the loop ends.

    Args: s, o: prompt and output lengths in tokens; order: a permutation of range(n), the
    admission priority; M: KV limit in tokens.
    Returns: (p, c), lists indexed by request: start step p_i >= 0 and completion step
    c_i = p_i + o_i. Starts are nondecreasing along `order`.
    Raises: ValueError for a request with s + o > M, or an `order` that is not a permutation.
    """
    _check_instance(s, o, M)
    n = len(s)
    _check_perm(order, n)
    p: list[int] = [-1] * n
    c: list[int] = [-1] * n
    active: list[int] = []
    head, t = 0, 0
    while head < n:  # once all are admitted, their p and c are final
        t += 1
        active = [j for j in active if c[j] >= t]
        members = [(s[j], p[j], c[j]) for j in active]
        while head < n:
            r = order[head]
            cand = (s[r], t - 1, t - 1 + o[r])
            if not _peaks_fit(members + [cand], M):
                break
            p[r], c[r] = t - 1, t - 1 + o[r]
            members.append(cand)
            active.append(r)
            head += 1
    return p, c


def memory_trajectory(s: Sequence[int], o: Sequence[int], p: Sequence[int]) -> list[int]:
    """Tokens in use at each step t = 1..makespan (entry t - 1), for starts p.

    A request uses s + t - p tokens at every step t with p < t <= p + o. The makespan is
    max_i (p_i + o_i); an empty instance has an empty trajectory.
    """
    horizon = max((pi + oi for pi, oi in zip(p, o)), default=0)
    return [sum(si + t - pi for si, oi, pi in zip(s, o, p) if pi < t <= pi + oi) for t in range(1, horizon + 1)]


def tel(c: Sequence[int]) -> int:
    """Total end-to-end latency: the sum of completion steps (all requests arrive at 0)."""
    return sum(c)


# --------------------------------------------------------------------------------------------
# Orders
# --------------------------------------------------------------------------------------------
# The orders this reference implements, by the engine's policy names: fcfs (order_fcfs of the
# run's random permutation), mcsf, mcsf2 (order_mcsf, order_mcsf2) and Sorted-F (`sorted_f`) with
# Phase 1 by local_swap, exact_dp, scaled_dp and hash_quantile_solver.
POLICIES: tuple[str, ...] = (
    "fcfs",
    "mcsf",
    "mcsf2",
    "sorted_f_swap",
    "sorted_f_dp",
    "sorted_f_scaled",
    "sorted_f_quantile",
)


def order_fcfs(perm: Sequence[int]) -> list[int]:
    """FCFS: the arrival order itself (a given permutation, e.g. a random shuffle)."""
    return list(perm)


def order_mcsf(s: Sequence[int], o: Sequence[int]) -> list[int]:
    """MC-SF: ascending o, ties by index."""
    return sorted(range(len(o)), key=lambda i: (o[i], i))


def order_mcsf2(s: Sequence[int], o: Sequence[int]) -> list[int]:
    """MC-SF2 (Theorem EC.1): ascending s + o, ties by index."""
    return sorted(range(len(o)), key=lambda i: (s[i] + o[i], i))


def separate_tel(batches: Sequence[Sequence[int]], o: Sequence[int]) -> int:
    """TEL of Sorted-F_separate (Theorem 4), in steps.

    Batch k starts when every earlier batch has finished, at step sum_{l<k} max_{i in X_l} o_i,
    and all its requests start together, so
        TEL = sum_k [ n_k * sum_{l<k} max_{i in X_l} o_i + sum_{i in X_k} o_i ].
    For batches satisfying the knapsack constraint, the executor run on their concatenation
    has TEL <= this (Theorem 4).
    """
    total, start = 0, 0
    for batch in batches:
        total += len(batch) * start + sum(o[i] for i in batch)
        start += max((o[i] for i in batch), default=0)
    return total


# --------------------------------------------------------------------------------------------
# Phase 1: batch selection
# --------------------------------------------------------------------------------------------
def fits_knapsack(batch: Sequence[int], s: Sequence[int], o: Sequence[int], M: int) -> bool:
    """The Phase-1 constraint: sum over the batch of (s_i + o_i) <= M tokens."""
    return sum(s[i] + o[i] for i in batch) <= M


def f_metric(batch: Sequence[int], o: Sequence[int]) -> Fraction:
    """F(X) = (sum of o over X) / |X|^2, exactly (steps per request^2; lower is better)."""
    if not batch:
        raise ValueError("F is undefined for an empty batch")
    return Fraction(sum(o[i] for i in batch), len(batch) ** 2)


def _min_f_dp(items: Sequence[int], w: Sequence[int], o: Sequence[int], cap: int) -> list[int]:
    """The knapsack DP shared by `exact_dp` and `scaled_dp` (weights w, capacity cap).

    dp[k][m] = min sum of o over sets of exactly k of `items` with weight sum exactly m.
    Items are taken in the order given; an entry is replaced only on a STRICT improvement, and
    take[q][k][m] records that item q replaced dp[k][m]. Backtracking from the answer then
    yields, among the optimal sets of that (k, m), the one whose largest differing position
    (in `items`) is absent: the colex-smallest set of positions. The answer (k, m) minimises
    dp[k][m] / k^2 exactly; ties go to the larger k, then to the smaller m.
    """
    n = len(items)
    inf = math.inf
    dp = [[inf] * (cap + 1) for _ in range(n + 1)]
    dp[0][0] = 0
    take = [[bytearray(cap + 1) for _ in range(n + 1)] for _ in range(n)]
    for q, i in enumerate(items):
        wi, oi = w[i], o[i]
        if wi > cap:
            continue
        for k in range(q, -1, -1):  # descending k: dp[k] is read before this item writes it
            row, nxt, tk = dp[k], dp[k + 1], take[q][k + 1]
            for m in range(cap - wi + 1):
                if row[m] != inf and row[m] + oi < nxt[m + wi]:
                    nxt[m + wi] = row[m] + oi
                    tk[m + wi] = 1
    best: Optional[tuple[int, int]] = None  # (k, m)
    for k in range(1, n + 1):
        for m in range(cap + 1):
            v = dp[k][m]
            if v == inf:
                continue
            if best is None:
                best = (k, m)
                continue
            bk, bm = best
            # v/k^2 vs dp[bk][bm]/bk^2 by cross-multiplication; scanning k upward and m upward,
            # "<=" across k hands ties to the larger k, "<" within k keeps the smaller m.
            lhs, rhs = v * bk * bk, dp[bk][bm] * k * k
            if lhs < rhs or (lhs == rhs and k > bk):
                best = (k, m)
    if best is None:
        return []
    k, m = best
    chosen = []
    for q in range(n - 1, -1, -1):
        if k > 0 and take[q][k][m]:
            chosen.append(items[q])
            k, m = k - 1, m - w[items[q]]
    chosen.reverse()
    return chosen


def exact_dp(idx: Sequence[int], s: Sequence[int], o: Sequence[int], M: int) -> list[int]:
    """Algorithm 2: the exact argmin of F(X) over X subset of idx with sum(s + o) <= M.

    Tie rules (the engine must match them exactly):
    1. F is compared exactly (integers, cross-multiplied); ties go to the LARGER |X| (Alg. 1's
       (F, -|X|) order, not Alg. 2's scan), then to the smaller total weight sum(s + o).
    2. Within one (|X|, weight), the DP visits items in `idx` order and replaces a table entry
       only on a strict improvement, so of the sets with the minimal sum of o it returns the one
       whose last differing position in `idx` is absent (colex-smallest set of positions).
    Returns the batch as request indices in `idx` order; [] if idx is empty.
    Cost: O(|idx|^2 * M) time, O(|idx|^2 * M) bits for the take table.
    """
    w = {i: s[i] + o[i] for i in idx}
    return _min_f_dp(list(idx), w, o, M)


def brute_force(idx: Sequence[int], s: Sequence[int], o: Sequence[int], M: int) -> list[int]:
    """Every nonempty subset of idx (tiny |idx| only), with exact_dp's objective and tie rules.

    Key, minimised: (F(X) as a Fraction, -|X|, sum(s + o), sum over members of 2^position),
    position being the place in `idx`; the last term is exact_dp's colex rule.
    Returns the batch in `idx` order; [] if idx is empty.
    """
    items = list(idx)
    best_key, best = None, []
    for mask in range(1, 1 << len(items)):
        batch = [items[q] for q in range(len(items)) if mask >> q & 1]
        weight = sum(s[i] + o[i] for i in batch)
        if weight > M:
            continue
        key = (f_metric(batch, o), -len(batch), weight, mask)
        if best_key is None or key < best_key:
            best_key, best = key, batch
    return best


def decimal(x: float) -> Fraction:
    """A float option read as the shortest decimal that round-trips (repr): 0.1 -> 1/10."""
    return Fraction(x) if isinstance(x, int) else Fraction(repr(float(x)))


def scaled_width(eps: float, B: float) -> int:
    """W = floor(B / eps), eps and B read by `decimal` (1000 for the defaults)."""
    return math.floor(decimal(B) / decimal(eps))


def scaled_lambda(M: int, eps: float, B: float) -> Fraction:
    """Algorithm 3's unit lambda = max(1, M / W), W = `scaled_width(eps, B)`, exactly: the
    paper's eps * M / B whenever B / eps is an integer."""
    return max(Fraction(1), Fraction(M, scaled_width(eps, B)))


def scaled_dp(
    idx: Sequence[int], s: Sequence[int], o: Sequence[int], M: int, eps: float = 0.1, B: float = 100
) -> list[int]:
    """Algorithm 3: exact_dp on weights rounded UP to multiples of lambda, then a re-check.

    lambda = `scaled_lambda(M, eps, B)` (a Fraction); w_hat_i = ceil((s_i + o_i) / lambda) and
    M_hat = floor(M / lambda), in exact rational arithmetic (jaxsched.offline.sorted_f.scaled_dp
    uses the same definition in integers). Rounding up keeps every returned set feasible:
    sum w_hat <= M_hat implies sum(s + o) <= lambda M_hat <= M. The set is still re-checked on
    the true weights; were it infeasible, the answer would be the single request of least
    (o, index). With lambda = 1 (M <= B / eps) this is exactly exact_dp. eps and B are
    unspecified in the paper; 0.1 and 100 are this project's defaults. Tie rules are
    exact_dp's, on (|X|, sum w_hat).
    """
    lam = scaled_lambda(M, eps, B)
    w = {i: math.ceil(Fraction(s[i] + o[i]) / lam) for i in idx}
    batch = _min_f_dp(list(idx), w, o, math.floor(M / lam))
    if fits_knapsack(batch, s, o, M):
        return batch
    return [min(idx, key=lambda i: (o[i], i))]


def local_swap(idx: Sequence[int], s: Sequence[int], o: Sequence[int], M: int) -> list[int]:
    """Algorithm 4 (local swap search), as notes section 2.3(c) resolves it.

    1. Greedy fill: walk idx in ascending (s + o, index) order, adding a request whenever the
       batch's sum(s + o) stays <= M (skip, not stop), which gives a maximum-cardinality set.
       X is kept as a list in insertion order.
    2. First-improvement swaps: scan r_out over X in list order and, for each, r_in over
       idx \\ X in ascending index order; accept the first pair with memory + (w_in - w_out)
       <= M and o_in < o_out (|X| is fixed, so this is newF < currentF). r_in takes r_out's
       place in the list, and the scan restarts from the top. Stop when a full scan finds no
       improving pair; sum of o strictly falls with each swap, so this terminates.
    Returns X in list order; [] if idx is empty.
    """
    batch: list[int] = []
    mem = 0
    for i in sorted(idx, key=lambda i: (s[i] + o[i], i)):
        if mem + s[i] + o[i] <= M:
            batch.append(i)
            mem += s[i] + o[i]
    return swap_scan(batch, idx, s, o, M)


def swap_scan(batch: Sequence[int], idx: Sequence[int], s: Sequence[int], o: Sequence[int], M: int) -> list[int]:
    """Step 2 of `local_swap` (Algorithm 4's swap loop) from a given batch (a list, in its
    insertion order, of members of idx with sum(s + o) <= M); also LP-Swap's (Algorithm 7)
    inner loop. First-improvement swaps exactly as `local_swap` describes; returns the new list.
    """
    batch = list(batch)
    mem = sum(s[i] + o[i] for i in batch)
    improved = True
    while improved:
        improved = False
        inside = set(batch)
        rest = sorted(i for i in idx if i not in inside)
        for pos, r_out in enumerate(batch):
            for r_in in rest:
                delta_m = (s[r_in] + o[r_in]) - (s[r_out] + o[r_out])
                if mem + delta_m <= M and o[r_in] < o[r_out]:
                    batch[pos] = r_in
                    mem += delta_m
                    improved = True
                    break
            if improved:
                break
    return batch


def quantile_linear(values: Sequence[float], q: float) -> float:
    """The q-quantile by linear interpolation, float64 op for op as numpy.quantile's default.

    Sorted values v (n of them): h = (n - 1) * q, lo = floor(h), g = h - lo; if h >= n - 1 the
    answer is v[n - 1]; else with d = v[lo + 1] - v[lo] it is v[lo] + d * g when g < 0.5 and
    v[lo + 1] - d * (1 - g) otherwise (numpy's _lerp, which is exact at both ends).
    """
    if not values:
        raise ValueError("quantile of an empty sample")
    v = sorted(float(x) for x in values)
    h = (len(v) - 1) * q
    if h >= len(v) - 1:
        return v[-1]
    lo = math.floor(h)
    g = h - lo
    a, b = v[lo], v[lo + 1]
    d = b - a
    return a + d * g if g < 0.5 else b - d * (1 - g)


def quantile_exact(values: Sequence[int], q: float) -> Fraction:
    """The numpy-"linear" q-quantile computed exactly: q read by `decimal`, sorted values v
    (k of them), h = (k - 1) q, lo = floor(h); v[k - 1] if h >= k - 1, else
    v[lo] + (h - lo) (v[lo + 1] - v[lo]), all as Fractions. Equal to `quantile_linear` up to
    float64 rounding, which can flip x <= Q when Q is an integer."""
    if not values:
        raise ValueError("quantile of an empty sample")
    v = sorted(values)
    h = (len(v) - 1) * decimal(q)
    lo = math.floor(h)
    if lo >= len(v) - 1:
        return Fraction(v[-1])
    return v[lo] + (h - lo) * (v[lo + 1] - v[lo])


def quantile_greedy(
    idx: Sequence[int], s: Sequence[int], o: Sequence[int], M: int, sample: Sequence[int], q: float = QUANTILE_LEVEL
) -> list[int]:
    """Algorithm 5 (quantile greedy) with its random sample given explicitly.

    `sample` holds positions into idx (the paper draws max(1, floor(0.5 |idx|)) of them without
    replacement; see `stdlib_sampler` and `hash_quantile_solver`). Q_p and Q_o are the exact
    q-quantiles (`quantile_exact`, default 0.3) of s + o and of o over the sampled requests,
    so w <= Q_p and o <= Q_o are decided exactly.
    Phase 1: walk idx in ascending (o, index) order; add r iff s_r + o_r <= Q_p, o_r <= Q_o
    and memory + s_r + o_r <= M.
    Phase 2: walk the others in ascending (o / (s + o), index) order, the ratio compared
    exactly (as fractions); add r whenever memory + s_r + o_r <= M.
    Returns the batch in insertion order; [] if idx is empty.
    """
    items = list(idx)
    if not items:
        return []
    if not sample:
        raise ValueError("the quantile sample must not be empty")
    picked = [items[pos] for pos in sample]
    q_p = quantile_exact([s[i] + o[i] for i in picked], q)
    q_o = quantile_exact([o[i] for i in picked], q)
    batch: list[int] = []
    mem = 0
    for i in sorted(items, key=lambda i: (o[i], i)):
        w = s[i] + o[i]
        if w <= q_p and o[i] <= q_o and mem + w <= M:
            batch.append(i)
            mem += w
    inside = set(batch)
    for i in sorted((i for i in items if i not in inside), key=lambda i: (Fraction(o[i], s[i] + o[i]), i)):
        if mem + s[i] + o[i] <= M:
            batch.append(i)
            mem += s[i] + o[i]
    return batch


def stdlib_sampler(seed: int) -> Callable[[int], list[int]]:
    """A sampler for `quantile_solver`: size -> max(1, floor(0.5 size)) distinct positions.

    Uses one random.Random(seed) across calls, so a whole Sorted-F run is reproducible.
    """
    rng = random.Random(seed)
    return lambda size: rng.sample(range(size), max(1, math.floor(SAMPLE_FRACTION * size)))


def quantile_solver(sampler: Callable[[int], Sequence[int]]) -> Solver:
    """`quantile_greedy` as a Solver for `sorted_f`: each call draws its sample from `sampler`
    (given |idx|, it returns positions into idx)."""

    def solve(idx: Sequence[int], s: Sequence[int], o: Sequence[int], M: int) -> list[int]:
        return quantile_greedy(idx, s, o, M, list(sampler(len(idx))) if idx else [])

    return solve


# jaxsched.offline.sorted_f.STREAM_QUANTILE: hash3's stream tag of the quantile sample.
QUANTILE_STREAM = 11
_MASK32 = 0xFFFFFFFF


def hash3(seed: int, index: int, stream: int) -> int:
    """jaxsched.rng.hash3 on Python ints: mix(mix(mix(seed * golden + stream) ^ index)
    + mix(seed ^ salt)), every operation mod 2^32."""
    seed &= _MASK32
    h = _mix32(seed * 0x9E3779B9 + stream)
    h = _mix32(h ^ (index & _MASK32))
    return _mix32(h + _mix32(seed ^ 0x5BD1E995))


def hash_quantile_solver(seed: int, q: float = QUANTILE_LEVEL, frac: float = SAMPLE_FRACTION) -> Solver:
    """`quantile_greedy` with jaxsched's hashed sample, as a Solver for `sorted_f`.

    A call on idx (m requests of n = len(s)) samples the max(1, floor(frac m)) requests i of
    idx with the least (hash3(seed, r 2^16 + i, QUANTILE_STREAM), i), r = n - m (frac read by
    `decimal`; r grows with every batch, so each call draws afresh). The JAX policy
    sorted_f_quantile draws the same sample bit for bit.
    """

    def solve(idx: Sequence[int], s: Sequence[int], o: Sequence[int], M: int) -> list[int]:
        items = list(idx)
        if not items:
            return []
        r = len(s) - len(items)
        size = max(1, math.floor(decimal(frac) * len(items)))
        ranked = sorted(range(len(items)), key=lambda p: (hash3(seed, r * 65536 + items[p], QUANTILE_STREAM), items[p]))
        return quantile_greedy(items, s, o, M, ranked[:size], q)

    return solve


def sorted_f(
    s: Sequence[int], o: Sequence[int], M: int, solver: Solver = exact_dp
) -> tuple[list[int], list[list[int]]]:
    """Phase 1 of Algorithm 1 (Sorted-F): build the admission order batch by batch.

    Repeat until no request remains: X = solver(remaining, s, o, M), `remaining` being the
    unchosen request indices in ascending order; sort X by ascending (o, index); append it to
    the order; remove it. Phase 2 is `execute(s, o, order, M)`, run by the caller.
    Parameters for a solver go through functools.partial (e.g. scaled_dp's eps, B);
    quantile_greedy goes through `quantile_solver`.
    Returns (order, batches), batches in selection order, each sorted as it enters the order.
    Raises ValueError for a request with s + o > M, or a solver returning an empty, repeated,
    foreign or over-capacity batch (which would loop forever or break Theorem 4).
    """
    _check_instance(s, o, M)
    remaining = list(range(len(s)))
    order: list[int] = []
    batches: list[list[int]] = []
    while remaining:
        batch = list(solver(list(remaining), s, o, M))
        if not batch or len(set(batch)) != len(batch) or not set(batch) <= set(remaining):
            raise ValueError(f"solver returned an invalid batch {batch} from {remaining}")
        if not fits_knapsack(batch, s, o, M):
            raise ValueError(f"solver returned a batch over capacity: {batch}")
        batch.sort(key=lambda i: (o[i], i))
        batches.append(batch)
        order.extend(batch)
        chosen = set(batch)
        remaining = [i for i in remaining if i not in chosen]
    return order, batches


# --------------------------------------------------------------------------------------------
# The best executor order
# --------------------------------------------------------------------------------------------
def best_order_tel(s: Sequence[int], o: Sequence[int], M: int) -> int:
    """Min executor TEL over every order (n! runs; tiny n only). Not OPT, which may start a
    request later than any order's schedule would (jaxsched.offline.lp.opt_ip and
    tests/reference/offline_lp.py's brute force)."""
    return min(tel(execute(s, o, perm, M)[1]) for perm in itertools.permutations(range(len(s))))
