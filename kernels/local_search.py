"""Local search for the BF-IO H = 0 per-step program, and the kernel variants built on it.

The program: admit U = min(#pool, sum free) requests, at most free[g] on worker g, to minimize
J = G * max_g L'_g - sum_g L'_g (L' = loads after admission). Valley fill is a good start but
not a local optimum; the search below applies, per iteration, the single best of every
candidate exchange, evaluated all at once with masks (notes/bfio-kernel.md):
- move: a new request to another worker with a free slot;
- swap: two new requests on different workers;
- pool exchange: a new request back to the pool, a waiting one in its place;
- chain (optional, cubic): waiting p replaces new i on worker a, i replaces new j on worker b,
  j returns to the pool.
Each candidate changes at most two workers, so its new maximum is max(top load outside
{a, b}, L'_a, L'_b), from the top three loads. Candidates are ranked by (J, sum_g L'_g^2): J is
flat when several workers tie at the maximum, and the sum of squares then still prefers spreading
load (it decides 2-5% of instances, per the study). The search stops when no candidate improves
(converged) or after `max_iters` iterations.

A converged output is swap-stable, which is what the BF-IO paper's Lemma 1 needs: a swap of a
new request on the heaviest worker with a smaller one on the lightest that lowered (max, number
of workers at the max) would lower J, or keep J and lower the sum of squares; either is an
improving candidate.

Starts: plain valley fill ("vf_ls"); valley fill at 9 target levels ("ms_ls", `multi_start`);
or 41 valley-fill starts followed by level fills (kernels/level_fill.py) at 205 levels below
their maxima ("ms_lf", `multi_start_level`), every start followed by the search.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .level_fill import ENUM_MAX, SUBSET_MAX, level_fill, subset_masks
from .reduce import ordered_sum
from .round_lpt import round_lpt
from .valley_fill import valley_fill
from .window_fill import window_fill

_BIG = np.int32(2**31 - 1)
_INF = np.float32(np.inf)


def _top3(L: jnp.ndarray):
    """Indices of the three largest loads (lowest index first among equals; -1 if G < k)."""
    G = L.shape[0]
    gid = jnp.arange(G)
    i1 = jnp.argmax(L)
    m2 = jnp.where(gid == i1, -1, L)
    i2 = jnp.where(G > 1, jnp.argmax(m2), -1)
    m3 = jnp.where((gid == i1) | (gid == i2), -1, L)
    i3 = jnp.where(G > 2, jnp.argmax(m3), -1)
    return i1, i2, i3


def _max_outside(L, tops, a, b):
    """max of L over workers not in {a, b} (0 when there is none; loads are >= 0)."""
    i1, i2, i3 = tops
    v = lambda i: jnp.where(i >= 0, L[jnp.maximum(i, 0)], 0)
    out1 = (i1 != a) & (i1 != b)
    out2 = (i2 != a) & (i2 != b) & (i2 >= 0)
    out3 = i3 >= 0
    return jnp.where(out1, v(i1), jnp.where(out2, v(i2), jnp.where(out3, v(i3), 0)))


def _dsq(d, base):
    """d * base in float32 from exact int32 factors: the sign is always exact."""
    return d.astype(jnp.float32) * base.astype(jnp.float32)


def _worker_loads(loads0, worker, sizes):
    G = loads0.shape[0]
    onehot = worker[:, None] == jnp.arange(G)[None, :]  # [R, G]
    return loads0 + jnp.sum(jnp.where(onehot, sizes[:, None], 0), axis=0), jnp.sum(onehot, axis=0)


def objective(loads0, worker, sizes) -> jnp.ndarray:
    """J = G * max L' - sum L' of an assignment (int32)."""
    return _score(loads0, worker, sizes)[0]


def _score(loads0, worker, sizes):
    """(J int32, sum of squared loads float32) of one assignment: the order starts are ranked by."""
    L, _ = _worker_loads(loads0, worker, sizes)
    return L.shape[0] * jnp.max(L) - jnp.sum(L), ordered_sum(L.astype(jnp.float32) ** 2)


def _best_candidate(loads0, free0, sizes, valid, worker, chain: bool):
    """The best exchange (J', dsq, apply-function inputs) over all candidate families."""
    G = loads0.shape[0]
    L, used = _worker_loads(loads0, worker, sizes)
    free_left = free0 - used
    tops = _top3(L)
    total = jnp.sum(L)
    new = worker >= 0
    waiting = valid & ~new
    a = jnp.maximum(worker, 0)  # worker of item
    La = L[a]
    s = sizes
    cands = []  # (J [..], dsq [..], ok [..])

    # move i -> b
    b = jnp.arange(G)[None, :]
    la, lb = (La - s)[:, None], L[None, :] + s[:, None]
    mx = jnp.maximum(_max_outside(L, tops, a[:, None], b), jnp.maximum(la, lb))
    ok = new[:, None] & (b != a[:, None]) & (free_left[None, :] > 0)
    cands.append((G * mx - total, _dsq(2 * s[:, None], L[None, :] - La[:, None] + s[:, None]), ok))

    # swap i <-> j
    d = s[:, None] - s[None, :]  # a loses d
    la, lb = La[:, None] - d, La[None, :] + d
    mx = jnp.maximum(_max_outside(L, tops, a[:, None], a[None, :]), jnp.maximum(la, lb))
    ok = new[:, None] & new[None, :] & (a[:, None] != a[None, :]) & (d != 0)
    cands.append((G * mx - total, _dsq(2 * d, La[None, :] - La[:, None] + d), ok))

    # pool exchange: waiting p replaces new i
    d = s[None, :] - s[:, None]  # [i, p]: a gains d
    la = La[:, None] + d
    mx = jnp.maximum(_max_outside(L, tops, a[:, None], a[:, None]), la)
    ok = new[:, None] & waiting[None, :] & (d != 0)
    cands.append((G * mx - (total + d), _dsq(d, 2 * La[:, None] + d), ok))

    if chain:  # [p, i, j]: p replaces i on a_i, i replaces j on a_j, j returns to the pool
        ai, aj = a[None, :, None], a[None, None, :]
        Lai, Laj = La[None, :, None], La[None, None, :]
        da = s[:, None, None] - s[None, :, None]
        db = s[None, :, None] - s[None, None, :]
        la, lb = Lai + da, Laj + db
        mx = jnp.maximum(_max_outside(L, tops, ai, aj), jnp.maximum(la, lb))
        ok = waiting[:, None, None] & new[None, :, None] & new[None, None, :] & (ai != aj)
        dsq = _dsq(da, 2 * Lai + da) + _dsq(db, 2 * Laj + db)
        cands.append((G * mx - (total + da + db), dsq, ok))

    J = G * jnp.max(L) - total
    flat_J = jnp.concatenate([jnp.where(ok, j, _BIG).ravel() for j, _, ok in cands])
    flat_q = jnp.concatenate([jnp.where(ok, q, _INF).ravel() for _, q, ok in cands])
    best_J = jnp.min(flat_J)
    best = jnp.argmin(jnp.where(flat_J == best_J, flat_q, _INF))
    improves = (best_J < J) | ((best_J == J) & (flat_q[best] < 0))
    sizes_ = [np.prod(j.shape) for j, _, _ in cands]
    return best, improves, sizes_


def _apply(worker, best, sizes_, G: int, R: int):
    """Apply candidate number `best` (flat index over the families) to the assignment."""
    offs = np.cumsum([0] + sizes_)
    pos = jnp.arange(R)
    a = jnp.maximum(worker, 0)
    # move
    k = best - offs[0]
    i, b = k // G, k % G
    w_move = jnp.where(pos == i, b, worker)
    # swap
    k = best - offs[1]
    i, j = k // R, k % R
    w_swap = jnp.where(pos == i, a[j], jnp.where(pos == j, a[i], worker))
    # pool exchange
    k = best - offs[2]
    i, p = k // R, k % R
    w_pool = jnp.where(pos == p, a[i], jnp.where(pos == i, -1, worker))
    out = jnp.where(best < offs[1], w_move, jnp.where(best < offs[2], w_swap, w_pool))
    if len(sizes_) == 4:
        k = best - offs[3]
        p, i, j = k // (R * R), (k // R) % R, k % R
        w_chain = jnp.where(pos == p, a[i], jnp.where(pos == i, a[j], jnp.where(pos == j, -1, worker)))
        out = jnp.where(best >= offs[3], w_chain, out)
    return out.astype(jnp.int32)


def local_search(loads0, free0, sizes, valid, worker, *, max_iters: int = 8, chain: bool = False):
    """Best-improvement local search from `worker`; returns (worker int32[R], converged bool)."""
    G, R = loads0.shape[0], sizes.shape[0]

    def body(_, carry):
        worker, done = carry
        best, improves, sizes_ = _best_candidate(loads0, free0, sizes, valid, worker, chain)
        step = improves & ~done
        worker = jnp.where(step, _apply(worker, best, sizes_, G, R), worker)
        return worker, done | ~improves

    worker, done = jax.lax.fori_loop(0, max_iters, body, (worker, jnp.bool_(False)))
    # Converged: the last iteration found nothing better (re-checked so a run that improved on
    # its last allowed iteration is not reported as converged).
    _, improves, _ = _best_candidate(loads0, free0, sizes, valid, worker, chain)
    return worker, ~improves


def ranks_of(worker: jnp.ndarray, G: int) -> jnp.ndarray:
    """Rank of each admitted entry among the entries of the same worker (pool order)."""
    onehot = (worker[:, None] == jnp.arange(G)[None, :]).astype(jnp.int32)
    return jnp.sum(jnp.where(worker[:, None] >= 0, (jnp.cumsum(onehot, axis=0) - 1) * onehot, 0), axis=1)


def _median_valid(sizes, valid):
    x = jnp.sort(jnp.where(valid, sizes, _BIG))
    n = jnp.sum(valid)
    return x[jnp.maximum((n - 1) // 2, 0)]


def _target_levels(loads0, med, qmax: float, num_levels: int) -> jnp.ndarray:
    """Valley-fill targets int32[1 + num_levels]: 0 (plain valley fill), then M0 + round(q * med)
    for q in linspace(0.25, qmax, num_levels) (M0: the current max load; med: median size)."""
    qs = np.linspace(0.25, qmax, num_levels, dtype=np.float32)
    return jnp.concatenate(
        [jnp.zeros((1,), jnp.int32), jnp.max(loads0) + jnp.round(qs * med.astype(jnp.float32)).astype(jnp.int32)]
    )


def multi_start(loads0, free0, sizes, valid, *, max_iters: int, chain: bool, num_levels: int = 8):
    """Valley fill from 1 + num_levels target levels (M0 + q * median s, q in [0.25, 2]), each
    followed by local search; the start with the least J wins (ties: the earliest start)."""
    targets = _target_levels(loads0, _median_valid(sizes, valid), 2.0, num_levels)

    def one(t):
        w, _ = valley_fill(loads0, free0, sizes, valid, target=t)
        w, conv = local_search(loads0, free0, sizes, valid, w, max_iters=max_iters, chain=chain)
        return w, conv, objective(loads0, w, sizes)

    ws, convs, Js = jax.vmap(one)(targets)
    k = jnp.argmin(Js)
    return ws[k], convs[k]


def _instance_key(loads, sizes, valid) -> jax.Array:
    """A PRNG key that is a function of the instance only (jittered starts are deterministic)."""
    h = jnp.sum(loads.astype(jnp.uint32) * jnp.uint32(2654435761)) ^ jnp.sum(
        jnp.where(valid, sizes, 0).astype(jnp.uint32)
        * (jnp.arange(sizes.shape[0], dtype=jnp.uint32) * 2 + 1)
        * jnp.uint32(40503)
    )
    return jax.random.fold_in(jax.random.PRNGKey(97), h)


# multi_start_level's schedule (measured in benchmarks/bench_kernel_quality.py, docs/papers/000-bfio.md):
LEVEL_QMAX = 6.0  # target levels M0 + q * median for q in [0.25, LEVEL_QMAX] ...
NUM_LEVELS = 16  # ... at this many q
NUM_JITTER = 24  # valley fill on loads + U[0, scale * median) noise, scale 0.5, 1, 2
LEVEL_OFFSETS = (0.0, 2.0, 8.0)  # level fills below each start's max, in tokens ...
LEVEL_OFFSETS_MEDIAN = (0.15, 0.5)  # ... and in medians of the waiting sizes


def _starts(loads0, free0, sizes, valid, med, max_iters: int):
    """Valley fill from 1 + NUM_LEVELS target levels and NUM_JITTER jittered loads, each followed
    by local search on the true loads. Returns (worker int32[S, R], converged bool[S])."""
    G = loads0.shape[0]
    m0 = jnp.max(loads0)
    medf = med.astype(jnp.float32)
    key = _instance_key(loads0, sizes, valid)
    scale = jnp.asarray(np.resize(np.float32([0.5, 1.0, 2.0]), NUM_JITTER))
    noise = jnp.round(jax.random.uniform(key, (NUM_JITTER, G)) * scale[:, None] * medf).astype(jnp.int32)
    qj = jax.random.uniform(jax.random.fold_in(key, 1), (NUM_JITTER,), maxval=LEVEL_QMAX)
    # every other jittered start also aims at a random level (the others are plain valley fill)
    tj = jnp.where(jnp.arange(NUM_JITTER) % 2 == 0, 0, m0 + jnp.round(qj * medf).astype(jnp.int32))
    targets = jnp.concatenate([_target_levels(loads0, med, LEVEL_QMAX, NUM_LEVELS), tj])
    noise = jnp.concatenate([jnp.zeros((1 + NUM_LEVELS, G), jnp.int32), noise])

    def one(t, nz):
        # a target is on the true-load scale; the jittered run sees it shifted by the largest noise
        w, _ = valley_fill(loads0 + nz, free0, sizes, valid, target=t + jnp.max(nz) * (t > 0))
        return local_search(loads0, free0, sizes, valid, w, max_iters=max_iters)

    return jax.vmap(one)(targets, noise)


def multi_start_level(loads0, free0, sizes, valid, *, max_iters: int = 8):
    """The quality end of the BF-IO H = 0 kernels ("ms_lf").

    41 starts (`_starts`: valley fill, 16 target levels up to 6 medians above the current max,
    24 jittered loads), each followed by local search; then, at 5 levels just below each start's
    final max (offsets LEVEL_OFFSETS tokens and LEVEL_OFFSETS_MEDIAN medians), a level fill
    (kernels/level_fill.py) followed by local search. The assignment with the least
    (J, sum of squared loads) wins. Returns (worker int32[R], converged bool: the winner's
    local search converged).
    """
    R = sizes.shape[0]
    med = jnp.where(jnp.any(valid), _median_valid(sizes, valid), 1)  # no pool: nothing to admit
    ws, convs = _starts(loads0, free0, sizes, valid, med, max_iters)
    masks, counts = (jnp.asarray(x) for x in subset_masks(min(ENUM_MAX, R), SUBSET_MAX))
    tops = jax.vmap(lambda w: jnp.max(_worker_loads(loads0, w, sizes)[0]))(ws)  # [S]
    offsets = jnp.concatenate(
        [
            jnp.asarray(LEVEL_OFFSETS, jnp.float32),
            jnp.asarray(LEVEL_OFFSETS_MEDIAN, jnp.float32) * med.astype(jnp.float32),
        ]
    )
    levels = (tops[:, None] - jnp.ceil(offsets).astype(jnp.int32)[None, :]).ravel()

    def one(level):
        w = level_fill(loads0, free0, sizes, valid, level, masks, counts)
        return local_search(loads0, free0, sizes, valid, w, max_iters=max_iters)

    wl, cl = jax.vmap(one)(levels)
    ws, convs = jnp.concatenate([ws, wl]), jnp.concatenate([convs, cl])
    Js, sqs = jax.vmap(lambda w: _score(loads0, w, sizes))(ws)
    k = jnp.argmin(jnp.where(Js == jnp.min(Js), sqs, _INF))
    return ws[k], convs[k]


def _variant(kind: str, chain: bool = False, max_iters: int = 8) -> Callable:
    def fn(loads, free, sizes, valid):
        G = loads.shape[0]
        if kind == "vf":
            w, r = valley_fill(loads, free, sizes, valid)
            return w, r, jnp.bool_(False)
        if kind == "ls":
            w, _ = valley_fill(loads, free, sizes, valid)
            w, conv = local_search(loads, free, sizes, valid, w, max_iters=max_iters, chain=chain)
        elif kind == "lf":
            w, conv = multi_start_level(loads, free, sizes, valid, max_iters=max_iters)
        else:
            w, conv = multi_start(loads, free, sizes, valid, max_iters=max_iters, chain=chain)
        return w, ranks_of(w, G), conv

    fn.__name__ = f"bfio_{kind}{'_chain' if chain else ''}"
    return fn


def _round_lpt(loads, free, sizes, valid, num_workers=None):
    """Round LPT (kernels/round_lpt.py) in the variant signature; it does not search."""
    worker, rank = round_lpt(loads, free, sizes, valid, num_workers)
    return worker, rank, jnp.bool_(False)


def _window(loads, free, sizes, valid, num_workers=None):
    """Window fill (kernels/window_fill.py) in the variant signature; it does not search."""
    worker, rank = window_fill(loads, free, sizes, valid, num_workers)
    return worker, rank, jnp.bool_(False)


BFIO_VARIANTS: dict[str, Callable] = {
    "vf": _variant("vf"),
    "vf_ls": _variant("ls"),
    "vf_ls_chain": _variant("ls", chain=True),
    "ms_ls": _variant("ms"),
    "ms_ls_chain": _variant("ms", chain=True),
    "ms_lf": _variant("lf"),
    "round_lpt": _round_lpt,
    "window": _window,
}
"""BF-IO H = 0 kernels by name: fn(loads int32[G], free int32[G], sizes int32[R], valid bool[R])
-> (worker int32[R], rank int32[R], converged bool). "vf" never reports convergence (it does
not search); nor does "round_lpt" (kernels/round_lpt.py: the U largest requests dealt out one
round of free slots at a time, lightest worker first; O(max_free) sequential steps instead of
O(U), for steps that admit thousands of requests, and not guaranteed to match valley fill's J);
nor does "window" (kernels/window_fill.py: each worker takes exactly its free slots, a contiguous
window of the ascending pool whose sum is closest to its need, for the theory semantics' spread
max - min rather than J; O(G R) per step). "ms_lf" is the most exact and the costliest
(`multi_start_level`; about 250 local searches per call). "round_lpt" and "window" also take
`num_workers=`, the traced G of a run padded into a size bucket (jaxsched/buckets.py)."""
