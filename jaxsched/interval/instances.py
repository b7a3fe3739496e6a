"""Explicit instances: run given (s, o, l, u) arrays, many instances at once.

The shared runner (`jaxsched.simulate`) draws each run's jobs and intervals from its seed. The
theory checks (two-point lengths, the lower-bound construction, the paper's examples) and the
benchmarks need the engine on given arrays instead:

    metrics = execute(params, s, o, low, high, policy="amin", seeds=0)   # {name: float64[S]}
    jobs = execute(..., per_job=True)["jobs"]     # c, evictions, wasted: int[S, n]
    rows = execute(..., record_steps=K)["steps"]  # memory, evicted, ...: [S, K]

`execute` runs the engine's own `step` (one `lax.while_loop` per batch of instances, `vmap`ped;
`lax.scan` over K steps when recording), so its metrics equal `simulate`'s for the same instance.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..batchmodel import INT_LIMIT, OfflineParams
from ..errors import require
from ..workload import Batch, Constant, Independent, UniformInt
from .config import IntervalConfig, check_capacity
from .engine import done, start, step
from .intervals import check_instance
from .metrics import finalize


def policy_config(policy: str, n: int, max_upper: int = 1, **options) -> IntervalConfig:
    """A Config for explicit instances of n jobs whose upper bounds u_i are <= max_upper: only
    `policy`, its options (eviction_key, amax_order) and max_upper (the static width of the
    engine's completion histogram) matter; the workload is a placeholder never sampled."""
    return IntervalConfig(
        Batch(Independent(Constant(1), UniformInt(1, max_upper), name="explicit"), n), policy=policy, **options
    )


@functools.partial(jax.jit, static_argnums=(0, 7))
def _execute(config, params, s, o, low, high, seeds, record_steps, max_steps):
    def one(s, o, low, high, seed):
        st = start(s, o, low, high, seed, config.policy)
        if record_steps:
            return jax.lax.scan(lambda st, _: step(config, params, st, True), st, None, length=record_steps)

        def cond(st):
            return ~done(config, st) & (st.t < max_steps)

        return jax.lax.while_loop(cond, lambda st: step(config, params, st, False)[0], st), None

    return jax.vmap(one)(s, o, low, high, seeds)


def execute(
    params: OfflineParams,
    s,
    o,
    low,
    high,
    *,
    policy: str = "amin",
    seeds=0,
    eviction_key: str = "stale",
    amax_order: str = "sorted",
    per_job: bool = False,
    record_steps: int = 0,
    max_steps: int | None = None,
) -> dict:
    """Run `policy` on each instance (s, o, low, high: int[S, n] or int[n], tokens; validated:
    0 <= s, 1 <= l <= o <= u, s + u <= M); seeds (uint32[S] or one) drive its random
    tie-breaks; one instance with S seeds runs it S times.

    Returns the engine's METRICS (float64[S] each); with per_job, also "jobs": {c, evictions,
    wasted, est} int[S, n]; with record_steps = K > 0 (runs K steps, no early stop), also
    "steps": {memory, decoding, prefill_tokens, evicted, live} [S, K]. max_steps (default
    4 n u_max + 64) cuts a run; `done` says which finished.
    """
    M = int(params.capacity_tokens)
    s, o, low, high = (np.atleast_2d(a) for a in check_instance(s, o, low, high, M))
    seeds = np.atleast_1d(np.asarray(seeds, np.uint32))
    require(
        seeds.ndim == 1 and len(seeds) in (1, s.shape[0]) or s.shape[0] == 1,
        "seeds",
        f"one seed or one per instance ({s.shape[0]})",
        seeds.shape,
    )
    S, n = max(s.shape[0], len(seeds)), s.shape[1]
    s, o, low, high = (np.broadcast_to(a, (S, n)) for a in (s, o, low, high))
    check_capacity(M, n, int((s + high).max()))
    width = 1 << max(0, int(high.max()) - 1).bit_length()  # a power of 2: few compilations
    config = policy_config(policy, n, width, eviction_key=eviction_key, amax_order=amax_order)
    require(
        isinstance(record_steps, int) and 0 <= record_steps <= 1 << 20,
        "record_steps",
        "an int in [0, 2^20]",
        record_steps,
    )
    if max_steps is None:
        max_steps = int(min(INT_LIMIT, 4 * n * int(high.max()) + 64))
    seeds = jnp.asarray(np.broadcast_to(seeds, (S,)))
    args = (jnp.asarray(a, jnp.int32) for a in (s, o, low, high))
    state, rows = _execute(config, params, *args, seeds, record_steps, jnp.int32(max_steps))
    out = finalize(config, params, state)
    if per_job:
        out["jobs"] = {k: np.asarray(getattr(state, k)) for k in ("c", "evictions", "wasted", "est")}
    if record_steps:
        out["steps"] = {k: np.asarray(v) for k, v in rows.items() if k != "time_s"}
    return out
