"""BF-IO assignment kernels: valley fill for H = 0 and its lookahead form for H >= 1.

The per-step problem (BF-IO paper, program (IO)): workers g with loads L_g and free slots c_g, a
pool of waiting requests with sizes s_i; admit U = min(#pool, sum c) requests, at most c_g on
worker g, to minimize J = G * max_g L'_g - sum_g L'_g over the next H + 1 steps. It is strongly
NP-hard; valley fill is the sorted greedy that the project's quality study (notes/bfio-kernel.md)
found to be the right base: U times, the lightest worker with a free slot takes the largest
request that keeps it at or below the current maximum load, else the smallest request.

Both kernels return `(worker[R], rank[R])` (int32; worker -1 = not admitted; rank = how many
requests the same worker received before this one) and are deterministic: ties go to the
lowest worker index and to the earliest pool position (queue order).
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import native as native_kernel
from .reduce import ordered_sum

_BIG = np.int32(2**31 - 1)


def _greedy_fill(
    loads: jnp.ndarray, free: jnp.ndarray, sizes: jnp.ndarray, valid: jnp.ndarray, choose: Callable, top=None
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """U sequential admissions: (g, i) = choose(loads, top, free, valid); request i joins g.

    loads is int32[G] or int32[G, W] (a request adds its size to every column of its worker's
    row); `top` is carried for `choose` as the running column maxima of loads. Iterations after
    the pool or the free slots ran out are no-ops. (A pure while_loop that stops at U is
    faster for one run, but under vmap its batched predicate turns into selects over the whole
    carry: 2.7x slower at 1024 seeds; hence a fixed-length head and a while_loop tail.)
    Returns (worker int32[R], rank int32[R]): rank is the number of requests given to the same
    worker before this one (its free slot index among that worker's free slots).
    Updates are elementwise selects rather than scatters: under vmap on CPU they fuse.
    """
    R, G = sizes.shape[0], free.shape[0]
    pos, gid = jnp.arange(R), jnp.arange(G)

    def body(_, carry):
        loads, top, free, valid, worker, rank = carry
        g, i = choose(loads, top, free, valid)
        do = jnp.any(valid) & jnp.any(free > 0)
        on_g, on_i = (gid == g) & do, (pos == i) & do
        s = jnp.sum(jnp.where(on_i, sizes, 0))
        add = jnp.where(on_g, s, 0)
        loads = loads + (add[:, None] if loads.ndim == 2 else add)
        mask = on_g[:, None] if loads.ndim == 2 else on_g
        top = jnp.maximum(top, jnp.max(jnp.where(mask, loads, 0), axis=0))
        rank = jnp.where(on_i, free0[g] - free[g], rank)
        free = free - on_g.astype(jnp.int32)
        valid = valid & ~on_i
        worker = jnp.where(on_i, g, worker).astype(jnp.int32)
        return loads, top, free, valid, worker, rank

    free0 = free
    top = jnp.max(loads, axis=0) if top is None else top
    init = (loads, top, free, valid, jnp.full((R,), -1, jnp.int32), jnp.zeros((R,), jnp.int32))
    out = _admission_loop(lambda c: body(0, c), init, R, lambda c: jnp.any(c[3]) & jnp.any(c[2] > 0))
    return out[4], out[5]


def _admission_loop(body: Callable, carry, R: int, pending: Callable):
    """Apply `body` up to R times: a fixed-length head, then a while_loop while `pending`.

    Most steps admit far fewer than R requests. The head (min(R/4, 64) iterations) costs no
    selects under vmap; the tail stops as soon as no run (in the batch) is `pending`, i.e. has
    both a waiting request and a free slot.
    """
    first = max(1, min(R // 4, 64))
    carry = jax.lax.fori_loop(0, first, lambda _, c: body(c), carry)
    _, carry = jax.lax.while_loop(
        lambda nc: (nc[0] < R) & pending(nc[1]), lambda nc: (nc[0] + 1, body(nc[1])), (jnp.int32(first), carry)
    )
    return carry


def packable(max_size: int, pool_size: int) -> bool:
    """Whether `valley_fill`'s packed request keys fit int32 for sizes up to `max_size` in a pool
    of `pool_size` (else use `valley_fill_unpacked`)."""
    R2 = 1 << max(0, (pool_size - 1).bit_length())
    return (max_size + 1) * R2 <= 2**31


# Admissions per iteration of valley fill's loop, by JAX backend (the default unroll). Results
# do not depend on it (an admission with nothing left to admit changes nothing); fewer
# iterations mean fewer loop-condition checks, which on a GPU are a device-to-host read each,
# and let XLA fuse across consecutive admissions, while each call wastes up to unroll - 1
# no-op admissions. Measured by benchmarks/bench_unroll.py at (16, 72, 64): on a 2-core CPU
# 2 was fastest at the engine's chunk sizes (1.2-1.3x unroll 1 at 342 and 1,024 seeds; 8 was
# no faster than 1), on an H100 8 (1.7-2.1x unroll 1 at 1,024-65,536 seeds).
UNROLL = {"cpu": 2}
UNROLL_ACCELERATOR = 8


def default_unroll() -> int:
    """The valley-fill unroll for JAX's default backend: `UNROLL`, else `UNROLL_ACCELERATOR`."""
    return UNROLL.get(jax.default_backend(), UNROLL_ACCELERATOR)


def valley_fill(
    loads: jnp.ndarray,
    free: jnp.ndarray,
    sizes: jnp.ndarray,
    valid: jnp.ndarray,
    target=0,
    unroll: int | None = None,
    native: bool | None = None,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Valley-fill assignment for H = 0.

    loads int32[G] current loads (tokens); free int32[G] free slots; sizes int32[R] request
    prompt lengths (tokens); valid bool[R] which pool entries wait; target: a request "fits"
    when it keeps the worker at or below max(current max load, target) (0: plain valley fill;
    higher targets are the multi-start levels); unroll (static, >= 1; None: `default_unroll()`):
    admissions per loop iteration of the XLA form, a speed setting only; native (static; None:
    `kernels.native.default_on()`): on the CPU platform, run the native kernel
    (`kernels/native/valley_fill.cc`, the same rule in plain loops) instead of the XLA form, a
    speed setting only too. Returns (worker, rank) int32[R] (see `_greedy_fill`).

    Each choice is one reduction over the workers and one over the pool, on packed keys: the
    worker key L_g * G + g (its minimum is the lightest worker, lowest index first; it fits int32
    because the engine proves G * max load < 2^31) and one key per request, s * R2 + (R2 - 1 - p)
    (R2: R rounded up to a power of two), whose maximum below (room + 1) * R2 is the largest
    request that fits (earliest p among equal sizes); for the smallest request, the same key is
    turned into -(s * R2 + p) - 1 in the same pass. Packing needs max(s) * R2 < 2^31;
    `valley_fill_unpacked` is the two-reduction form for larger pools.

    Under `vmap` the kernel runs batched by its own rule (`_valley_fill_batched`): seeds on the
    minor axis, so that every reduction vectorizes across seeds, and a loop of
    ceil(max(U) / unroll) iterations with no per-iteration selects (a vmapped `while_loop` would
    select over its whole carry every iteration). Each seed's result is the same as alone, and
    the same for every unroll.
    """
    unroll = default_unroll() if unroll is None else unroll
    if not (isinstance(unroll, int) and unroll >= 1):
        raise ValueError(f"valley_fill: unroll must be an int >= 1, got {unroll!r}")
    native = native_kernel.default_on() if native is None else bool(native)
    if native and not native_kernel.available():
        raise ValueError(
            "valley_fill: native=True, but the native kernel is unavailable "
            "(JAXSCHED_NATIVE=0, or it could not be built: see the warning)"
        )
    return _vmappable(unroll, native)(loads, free, sizes, valid, jnp.asarray(target, jnp.int32))


@functools.lru_cache(maxsize=None)
def _vmappable(unroll: int, native: bool) -> Callable:
    """The batched valley fill at one setting, as a function of one instance that vmaps by its
    own rule (one per setting, so that both stay Python values)."""
    xla = functools.partial(_valley_fill_batched, unroll=unroll)

    def batched(*args):
        if not native:
            return xla(*args)
        # The native kernel is registered for the CPU only; other platforms lower the XLA form.
        return jax.lax.platform_dependent(*args, cpu=native_kernel.valley_fill_native, default=xla)

    @jax.custom_batching.custom_vmap
    def one(loads, free, sizes, valid, target):
        out = batched(loads[None], free[None], sizes[None], valid[None], target[None])
        return out[0][0], out[1][0]

    @one.def_vmap
    def rule(axis_size: int, in_batched, loads, free, sizes, valid, target):
        args = [
            x if b else jnp.broadcast_to(x, (axis_size, *x.shape))
            for x, b in zip((loads, free, sizes, valid, target), in_batched)
        ]
        return batched(*args), (True, True)

    return one


def _materialize(*xs: jnp.ndarray) -> tuple[jnp.ndarray, ...]:
    """The arrays xs [N] themselves, computed once. XLA fuses a chain of cheap elementwise ops
    into every element of each consumer, so a per-instance value derived in a few selects
    and broadcast over [R, N] is recomputed R times; a reduction is a fusion boundary, and the
    maximum of two copies is the value. (`lax.optimization_barrier` does not stop this fusion
    on the CPU backend.)"""
    pairs = tuple(jnp.stack([x, x]) for x in xs)
    inits = tuple(jnp.array(jnp.iinfo(x.dtype).min, x.dtype) for x in xs)
    return tuple(jax.lax.reduce(pairs, inits, lambda a, b: tuple(jnp.maximum(x, y) for x, y in zip(a, b)), (0,)))


def _valley_fill_batched(loads, free, sizes, valid, target, unroll: int = 1) -> tuple[jnp.ndarray, jnp.ndarray]:
    """`valley_fill` on N instances at once: loads, free int32[N, G]; sizes int32[N, R]; valid
    bool[N, R]; target int32[N]; unroll admissions per loop iteration. Returns (worker, rank)
    int32[N, R]."""
    N, G = loads.shape
    R = sizes.shape[1]
    R2 = 1 << max(0, (R - 1).bit_length())
    sh = R2.bit_length() - 1
    loads, free, sizes, valid = loads.T, free.T, sizes.T, valid.T  # seeds on the minor axis
    pos = jnp.arange(R, dtype=jnp.int32)[:, None]
    gid = jnp.arange(G, dtype=jnp.int32)[:, None]
    none = -_BIG - 1
    cap = (int(_BIG) >> sh) - 1  # rooms above this fit every packable size
    # One array carries each request's key while it waits and its fate afterwards: -1 not in
    # the pool, -(g * R2 + rank) - 2 once admitted to worker g as its rank-th request.
    key0 = jnp.where(valid, sizes * R2 + (R2 - 1 - pos), -1).astype(jnp.int32)
    # Exactly U = min(waiting, free slots) admissions per instance: the loop runs at least
    # max(U) admissions and an instance whose U is reached has no free slot or no waiting
    # request, so its remaining admissions change nothing.
    U = jnp.minimum(jnp.sum(valid, axis=0, dtype=jnp.int32), jnp.sum(free, axis=0, dtype=jnp.int32))

    cols = jnp.arange(N, dtype=jnp.int32)

    def body(carry):
        loads, top, used, key = carry
        wkey = jnp.min(jnp.where(used < free, loads * G + gid, _BIG), axis=0)
        g, Lg = wkey % G, wkey // G
        (thr,) = _materialize((jnp.minimum(jnp.maximum(top, target) - Lg, cap) + 1) << sh)
        over = 2 * (key & (R2 - 1)) - key - R2  # -(s * R2 + p) - 1
        k = jnp.max(jnp.where(key >= 0, jnp.where(key < thr, key, over), none), axis=0)
        do = (wkey != _BIG) & (k != none)
        kk = jnp.where(k >= 0, k, -(k + 1))
        s = kk >> sh
        i = jnp.where(k >= 0, R2 - 1 - (kk & (R2 - 1)), kk & (R2 - 1))
        # -1: no worker and no pool position when the instance has nothing left to admit.
        g, i, new_load = _materialize(jnp.where(do, g, -1), jnp.where(do, i, -1), Lg + s)
        on_g = gid == g
        rank = jnp.sum(jnp.where(on_g, used, 0), axis=0)
        loads = jnp.where(on_g, new_load, loads)
        used = used + on_g.astype(jnp.int32)
        key = key.at[jnp.where(i >= 0, i, R), cols].set(-(g * R2 + rank) - 2, mode="drop")
        top = jnp.where(g >= 0, jnp.maximum(top, new_load), top)
        return loads, top, used, key

    def admit(_, carry):
        for _ in range(unroll):
            carry = body(carry)
        return carry

    # ceil(max(U) / unroll) iterations: the admissions past an instance's U are no-ops.
    carry = (loads, jnp.max(loads, axis=0), jnp.zeros_like(free), key0)
    key = jax.lax.fori_loop(0, (jnp.max(U) + unroll - 1) // unroll, admit, carry)[3]
    admitted = key <= -2
    fate = -key - 2
    worker = jnp.where(admitted, fate >> sh, -1)
    rank = jnp.where(admitted, fate & (R2 - 1), 0)
    return worker.T.astype(jnp.int32), rank.T.astype(jnp.int32)


def valley_fill_unpacked(
    loads: jnp.ndarray, free: jnp.ndarray, sizes: jnp.ndarray, valid: jnp.ndarray
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """`valley_fill` with argmin/argmax instead of packed keys (any sizes and pool size)."""

    def choose(loads, top, free, valid):
        g = jnp.argmin(jnp.where(free > 0, loads, _BIG))
        fits = valid & (sizes <= top - loads[g])
        best_fit = jnp.argmax(jnp.where(fits, sizes, -1))
        smallest = jnp.argmin(jnp.where(valid, sizes, _BIG))
        return g, jnp.where(jnp.any(fits), best_fit, smallest)

    return _greedy_fill(loads, free, sizes, valid, choose)


def window_weights(window: int, decay: float, scale: int = 128) -> np.ndarray:
    """Integer weights w_h = round(scale * decay^h), h = 0..window-1 (exact integer scores).

    decay = 1 (the undiscounted window objective of the paper's program) gives weights 1: equal
    weights rank candidates the same at any scale, and scale 1 leaves the most int32 headroom.
    """
    if decay == 1.0:
        return np.ones(window, np.int32)
    return np.round(scale * decay ** np.arange(window, dtype=np.float64)).astype(np.int32)


def lookahead_valley_fill(
    projected: jnp.ndarray, free: jnp.ndarray, sizes: jnp.ndarray, valid: jnp.ndarray, beta: int, weights: np.ndarray
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Valley fill scored over a window of H + 1 projected steps (BF-IO with lookahead H >= 1).

    projected int32[G, W] loads predicted for steps k..k+H (W = H + 1); free int32[G];
    sizes int32[R]; valid bool[R]; beta: overflow weight (beta = G makes each row's term the
    exact decrease of G max_g P - sum_g P); weights int32[W] per-row weights (decaying, so that
    far, less certain rows count less). U times: the worker with a free slot and the least
    current load (row 0, as in valley fill) takes the request maximizing
    F(s) = sum_h w_h (s - beta * max(0, s - m_h)), m_h = max_g P[g, h] - P[g*, h]; ties to the
    earliest request. A new request adds s to every row of its worker. Returns (worker, rank).
    """
    w = jnp.asarray(weights, jnp.int32)

    def choose(proj, top, free, valid):
        g = jnp.argmin(jnp.where(free > 0, proj[:, 0], _BIG))
        room = top - proj[g]  # [W]
        over = jnp.maximum(sizes[:, None] - room[None, :], 0)  # [R, W]
        score = ordered_sum(w * (sizes[:, None] - beta * over))  # [R]
        return g, jnp.argmax(jnp.where(valid, score, -_BIG))

    return _greedy_fill(projected, free, sizes, valid, choose)
