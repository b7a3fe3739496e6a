"""One-instance NumPy executor of the offline model (paper 002, Phase 2): the CPU speed baseline.

The same executor as `jaxsched.offline.engine` and `tests/reference/offline.py::execute`: n
requests present at t = 0, one worker with a KV limit of M tokens; at each unit step t = 1,
2, ... requests with c < t leave, then the pending requests are tried in `order` from the
head, candidate r (p_r = t - 1, c_r = p_r + o_r) being admitted iff the admitted set with r
stays within M at every future completion time,
    M(X, c_j) = sum_{l in X, c_l >= c_j} (s_l + c_j - p_l) <= M   for every j in X,
and admission stops at the first candidate that does not fit (strict prefix).

Written the way a careful NumPy simulator would be, with the engine's algorithm: the active
requests live in compacted int64 arrays (s, p, c and peak, where peak[j] = M(X, c_j)), so a
candidate costs O(|X|) vectorized work: its arrival raises peak[j] by s_r + c_j - p_r wherever
c_j <= c_r, and its own peak M(X + r, c_r) is one masked sum (engine.py `_fits`). Completed
requests are cut from the arrays only at steps where one has completed (tracked by the
earliest completion), and the loop over steps and candidates is plain Python.

Two modes, the same (p, c):
- skip=True (the default): event skipping, the rule the engine uses. When the admissions of a
  step stop at a blocked candidate, the executor jumps to the first step at which an admission
  could succeed or the active set changes (`_next_step`), skipping steps that provably admit
  nobody.
- skip=False: it walks every unit step (no jumping to the next event).

Differences from the engine that are not algorithmic: it runs one instance, keeps only the
active requests in arrays that shrink and grow (the engine keeps a table of A running requests
with masks, whose fixed shape a vmapped JIT needs), and
computes only (p, c), not the per-step memory or the step-time clock.

    python -m benchmarks.numpy_offline --n 200 --M 16492 --seed 0 [--no-skip]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

_NEVER = np.iinfo(np.int64).max  # "no completion pending"


def _check(s: np.ndarray, o: np.ndarray, order: np.ndarray, M: int) -> None:
    """Raise ValueError unless s, o, order are 1-D of one length n, order is a permutation of
    range(n), and every request has s >= 0, o >= 1 and s + o <= M (tokens)."""
    n = s.shape[0]
    if s.shape != (n,) or o.shape != (n,) or order.shape != (n,):
        raise ValueError(f"s, o and order must be 1-D of one length, got {s.shape}, {o.shape}, {order.shape}")
    if not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError(f"order must be a permutation of range({n})")
    if n and (s.min() < 0 or o.min() < 1 or (s + o).max() > M):
        raise ValueError(f"need s >= 0, o >= 1 and s + o <= M = {M} for every request")


def _next_step(
    t: int, raised: np.ndarray, own: int, a_c: np.ndarray, c_r: int, o_r: int, next_done: int, M: int
) -> int:
    """The step to go to after candidate r was blocked at step t (steps; always > t): no step
    strictly between them can admit r, and the active set does not change before it.

    raised: int64[|X|], peak[j] + s_r + c_j - p_r where c_j <= c_r, else peak[j] (tokens), and
    own = M(X + r, c_r) (tokens), both for r tried at step t (p_r = t - 1, c_r = p_r + o_r);
    a_c: int64[|X|] the active completions (all >= t); next_done = min(a_c).

    Until step next_done the active set X and its peaks stay fixed. Tried at a later step
    tau <= next_done, r's j-term peak[j] + s_r + c_j - p_r is its step-t value minus (tau - t)
    (p_r = tau - 1 grows, peak[j] and c_j do not), so a j violated at t (c_j <= c_r,
    raised_j > M; c_j <= c_r stays true as c_r grows) stays violated while
    tau < t + raised_j - M. The own term sums s_j + c_r - p_j over j with c_j >= c_r: every
    summand grows with c_r = tau - 1 + o_r, so it cannot fall before c_r passes c*, the least
    such c_j: tau - 1 + o_r > c*, i.e. tau >= c* + 2 - o_r (no such j: own = s_r + o_r <= M
    is never violated). The other constraints (satisfied at t, or entering later as c_r passes
    some c_j) can only add violations, so the max of these bounds is a lower bound on r's
    admission step; everybody behind r waits for r, so no earlier step admits anybody.
    """
    bound = 0
    excess = raised - M
    if excess.size and int(excess.max()) > 0:  # a j-term is violated (only c_j <= c_r can be)
        bound = t + int(excess.max())
    if own > M:
        bound = max(bound, int(a_c[a_c >= c_r].min()) + 2 - o_r)
    return min(bound, next_done + 1)


def execute_numpy_steps(s, o, order, M: int, *, skip: bool = True) -> tuple[np.ndarray, np.ndarray, int]:
    """`execute_numpy` that also returns the number of steps the loop visited (its iterations).

    With skip=False that number is the last admission step max(p) + 1 (0 for n = 0), every step
    up to it; with skip=True it is at most that, and usually far fewer.
    """
    s = np.asarray(s, np.int64)
    o = np.asarray(o, np.int64)
    order = np.asarray(order, np.int64)
    _check(s, o, order, M)
    n = s.shape[0]
    p = np.full(n, -1, np.int64)
    c = np.full(n, -1, np.int64)
    # Python ints for the scalar per-candidate work (indexing NumPy arrays element by element
    # is slower than lists).
    s_list, o_list, order_list = s.tolist(), o.tolist(), order.tolist()
    # The active requests: compacted arrays, in admission order.
    a_s = np.empty(0, np.int64)
    a_p = np.empty(0, np.int64)
    a_c = np.empty(0, np.int64)
    peak = np.empty(0, np.int64)
    next_done = _NEVER  # the earliest c among the active requests
    head, t, steps = 0, 0, 0
    while head < n:  # once all are admitted, p and c are final
        t += 1
        steps += 1
        if next_done < t:  # someone completed at t - 1: cut them out
            keep = a_c >= t
            a_s, a_p, a_c, peak = a_s[keep], a_p[keep], a_c[keep], peak[keep]
            next_done = int(a_c.min()) if a_c.size else _NEVER
        p_r = t - 1
        while head < n:
            r = order_list[head]
            s_r, o_r = s_list[r], o_list[r]
            c_r = p_r + o_r
            if a_c.size:
                raised = peak + np.where(a_c <= c_r, s_r + a_c - p_r, 0)
                own = int(np.where(a_c >= c_r, a_s + c_r - a_p, 0).sum()) + s_r + o_r
                if own > M or int(raised.max()) > M:
                    if skip:  # the loop's t += 1 lands on the next possible event
                        t = _next_step(t, raised, own, a_c, c_r, o_r, next_done, M) - 1
                    break  # strict prefix: nobody behind r is tried
                peak = np.append(raised, own)
            else:
                peak = np.array([s_r + o_r], np.int64)  # alone it fits (s + o <= M)
            a_s = np.append(a_s, s_r)
            a_p = np.append(a_p, p_r)
            a_c = np.append(a_c, c_r)
            next_done = min(next_done, c_r)
            p[r], c[r] = p_r, c_r
            head += 1
    return p, c, steps


def execute_numpy(s, o, order, M: int, *, skip: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Run the Phase-2 executor on one instance; return (p, c), int64[n] each (steps).

    s, o: int[n] prompt and output lengths (tokens, s >= 0, o >= 1, s + o <= M); order: a
    permutation of range(n), the admission priority; M: the KV limit (tokens); skip: jump over
    steps that cannot admit anybody (event skipping, the engine's rule) instead of walking every
    unit step; both modes give the same (p, c). p_i is request i's start step (admitted at step
    p_i + 1) and c_i = p_i + o_i its completion step; TEL is c.sum(). Raises ValueError for a
    request with s + o > M (it could never start; the engine drops it instead) or an `order`
    that is not a permutation.
    """
    p, c, _ = execute_numpy_steps(s, o, order, M, skip=skip)
    return p, c


def main(argv: list[str] | None = None) -> int:
    """Time the executor on one instance of a simple law (s ~ U{1..M/4}, o ~ U{1..M/8})."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.numpy_offline", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--M", type=int, default=16492)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-skip", action="store_true", help="walk every unit step (no event skipping)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    s = rng.integers(1, args.M // 4 + 1, args.n)
    o = rng.integers(1, args.M // 8 + 1, args.n)
    order = np.argsort(o, kind="stable")  # MC-SF: shortest output first
    t0 = time.perf_counter()
    p, c, steps = execute_numpy_steps(s, o, order, args.M, skip=not args.no_skip)
    dt = time.perf_counter() - t0
    mode = "unit steps" if args.no_skip else "event skipping"
    tel, makespan = int(c.sum()), int(c.max())
    print(f"n={args.n} M={args.M} ({mode}): TEL {tel}, makespan {makespan} steps, {steps} visited, {dt:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
