"""Summary metrics of kv runs, finalized on the host in float64 from the streaming sums, the
check that they describe the configuration (`stability_issues`) and the check that a windowed
run reached its steady state (`settling`).

Every metric name carries its unit or is a count. Definitions: docs/kv-semantics.md §8.
"""

from __future__ import annotations

import numpy as np

from ..engine import Metric
from ..histogram import bit_quantile
from ..stats import mean_ci
from .config import KVConfig
from .state import KVState

METRICS = {
    "num_arrived": Metric("count", "requests accepted into the system"),
    "num_completed": Metric("count", "requests completed"),
    "num_measured_completed": Metric("count", "measured requests (ids K .. N - K - 1) completed"),
    "num_in_system": Metric("count", "requests in the table at the end"),
    "num_dropped": Metric("count", "requests dropped by force_clear"),
    "table_overflow": Metric("count", "arrivals lost to a full request table (invalid run)"),
    "throughput_tokens_per_s": Metric(
        "tokens/s", "tokens (l' + 1 per request) of completed requests / last completion time (or / T)"
    ),
    "decode_throughput_tokens_per_s": Metric("tokens/s", "as throughput, l' per request"),
    "window_s": Metric("s", "length of the measurement window (burn-in to cool-down)"),
    "window_throughput_tokens_per_s": Metric(
        "tokens/s", "tokens (l' + 1 per request) completed by the window's batches / window_s"
    ),
    "in_system_open": Metric("count", "requests in the system when the window opened"),
    "in_system_mid": Metric("count", "requests in the system at the window's middle request"),
    "in_system_close": Metric("count", "requests in the system when the window closed"),
    "latency_mean_s": Metric("s", "mean completion - arrival over completed measured requests"),
    "latency_p50_s": Metric("s", "median latency (float-bit histogram)"),
    "latency_p99_s": Metric("s", "99th percentile latency (float-bit histogram)"),
    "ttft_mean_s": Metric("s", "mean time to first token"),
    "ttft_p50_s": Metric("s", "median time to first token"),
    "ttft_p99_s": Metric("s", "99th percentile time to first token"),
    "peak_memory_tokens": Metric("tokens", "largest KV held by a batch of the window"),
    "mean_memory_tokens": Metric("tokens", "KV held by a batch, averaged over the window's batches"),
    "overflow_count": Metric("count", "batches whose memory exceeded C"),
    "preemption_count": Metric("count", "requests that lost their KV (restart)"),
    "num_batches": Metric("count", "batches run"),
    "num_epochs": Metric("count", "decision epochs until the run ended"),
    "busy_s": Metric("s", "sum of iteration times"),
    "end_time_s": Metric("s", "clock at the end of the run"),
    "idle_s": Metric("s", "end time - busy time"),
    "last_completion_s": Metric("s", "time of the last completion"),
    "done": Metric("flag", "1 if the run ended within max_steps"),
    "stalled": Metric("flag", "1 if the run stalled with requests left"),
}


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return np.divide(a, b, out=np.zeros(np.broadcast(a, b).shape), where=b > 0)


