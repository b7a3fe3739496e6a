"""Plain-Python reference of the BF-IO H = 0 local search (`kernels.local_search.local_search`).

Test oracle, written for clarity: Python ints throughout, and every candidate scored by applying
it to a copy of the assignment and recomputing the loads from scratch (no top-three shortcut, no
float32 products), so a slip in the kernel's vectorized formulas cannot leak in.

One iteration evaluates every candidate exchange of the kinds the kernel uses, in the kernel's
flat order (the order of `kernels.local_search._best_candidate`'s concatenation):
  1. move (i, b), i over requests, b over workers: new request i to another worker b with a free
     slot left;
  2. swap (i, j): new requests on different workers with different sizes trade workers;
  3. pool exchange (i, p): waiting request p of a different size takes new request i's place,
     i returns to the pool;
  4. chain (p, i, j), only with chain=True: waiting p takes new i's worker, i takes new j's worker
     (a different one), j returns to the pool.
Candidates are ranked by (J', sum of squared loads'), the first in that order winning among
equals (the kernel's argmin). The best one is applied when it is strictly better than the
current assignment: J' < J, or J' = J and the sum of squares drops. The search stops when no
candidate is (converged) or after `max_iters` iterations; `converged` is re-checked on the final
assignment, as in the kernel.

The kernel ranks by float32 sums-of-squares deltas built from exact int32 factors; those equal
the exact deltas used here while |d * base| < 2^24 (loads and sizes of a few thousand tokens at
most), which is where the tests compare the two.
"""

from __future__ import annotations

import itertools
from typing import Iterator, Sequence

__all__ = [
    "loads_after",
    "score",
    "candidates",
    "best_candidate",
    "local_search",
    "search_until_converged",
    "feasible_assignments",
    "longest_improving_chain",
]


def loads_after(loads0: Sequence[int], worker: Sequence[int], sizes: Sequence[int]) -> list[int]:
    """Post-admission loads (Python ints) of an assignment (worker -1: not admitted)."""
    L = [int(x) for x in loads0]
    for i, g in enumerate(worker):
        if g >= 0:
            L[g] += int(sizes[i])
    return L


def score(loads0, worker, sizes) -> tuple[int, int]:
    """(J = G * max L' - sum L', sum of L'^2) of an assignment, exact."""
    L = loads_after(loads0, worker, sizes)
    return len(L) * max(L) - sum(L), sum(x * x for x in L)


def candidates(loads0, free0, sizes, valid, worker, chain: bool = False) -> Iterator[list[int]]:
    """Every candidate neighbour of `worker` (as a new assignment list), in the kernel's order."""
    G, R = len(loads0), len(sizes)
    w = [int(x) for x in worker]
    s = [int(x) for x in sizes]
    new = [g >= 0 for g in w]
    waiting = [bool(valid[i]) and not new[i] for i in range(R)]
    used = [0] * G
    for g in w:
        if g >= 0:
            used[g] += 1
    free_left = [int(free0[g]) - used[g] for g in range(G)]

    for i in range(R):  # move i -> b
        for b in range(G):
            if new[i] and b != w[i] and free_left[b] > 0:
                c = list(w)
                c[i] = b
                yield c
    for i in range(R):  # swap i <-> j
        for j in range(R):
            if new[i] and new[j] and w[i] != w[j] and s[i] != s[j]:
                c = list(w)
                c[i], c[j] = w[j], w[i]
                yield c
    for i in range(R):  # pool exchange: p replaces i
        for p in range(R):
            if new[i] and waiting[p] and s[p] != s[i]:
                c = list(w)
                c[p], c[i] = w[i], -1
                yield c
    if chain:  # p -> a_i, i -> a_j, j -> pool
        for p in range(R):
            for i in range(R):
                for j in range(R):
                    if waiting[p] and new[i] and new[j] and w[i] != w[j]:
                        c = list(w)
                        c[p], c[i], c[j] = w[i], w[j], -1
                        yield c


def best_candidate(loads0, free0, sizes, valid, worker, chain: bool = False):
    """(best neighbour or None, its (J, sum of squares), improves: strictly better than `worker`)."""
    best, best_key = None, None
    for c in candidates(loads0, free0, sizes, valid, worker, chain):
        key = score(loads0, c, sizes)
        if best_key is None or key < best_key:  # strict: the first among equals wins
            best, best_key = c, key
    improves = best is not None and best_key < score(loads0, worker, sizes)
    return best, best_key, improves


def local_search(
    loads0, free0, sizes, valid, worker, *, max_iters: int = 8, chain: bool = False
) -> tuple[list[int], bool, int]:
    """Best-improvement search from `worker`: (assignment, converged, improving steps taken)."""
    w = [int(x) for x in worker]
    steps = 0
    for _ in range(max_iters):
        best, _, improves = best_candidate(loads0, free0, sizes, valid, w, chain)
        if not improves:
            break
        w, steps = best, steps + 1
    _, _, improves = best_candidate(loads0, free0, sizes, valid, w, chain)
    return w, not improves, steps


def search_until_converged(
    loads0, free0, sizes, valid, worker, *, chain: bool = False, limit: int = 10_000
) -> tuple[list[int], int]:
    """The same search without the iteration cap: (local optimum, improving steps it took).

    It terminates: each step strictly lowers (J, sum of squares) and an instance has finitely
    many assignments; `limit` only guards against a bug here.
    """
    w, conv, steps = local_search(loads0, free0, sizes, valid, worker, max_iters=limit, chain=chain)
    assert conv, "reference search did not terminate"
    return w, steps


def feasible_assignments(free0, valid, max_admitted: int) -> Iterator[tuple[int, ...]]:
    """Every assignment of at most `max_admitted` valid requests within the free slots (tiny
    instances only: the count grows as C(#valid, k) * G^k)."""
    G, R = len(free0), len(valid)
    items = [i for i in range(R) if valid[i]]
    open_ = [g for g in range(G) if free0[g] > 0]
    seen = set()
    for k in range(max_admitted + 1):
        for chosen in itertools.combinations(items, k):
            for place in itertools.product(open_, repeat=k):
                if all(place.count(g) <= int(free0[g]) for g in open_):
                    w = [-1] * R
                    for i, g in zip(chosen, place):
                        w[i] = g
                    if tuple(w) not in seen:
                        seen.add(tuple(w))
                        yield tuple(w)


def longest_improving_chain(
    loads0, free0, sizes, valid, *, chain: bool = False, max_admitted: int | None = None
) -> int:
    """The most improving steps any sequence of candidate exchanges (not only best ones) can take
    from any assignment of at most `max_admitted` (default U) requests: a search started from any
    such assignment, whatever its choice rule, converges within this many iterations."""
    U = min(int(sum(bool(v) for v in valid)), int(sum(int(f) for f in free0)))
    memo: dict[tuple[int, ...], int] = {}

    def longest(w: tuple[int, ...]) -> int:  # improving steps strictly lower the key: a DAG
        if w not in memo:
            key = score(loads0, w, sizes)
            memo[w] = max(
                (
                    1 + longest(tuple(c))
                    for c in candidates(loads0, free0, sizes, valid, w, chain)
                    if score(loads0, c, sizes) < key
                ),
                default=0,
            )
        return memo[w]

    return max(longest(w) for w in feasible_assignments(free0, valid, U if max_admitted is None else max_admitted))
