"""Exact solvers of the per-step BF-IO assignment problem, for tests and benchmarks only.

The problem (notes/000.md section 2.1, program (IO)): G workers with projected loads
L[g, h] over W = H + 1 rows (H = 0: one row, the current loads) and free slots c_g; a pool of
requests with sizes s_i (valid mask). Admit exactly U = min(#valid, sum c) requests, at most c_g
on worker g; an admitted request adds s_i to every row of its worker. Minimize

    J = sum_h w_h * (G * max_g L'[g, h] - sum_g L'[g, h])      (w = 1 by default).

`solve_milp` is exact on every instance the benchmarks use (HiGHS with a zero gap, the returned
assignment re-scored in exact integers); `solve_brute` enumerates every assignment and is the
oracle `solve_milp` is tested against. Nothing in jaxsched or kernels imports this module.
"""
from __future__ import annotations

import itertools
from typing import Optional

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

__all__ = ["objective", "solve_milp", "solve_brute", "lower_bound_h0", "NotProvenOptimal",
           "admitted_count", "check_feasible"]


class NotProvenOptimal(RuntimeError):
    """The MILP stopped (time or node limit) before proving optimality.

    `incumbent` holds (J, worker) of the best assignment found, or None if none was found.
    """

    def __init__(self, message: str, incumbent: Optional[tuple[int, np.ndarray]] = None):
        super().__init__(message)
        self.incumbent = incumbent


def _rows(loads_rows) -> np.ndarray:
    """Loads as int64[G, W]; a 1-d array is the H = 0 case (one row)."""
    a = np.asarray(loads_rows, dtype=np.int64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"loads_rows must be [G] or [G, W], got shape {a.shape}")
    return a


def _weights(weights, W: int) -> np.ndarray:
    """Row weights as int64[W] (all ones by default)."""
    if weights is None:
        return np.ones(W, np.int64)
    w = np.asarray(weights, dtype=np.int64).reshape(-1)
    if w.shape[0] != W:
        raise ValueError(f"weights has {w.shape[0]} entries for {W} rows")
    if (w < 0).any():
        raise ValueError("weights must be non-negative")
    return w



def _inputs(loads_rows, free, sizes, valid, weights):
    """Normalized (L [G, W], G, W, weights, free, sizes, valid) as int64/bool arrays."""
    L = _rows(loads_rows)
    G, W = L.shape
    return (L, G, W, _weights(weights, W), np.asarray(free, np.int64).reshape(-1),
            np.asarray(sizes, np.int64).reshape(-1), np.asarray(valid, bool).reshape(-1))

def admitted_count(free, valid) -> int:
    """U = min(number of valid requests, total free slots)."""
    return int(min(int(np.sum(np.asarray(valid, bool))), int(np.sum(np.asarray(free, np.int64)))))


def objective(loads_rows, free, sizes, worker, weights=None) -> int:
    """J of an assignment (exact integer arithmetic).

    loads_rows int[G, W] (or int[G] for H = 0); worker int[R] with worker[i] = g or -1.
    `free` is accepted for a uniform signature; feasibility is not checked here (see
    `check_feasible`).
    """
    L = _rows(loads_rows)
    G, W = L.shape
    w = _weights(weights, W)
    worker = np.asarray(worker, np.int64)
    sizes = np.asarray(sizes, np.int64)
    adm = worker >= 0
    add = np.zeros(G, np.int64)
    np.add.at(add, worker[adm], sizes[adm])
    Lp = L + add[:, None]
    per_row = G * Lp.max(axis=0) - Lp.sum(axis=0)
    return int(np.dot(w, per_row))


def check_feasible(free, sizes, valid, worker) -> Optional[str]:
    """None if `worker` admits exactly U valid requests within the free slots, else why not."""
    free = np.asarray(free, np.int64)
    valid = np.asarray(valid, bool)
    worker = np.asarray(worker, np.int64)
    G = free.shape[0]
    adm = worker >= 0
    if (worker >= G).any() or (worker < -1).any():
        return "worker index out of range"
    if (adm & ~valid).any():
        return "an invalid pool entry was admitted"
    U = admitted_count(free, valid)
    if adm.sum() != U:
        return f"admitted {int(adm.sum())} requests, expected U = {U}"
    per = np.bincount(worker[adm], minlength=G)
    if (per > free).any():
        return f"slots exceeded: per-worker admissions {per.tolist()} > free {free.tolist()}"
    return None


