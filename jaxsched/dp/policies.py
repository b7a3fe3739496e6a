"""Admission policies of the dp engine, looked up by name.

Every policy has one signature: `policy(config, params, obs) -> (worker, rank, rr_pointer)`
(config, params, then the engine's view, as in every engine: the static `DPConfig`, the traced
`DPParams`, the `Observation` of this admission), where worker[p] (int32[R]) is the worker
that pool entry p is admitted to (-1: it keeps waiting) and rank[p] the number of requests
admitted to the same worker before it (the engine gives it that worker's rank[p]-th free slot).
Pool entries are in queue order (position 0 is the oldest); `obs.pool_valid` marks the waiting ones. A
policy admits at most `obs.free[g]` requests to worker g. Ties go to the lowest worker index and
the earliest request, so every policy is a deterministic function of the observation; a
randomized policy draws from the run's random stream (`obs.seed`, `obs.step`, see
`step_stream`), so that a run is reproducible and a padded run draws what the unpadded one does.
Adding a policy: write the function here and register it in `jaxsched/dp/registry.py` with the
config / params fields it reads (from user code: `jaxsched.registry.register_policy`).
"""

from __future__ import annotations

from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import rng
from ..kernels import BFIO_VARIANTS, lookahead_valley_fill, packable, valley_fill, valley_fill_unpacked, window_weights

_BIG = np.int32(2**31 - 1)


class Observation(eqx.Module):
    """What a policy sees at an admission.

    loads int32[G]: loads after this step's growth and completions (tokens).
    free int32[G]: free slots. active int32[G]: active requests.
    pool_size_tokens int32[R]: prompt lengths; pool_valid bool[R].
    projected int32[G, H+1] | None: predicted loads over the lookahead window (bfio, H >= 1).
    rr_pointer int32[]: the round-robin pointer.
    num_workers: the run's G (an int, or an int32 scalar when the run is padded into a size
    bucket: workers g >= num_workers then have no free slot and are never chosen).
    lookahead_steps: the run's lookahead H (an int, or an int32 scalar when padded: the rows of
    `projected` beyond it are 0 and weigh nothing).
    seed uint32[]: the run's seed. step int32[]: the step k of this admission (0: the initial
    one). Together the run's random stream for randomized policies (`step_stream`).
    lookahead_weights int32[H + 1] | None: a padded run's own window weights (0 beyond its H);
    None unpadded (the config's `window_weights`).
    """

    loads: jnp.ndarray
    free: jnp.ndarray
    active: jnp.ndarray
    pool_size_tokens: jnp.ndarray
    pool_valid: jnp.ndarray
    projected: jnp.ndarray | None
    rr_pointer: jnp.ndarray
    num_workers: jnp.ndarray | int
    lookahead_steps: jnp.ndarray | int
    seed: jnp.ndarray
    step: jnp.ndarray
    lookahead_weights: jnp.ndarray | None = None


def in_queue_order(obs: Observation, choose: Callable, update: Callable, state0):
    """Admit pool entries one by one in queue order; `choose(state, free, p) -> g` (free int32[G])."""
    R = obs.pool_valid.shape[0]

    def body(p, carry):
        free, state, worker, rank = carry
        g = choose(state, free, p)
        do = obs.pool_valid[p] & jnp.any(free > 0)
        rank = rank.at[p].set(obs.free[g] - free[g])
        free = free.at[g].add(-do.astype(jnp.int32))
        state = jax.tree_util.tree_map(lambda new, old: jnp.where(do, new, old), update(state, g, p), state)
        worker = worker.at[p].set(jnp.where(do, g, -1).astype(jnp.int32))
        return free, state, worker, rank

    init = (obs.free, state0, jnp.full((R,), -1, jnp.int32), jnp.zeros((R,), jnp.int32))
    _, state, worker, rank = jax.lax.fori_loop(0, R, body, init)
    return worker, rank, state


def fcfs(config, params, obs: Observation) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """Queue order fills workers in index order (the BF-IO experiments' FCFS baseline)."""
    R = obs.pool_valid.shape[0]
    ends = jnp.cumsum(obs.free)  # [G], G is small: cumsum is fine here
    pos = jnp.arange(R, dtype=jnp.int32)  # valid entries are a queue prefix
    g = jnp.searchsorted(ends, pos, side="right").astype(jnp.int32)
    ok = obs.pool_valid & (pos < ends[-1])
    g = jnp.where(ok, g, -1)
    rank = pos - (ends - obs.free)[jnp.maximum(g, 0)]
    return g, rank, obs.rr_pointer


def fcfs_alg2(config, params, obs: Observation):
    """Queue order, each request to the worker with the most free slots (paper's Algorithm 2)."""
    worker, rank, _ = in_queue_order(
        obs, lambda st, free, p: jnp.argmax(jnp.where(free > 0, free, -1)), lambda st, g, p: st, jnp.int32(0)
    )
    return worker, rank, obs.rr_pointer


