"""Explicit instances: draw (s, o), compute orders, execute them, many instances at once.

The shared runner (`jaxsched.simulate`) draws each run's instance from its seed and orders it
with a JAX policy inside one compiled step. Orders computed outside JAX (Sorted-LP and LP-Swap,
whose LP is solved by HiGHS on the host; `lp.py`) and instances built by hand (the lower-bound
families, `families.py`) need the executor on given arrays instead. These functions give it:

    s, o = draw(config, seeds)                     # int32[S, n] each
    order = orders(config, params, s, o, seeds)    # int32[S, n], any JAX policy
    metrics = execute(params, s, o, order)         # {name: float64[S]}, the engine's METRICS

`execute` runs the engine's own `step` through the shared runner (`batchmodel.run_instances`:
the instances are the runs' params), so its metrics equal `simulate`'s for the same instance
and order, and it chunks, shards and reports progress like `simulate`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..batchmodel import Instance, instance_engine, run_instances
from ..errors import ConfigError, require, require_int
from .config import INT_LIMIT, OfflineConfig, OfflineParams
from .engine import ENGINE, jobs, start, table_rows
from .policies import Jobs
from .registry import POLICIES
from .state import OfflineState


@functools.partial(jax.jit, static_argnums=0)
def _draw(config: OfflineConfig, seeds: jnp.ndarray):
    return jax.vmap(lambda seed: jobs(config, seed))(seeds)


def draw(config: OfflineConfig, seeds) -> tuple[np.ndarray, np.ndarray]:
    """(s, o) int32[S, n]: the instances the runner simulates for `seeds` (uint32[S])."""
    s, o = _draw(config, jnp.asarray(np.asarray(seeds, np.uint32)))
    return np.asarray(s), np.asarray(o)


@functools.partial(jax.jit, static_argnums=0)
def _orders(config: OfflineConfig, params: OfflineParams, s, o, seeds):
    fn = POLICIES[config.policy].fn
    M = params.capacity_tokens
    return jax.vmap(lambda s, o, seed: fn(config, params, Jobs(s, o, seed, M)))(s, o, seeds)


def policy_config(policy: str, n: int, **options) -> OfflineConfig:
    """A Config for explicit instances of n requests: only `policy` and its solver `options`
    (OfflineConfig fields such as dp_width, epsilon) matter; the workload is a placeholder
    that `orders` never samples."""
    from ..workload import Batch, Independent, UniformInt

    one = UniformInt(1, 1)
    return OfflineConfig(Batch(Independent(one, one, name="explicit"), n), policy=policy, **options)


def orders(config: OfflineConfig, params: OfflineParams, s, o, seeds) -> np.ndarray:
    """int32[S, n]: config.policy's order of each instance (s, o: int[S, n]); seeds (uint32[S]
    or one) drive the random choices (FCFS's permutation, quantile greedy's samples)."""
    return np.asarray(_orders(*_order_args(config, params, s, o, seeds)))


def compiled_orders(config: OfflineConfig, params: OfflineParams, s, o, seeds):
    """(compile seconds, a function () -> int32[S, n] running the compiled orders): separates
    a solver's compilation from its run time for timing."""
    import time

    args = _order_args(config, params, s, o, seeds)
    t0 = time.perf_counter()
    fn = _orders.lower(*args).compile()
    compile_s = time.perf_counter() - t0
    return compile_s, lambda: np.asarray(fn(*args[1:]))


def _order_args(config, params, s, o, seeds):
    require(isinstance(config, OfflineConfig), "config", "an OfflineConfig (see policy_config)", type(config).__name__)
    s, o = _as_batch(s, o)
    require(s.shape[1] == config.n, "s, o", f"[S, {config.n}] (config.n requests)", s.shape)
    seeds = jnp.asarray(np.broadcast_to(np.asarray(seeds, np.uint32), (s.shape[0],)))
    return config, params, jnp.asarray(s), jnp.asarray(o), seeds


def _start(config: OfflineConfig, inst: Instance, seed) -> OfflineState:
    return start(*inst.jobs, inst.params, table_rows(config))


# The engine on given instances: init takes (s, o, order) from the run's params.
INSTANCES = instance_engine(ENGINE, _start)


def execute(
    params: OfflineParams,
    s,
    o,
    order,
    *,
    max_steps: int | None = None,
    progress=None,
    lanes: bool | None = None,
    seed_chunk: int | None = None,
) -> dict[str, np.ndarray]:
    """The executor on each instance (s, o: int[S, n] tokens, s + o <= M) in its `order`
    (int[S, n], a permutation per row), through the shared runner (instances per chunk
    `seed_chunk`, device sharding, `progress` and `lanes` as in `jaxsched.simulate`; the
    chunking changes no number). Returns the engine's METRICS,
    float64[S] each. max_steps cuts a run at that step (`done` says which finished); by default
    none is cut (the bound is sum(o), rounded up to a power of two so that instances of one
    shape share a few compilations)."""
    s, o = _as_batch(s, o)
    order = np.asarray(order)
    require(
        order.shape == s.shape and (np.sort(order, axis=1) == np.arange(s.shape[1])).all(),
        "order",
        f"int[{s.shape[0]}, {s.shape[1]}], a permutation of 0..n-1 per row",
        f"shape {order.shape}",
    )
    M = int(params.capacity_tokens)
    if (s + o > M).any():
        row, i = map(int, np.argwhere(s + o > M)[0])
        raise ConfigError(
            f"s + o must be <= M = {M} tokens for every request (each must fit "
            f"alone), got {int(s[row, i] + o[row, i])} for request {i} of row {row}"
        )
    if max_steps is None:
        max_steps = min(INT_LIMIT, 1 << (max(1, int(o.sum(axis=1).max())) - 1).bit_length())
    max_steps = require_int(max_steps, "max_steps", lo=1, hi=INT_LIMIT)
    config = policy_config("fcfs", s.shape[1], max_steps=max_steps)
    seeds = np.zeros(s.shape[0], np.uint32)  # unused: the order is given
    metrics, _ = run_instances(
        INSTANCES, config, params, (s, o, order), seeds, progress=progress, lanes=lanes, seed_chunk=seed_chunk
    )
    return metrics


def _as_batch(s, o) -> tuple[np.ndarray, np.ndarray]:
    s, o = np.atleast_2d(np.asarray(s)), np.atleast_2d(np.asarray(o))
    require(s.shape == o.shape and s.ndim == 2, "s, o", "int arrays of one shape [S, n]", f"{s.shape} and {o.shape}")
    require(
        s.size > 0 and s.min() >= 1 and o.min() >= 1,
        "s, o",
        "lengths >= 1 (tokens)",
        f"min {s.min() if s.size else None}, {o.min() if o.size else None}",
    )
    require(int(s.max()) + int(o.max()) < INT_LIMIT, "s + o", f"< {INT_LIMIT}", int(s.max()) + int(o.max()))
    return s.astype(np.int32), o.astype(np.int32)
