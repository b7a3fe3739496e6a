"""BF-IO assignment kernels: valley fill for H = 0 and its lookahead form for H >= 1.

The per-step problem (BF-IO paper, program (IO)): workers g with loads L_g and free slots c_g, a
pool of waiting requests with sizes s_i; admit U = min(#pool, sum c) requests, at most c_g on
worker g, to minimize J = G * max_g L'_g - sum_g L'_g over the next H + 1 steps. It is strongly
NP-hard; valley fill is the sorted greedy that the project's quality study (notes/bfio-kernel.md)
found to be the right base: U times, the lightest worker with a free slot takes the largest
request that keeps it at or below the current maximum load, else the smallest request.

Both kernels return `worker[R]` (int32, -1 = not admitted) and are deterministic: ties go to the
lowest worker index and to the earliest pool position (queue order).
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

_BIG = np.int32(2**31 - 1)


def _greedy_fill(loads: jnp.ndarray, free: jnp.ndarray, sizes: jnp.ndarray, valid: jnp.ndarray,
                 choose: Callable) -> jnp.ndarray:
    """U sequential admissions: (g, i) = choose(loads, free, valid); request i joins worker g.

    loads is int32[G] or int32[G, W] (a request adds its size to every column of its worker's
    row). The loop runs R times; once the pool or the free slots run out, iterations are no-ops.
    """
    R = sizes.shape[0]

    def body(_, carry):
        loads, free, valid, worker = carry
        g, i = choose(loads, free, valid)
        do = jnp.any(valid) & jnp.any(free > 0)
        loads = loads.at[g].add(jnp.where(do, sizes[i], 0))
        free = free.at[g].add(-do.astype(jnp.int32))
        valid = valid.at[i].set(valid[i] & ~do)
        worker = worker.at[i].set(jnp.where(do, g, worker[i]).astype(jnp.int32))
        return loads, free, valid, worker

    init = (loads, free, valid, jnp.full((R,), -1, jnp.int32))
    return jax.lax.fori_loop(0, R, body, init)[3]


def valley_fill(loads: jnp.ndarray, free: jnp.ndarray, sizes: jnp.ndarray,
                valid: jnp.ndarray) -> jnp.ndarray:
    """Valley-fill assignment for H = 0.

    loads int32[G] current loads (tokens); free int32[G] free slots; sizes int32[R] request
    prompt lengths (tokens); valid bool[R] which pool entries wait. Returns worker int32[R].
    """
    def choose(loads, free, valid):
        g = jnp.argmin(jnp.where(free > 0, loads, _BIG))
        fits = valid & (sizes <= jnp.max(loads) - loads[g])
        best_fit = jnp.argmax(jnp.where(fits, sizes, -1))
        smallest = jnp.argmin(jnp.where(valid, sizes, _BIG))
        return g, jnp.where(jnp.any(fits), best_fit, smallest)

    return _greedy_fill(loads, free, sizes, valid, choose)


def window_weights(window: int, decay: float, scale: int = 128) -> np.ndarray:
    """Integer weights w_h = round(scale * decay^h), h = 0..window-1 (exact integer scores)."""
    return np.round(scale * decay ** np.arange(window, dtype=np.float64)).astype(np.int32)


def lookahead_valley_fill(projected: jnp.ndarray, free: jnp.ndarray, sizes: jnp.ndarray,
                          valid: jnp.ndarray, beta: int, weights: np.ndarray) -> jnp.ndarray:
    """Valley fill scored over a window of H + 1 projected steps (BF-IO with lookahead H >= 1).

    projected int32[G, W] loads predicted for steps k..k+H (W = H + 1); free int32[G];
    sizes int32[R]; valid bool[R]; beta: overflow weight (beta = G makes each row's term the
    exact decrease of G max_g P - sum_g P); weights int32[W] per-row weights (decaying, so that
    far, less certain rows count less). U times: the worker with a free slot and the least
    current load (row 0, as in valley fill) takes the request maximizing
    F(s) = sum_h w_h (s - beta * max(0, s - m_h)), m_h = max_g P[g, h] - P[g*, h]; ties to the
    earliest request. A new request adds s to every row of its worker. Returns worker int32[R].
    """
    w = jnp.asarray(weights, jnp.int32)

    def choose(proj, free, valid):
        g = jnp.argmin(jnp.where(free > 0, proj[:, 0], _BIG))
        room = jnp.max(proj, axis=0) - proj[g]                                  # [W]
        over = jnp.maximum(sizes[:, None] - room[None, :], 0)                   # [R, W]
        score = jnp.sum(w * (sizes[:, None] - beta * over), axis=1)             # [R]
        return g, jnp.argmax(jnp.where(valid, score, -_BIG))

    return _greedy_fill(projected, free, sizes, valid, choose)