def jsq_tokens(config, params, obs: Observation):
    """Queue order, each request to the worker with a free slot and the least token load."""
    worker, rank, _ = in_queue_order(
        obs,
        lambda L, free, p: jnp.argmin(jnp.where(free > 0, L, _BIG)),
        lambda L, g, p: L.at[g].add(obs.pool_size_tokens[p]),
        obs.loads,
    )
    return worker, rank, obs.rr_pointer


def jsq_count(config, params, obs: Observation):
    """Queue order, each request to the worker with a free slot and the fewest active requests."""
    worker, rank, _ = in_queue_order(
        obs, lambda n, free, p: jnp.argmin(jnp.where(free > 0, n, _BIG)), lambda n, g, p: n.at[g].add(1), obs.active
    )
    return worker, rank, obs.rr_pointer


def round_robin(config, params, obs: Observation):
    """Each request to the first worker with a free slot from a persistent cyclic pointer."""
    G = obs.num_workers  # the run's G (not padded workers)
    ids = jnp.arange(obs.free.shape[0], dtype=jnp.int32)

    def choose(ptr, free, p):
        return jnp.argmin(jnp.where(free > 0, (ids - ptr) % G, _BIG))

    worker, rank, ptr = in_queue_order(obs, choose, lambda ptr, g, p: ((g + 1) % G).astype(jnp.int32), obs.rr_pointer)
    return worker, rank, ptr


def bfio(config, params, obs: Observation):
    """BF-IO: the H = 0 kernel `config.bfio_kernel`, or lookahead valley fill over H + 1 steps."""
    if config.lookahead_steps == 0 and config.bfio_kernel != "vf":
        kernel = BFIO_VARIANTS[config.bfio_kernel]
        if isinstance(obs.num_workers, int):
            worker, rank, _ = kernel(obs.loads, obs.free, obs.pool_size_tokens, obs.pool_valid)
        else:  # a padded run (`PADDED_KERNELS`)
            worker, rank, _ = kernel(
                obs.loads, obs.free, obs.pool_size_tokens, obs.pool_valid, num_workers=obs.num_workers
            )
    elif config.lookahead_steps == 0:
        fill = valley_fill if packable(config.workload.max_prompt, config.pool_size) else valley_fill_unpacked
        worker, rank = fill(obs.loads, obs.free, obs.pool_size_tokens, obs.pool_valid)
    else:
        # A padded run's weights are its own (its decay), 0 beyond its H (`DPSizes`).
        weights = obs.lookahead_weights
        if weights is None:
            weights = window_weights(config.window, config.lookahead_decay)
        worker, rank = lookahead_valley_fill(
            obs.projected, obs.free, obs.pool_size_tokens, obs.pool_valid, beta=obs.num_workers, weights=weights
        )
    return worker, rank, obs.rr_pointer


def step_stream(obs: Observation) -> jnp.ndarray:
    """uint32[]: the random stream of this admission, hash3(seed, step, STREAM_POLICY); draw
    number i of it is `rng.hash3(step_stream(obs), i, rng.STREAM_POLICY)`."""
    return rng.hash3(obs.seed, obs.step, rng.STREAM_POLICY)


def uniform_worker(h: jnp.ndarray, free: jnp.ndarray) -> jnp.ndarray:
    """A worker drawn uniformly among those with a free slot (free int32[G]) by the uint32 draw
    `h`: the k-th of the n open workers, k = ((h >> 16) * n) >> 16 (integer arithmetic, so the
    plain-Python reference draws the same worker; exact for n <= 2^16 = the largest G). Workers beyond the run's G
    are never open, so a padded run draws the same worker."""
    is_open = (free > 0).astype(jnp.int32)
    n = jnp.sum(is_open).astype(jnp.uint32)
    k = (((h >> 16) * n) >> 16).astype(jnp.int32)
    g = jnp.searchsorted(jnp.cumsum(is_open), k, side="right").astype(jnp.int32)
    return jnp.minimum(g, free.shape[0] - 1)  # no open worker: any index (unused)


def power_of_two(config, params, obs: Observation):
    """Power of two choices: queue order; each request draws two workers with a free slot
    (uniformly, with replacement, from the run's random stream: draws 2p and 2p + 1 for pool
    entry p) and goes to the one with the smaller token load (ties: the lower index)."""
    h0 = step_stream(obs)

    def choose(L, free, p):
        g1 = uniform_worker(rng.hash3(h0, 2 * p, rng.STREAM_POLICY), free)
        g2 = uniform_worker(rng.hash3(h0, 2 * p + 1, rng.STREAM_POLICY), free)
        second = (L[g2] < L[g1]) | ((L[g2] == L[g1]) & (g2 < g1))
        return jnp.where(second, g2, g1)

    worker, rank, _ = in_queue_order(obs, choose, lambda L, g, p: L.at[g].add(obs.pool_size_tokens[p]), obs.loads)
    return worker, rank, obs.rr_pointer
