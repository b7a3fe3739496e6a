"""The batch model of the offline and interval engines (papers 002, 003): n requests present at
t = 0 on one worker whose KV cache holds M tokens, run in unit steps t = 1, 2, ...

The two engines differ in what a step does (offline: admit in a fixed order under the exact
future peak; interval: promote, evict and admit under predicted intervals) and share the rest,
defined once here: the traced params (`OfflineParams`: M and the step-time model, built by
`instance_params`), the step clock (`step_clock`), the batch workload (`resolve_batch`), the
latency and memory metrics (`batch_metrics`, `by_own_size`) and the size buckets over n
(`run_requests`, `can_pad`, `size_free`, `pad`).

Step-time model (the papers give no coefficients, so the linear model's are assumed):
duration of step t = step_const_s + per_decode_s * (requests decoding at t)
                     + per_prefill_token_s * (prompt tokens of requests admitted at t)
                     + per_kv_token_s * (KV tokens held at t).
The default (1, 0, 0, 0) is the papers' unit step, so times in seconds equal step counts.
`LINEAR_STEP_MODEL` is a documented guess in the spirit of the Vidur regression paper 002 cites.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import clock
from .accumulate import WideInt
from .clock import DF
from .errors import ConfigError, require, require_float, require_int
from .workload import Finite

# Unit steps (the papers' model): every step lasts 1 "second", i.e. times are step counts.
UNIT_STEP_MODEL = dict(step_const_s=1.0, per_decode_s=0.0, per_prefill_token_s=0.0, per_kv_token_s=0.0)
# ASSUMED coefficients of a linear step-time model for a 70B model on two A100s (paper 002's
# setting, M = 16,492): 25 ms fixed cost per step, 0.1 ms per decoding request, 0.05 ms per
# prompt token prefilled (about 20k prefill tokens/s), 2 us per KV token read. The paper and
# its Vidur source give no numbers; these only set plausible relative weights.
LINEAR_STEP_MODEL = dict(step_const_s=0.025, per_decode_s=1e-4, per_prefill_token_s=5e-5, per_kv_token_s=2e-6)
# The KV limit of paper 002's real-data experiment (LLaMA2-70B on 2 x A100).
PAPER_CAPACITY_TOKENS = 16_492
# Bound on steps, M and lengths: int32 sums of a few of them stay exact.
INT_LIMIT = 2**30


# --------------------------------------------------------------------------- params


class OfflineSizes(eqx.Module):
    """The size of one run padded into a larger config (a size bucket), as a traced int32
    scalar: num_requests n <= config.n. Jobs i >= n exist in the arrays but are never
    admitted, counted or ranked among the run's own (offline: they never fit, s + o > M;
    interval: they are never eligible), and every metric sums the run's own n jobs only, so
    the metrics are bitwise those of the unpadded run (`pad`, tests/offline/test_buckets.py,
    tests/interval/test_buckets.py)."""

    num_requests: jnp.ndarray


class OfflineParams(eqx.Module):
    """Traced parameters of both engines: KV limit M (tokens) and the step-time model's
    coefficients (s). sizes: the run's own size inside a size bucket (`OfflineSizes`), or None.
    (The class name is part of every stored results key, so it keeps the offline engine's.)"""

    capacity_tokens: jnp.ndarray
    step_const_s: jnp.ndarray
    per_decode_s: jnp.ndarray
    per_prefill_token_s: jnp.ndarray
    per_kv_token_s: jnp.ndarray
    # The run's own n when it runs padded inside a size bucket (`pad`); None: the config's n
    # is the run's. Not part of a results key: the point's config is.
    sizes: OfflineSizes | None = eqx.field(default=None, metadata={"identity": False})


def instance_params(
    capacity_tokens: int,
    *,
    step_const_s: float = 1.0,
    per_decode_s: float = 0.0,
    per_prefill_token_s: float = 0.0,
    per_kv_token_s: float = 0.0,
) -> OfflineParams:
    """Validated params without a Config, for explicit instances (`offline.instances.execute`,
    `interval.instances.execute`) and for both engines' `make_params`: the KV limit M (tokens)
    and the step-time model (module docstring; default unit steps)."""
    M = require_int(capacity_tokens, "capacity_tokens (M)", lo=2, hi=INT_LIMIT // 4)
    coefs = dict(
        step_const_s=step_const_s,
        per_decode_s=per_decode_s,
        per_prefill_token_s=per_prefill_token_s,
        per_kv_token_s=per_kv_token_s,
    )
    for k, v in coefs.items():
        require_float(v, k, lo=0.0, hi=1e6)
    require(
        step_const_s + per_decode_s > 0,
        "step_const_s",
        "> 0 or per_decode_s > 0 (a step that holds a request must take time)",
        step_const_s,
    )
    return OfflineParams(jnp.int32(M), *(jnp.float32(v) for v in coefs.values()))


def run_requests(params: OfflineParams) -> jnp.ndarray | None:
    """int32 scalar: the run's own number of requests when it runs padded inside a size bucket
    (`pad`), else None (the config's n)."""
    return None if params.sizes is None else params.sizes.num_requests


# --------------------------------------------------------------------------- the step clock


def step_duration(params: OfflineParams, decoding, prefill, memory) -> jnp.ndarray:
    """float32 seconds of one step under the step-time model: step_const_s + per_decode_s *
    decoding + per_prefill_token_s * prefill + per_kv_token_s * memory (int32 counts of the
    step)."""
    return (
        params.step_const_s
        + params.per_decode_s * decoding.astype(jnp.float32)
        + params.per_prefill_token_s * jnp.asarray(prefill).astype(jnp.float32)
        + params.per_kv_token_s * memory.astype(jnp.float32)
    )


def step_clock(params: OfflineParams, now: DF, finish: DF, ends, decoding, prefill, memory) -> tuple[DF, DF]:
    """(clock at the end of this step, finish times [n] with the jobs in `ends` (bool[n])
    stamped) under the step-time model (`step_duration`)."""
    now = clock.add_f32(now, step_duration(params, decoding, prefill, memory))
    return now, DF(jnp.where(ends, now.hi, finish.hi), jnp.where(ends, now.lo, finish.lo))


# --------------------------------------------------------------------------- the workload


# ------------------------------------------------- quiet windows (event-skipping engines)
# The offline and interval engines skip the unit steps in which only the clock and the memory
# move; these price such a window exactly as unit stepping would.

# Steps one scan step may price one at a time (`quiet_clock`) when the clock has no closed
# form: a vmapped loop runs as long as its longest lane, so an unbounded window would make every
# lane wait for the longest quiet stretch of the batch.
QUIET_LOOP = 32
# Float32 integers are exact up to here: a clock of whole seconds below it adds exactly.
_EXACT_F32 = 2.0**24


def quiet_window(params: OfflineParams, now: DF, t, last):
    """(last step of this scan step, whether the clock takes the closed form): the window t ..
    last, cut to QUIET_LOOP steps unless every step lasts the same whole number of seconds
    (the papers' unit steps: no per-request, per-token or per-KV cost) and the clock stays a
    float32 integer, where k steps add k times the duration exactly."""
    d = params.step_const_s
    flat = (params.per_decode_s == 0) & (params.per_prefill_token_s == 0) & (params.per_kv_token_s == 0)
    k = (last - t + 1).astype(jnp.float32)
    exact = flat & (d == jnp.floor(d)) & (now.lo == 0) & (now.hi + d * k <= _EXACT_F32)
    return jnp.where(exact, last, jnp.minimum(last, t + QUIET_LOOP - 1)), exact


def quiet_clock(params: OfflineParams, now: DF, exact, k, decoding, prefill, memory) -> DF:
    """The clock after k >= 1 unit steps holding `decoding` requests, the first one prefilling
    `prefill` tokens, with `memory` KV tokens at the first step and `decoding` more at each
    next one: durations added one step at a time, as unit stepping adds them (`step_clock`), so
    the double-float clock is bitwise the same; or, where `exact` (`quiet_window`), k times
    the constant duration at once, which is the same sum without rounding."""

    def body(carry):
        i, now = carry
        dt = step_duration(params, decoding, jnp.where(i == 0, prefill, 0), memory + decoding * i)
        return i + 1, clock.add_f32(now, dt)

    _, looped = jax.lax.while_loop(lambda c: c[0] < jnp.where(exact, 0, k), body, (jnp.int32(0), now))
    at_once = clock.add_f32(now, params.step_const_s * k.astype(jnp.float32))
    return DF(jnp.where(exact, at_once.hi, looped.hi), jnp.where(exact, at_once.lo, looped.lo))


def quiet_memory_sum(total: WideInt, k, decoding, memory) -> WideInt:
    """total + sum_{i < k} (memory + decoding i), exactly: k (first + last) / 2 with whichever
    factor is even halved (first + last = 2 memory + decoding (k - 1) is even when k is odd)."""
    pair = 2 * memory + decoding * (k - 1)  # <= 2 M: every step of the window fits in M
    even = k % 2 == 0
    return total.add_product(jnp.where(even, k // 2, k), jnp.where(even, pair, pair // 2))


def resolve_batch(workload: Any, num_requests: int | None, named: Callable[[str, int | None], Any]) -> Any:
    """The batch workload of an offline or interval config: a name is resolved by
    `named(name, num_requests)`; anything else must be a Batch or a sequential Trace (a fixed
    number of jobs, all at t = 0). A given `num_requests` that differs from a Batch's n resizes
    the Batch to it (the first num_requests jobs of the same law: what
    `dataclasses.replace(config, num_requests=n)` asks for, e.g. in a sweep over n); a
    sequential Trace is one fixed instance, so there it must equal the Trace's n. Returns
    `workload` itself when it needs no change."""
    w = workload
    if isinstance(w, str):
        try:
            w = named(w, num_requests)
        except FileNotFoundError as e:
            raise ConfigError(f"workload: {e}") from None
    elif num_requests is not None and num_requests != getattr(w, "num_requests", None):
        if not (isinstance(w, Finite) and not isinstance(w, type)):
            raise ConfigError(
                "num_requests must equal the workload's own n for a fixed "
                "instance (a sequential Trace); it resizes a Batch or names a "
                "request mix's n"
            )
        n = require_int(num_requests, "num_requests (n)", lo=1, hi=1 << 20)
        w = replace(w, num_requests=n)
    require(
        not isinstance(w, type) and hasattr(w, "sample") and getattr(w, "num_requests", None) is not None,
        "workload",
        "a Batch(base, n) or a Trace with order='sequential' (a fixed number of jobs, all at t = 0)",
        w,
    )
    return w


# --------------------------------------------------------------------------- metrics


def batch_metrics(params, c, finish, clock, makespan, peak_memory, memory_sum) -> dict:
    """The latency and memory metrics of a batch run (offline and interval engines): c int[...,
    n] completion steps (-1: not served), finish DF [..., n] their times, clock DF the run's
    end, makespan steps, peak_memory, memory_sum WideInt; float64 arrays."""
    c = np.asarray(c, np.int64)
    served = c >= 0
    n_served = served.sum(-1).astype(np.float64)
    tel = np.where(served, c, 0).sum(-1).astype(np.float64)
    tel_s = np.where(served, finish.to_numpy(), 0.0).sum(-1)
    makespan = np.asarray(makespan, np.float64)
    mean_mem = memory_sum.to_numpy() / np.maximum(makespan, 1.0)
    M = np.asarray(params.capacity_tokens, np.float64)
    return {
        "tel_steps": tel,
        "avg_latency_steps": tel / np.maximum(n_served, 1.0),
        "makespan_steps": makespan,
        "tel_s": tel_s,
        "avg_latency_s": tel_s / np.maximum(n_served, 1.0),
        "makespan_s": clock.to_numpy(),
        "peak_memory_tokens": np.asarray(peak_memory, np.float64),
        "mean_memory_tokens": mean_mem,
        "memory_utilization": mean_mem / M,
        "num_served": n_served,
    }


def by_own_size(finalize_fn, params, state) -> dict[str, np.ndarray]:
    """`finalize_fn(shape, params, state)` of runs padded into a size bucket, on each run's own
    requests: the runs are grouped by their own n (params.sizes.num_requests, a scalar or one
    per run), and each group is finalized on the first n entries of every per-request array
    (contiguous copies) with its own rows of the params, as `OwnSize(n)` for the config. A
    float sum over a padded row would change numpy's pairwise summation tree (and so the last
    bit); over the run's own n entries it is the unpadded run's sum. Returns
    {name: float64[batch]}."""
    batch = np.shape(np.asarray(state.t))
    own = np.broadcast_to(np.asarray(params.sizes.num_requests), batch)
    leaves_p, tree_p = jax.tree_util.tree_flatten(params)
    leaves_s, tree_s = jax.tree_util.tree_flatten(state)
    leaves_p = [np.asarray(a) for a in leaves_p]
    leaves_s = [np.asarray(a) for a in leaves_s]
    out: dict[str, np.ndarray] = {}
    for n in np.unique(own):
        rows = own == n

        def take(a, per_request, rows=rows, n=n):
            if a.shape[: len(batch)] != batch:  # shared by every run (a scalar param)
                return a
            a = a[rows]
            return np.ascontiguousarray(a[..., :n]) if per_request else a

        p = jax.tree_util.tree_unflatten(tree_p, [take(a, False) for a in leaves_p])
        s = jax.tree_util.tree_unflatten(tree_s, [take(a, a.ndim == len(batch) + 1) for a in leaves_s])
        for k, v in finalize_fn(OwnSize(int(n)), p, s).items():
            out.setdefault(k, np.zeros(batch, np.float64))[rows] = v
    return out


class OwnSize:
    """The one Config attribute the finalizers read (n), for a run's own requests."""

    def __init__(self, n: int):
        self.n = n


# --------------------------------------------------------------------------- explicit instances


class Instance(eqx.Module):
    """The Params of one run of an explicit instance (`instance_engine`): the engine's params
    and the instance's per-job arrays (int32[n] each: offline (s, o, order), interval (s, o,
    low, high))."""

    params: OfflineParams
    jobs: tuple


def instance_engine(engine, start: Callable, extra: Callable | None = None):
    """`engine` with every run's instance given in its Params (an `Instance`) instead of drawn
    from its seed: init is start(config, instance, seed). Its runs go through the shared
    runner (`run_instances`) like any other: seed chunks, device sharding, progress, lanes.
    extra(state) -> {name: array [..., n]}: per-job results added to the metrics."""

    def finalize(config, inst: Instance, state):
        out = engine.finalize(config, inst.params, state)
        return {**out, **({} if extra is None else extra(state))}

    return replace(
        engine,
        name=f"{engine.name}_instances",
        Params=Instance,
        make_params=lambda config: None,
        init=start,
        step=lambda config, inst, state, record: engine.step(config, inst.params, state, record),
        finalize=finalize,
        size_fields=(),
        pad_check=None,
        pad_into=None,
    )


def run_instances(
    engine, config, params: OfflineParams, jobs, seeds, *, record=False, progress=None, lanes=None, seed_chunk=None
) -> tuple[dict, dict | None]:
    """(metrics {name: float64[S] or per-job [S, n]}, trajectories or None) of `engine` (from
    `instance_engine`) on the explicit instances jobs (int arrays [S, n], validated by the
    caller) with `params` shared and seeds uint32[S], through the shared runner."""
    from .run import simulate_runs

    S = len(seeds)
    shared = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (S,) + jnp.shape(a)), params)
    stacked = Instance(shared, tuple(jnp.asarray(a, jnp.int32) for a in jobs))
    merged, traj, _, _ = simulate_runs(
        engine,
        config,
        stacked,
        np.asarray(seeds, np.uint32),
        np.arange(S),
        record,
        seed_chunk,
        None,
        progress,
        True,
        lanes,
    )
    return merged, traj


# --------------------------------------------------------------------------- size buckets
# Both engines pad n, the number of requests (`size_fields = ("num_requests",)`): it fixes
# every per-request array. Their other static fields are not sizes: max_steps is where a run
# is cut (a result, read by `done`, which has no params); the offline solver options
# (dp_width, epsilon, ...) and the interval engine's `intervals` are the method itself.


def pad_check(config) -> None:
    """Raise ConfigError unless runs of `config` can run padded into a larger n. A fixed
    instance (a sequential Trace) cannot grow: its rows are the instance. The bucket plan reads
    the size from num_requests, so a Batch given with its own n pads once num_requests states
    it (as a sweep over num_requests does)."""
    require(
        isinstance(config.workload, Finite),
        "workload",
        "a Batch (a fixed instance, a sequential Trace, does not run padded into a size bucket)",
        config.workload.name,
    )
    require(
        config.num_requests is not None,
        "num_requests",
        f"set (the config's n, here {config.n}) to run padded into a size bucket",
        None,
    )


def size_free(config):
    """`config` at one canonical n (the workload is a Batch of n requests), as compared with
    the other configs of a size bucket."""
    return replace(config, num_requests=1)


def pad_into(config, params: OfflineParams, capacity):
    """(bucket config with the validated `capacity`'s num_requests, params carrying the run's
    own n), for the offline and interval engines (`jaxsched.engine.Engine.pad`): the bucket
    draws the same lengths for the run's jobs (each is a pure function of (seed, index)), its
    other jobs never enter the run, and every metric is bitwise that of the unpadded run
    (tests/offline/test_buckets.py, tests/interval/test_buckets.py)."""
    try:
        bucket = replace(config, **capacity)
    except ConfigError as e:
        raise ConfigError(
            f"capacity num_requests {capacity['num_requests']} does not make a valid config: {e}"
        ) from None
    return bucket, replace(params, sizes=OfflineSizes(jnp.int32(config.n)))


def trajectory_length(metrics) -> int:
    """Rows of recorded trajectories: the longest run over the seeds (its makespan), which
    does not depend on the chunking or the block size."""
    return max(1, int(np.max(metrics["makespan_steps"])))


# The runner hints the batch engines (offline, interval) share: runs of one chunk end at
# different steps (a step costs O(n)), and size buckets over n, the number of jobs.
ENGINE_HINTS = dict(
    skip_done_in_block=True,
    trajectory_length=lambda config, metrics: trajectory_length(metrics),
    size_fields=("num_requests",),
    pad_check=pad_check,
    pad_into=pad_into,
    size_free=size_free,
)
