"""Summary metrics of offline runs, computed on the host in float64 from the final state.

Latencies are end-to-end from t = 0 (every request arrives then): in steps, a request's latency
is its completion step c_i, so the papers' total end-to-end latency TEL is sum_i c_i; in
seconds it is the clock at the end of step c_i under the step-time model (equal to c_i with
unit steps). Dropped requests (s + o > M) are left out of every latency.
"""
from __future__ import annotations

import jax
import numpy as np

from ..engine import Metric

METRICS = {
    "tel_steps": Metric("steps", "total end-to-end latency sum_i c_i (the papers' TEL)"),
    "avg_latency_steps": Metric("steps", "TEL / served requests"),
    "makespan_steps": Metric("steps", "the last completion step max_i c_i"),
    "tel_s": Metric("s", "sum over requests of the time at the end of step c_i"),
    "avg_latency_s": Metric("s", "tel_s / served requests"),
    "makespan_s": Metric("s", "time at the end of the last step"),
    "peak_memory_tokens": Metric("tokens", "most KV tokens held at any step"),
    "mean_memory_tokens": Metric("tokens", "KV tokens held, averaged over steps 1..makespan"),
    "memory_utilization": Metric("fraction", "mean_memory_tokens / M"),
    "num_served": Metric("count", "requests completed"),
    "num_dropped": Metric("count", "requests with s + o > M, never admitted"),
    "done": Metric("flag", "1 if the run ended within max_steps"),
}


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
    (contiguous copies) with its own rows of the params, as `_Own(n)` for the config. A float
    sum over a padded row would change numpy's pairwise summation tree (and so the last bit);
    over the run's own n entries it is the unpadded run's sum. Returns {name: float64[batch]}.
    """
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
            if a.shape[:len(batch)] != batch:        # shared by every run (a scalar param)
                return a
            a = a[rows]
            return np.ascontiguousarray(a[..., :n]) if per_request else a

        p = jax.tree_util.tree_unflatten(tree_p, [take(a, False) for a in leaves_p])
        s = jax.tree_util.tree_unflatten(
            tree_s, [take(a, a.ndim == len(batch) + 1) for a in leaves_s])
        for k, v in finalize_fn(_Own(int(n)), p, s).items():
            out.setdefault(k, np.zeros(batch, np.float64))[rows] = v
    return out


class _Own:
    """The one Config attribute the finalizers read (n), for a run's own requests."""

    def __init__(self, n: int):
        self.n = n


def finalize(config, params, state) -> dict[str, np.ndarray]:
    """Metrics per run (arrays with the state's batch shape) as float64. A run padded into a
    size bucket is finalized on its own requests (`by_own_size`)."""
    if getattr(params, "sizes", None) is not None:
        return by_own_size(_finalize, params, state)
    return _finalize(config, params, state)


def _finalize(config, params, state) -> dict[str, np.ndarray]:
    done = (np.asarray(state.head) >= np.asarray(state.live)) & (np.asarray(state.t) >= np.asarray(state.last))
    return {**batch_metrics(params, state.c, state.finish, state.clock, state.last,
                            state.peak_memory, state.memory_sum),
            "num_dropped": (config.n - np.asarray(state.live)).astype(np.float64),
            "done": done.astype(np.float64)}
