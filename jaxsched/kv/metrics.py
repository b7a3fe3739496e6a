"""Summary metrics of kv runs, finalized on the host in float64 from the streaming sums.

Every metric name carries its unit or is a count. Definitions: docs/kv-semantics.md §8.
"""
from __future__ import annotations

import numpy as np

from .config import HIST_MAX_EXP, HIST_MIN_EXP, KVConfig
from .state import KVState

METRICS = (
    "num_arrived", "num_completed", "num_in_system", "num_dropped", "table_overflow",
    "throughput_tokens_per_s", "decode_throughput_tokens_per_s",
    "latency_mean_s", "latency_p50_s", "latency_p99_s", "ttft_mean_s", "ttft_p50_s", "ttft_p99_s",
    "peak_memory_tokens", "overflow_count", "preemption_count", "num_batches", "num_epochs",
    "busy_s", "end_time_s", "idle_s", "last_completion_s", "done", "stalled",
)


def histogram_quantile(hist: np.ndarray, q: float) -> np.ndarray:
    """Quantile q from histograms [..., nb] of the kv engine (docs §8).

    The midpoint of the bin holding the ceil(q n)-th smallest value (within 2^-(b+1) relative
    of it); bin 0 (below 2^-20 s) reads 0, the top bin its lower edge 2^20 s; 0 when empty.
    """
    hist = np.asarray(hist, np.int64)
    nb = hist.shape[-1]
    per = (nb - 2) // (HIST_MAX_EXP - HIST_MIN_EXP)                  # 2^b bins per octave
    n = hist.sum(-1)
    target = np.maximum(1, np.ceil(q * n)).astype(np.int64)
    b = np.argmax(np.cumsum(hist, -1) >= target[..., None], axis=-1)
    k = np.clip(b - 1, 0, nb - 3)
    octave = 2.0 ** (HIST_MIN_EXP + k // per)
    mid = octave * (1.0 + (k % per + 0.5) / per)
    mid = np.where(b == nb - 1, 2.0 ** HIST_MAX_EXP, mid)
    return np.where((b == 0) | (n == 0), 0.0, mid)


def histogram_bin(x_s, octave_bits: int) -> np.ndarray:
    """Host mirror of the engine's histogram bin of float32 values x_s (docs §8), int64."""
    x = np.asarray(x_s, np.float32)
    nb = (HIST_MAX_EXP - HIST_MIN_EXP) * 2**octave_bits + 2
    bits = x.view(np.int32).astype(np.int64)
    idx = (bits >> (23 - octave_bits)) - ((127 + HIST_MIN_EXP) << octave_bits) + 1
    return np.where(x < np.float32(2.0**HIST_MIN_EXP), 0, np.minimum(idx, nb - 1))


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
        "latency_p50_s": histogram_quantile(t.latency_hist, 0.5),
        "latency_p99_s": histogram_quantile(t.latency_hist, 0.99),
        "ttft_mean_s": _div(t.ttft_s.to_numpy(), f(t.first_tokens)),
        "ttft_p50_s": histogram_quantile(t.ttft_hist, 0.5),
        "ttft_p99_s": histogram_quantile(t.ttft_hist, 0.99),
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
