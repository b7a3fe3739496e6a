"""Orders for the offline executor: which request it tries to admit next (papers 002, 003).

A policy is `fn(config, params, view) -> int32[n]`, as in every engine (config, params, then
what the engine shows it): a permutation of the request indices computed once per run. `view`
is a `Jobs`: the lengths (s: prompt, o: output, int32[n], tokens), the run's seed (random
choices hash (seed, request index), `jaxsched.rng`, so a plain-Python reference reproduces
them), the KV limit M (traced; `params.capacity_tokens` in the engine) and n. `config` is the
static `OfflineConfig`, whose solver options (the `options` of its registry entry,
`jaxsched/offline/registry.py`) a policy may read; `params` the run's `OfflineParams`. The
executor (`jaxsched.offline.engine`) admits requests in that order, stopping at the first that
does not fit. Ties are broken by request index (stable sorts), as notes/002.md §2.1 suggests.

n (int32 scalar or None): the run's own number of requests when the arrays are padded into a
size bucket (`OfflineEngine.pad`); entries i >= n are padding with s + o > M, which no policy
ever puts in a batch. Orders are decided by comparisons and index ties, so the padding changes
neither the relative order of the run's own requests nor any choice among them; only a count of
requests (quantile greedy's sample round) needs n itself.
"""

from __future__ import annotations

import functools
from typing import Any

import equinox as eqx
import jax.numpy as jnp

from .. import rng
from . import sorted_f
from .config import OfflineConfig, OfflineParams


class Jobs(eqx.Module):
    """What an order sees of one run: its requests and the limits they must fit.

    s, o: int32[n] prompt and output lengths (tokens). seed: the run's seed (uint32 scalar).
    M: the KV limit (tokens, int32 scalar, traced). n: the run's own number of requests when
    the arrays are padded into a size bucket (int32 scalar), None when they are not.
    """

    s: jnp.ndarray
    o: jnp.ndarray
    seed: Any
    M: Any
    n: Any = None


def fcfs(config: OfflineConfig, params: OfflineParams, view: Jobs) -> jnp.ndarray:
    """FCFS: the arrival order, which for a batch at t = 0 is a uniformly random permutation:
    requests sorted by hash3(seed, i, STREAM_ORDER) (ties, of probability ~n^2 / 2^33, by
    index)."""
    keys = rng.hash3(view.seed, jnp.arange(view.s.shape[0], dtype=jnp.uint32), rng.STREAM_ORDER)
    return jnp.argsort(keys, stable=True).astype(jnp.int32)


def mcsf(config: OfflineConfig, params: OfflineParams, view: Jobs) -> jnp.ndarray:
    """MC-SF (Jaillet et al.): ascending output length o, ties by index."""
    return jnp.argsort(view.o, stable=True).astype(jnp.int32)


def mcsf2(config: OfflineConfig, params: OfflineParams, view: Jobs) -> jnp.ndarray:
    """MC-SF2 (paper 002, EC.1): ascending s + o, ties by index."""
    return jnp.argsort(view.s + view.o, stable=True).astype(jnp.int32)


def sorted_f_swap(config: OfflineConfig, params: OfflineParams, view: Jobs) -> jnp.ndarray:
    """Sorted-F with the local swap search (paper 002, Algorithms 1 and 4): O(n^2) memory per
    swap round, meant for n up to about 500 as the paper recommends."""
    return sorted_f.order(view.s, view.o, view.M, sorted_f.local_swap)


def sorted_f_dp(config: OfflineConfig, params: OfflineParams, view: Jobs) -> jnp.ndarray:
    """Sorted-F with the exact DP (paper 002, Algorithms 1 and 2): the exact argmin of F per
    batch, ties to the larger batch; table width config.dp_width >= M. O(n^2 dp_width) work per
    batch: meant for n up to about 100."""
    return sorted_f.order(view.s, view.o, view.M, functools.partial(sorted_f.exact_dp, cap=config.dp_width))


def sorted_f_scaled(config: OfflineConfig, params: OfflineParams, view: Jobs) -> jnp.ndarray:
    """Sorted-F with the scaled DP (paper 002, Algorithms 1 and 3): weights s + o rounded up to
    a unit lambda = max(1, M / W), W = floor(config.scale_b / config.epsilon) (exact; eps M / B
    when B / eps is an integer), then a feasibility re-check. Any M works; the table width is
    W + 1 (1001 by default). O(n^2 W) work and (n + 1)(W + 1)(4 + 4 ceil(n / 32)) bytes per
    batch: meant for n up to about 200."""
    return sorted_f.order(
        view.s, view.o, view.M, functools.partial(sorted_f.scaled_dp, eps=config.epsilon, B=config.scale_b)
    )


def sorted_f_quantile(config: OfflineConfig, params: OfflineParams, view: Jobs) -> jnp.ndarray:
    """Sorted-F with quantile greedy (paper 002, Algorithms 1 and 5): thresholds are the exact
    config.quantile-quantiles (numpy "linear") of s + o and o over a sample of max(1, floor(
    config.sample_fraction m)) of the m remaining requests, drawn by hash3(seed, round 2^16 + i,
    sorted_f.STREAM_QUANTILE) afresh for every batch. O(n log n) per batch; the exact
    o / (s + o) order is computed once per run. Meant for large n (the paper: n >= 1000)."""
    ratios = sorted_f.ratio_rank(view.s, view.o)
    return sorted_f.order(
        view.s,
        view.o,
        view.M,
        functools.partial(
            sorted_f.quantile_greedy,
            seed=view.seed,
            q=config.quantile,
            frac=config.sample_fraction,
            ratios=ratios,
            n_real=view.n,
        ),
    )
