"""Summary metrics of kv runs, finalized on the host in float64 from the streaming sums.

Every metric name carries its unit or is a count. Definitions: docs/kv-semantics.md §8.
"""
from __future__ import annotations

import numpy as np

from ..histogram import bit_quantile
from .config import KVConfig
from .state import KVState

METRICS = (
    "num_arrived", "num_completed", "num_in_system", "num_dropped", "table_overflow",
    "throughput_tokens_per_s", "decode_throughput_tokens_per_s",
    "latency_mean_s", "latency_p50_s", "latency_p99_s", "ttft_mean_s", "ttft_p50_s", "ttft_p99_s",
    "peak_memory_tokens", "overflow_count", "preemption_count", "num_batches", "num_epochs",
    "busy_s", "end_time_s", "idle_s", "last_completion_s", "done", "stalled",
)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b > 0)


def finalize(config: KVConfig, state: KVState) -> dict[str, np.ndarray]:
    """Metrics per run (arrays with the state's batch shape) as float64."""
    t = state.totals
    f = lambda x: np.asarray(x, np.float64)
    completed = f(t.completed)
    in_system = f(np.sum(np.asarray(state.table.id) >= 0, axis=-1))
    last = t.last_completion.to_numpy()
    end = state.clock.to_numpy()
    busy = t.busy.to_numpy()
    if config.horizon_s is None:
        thr = _div(t.tokens.to_numpy(), last)
        dthr = _div(t.decode_tokens.to_numpy(), last)
    else:
        thr = t.horizon_tokens.to_numpy() / config.horizon_s
        dthr = t.horizon_decode_tokens.to_numpy() / config.horizon_s
    return {
        "num_arrived": f(state.gen.num_arrived),
        "num_completed": completed,
        "num_in_system": in_system,
        "num_dropped": f(t.dropped),
        "table_overflow": f(t.table_overflow),
        "throughput_tokens_per_s": thr,
        "decode_throughput_tokens_per_s": dthr,
        "latency_mean_s": _div(t.latency_s.to_numpy(), completed),
        "latency_p50_s": bit_quantile(t.latency_hist, 0.5),
        "latency_p99_s": bit_quantile(t.latency_hist, 0.99),
        "ttft_mean_s": _div(t.ttft_s.to_numpy(), f(t.first_tokens)),
        "ttft_p50_s": bit_quantile(t.ttft_hist, 0.5),
        "ttft_p99_s": bit_quantile(t.ttft_hist, 0.99),
        "peak_memory_tokens": f(t.peak_memory),
        "overflow_count": f(t.overflows),
        "preemption_count": t.preemptions.to_numpy(),
        "num_batches": f(t.batches),
        "num_epochs": f(t.epochs),
        "busy_s": busy,
        "end_time_s": end,
        "idle_s": end - busy,
        "last_completion_s": last,
        "done": f(state.done),
        "stalled": f(t.stalled),
    }
