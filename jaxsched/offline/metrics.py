"""Summary metrics of offline runs, computed on the host in float64 from the final state.

Latencies are end-to-end from t = 0 (every request arrives then): in steps, a request's latency
is its completion step c_i, so the papers' total end-to-end latency TEL is sum_i c_i; in
seconds it is the clock at the end of step c_i under the step-time model (equal to c_i with
unit steps). Dropped requests (s + o > M) are left out of every latency.
"""
from __future__ import annotations

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


def finalize(config, params, state) -> dict[str, np.ndarray]:
    """Metrics per run (arrays with the state's batch shape) as float64."""
    done = (np.asarray(state.head) >= np.asarray(state.live)) & (np.asarray(state.t) >= np.asarray(state.last))
    return {**batch_metrics(params, state.c, state.finish, state.clock, state.last,
                            state.peak_memory, state.memory_sum),
            "num_dropped": (config.n - np.asarray(state.live)).astype(np.float64),
            "done": done.astype(np.float64)}
