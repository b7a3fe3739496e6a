"""Plain-Python references of paper 002's LP-based orders and of the exact optimum (tiny n).

The model and time convention are tests/reference/offline.py's: a request started at p
generates token j at step p + j holding s + j tokens then, completes at c = p + o; TEL = sum c.
These are the oracles of jaxsched/offline/lp.py, which solves the LP with HiGHS: here y (the
LP's fractional starts) is given, so the orders are checked independently of the solver.

- `sorted_lp_order(y)`: Algorithm 6's order, ascending (y, index).
- `lp_swap_order(s, o, M, y)`: Algorithm 7 as notes/002.md section 2.4 resolves it.
- `brute_force_opt(s, o, M, horizon)`: the exact optimum over start vectors (tiny n).
"""

from __future__ import annotations

from typing import Sequence

from tests.reference import offline as ref

__all__ = ["sorted_lp_order", "lp_swap_batch", "lp_swap_order", "brute_force_opt"]


def sorted_lp_order(y: Sequence[float]) -> list[int]:
    """Algorithm 6 (Sorted-LP): request indices in ascending (y, index) order."""
    return sorted(range(len(y)), key=lambda i: (y[i], i))


def lp_swap_batch(idx: Sequence[int], s: Sequence[int], o: Sequence[int], M: int, y: Sequence[float]) -> list[int]:
    """One batch of Algorithm 7: walk idx in ascending (y, index) order adding a request
    whenever sum(s + o) stays <= M (skip, not stop), then Algorithm 4's swap loop from that
    list (`ref.swap_scan`, the very code of `ref.local_swap`'s step 2)."""
    batch: list[int] = []
    mem = 0
    for i in sorted(idx, key=lambda i: (y[i], i)):
        if mem + s[i] + o[i] <= M:
            batch.append(i)
            mem += s[i] + o[i]
    return ref.swap_scan(batch, idx, s, o, M)


def lp_swap_order(s: Sequence[int], o: Sequence[int], M: int, y: Sequence[float]) -> list[int]:
    """Algorithm 7 (LP-Swap) given y: while requests remain, `lp_swap_batch` on them (in
    ascending index order), the batch sorted by ascending (o, index), appended and removed.
    That is `ref.sorted_f`'s Phase-1 loop with this batch rule, so it is reused."""
    order, _ = ref.sorted_f(s, o, M, lambda idx, s, o, M: lp_swap_batch(idx, s, o, M, y))
    return order


def brute_force_opt(s: Sequence[int], o: Sequence[int], M: int, horizon: int) -> tuple[int, list[int]]:
    """The least TEL over every start vector p with 0 <= p_i <= horizon - o_i whose memory
    (s_i + t - p_i at each step p_i < t <= p_i + o_i, summed) stays <= M at every step: the
    OPT integer program's optimum, by exhaustive depth-first search (tiny n and horizon only).

    Requests are placed one at a time (index order), each at every start in ascending order,
    with the memory of the steps kept incrementally; a branch is cut once its TEL so far plus
    sum of o of the unplaced requests (their least possible completions) cannot beat the best
    found, which never removes an optimum. Ties go to the lexicographically smallest p.
    Returns (TEL, p). Raises ValueError if no start vector fits (horizon < max o).
    """
    ref._check_instance(s, o, M)
    n = len(s)
    if n and horizon < max(o):
        raise ValueError(f"horizon {horizon} < max o = {max(o)}: no feasible schedule")
    mem = [0] * horizon
    p = [0] * n
    best: list = [None, None]
    tail = [sum(o[i:]) for i in range(n + 1)]  # least completions of requests i..n-1

    def place(i: int, so_far: int) -> None:
        if best[0] is not None and so_far + tail[i] >= best[0]:
            return
        if i == n:
            best[0], best[1] = so_far, list(p)
            return
        for k in range(horizon - o[i] + 1):
            if best[0] is not None and so_far + k + tail[i] >= best[0]:
                break  # later starts only cost more
            steps = range(k, k + o[i])  # entries t - 1 for t = k+1..k+o
            use = [s[i] + t - k + 1 for t in steps]
            if all(mem[t] + u <= M for t, u in zip(steps, use)):
                for t, u in zip(steps, use):
                    mem[t] += u
                p[i] = k
                place(i + 1, so_far + k + o[i])
                for t, u in zip(steps, use):
                    mem[t] -= u

    place(0, 0)
    return best[0], best[1]
