"""Hand-built instances of paper 002: the lower-bound families, Example 2, and a TEL lower bound.

All instances are one worker with KV limit M (tokens) and n requests at t = 0, given as
(s, o): prompt and output lengths, int64[n] tokens, to be run by `instances.execute` (the JAX
engine) or `tests/reference/offline.py::execute` (the plain-Python oracle).

**Theorem 1 (MC-SF) and Theorem EC.1 (MC-SF2)**, two request types (EC.1 of the paper):

| family | type 1 (X = M copies) | type 2 (Y copies) | slow policy puts first |
|---|---|---|---|
| theorem1 | s = sqrt(M) - 1, o = 1 | s = 1, o = 2 | type 1 (o = 1 < 2) |
| theorem_ec1 | s = 1, o = sqrt(M) - 1 | s = sqrt(M), o = 1 | type 1 (s + o: sqrt(M) < sqrt(M)+1) |

The paper prints Y = M^1.5 (`corrected=False`). Its ratio formulas then drop the type-2
requests' own latency (about 3 Y^2 / M = 3 M^2 in Theorem 1 and Y^2 / (2 sqrt(M)) = M^2.5 / 2 in
EC.1), and with it the ratio stays bounded: it tends to 4/3 and 3 (notes/002.md §3).
Y = M^1.25 (`corrected=True`) repairs the proofs: the ratio grows like M^0.25 / 3.5 and M^0.25,
unbounded as the theorems claim, though at rate M^(1/4), not sqrt(M).
Requests are laid out type 1 first (indices 0..X-1), then type 2 (X..X+Y-1); `type2_first`
is the proofs' better schedule (all type 2, then type 1).
M must be j^2 (printed) or j^4 (corrected), j >= 2, so that sqrt(M) and Y are integers. With
M = 3^(2k) or 3^(4k) M / 3 is an integer too, and in Theorem 1 the type-2 requests (peak 3 tokens) fill M
exactly in synchronous
batches of M / 3, so the executor reproduces the proof's accounting under MC-SF to the unit
(`theorem1_paper_tel`; `theorem1_tel` gives the executor's exact TELs). In EC.1 it does not:
a type-2 request peaks at sqrt(M) + 1 tokens, so only sqrt(M) - 1 (not sqrt(M)) run per step,
and the executor overlaps the last type-1 wave with type-2 requests; `theorem_ec1_paper_tel`
is the proof's accounting as printed.

Sizes n = X + Y: printed 36, 810, 20412, 538002 (M = 9, 81, 729, 6561); corrected 324, 65610
(M = 81, 6561), then 14.9 million (M = 531441). The engine's admission is O(n) per request and
its steps O(n) each, so its cost grows like n^2: one `instances.execute` call (one instance,
one order, compilation included) took about 2 s at n <= 810, 4-6 s at n = 20412 (printed,
M = 729) and 40-57 s at n = 65610 (corrected, M = 6561) on two shared CPU cores, so the
largest members within a minute are k = 3 printed and k = 2 corrected; printed M = 6561
(n = 538002) would take about 50 minutes by the n^2 trend.

**Example 2**: two homogeneous batches filling M exactly, n1 (s1 + o1) = n2 (s2 + o2) = M.
Run one batch after the other, batch 1 first costs o1 n1 + o2 n2 + o1 n2 and batch 2 first
o1 n1 + o2 n2 + o2 n1, so batch 1 first is better iff o1 / n1 < o2 / n2 (the F-metric).
The executor reproduces this exactly unless it can start requests of the second batch while the
first runs (`example2` says when), which only lowers that order's TEL.

**TEL lower bound** (notes §4): request i occupies area_i = sum_{j=1..o_i} (s_i + j) =
s_i o_i + o_i (o_i + 1) / 2 token-steps, and the memory in use is at most M at every step. The
k requests done by the k-th completion c_(k) have spent all their area within steps 1..c_(k), so
M c_(k) >= (sum of the k smallest areas) = A_k, and TEL = sum_k c_(k) >= sum_k A_k / M.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..errors import ConfigError, require, require_bool, require_choice, require_int

THEOREMS = ("theorem1", "theorem_ec1")
# Largest family built as arrays (requests); the TEL formulas take any valid M.
MAX_FAMILY_REQUESTS = 1 << 26


# --------------------------------------------------------------------------- the families


def _exponent(M: int, corrected: bool) -> int:
    """k with M = 3^(step k), step = 4 (corrected) or 2 (printed), k >= 1; else ConfigError
    naming M and the allowed values."""
    corrected = require_bool(corrected, "corrected")
    step = 4 if corrected else 2
    allowed = (
        f"3^({step}k) for an integer k >= 1, so that sqrt(M), M / 3 and "
        f"M^{1.25 if corrected else 1.5} are integers: one of "
        + ", ".join(str(3 ** (step * k)) for k in range(1, 4))
        + ", ..."
    )
    require_int(M, "M (capacity_tokens)", lo=1)
    k = round(math.log(M, 3) / step) if M > 1 else 0
    require(k >= 1 and 3 ** (step * k) == M, "M (capacity_tokens)", allowed, M)
    return k


def _root(M: int, corrected: bool) -> int:
    """j >= 2 with M = j^4 (corrected) or j^2 (printed): then sqrt(M) and Y = M^1.25 or M^1.5
    are integers and the family exists; else ConfigError naming M and the allowed values. The
    exact accounting formulas (`theorem1_tel`, ...) need the narrower M = 3^(4k) or 3^(2k)."""
    corrected = require_bool(corrected, "corrected")
    step = 4 if corrected else 2
    require_int(M, "M (capacity_tokens)", lo=1)
    j = round(M ** (1 / step))
    examples = ", ".join(str(i**step) for i in range(2, 5)) + ", ..., " + str(3 ** (2 * step))
    require(
        j >= 2 and j**step == M,
        "M (capacity_tokens)",
        f"j^{step} for an integer j >= 2, so that sqrt(M) and M^{1.25 if corrected else 1.5} "
        f"are integers: one of {examples}, ... (the exact accounting formulas need "
        f"3^({step}k))",
        M,
    )
    return j


def family_sizes(M: int, corrected: bool = True) -> tuple[int, int]:
    """(X, Y): the numbers of type-1 and type-2 requests, X = M and Y = M^1.25 (corrected) or
    M^1.5 (printed). M: j^4 (corrected) or j^2 (printed), j >= 2; with M = 3^(4k) or 3^(2k)
    Theorem 1's type-2 requests also fill M exactly (M / 3 per batch), as the proof assumes."""
    j = _root(M, corrected)
    return M, j**5 if corrected else j**3


