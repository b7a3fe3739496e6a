"""Explicit instances: draw (s, o), compute orders, execute them, many instances at once.

The shared runner (`jaxsched.simulate`) draws each run's instance from its seed and orders it
with a JAX policy inside one compiled step. Orders computed outside JAX (Sorted-LP and LP-Swap,
whose LP is solved by HiGHS on the host; `lp.py`) and instances built by hand (the lower-bound
families, `families.py`) need the executor on given arrays instead. These functions give it:

    s, o = draw(config, seeds)                     # int32[S, n] each
    order = orders(config, params, s, o, seeds)    # int32[S, n], any JAX policy
    metrics = execute(params, s, o, order)         # {name: float64[S]}, the engine's METRICS

`execute` runs the same `step` as the runner (one `lax.while_loop` per batch of instances,
`vmap`ped), so its metrics equal `simulate`'s for the same instance and order.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError, require
from .config import INT_LIMIT, OfflineConfig, OfflineParams
from .engine import done, jobs, start, step
from .metrics import finalize
from .policies import Jobs
from .registry import POLICIES


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


@jax.jit
def _execute(params: OfflineParams, s, o, order, max_steps):
    def one(s, o, order):
        def cond(st):
            return ~done(None, st) & (st.t < max_steps)

        return jax.lax.while_loop(cond, lambda st: step(None, params, st, False)[0], start(s, o, order, params))

    return jax.vmap(one)(s, o, order)


def execute(params: OfflineParams, s, o, order, *, max_steps: int | None = None) -> dict[str, np.ndarray]:
    """The executor on each instance (s, o: int[S, n] tokens, s + o <= M) in its `order`
    (int[S, n], a permutation per row). Returns the engine's METRICS, float64[S] each. max_steps (default:
    sum of o, which bounds any makespan) cuts a run; `done` says which finished."""
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
        max_steps = int(min(INT_LIMIT, max(1, o.sum(axis=1).max())))
    # max_steps is traced: instances of one shape share one compilation whatever their lengths.
    state = _execute(params, jnp.asarray(s), jnp.asarray(o), jnp.asarray(order, jnp.int32), jnp.int32(max_steps))
    return finalize(_Shape(s.shape[1]), params, state)


class _Shape:
    """The one Config attribute `finalize` reads (n) for instances without a workload."""

    def __init__(self, n: int):
        self.n = n


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
