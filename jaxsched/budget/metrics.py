"""Summary metrics of budget runs, finalized on the host in float64 from the streaming sums
(docs/budget-semantics.md §6); the growth-rate fit of the stability check is `core`'s
(`growth_slopes`, imported here).

Every metric name carries its unit or is a count; "window" is [burn_in_s, horizon_s).
"""

from __future__ import annotations

import numpy as np

from ..engine import Metric
from ..histogram import bit_quantile
from .config import BudgetConfig
from .core import QUANTILES, growth_slopes, safe_div
from .state import BudgetState


def _latency_metrics(name: str, what: str) -> dict[str, Metric]:
    out = {f"{name}_mean_s": Metric("s", f"mean {what}")}
    out.update({f"{name}_{tag}_s": Metric("s", f"{tag} of {what} (float-bit histogram)") for tag, _ in QUANTILES})
    return out


METRICS = {
    "throughput_tokens_per_s": Metric(
        "tokens/s", "v_p + v_d of the requests departing in the window, per second of window"
    ),
    "throughput_requests_per_s": Metric("requests/s", "departures in the window per second"),
    "num_departed": Metric("count", "departures in the window"),
    "mean_requests_in_system": Metric("requests", "time average of N(t) over the window"),
    "mean_tokens_in_system": Metric("tokens", "time average of the unprocessed tokens |X(t)|"),
    **_latency_metrics("ttft", "time to first token of the window's departures"),
    **_latency_metrics("tbt", "time between tokens of the window's decode tokens"),
    **_latency_metrics("latency", "end-to-end latency of the window's departures"),
    "idle_fraction": Metric("fraction", "idle time in the window / window length"),
    "partial_batch_fraction": Metric(
        "fraction", "batches starting in the window with b' < b while >= b tokens were available, over those batches"
    ),
    "num_batches": Metric("count", "batches starting in the window"),
    "token_growth_per_s": Metric(
        "tokens/s", "least-squares slope of the tokens in system over the snapshots (the stability statistic)"
    ),
    "request_growth_per_s": Metric("requests/s", "least-squares slope of the requests in system over the snapshots"),
    "requests_end": Metric("count", "requests in system at the end of the run"),
    "tokens_end": Metric("tokens", "unprocessed tokens in system at the end of the run"),
    "drain_time_s": Metric(
        "s",
        "first deciding epoch with unprocessed tokens <= drain_fraction "
        "of the initial backlog's (nan: no backlog, or never)",
    ),
    "backlog_tokens": Metric("tokens", "unprocessed tokens of the initial backlog at t = 0"),
    "num_rejected": Metric("count", "arrivals rejected by a full table slot"),
    "overflowed": Metric("flag", "1 if any arrival was rejected (unstable, or Q too small)"),
    "stalled": Metric("flag", "1 if requests were left that no batch would take"),
    "done": Metric("flag", "1 if the run reached its end within max_steps"),
    "num_steps": Metric("steps", "scan steps until the run ended"),
    "end_time_s": Metric("s", "clock at the end of the run"),
}


def finalize(config: BudgetConfig, params, state: BudgetState) -> dict[str, np.ndarray]:
    """Metrics per run (arrays with the state's batch shape) as float64 (the protocol's
    `finalize`; params are not read)."""
    t = state.totals
    f = lambda x: np.asarray(x, np.float64)
    window = config.horizon_s - config.burn_in_s
    valid = np.asarray(state.table.entry) >= 0
    left = np.asarray(state.table.p) + np.asarray(state.table.d)
    out = {
        "throughput_tokens_per_s": t.departed_tokens.to_numpy() / window,
        "throughput_requests_per_s": f(t.departed) / window,
        "num_departed": f(t.departed),
        "mean_requests_in_system": t.area_requests.to_numpy() / window,
        "mean_tokens_in_system": t.area_tokens.to_numpy() / window,
        "ttft_mean_s": safe_div(t.ttft_s.to_numpy(), f(t.departed)),
        "tbt_mean_s": safe_div(t.tbt_s.to_numpy(), f(t.tbt_count)),
        "latency_mean_s": safe_div(t.latency_s.to_numpy(), f(t.departed)),
        "idle_fraction": t.idle_s.to_numpy() / window,
        "partial_batch_fraction": safe_div(f(t.partial), f(t.window_batches)),
        "num_batches": f(t.window_batches),
        "token_growth_per_s": growth_slopes(t.snap_t, t.snap_x, t.snap_next),
        "request_growth_per_s": growth_slopes(t.snap_t, t.snap_n, t.snap_next),
        "requests_end": f(valid.sum(-1)),
        "tokens_end": f(np.where(valid, left, 0).sum(-1)),
        "drain_time_s": np.where(np.asarray(t.drained), t.drain_s.to_numpy(), np.nan),
        "backlog_tokens": f(t.backlog_tokens),
        "num_rejected": f(t.rejected),
        "overflowed": f(np.asarray(t.rejected) > 0),
        "stalled": f(t.stalled),
        "done": f(state.done),
        "num_steps": f(t.steps),
        "end_time_s": state.clock.to_numpy(),
    }
    for name, hist in (("ttft", t.ttft_hist), ("tbt", t.tbt_hist), ("latency", t.latency_hist)):
        for tag, q in QUANTILES:
            out[f"{name}_{tag}_s"] = bit_quantile(hist, q)
    return {k: out[k] for k in METRICS}
