"""Summary metrics of network runs, finalized on the host in float64 (docs/network-semantics.md
§5). Per-agent metrics are reported for the busiest agent (max over agents) and as the mean
over agents; the growth rates are the budget engine's least-squares fit over the snapshots
(`budget.core.growth_slopes`)."""

from __future__ import annotations

import numpy as np

from ..budget.core import QUANTILES, growth_slopes, safe_div
from ..engine import Metric
from ..histogram import bit_quantile
from .config import NetworkConfig
from .state import NetworkState

METRICS = {
    "throughput_requests_per_s": Metric("requests/s", "departures from the network in the window per second of window"),
    "num_departed": Metric("count", "departures from the network in the window"),
    "latency_mean_s": Metric(
        "s", "mean end-to-end latency (external arrival to the end of the last stage) of the window's departures"
    ),
    **{
        f"latency_{tag}_s": Metric("s", f"{tag} of the end-to-end latency (float-bit histogram)")
        for tag, _ in QUANTILES
    },
    "mean_requests_in_system": Metric(
        "requests", "mean over the snapshots of the tasks in the network (one per request, fork_join: per branch)"
    ),
    "mean_tokens_in_system": Metric("tokens", "mean over the snapshots of their unprocessed tokens"),
    "request_growth_per_s": Metric(
        "requests/s", "least-squares slope of the requests in the network over the snapshots"
    ),
    "token_growth_per_s": Metric(
        "tokens/s",
        "least-squares slope of the unprocessed tokens in the network over the snapshots (the stability statistic)",
    ),
    "idle_fraction_mean": Metric("fraction", "waiting time in the window / window, mean over agents"),
    "idle_fraction_min": Metric("fraction", "the same, of the least idle agent"),
    "partial_batch_fraction": Metric(
        "fraction",
        "batches starting in the window with b' < b while >= b tokens were available, over those batches (all agents)",
    ),
    "num_batches": Metric("count", "batches starting in the window, all agents"),
    "batch_share_max": Metric("fraction", "the busiest agent's share of the window's batches"),
    "requests_end": Metric(
        "count", "tasks in the network at the end of the run (fork_join: a forked request counts once per branch)"
    ),
    "tokens_end": Metric("tokens", "their unprocessed tokens"),
    "num_rejected": Metric("count", "tasks rejected by a held slot (arrivals and transfers)"),
    "overflowed": Metric("flag", "1 if any task was rejected (unstable, or Q too small)"),
    "stalled": Metric("flag", "1 if an agent held tasks its policy would not take"),
    "done": Metric("flag", "1 if the run reached its end within max_steps"),
    "num_steps": Metric("steps", "events processed until the run ended"),
    "end_time_s": Metric("s", "time of the last event processed"),
}


def _open_waits(config: NetworkConfig, state: NetworkState) -> np.ndarray:
    """float64 [..., K]: the window part of the waits still open at the end (to the horizon)."""
    ag = state.agents
    waiting = ~np.asarray(ag.pending) & ~np.asarray(ag.ready)
    since = ag.since.to_numpy()
    lo = np.maximum(since, config.burn_in_s)
    return np.where(waiting, np.maximum(config.horizon_s - lo, 0.0), 0.0)


def _over_agents(x: np.ndarray, agents, reduce) -> np.ndarray:
    """reduce(x, -1) over each run's own agents: all of x's [..., K] (agents None), or the first
    agents[...] (the traced K of runs padded into a size bucket; the agents after them wait
    forever and are not the run's). Each run's row is reduced as a contiguous array of its own
    length, as the unpadded run's is, so that NumPy sums in the same order."""
    if agents is None:
        return reduce(x, -1)
    x = np.asarray(x)
    agents = np.broadcast_to(np.asarray(agents), x.shape[:-1])
    out = np.empty(x.shape[:-1], np.float64)
    for K in np.unique(agents):
        rows = agents == K
        out[rows] = reduce(np.ascontiguousarray(x[rows][..., : int(K)]), -1)
    return out


def finalize(config: NetworkConfig, params, state: NetworkState) -> dict[str, np.ndarray]:
    """Metrics per run (arrays with the state's batch shape) as float64 (the protocol's
    `finalize`). Runs padded into a size bucket read their own K from `params.sizes.agents`
    (int32, batch shape; `NetworkSizes`)."""
    agents = None if params.sizes is None else params.sizes.agents
    t = state.totals
    f = lambda x: np.asarray(x, np.float64)
    window = config.horizon_s - config.burn_in_s
    grid = config.snapshot_times()
    idle = (t.idle_s.to_numpy() + _open_waits(config, state)) / window
    wb = f(t.window_batches)
    n_snap = f(t.snap_n)
    out = {
        "throughput_requests_per_s": f(t.exits) / window,
        "num_departed": f(t.exits),
        "latency_mean_s": safe_div(t.latency_s.to_numpy(), f(t.exits)),
        "mean_requests_in_system": n_snap.mean(-1),
        "mean_tokens_in_system": f(t.snap_x).mean(-1),
        "request_growth_per_s": growth_slopes(np.broadcast_to(grid, n_snap.shape), n_snap, t.snap_next),
        "token_growth_per_s": growth_slopes(np.broadcast_to(grid, n_snap.shape), f(t.snap_x), t.snap_next),
        "idle_fraction_mean": _over_agents(idle, agents, np.mean),
        "idle_fraction_min": _over_agents(idle, agents, np.min),
        "partial_batch_fraction": safe_div(f(t.partial).sum(-1), wb.sum(-1)),
        "num_batches": wb.sum(-1),
        "batch_share_max": safe_div(wb.max(-1), wb.sum(-1)),
        "requests_end": f(state.agents.held).sum(-1) + f(state.joins.waiting),
        "tokens_end": f(state.agents.tokens).sum(-1),
        "num_rejected": f(t.rejected),
        "overflowed": f(np.asarray(t.rejected) > 0),
        "stalled": f(t.stalled),
        "done": f(state.done),
        "num_steps": f(t.steps),
        "end_time_s": state.clock.to_numpy(),
    }
    for tag, q in QUANTILES:
        out[f"latency_{tag}_s"] = bit_quantile(t.latency_hist, q)
    return {k: out[k] for k in METRICS}