def lower_bound_h0(loads, free, sizes, valid) -> int:
    """G * M0 - sum L - (sum of the U largest valid sizes), a lower bound on J* for H = 0.

    The max can only grow (M' >= M0), and the admitted total is at most the U largest sizes;
    when an assignment reaches this value it is optimal.
    """
    L = _rows(loads)[:, 0]
    sizes = np.asarray(sizes, np.int64)
    valid = np.asarray(valid, bool)
    U = admitted_count(free, valid)
    top = np.sort(sizes[valid])[::-1][:U]
    G = L.shape[0]
    return int(G * L.max() - L.sum() - top.sum())


def _identical_worker_pairs(L: np.ndarray, free: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive pairs (a, b), a < b, of workers with equal load rows and equal free slots.

    Such workers are interchangeable, so some optimum gives a at least as much added load as
    b; ordering them removes the G!-fold symmetry that slows the branch and bound.
    """
    pairs = []
    groups: dict[tuple, list[int]] = {}
    for g in range(L.shape[0]):
        if free[g] > 0:
            groups.setdefault((tuple(L[g].tolist()), int(free[g])), []).append(g)
    for members in groups.values():
        pairs.extend(zip(members[:-1], members[1:]))
    return pairs


def solve_milp(loads_rows, free, sizes, valid, weights=None, time_limit: float = 10.0
               ) -> tuple[int, np.ndarray]:
    """Exact J* and an optimal worker array, by a MILP solved with HiGHS (scipy.optimize.milp).

    Variables: integer y[v, g] = number of admitted requests of the v-th distinct valid size on
    worker g (aggregating equal sizes removes item symmetry), continuous M_h >= max_g L[g, h].
    Constraints: L[g, h] + sum_v size_v y[v, g] <= M_h; sum_g y[v, g] <= count_v;
    sum_v y[v, g] <= free_g; sum y = U; identical workers ordered by added load.
    Objective: sum_h w_h (G M_h - sum_g L[g, h]) - (sum_h w_h) sum_{v,g} size_v y[v, g].
    The solution is mapped back to requests (those of size v in queue order fill workers in
    index order) and re-scored with `objective`; a mismatch raises AssertionError.
    Raises NotProvenOptimal when HiGHS stops at the time limit without a proof.
    """
    L, G, W, w, free, sizes, valid = _inputs(loads_rows, free, sizes, valid, weights)
    if free.shape[0] != G:
        raise ValueError("free must have one entry per worker")
    if (free < 0).any():
        raise ValueError("free slots must be non-negative")
    R = sizes.shape[0]
    U = admitted_count(free, valid)
    worker = np.full(R, -1, np.int64)
    if U == 0:
        return objective(L, free, sizes, worker, w), worker

    vals, counts = np.unique(sizes[valid], return_counts=True)
    V = vals.shape[0]
    ny = V * G                                     # y[v, g] at index v * G + g, then M_h
    n = ny + W
    wsum = int(w.sum())
    c = np.zeros(n)
    c[:ny] = -(np.repeat(vals, G) * wsum).astype(float)
    c[ny:] = G * w.astype(float)
    const = int(np.dot(w, -L.sum(axis=0)))

    rows, lo, hi = [], [], []
    # Load rows: sum_v size_v y[v, g] - M_h <= -L[g, h].
    for g in range(G):
        for h in range(W):
            a = np.zeros(n)
            a[np.arange(V) * G + g] = vals
            a[ny + h] = -1.0
            rows.append(a); lo.append(-np.inf); hi.append(float(-L[g, h]))
    for v in range(V):                             # supply of each size
        a = np.zeros(n); a[v * G:(v + 1) * G] = 1.0
        rows.append(a); lo.append(0.0); hi.append(float(counts[v]))
    for g in range(G):                             # free slots per worker
        a = np.zeros(n); a[np.arange(V) * G + g] = 1.0
        rows.append(a); lo.append(0.0); hi.append(float(free[g]))
    a = np.zeros(n); a[:ny] = 1.0                  # exactly U admissions
    rows.append(a); lo.append(float(U)); hi.append(float(U))
    for ga, gb in _identical_worker_pairs(L, free):
        a = np.zeros(n)
        a[np.arange(V) * G + ga] = vals
        a[np.arange(V) * G + gb] = -vals
        rows.append(a); lo.append(0.0); hi.append(np.inf)

    ub = np.empty(n)
    ub[:ny] = np.minimum(counts[:, None], free[None, :]).reshape(-1)
    ub[ny:] = np.inf
    lb = np.zeros(n)
    lb[ny:] = L.max(axis=0)
    integrality = np.zeros(n)
    integrality[:ny] = 1
    res = milp(c, constraints=LinearConstraint(np.array(rows), lo, hi), integrality=integrality,
               bounds=Bounds(lb, ub),
               options={"time_limit": float(time_limit), "mip_rel_gap": 0.0, "presolve": True})

    def to_worker(x: np.ndarray) -> np.ndarray:
        y = np.rint(x[:ny]).astype(np.int64).reshape(V, G)
        out = np.full(R, -1, np.int64)
        for v in range(V):
            idx = np.flatnonzero(valid & (sizes == vals[v]))   # queue order
            k = 0
            for g in range(G):
                out[idx[k:k + y[v, g]]] = g
                k += y[v, g]
        return out

    if res.status != 0:
        inc = None
        if res.x is not None:
            wk = to_worker(res.x)
            inc = (objective(L, free, sizes, wk, w), wk)
        raise NotProvenOptimal(f"HiGHS status {res.status}: {res.message}", inc)
    worker = to_worker(res.x)
    why = check_feasible(free, sizes, valid, worker)
    assert why is None, f"MILP solution infeasible after rounding: {why}"
    J = objective(L, free, sizes, worker, w)
    J_lp = res.fun + const
    assert abs(J - J_lp) < 1e-6 * max(1.0, abs(J)) + 1e-3, (
        f"MILP objective {J_lp} disagrees with the re-scored assignment {J}")
    return J, worker


def solve_brute(loads_rows, free, sizes, valid, weights=None) -> tuple[int, np.ndarray]:
    """Exact J* and an optimal worker array by enumerating every assignment (G <= 3, pool <= 7).

    Enumerates worker[i] in {-1, 0..G-1} for each valid request (vectorized over all
    (G + 1)^#valid choices), keeps those admitting exactly U with at most free_g per worker,
    and returns the least J (ties: the first in enumeration order).
    """
    L, G, W, w, free, sizes, valid = _inputs(loads_rows, free, sizes, valid, weights)
    idx = np.flatnonzero(valid)
    if G > 3 or idx.size > 7:
        raise ValueError(f"brute force is for tiny instances (G <= 3, pool <= 7), got G={G}, "
                         f"pool={idx.size}")
    U = admitted_count(free, valid)
    R = sizes.shape[0]
    if U == 0:
        worker = np.full(R, -1, np.int64)
        return objective(L, free, sizes, worker, w), worker
    choices = np.array(list(itertools.product(range(-1, G), repeat=idx.size)), np.int64)  # [N, n]
    onehot = choices[:, :, None] == np.arange(G)[None, None, :]                         # [N, n, G]
    per = onehot.sum(axis=1)                                                           # [N, G]
    ok = ((choices >= 0).sum(axis=1) == U) & (per <= free[None, :]).all(axis=1)
    choices, onehot = choices[ok], onehot[ok]
    add = (onehot * sizes[idx][None, :, None]).sum(axis=1)                             # [N, G]
    Lp = L[None, :, :] + add[:, :, None]                                               # [N, G, W]
    J = (G * Lp.max(axis=1) - Lp.sum(axis=1)) @ w                                      # [N]
    best = int(np.argmin(J))
    worker = np.full(R, -1, np.int64)
    worker[idx] = choices[best]
    return int(J[best]), worker
