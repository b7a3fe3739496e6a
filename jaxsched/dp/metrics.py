"""Summary metrics of dp runs, finalized on the host in float64 from the streaming sums.

Every metric name carries its unit. See docs/dp-semantics.md for the measurement points.
"""

from __future__ import annotations

import numpy as np

from ..engine import Metric
from ..histogram import log_quantile
from .config import DELAY_MAX_S, DELAY_MIN_S, DPConfig
from .state import DPState

METRICS = {
    "avg_imbalance_tokens": Metric("tokens", "mean over measured steps of G max_g L_g - sum_g L_g"),
    "avg_gap_tokens": Metric("tokens", "mean over measured steps of max_g L_g - min_g L_g"),
    "throughput_tokens_per_s": Metric("tokens/s", "decode tokens of measured steps / their time"),
    "tpot_s": Metric("s", "time per output token, averaged over requests"),
    "energy_j": Metric("J", "energy of measured steps (power model of jaxsched.dp.energy)"),
    "avg_power_w": Metric("W", "mean over measured steps of the mean worker power"),
    "idle_fraction": Metric("fraction", "mean over measured steps of mean_g (1 - L_g / max L)"),
    "makespan_s": Metric("s", "clock at the last live step"),
    "queue_delay_mean_s": Metric("s", "mean of admission time - reveal time over admissions"),
    "queue_delay_p99_s": Metric("s", "99th percentile of the queueing delay (log histogram)"),
    "num_admitted": Metric("count", "requests admitted"),
    "num_finished": Metric("count", "requests finished"),
    "num_steps_measured": Metric("steps", "steps that entered the averages"),
    "cut_step": Metric("step", "last step with an admission (paper) or the last step (theory)"),
}


def finalize(config: DPConfig, params, state: DPState, quantile: float = 0.99) -> dict[str, np.ndarray]:
    """Metrics per run (arrays with the state's batch shape) as float64."""
    C = np.asarray(params.step_const_s, np.float64)
    tl = np.asarray(params.per_token_s, np.float64)
    w = state.at_cut if config.semantics == "paper" else state.window
    steps = np.asarray(w.steps, np.float64)
    per_step = lambda x: np.divide(x, steps, out=np.zeros_like(steps), where=steps > 0)
    time_s = steps * C + tl * w.max_load.to_numpy()
    t = state.totals
    admitted = t.admitted.to_numpy()
    tpot_den = t.tpot_den.to_numpy()
    return {
        "avg_imbalance_tokens": per_step(w.imbalance.to_numpy()),
        "avg_gap_tokens": per_step(w.gap.to_numpy()),
        "throughput_tokens_per_s": np.divide(w.tokens.to_numpy(), time_s, out=np.zeros_like(time_s), where=time_s > 0),
        "tpot_s": np.divide(t.tpot_num.to_numpy(), tpot_den, out=np.zeros_like(tpot_den), where=tpot_den > 0),
        "energy_j": w.energy_j.to_numpy(),
        "avg_power_w": per_step(w.power_w.to_numpy()),
        "idle_fraction": per_step(w.idle.to_numpy()),
        "makespan_s": np.asarray(t.last_live.steps, np.float64) * C + tl * t.last_live.load.to_numpy(),
        "queue_delay_mean_s": np.divide(
            t.delay_s.to_numpy(), admitted, out=np.zeros_like(admitted), where=admitted > 0
        ),
        "queue_delay_p99_s": log_quantile(t.delay_hist, quantile, DELAY_MIN_S, DELAY_MAX_S),
        "num_admitted": admitted,
        "num_finished": t.finished.to_numpy(),
        "num_steps_measured": steps,
        "cut_step": np.asarray(t.cut_step, np.float64)
        if config.semantics == "paper"
        else np.asarray(state.step, np.float64),
    }