def finalize(config: KVConfig, params, state: KVState) -> dict[str, np.ndarray]:
    """Metrics per run (arrays with the state's batch shape) as float64 (the protocol's
    `finalize`; params are not read)."""
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
    w = t.window
    snap = np.asarray(w.in_system, np.float64)  # [..., 3], -1: not reached
    snap = np.where(snap < 0, in_system[..., None], snap)  # the end of the run instead
    opened = np.asarray(w.in_system)[..., 0] >= 0
    closed = np.asarray(w.in_system)[..., 2] >= 0
    window_s = np.where(opened, np.where(closed, w.closed.to_numpy(), end) - w.opened.to_numpy(), 0.0)
    return {
        "num_arrived": f(state.gen.num_arrived),
        "num_completed": completed,
        "num_measured_completed": f(w.completed),
        "num_in_system": in_system,
        "num_dropped": f(t.dropped),
        "table_overflow": f(t.table_overflow),
        "throughput_tokens_per_s": thr,
        "decode_throughput_tokens_per_s": dthr,
        "window_s": window_s,
        "window_throughput_tokens_per_s": _div(w.tokens.to_numpy(), window_s),
        "in_system_open": snap[..., 0],
        "in_system_mid": snap[..., 1],
        "in_system_close": snap[..., 2],
        "latency_mean_s": _div(t.latency_s.to_numpy(), f(w.completed)),
        "latency_p50_s": bit_quantile(t.latency_hist, 0.5),
        "latency_p99_s": bit_quantile(t.latency_hist, 0.99),
        "ttft_mean_s": _div(t.ttft_s.to_numpy(), f(t.first_tokens)),
        "ttft_p50_s": bit_quantile(t.ttft_hist, 0.5),
        "ttft_p99_s": bit_quantile(t.ttft_hist, 0.99),
        "peak_memory_tokens": f(t.peak_memory),
        "mean_memory_tokens": _div(t.memory.to_numpy(), f(w.batches)),
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


def stability_issues(metrics: dict[str, np.ndarray], num_requests: int | None) -> list[str]:
    """Why per-seed exact metrics [S] do not describe a stable run ([] when they do).

    A run counts as stable when no arrival was dropped (num_dropped) or lost to a full request
    table (table_overflow), every seed finished (done) without stalling, and every one of the
    num_requests requests completed (None: every arrival). An overloaded system fails at least
    one of these, and its throughput and latency then describe a truncated run.
    """
    out = []
    for key, what in (("num_dropped", "dropped arrivals"), ("table_overflow", "arrivals lost to a full request table")):
        total = int(np.sum(metrics[key]))
        if total:
            out.append(f"{total} {what}")
    target = metrics["num_arrived"] if num_requests is None else num_requests
    unfinished = int(np.sum(np.asarray(target, np.float64) - metrics["num_completed"]))
    if unfinished:
        out.append(f"{unfinished} requests not completed")
    for key, what in (("done", "seeds not finished"), ("stalled", "seeds stalled")):
        bad = int(np.sum(metrics[key] == 0)) if key == "done" else int(np.sum(metrics[key] > 0))
        if bad:
            out.append(f"{bad} {what}")
    return out


# A queue counts as still growing when its mean growth over the window's second half exceeds
# this fraction of the half's arrivals (assumed: settled runs of E1-E4 stay within about 1%, an
# overloaded queue grows by (demand - capacity) / demand, typically tens of percent).
SETTLE_TOLERANCE = 0.05


def settling(
    metrics: dict[str, np.ndarray], window_requests: int, tolerance: float = SETTLE_TOLERANCE
) -> tuple[float, float, float, list[str]]:
    """Whether per-seed metrics [S] of runs with a measurement window (docs §8) settled.

    The growth of the number in the system over each half of the window, per seed, as a
    fraction of the window_requests / 2 arrivals of a half. Returns (mean growth over the second
    half, its 95% CI half-width (nan for one seed), mean growth over the first half, issues):
    "queue still growing" when the second half's mean exceeds `tolerance`; "queue grew over the
    window's first half" when the first half's does (the burn-in was too short, the window
    holds part of the transient); "measured requests not completed" when some of the
    window_requests were accepted but ended the run unfinished (their latency is missing).
    Each means the window is not the steady state; a full request table flattens the growth,
    not the last count.
    """
    half_n = max(window_requests / 2.0, 1.0)
    mid = np.asarray(metrics["in_system_mid"])
    second = (np.asarray(metrics["in_system_close"]) - mid) / half_n
    first = float(np.mean((mid - np.asarray(metrics["in_system_open"])) / half_n))
    mean, _, half, _ = mean_ci(second)
    out = []
    if mean > tolerance:
        out.append(f"queue still growing ({mean:+.1%} of the arrivals per half window)")
    elif first > tolerance:
        out.append(f"queue grew over the window's first half ({first:+.1%} of its arrivals): burn-in too short")
    # Measured requests that were accepted but never completed (arrivals lost to a full table
    # are subtracted, all of them, as some may be measured ones).
    missing = int(
        np.sum(window_requests - np.asarray(metrics["num_measured_completed"]) - np.asarray(metrics["table_overflow"]))
    )
    if missing > 0:
        out.append(f"{missing} measured requests not completed by the horizon")
    return mean, half, first, out
