"""Summary metrics of offline runs, computed on the host in float64 from the final state.

Latencies are end-to-end from t = 0 (every request arrives then): in steps, a request's latency
is its completion step c_i, so the papers' total end-to-end latency TEL is sum_i c_i; in
seconds it is the clock at the end of step c_i under the step-time model (equal to c_i with
unit steps). Dropped requests (s + o > M) are left out of every latency.
"""

from __future__ import annotations

import numpy as np

from ..batchmodel import batch_metrics, by_own_size
from ..engine import Metric

METRICS = {
    "tel_steps": Metric("steps", "total end-to-end latency sum_i c_i (the papers' TEL)"),
    "avg_latency_steps": Metric("steps", "TEL / served requests", whole=False),
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


def finalize(config, params, state) -> dict[str, np.ndarray]:
    """Metrics per run (arrays with the state's batch shape) as float64. A run padded into a
    size bucket is finalized on its own requests (`batchmodel.by_own_size`)."""
    if getattr(params, "sizes", None) is not None:
        return by_own_size(_finalize, params, state)
    return _finalize(config, params, state)


def _finalize(config, params, state) -> dict[str, np.ndarray]:
    done = (np.asarray(state.head) >= np.asarray(state.live)) & (np.asarray(state.t) >= np.asarray(state.last))
    return {
        **batch_metrics(params, state.c, state.finish, state.clock, state.last, state.peak_memory, state.memory_sum),
        "num_dropped": (config.n - np.asarray(state.live)).astype(np.float64),
        "done": done.astype(np.float64),
        # The runner's: runs whose table of running requests overflowed run again (`regrow`).
        "_overflow": np.asarray(state.overflow).astype(np.float64),
    }