def _two_types(
    M: int, corrected: bool, type1: tuple[int, int], type2: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    X, Y = family_sizes(M, corrected)
    # The formulas take any M; only the arrays are capped (M = 3^12 would need 14.9 million).
    require(
        X + Y <= MAX_FAMILY_REQUESTS,
        "M (capacity_tokens)",
        f"small enough that the family has <= {MAX_FAMILY_REQUESTS} requests (it has {X + Y})",
        M,
    )
    s = np.concatenate([np.full(X, type1[0], np.int64), np.full(Y, type2[0], np.int64)])
    o = np.concatenate([np.full(X, type1[1], np.int64), np.full(Y, type2[1], np.int64)])
    return s, o


def theorem1(M: int, corrected: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 1's instance against MC-SF: (s, o) int64[X + Y] tokens.

    Type 1 (indices 0..X-1): X = M requests with s = sqrt(M) - 1, o = 1.
    Type 2 (indices X..X+Y-1): Y requests with s = 1, o = 2; Y = M^1.25 (corrected) or M^1.5
    (as printed). MC-SF runs type 1 first, sqrt(M) per step for sqrt(M) steps, making every
    type-2 request wait; the better `type2_first` schedule delays only the X type-1 requests.
    M: 3^(4k) (corrected) or 3^(2k) (printed), k >= 1 (ConfigError otherwise).
    """
    r = math.isqrt(M) if isinstance(M, (int, np.integer)) and M > 0 else 0
    return _two_types(M, corrected, (r - 1, 1), (1, 2))


def theorem_ec1(M: int, corrected: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Theorem EC.1's instance against MC-SF2: (s, o) int64[X + Y] tokens.

    Type 1 (indices 0..X-1): X = M requests with s = 1, o = sqrt(M) - 1 (s + o = sqrt(M)).
    Type 2 (indices X..X+Y-1): Y requests with s = sqrt(M), o = 1 (s + o = sqrt(M) + 1);
    Y = M^1.25 (corrected) or M^1.5 (as printed). MC-SF2 runs type 1 first: sqrt(M) waves of
    sqrt(M) requests, each wave sqrt(M) - 1 steps long, while every type-2 request waits.
    M: 3^(4k) (corrected) or 3^(2k) (printed), k >= 1 (ConfigError otherwise).
    """
    r = math.isqrt(M) if isinstance(M, (int, np.integer)) and M > 0 else 0
    return _two_types(M, corrected, (1, r - 1), (r, 1))


def type2_first(M: int, corrected: bool = True) -> np.ndarray:
    """int64[X + Y]: the proofs' alternative schedule as an executor order, every type-2 request
    (indices X..X+Y-1) before every type-1 request, each type in index order. The same for both
    families (they share the layout)."""
    X, Y = family_sizes(M, corrected)
    require(
        X + Y <= MAX_FAMILY_REQUESTS,
        "M (capacity_tokens)",
        f"small enough that the family has <= {MAX_FAMILY_REQUESTS} requests (it has {X + Y})",
        M,
    )
    return np.concatenate([np.arange(X, X + Y), np.arange(X)]).astype(np.int64)


def _tri(n: int) -> int:
    """1 + 2 + ... + n."""
    return n * (n + 1) // 2


def theorem1_paper_tel(M: int, corrected: bool = True) -> tuple[int, int]:
    """(TEL of MC-SF, TEL of `type2_first`) in steps, by the proof of Theorem 1 evaluated exactly:

        MC-SF:       sqrt(M) sum_{i=1}^{X/sqrt(M)} i + X Y / sqrt(M) + (2M/3) sum_{j=1}^{3Y/M} j
        type2_first: (2M/3) sum_{j=1}^{3Y/M} j + 6 X Y / M + sqrt(M) sum_{i=1}^{X/sqrt(M)} i

    Type 1 peaks at sqrt(M) tokens: sqrt(M) of them per step fill M exactly. Type 2 peaks at 3
    tokens at its completion: M / 3 of them start together, fill M at their second step, and
    nothing else fits until they end, so they run in 3Y/M synchronous batches of 2 steps. The
    executor follows exactly this schedule under MC-SF for M = 3^(2k) and 3^(4k), but beats it
    under type2_first by starting sqrt(M) / 3 type-1 requests early (`theorem1_tel`). The
    paper's own ratio formula (`claimed_ratio`) drops the sum over j.
    """
    _exponent(M, corrected)  # the accounting needs M / 3 exact
    X, Y = family_sizes(M, corrected)
    r = math.isqrt(M)
    type1 = r * _tri(X // r)
    type2 = (M // 3) * 2 * _tri(3 * Y // M)  # (2M/3) sum j, kept in integers
    return type1 + X * Y // r + type2, type2 + 6 * X * Y // M + type1


def theorem1_tel(M: int, corrected: bool = True) -> tuple[int, int]:
    """(TEL of MC-SF, TEL of `type2_first`) in steps of the executor (notes §2.1), exactly.

    With r = sqrt(M) and J = 3Y/M type-2 batches (batch j runs at steps 2j - 1, 2j):
    - MC-SF: type 1 runs r per step at steps 1..r (each peaks at r tokens: M exactly), so type 2
      starts at p = r, and its batches end at r + 2j: the proof's accounting
      (`theorem1_paper_tel`) holds to the unit.
    - type2_first: at step 2J - 1 the last type-2 batch holds only 2M/3 tokens and ends at 2J,
      so r/3 type-1 requests (r tokens each, done at 2J - 1) start beside it; at step 2J the
      batch holds M; from step 2J + 1 the other M - r/3 type-1 requests run r per step: r - 1
      full waves ending at 2J + i, then 2r/3 ending at 2J + r.
    """
    _exponent(M, corrected)  # the accounting needs M / 3 exact
    X, Y = family_sizes(M, corrected)
    r = math.isqrt(M)
    J = 3 * Y // M
    type2 = (M // 3) * 2 * _tri(J)
    mcsf = r * _tri(r) + Y * r + type2
    late = r * (r - 1) * 2 * J + r * _tri(r - 1)  # r - 1 full waves
    alt = type2 + (r // 3) * (2 * J - 1) + late + (2 * r // 3) * (2 * J + r)
    return mcsf, alt


def theorem_ec1_paper_tel(M: int, corrected: bool = True) -> tuple[int, int]:
    """(TEL of MC-SF2, TEL of `type2_first`) in steps, by the proof of Theorem EC.1 as printed:

        MC-SF2:      (sqrt(M) - 1) sqrt(M) sum_{i=1}^{X/sqrt(M)} i + (sqrt(M) - 1) X Y / sqrt(M)
                     + sqrt(M) sum_{j=1}^{Y/sqrt(M)} j
        type2_first: (sqrt(M) - 1) sqrt(M) sum_{i=1}^{X/sqrt(M)} i + X Y / sqrt(M)
                     + sqrt(M) sum_{j=1}^{Y/sqrt(M)} j

    This accounting packs sqrt(M) type-2 requests per step, which needs sqrt(M) (sqrt(M) + 1) =
    M + sqrt(M) tokens: the executor fits sqrt(M) - 1, and overlaps the two types at the
    switch, so its TELs differ (type2_first's by +39% at M = 9, +11% at M = 81 and +3.7% at
    M = 729, printed; the ratios follow the same asymptotics). Only the executor
    (`instances.execute`) gives exact values.
    """
    _exponent(M, corrected)  # the accounting needs M / 3 exact
    X, Y = family_sizes(M, corrected)
    r = math.isqrt(M)
    type1 = (r - 1) * r * _tri(X // r)
    type2 = r * _tri(Y // r)
    return type1 + (r - 1) * X * Y // r + type2, type1 + X * Y // r + type2


def claimed_ratio(theorem: str, M: int) -> tuple[float, float]:
    """(ratio, bound) exactly as printed in the paper, as functions of M (real M > 0):

    theorem1:    (M^1.5/2 + 3 M^1.25 + M^2) / (M^1.5/2 + 3 M^1.25 + 6 M^1.5) >= (2/13) sqrt(M)
    theorem_ec1: (M^2/2 + M^2.5 + M^1.75/2) / (M^2/2 + M^2 + M^1.75/2)       >= (2/3) sqrt(M)

    These drop the type-2 requests' own latency (module docstring) and do not match the
    instances' TEL for any Y: compare `theorem1_paper_tel`, `theorem_ec1_paper_tel`. Nor do
    the printed inequalities hold as written: each formula is ~ its bound as M -> inf, but
    approaches it from below (M^2 / (6.5 M^1.5 + 3 M^1.25 + ...) < (2/13) sqrt(M), and
    M^2.5 + M^2 / 2 + ... < (2/3) sqrt(M) (1.5 M^2 + M^1.75 / 2)), so ratio < bound for every
    M >= 729 (theorem1) and M >= 81 (theorem_ec1). Only ratio ~ bound, i.e. Theta(sqrt(M)).
    """
    require_choice(theorem, "theorem", THEOREMS)
    M = float(M)
    require(math.isfinite(M) and M > 0, "M", "a finite number > 0", M)
    if theorem == "theorem1":
        num = 0.5 * M**1.5 + 3 * M**1.25 + M**2
        den = 0.5 * M**1.5 + 3 * M**1.25 + 6 * M**1.5
        return num / den, 2.0 / 13.0 * math.sqrt(M)
    num = 0.5 * M**2 + M**2.5 + 0.5 * M**1.75
    den = 0.5 * M**2 + M**2 + 0.5 * M**1.75
    return num / den, 2.0 / 3.0 * math.sqrt(M)


def asymptotic_ratio(theorem: str, M: float, corrected: bool = True) -> float:
    """The leading-order ratio (slow policy) / type2_first of the proofs' accounting, M -> inf:

    printed (Y = M^1.5):     theorem1 -> 4/3 (4 M^2 over 3 M^2); theorem_ec1 -> 3
                             (3/2 M^2.5 over M^2.5 / 2): bounded, so no unbounded ratio follows.
    corrected (Y = M^1.25):  theorem1 ~ M^0.25 / 3.5 (M^1.75 over 3 M^1.5 + M^1.5 / 2);
                             theorem_ec1 ~ M^0.25 (M^2.25 over M^2 / 2 + M^2 / 2).
    """
    require_choice(theorem, "theorem", THEOREMS)
    corrected = require_bool(corrected, "corrected")
    if not corrected:
        return 4.0 / 3.0 if theorem == "theorem1" else 3.0
    M = float(M)
    require(math.isfinite(M) and M > 0, "M", "a finite number > 0", M)
    return M**0.25 / 3.5 if theorem == "theorem1" else M**0.25


# --------------------------------------------------------------------------- Example 2


class Example2(NamedTuple):
    """Example 2's instance and its prediction.

    s, o: int64[n1 + n2] tokens, batch 1 at indices 0..n1-1, batch 2 at n1..n1+n2-1.
    M: n1 (s1 + o1) = n2 (s2 + o2) tokens.
    batch1_first, batch2_first: int64[n1 + n2] executor orders (each batch in index order).
    better: 1 if o1 / n1 < o2 / n2, 2 if o1 / n1 > o2 / n2, 0 on a tie (equal TELs).
    tel_batch1_first, tel_batch2_first: the sequential TELs o1 n1 + o2 n2 + o1 n2 and
      o1 n1 + o2 n2 + o2 n1 (steps).
    overlap_batch1_first, overlap_batch2_first: whether the executor, in that order, starts a
      request of the second batch while the first runs. Then its TEL is strictly below the
      sequential one and the rule may fail; otherwise the executor is exactly sequential.
    """

    s: np.ndarray
    o: np.ndarray
    M: int
    batch1_first: np.ndarray
    batch2_first: np.ndarray
    better: int
    tel_batch1_first: int
    tel_batch2_first: int
    overlap_batch1_first: bool
    overlap_batch2_first: bool


def _overlaps(n_a: int, o_a: int, s_b: int, o_b: int) -> bool:
    """Whether the executor starts a batch-B request while batch A (started at step 1, filling
    M exactly at its completion o_A) runs.

    A B request started at p < o_A that is still running at o_A would add to A's peak M, so it
    must end first: p + o_B < o_A, hence o_B < o_A. At its own completion c = p + o_B, A holds
    n_A (s_A + c) = M - n_A (o_A - c) tokens, so it fits iff s_B + o_B <= n_A (o_A - c). The
    room shrinks as p grows, so a B request starts early iff the first one fits at p = 0.
    """
    return o_b < o_a and s_b + o_b <= n_a * (o_a - o_b)


def example2(n1: int, s1: int, o1: int, n2: int, s2: int, o2: int) -> Example2:
    """Example 2's two homogeneous batches (n_b requests of prompt s_b, output o_b tokens) and
    which to run first. Raises ConfigError unless all are integers >= 1 and n1 (s1 + o1) =
    n2 (s2 + o2) (that common value is M)."""
    for name, v in (("n1", n1), ("s1", s1), ("o1", o1), ("n2", n2), ("s2", s2), ("o2", o2)):
        require_int(v, name, lo=1)
    M = n1 * (s1 + o1)
    require(
        n2 * (s2 + o2) == M,
        "n2 (s2 + o2)",
        f"equal to n1 (s1 + o1) = {M} (both batches fill M exactly)",
        n2 * (s2 + o2),
    )
    s = np.concatenate([np.full(n1, s1, np.int64), np.full(n2, s2, np.int64)])
    o = np.concatenate([np.full(n1, o1, np.int64), np.full(n2, o2, np.int64)])
    first1 = np.arange(n1 + n2, dtype=np.int64)
    first2 = np.concatenate([np.arange(n1, n1 + n2), np.arange(n1)]).astype(np.int64)
    # o1 / n1 < o2 / n2  <=>  o1 n2 < o2 n1, compared in integers.
    better = 1 if o1 * n2 < o2 * n1 else 2 if o1 * n2 > o2 * n1 else 0
    base = o1 * n1 + o2 * n2
    return Example2(
        s,
        o,
        M,
        first1,
        first2,
        better,
        base + o1 * n2,
        base + o2 * n1,
        _overlaps(n1, o1, s2, o2),
        _overlaps(n2, o2, s1, o1),
    )


# --------------------------------------------------------------------------- TEL lower bound


def tel_lower_bound(s, o, M, *, strengthen: bool = False) -> np.ndarray:
    """A lower bound on the TEL (steps) of every schedule, OPT included (notes/002.md §4).

    s, o: int[S, n] or int[n] prompt and output lengths (tokens; s >= 0, o >= 1,
    s + o <= M). M: the KV limit (tokens), an int or int[S].
    Returns float64[S] (or a float64 scalar for 1-d input):
        sum_{k=1..n} A_k / M,   A_k = the sum of the k smallest areas s_i o_i + o_i (o_i + 1) / 2.
    strengthen=True uses that c_(k) is an integer step and that the k requests done by then
    include one with o >= o_(k), the k-th smallest output: each term becomes
    max(ceil(A_k / M), o_(k)), still a valid bound and never lower.
    """
    strengthen = require_bool(strengthen, "strengthen")
    s, o = np.asarray(s), np.asarray(o)
    require(
        s.shape == o.shape and s.ndim in (1, 2) and s.size > 0,
        "s, o",
        "non-empty int arrays of one shape [S, n] or [n]",
        f"{s.shape} and {o.shape}",
    )
    for name, a in (("s", s), ("o", o)):
        require(a.dtype.kind in "iu", name, "an integer array (tokens)", a.dtype)
    one = s.ndim == 1
    s, o = np.atleast_2d(s).astype(np.int64), np.atleast_2d(o).astype(np.int64)
    Ms = np.broadcast_to(np.asarray(M), (s.shape[0],))
    require(Ms.dtype.kind in "iu" and (Ms >= 1).all(), "M", "a positive integer or int[S]", M)
    Ms = Ms.astype(np.int64)
    require(s.min() >= 0 and o.min() >= 1, "s, o", "s >= 0 and o >= 1 (tokens)", (int(s.min()), int(o.min())))
    over = s + o > Ms[:, None]
    if over.any():
        row, i = map(int, np.argwhere(over)[0])
        raise ConfigError(
            f"request {i} of row {row} has s + o = {int(s[row, i] + o[row, i])} > "
            f"M = {int(Ms[row])}: no schedule can serve it"
        )
    area = s * o + o * (o + 1) // 2
    A = np.cumsum(np.sort(area, axis=1), axis=1)  # int64[S, n]: A_k, k = 1..n
    if strengthen:
        ceil = -(-A // Ms[:, None])
        bound = np.maximum(ceil, np.sort(o, axis=1)).sum(axis=1).astype(np.float64)
    else:
        # A_k / M summed as one exact integer over M (a float sum of n quotients would round).
        bound = A.sum(axis=1).astype(np.float64) / Ms
    return bound[0] if one else bound
