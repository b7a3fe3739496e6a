"""Theorem 1 of the WAIT paper: how WAIT's throughput gap scales with the horizon T.

A one-type WAIT instance (l = 1, l' = 1, lambda = 1/s) with d0 = 1.25 s, d1 = 0.125 s/token
(all dyadic, so float32 is exact): dT* = 2 s, M* = 6 tokens.
"equality": n = lambda dT* = 2, C = M* = 6: dT(n) = 2 s = n / lambda, (9) holds with equality.
"strict": n = 3, C = 9: dT(n) = 2.375 s < 3 s. Over a horizon T the throughput gap
throughput* - E[thr] should scale as T^(-1/2) (equality) and 1/T (strict); fitted slopes of
log gap against log T come with 95% CIs (`jaxsched.stats.loglog_slope`). Reading guide:
notes/001.md §5; measured slopes: docs/kv-experiments.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ...errors import require, require_bool, require_float, require_int
from ...run import simulate
from ...stats import loglog_slope
from ...workload.arrivals import arrival_stream
from ..config import KVConfig, KVParams, make_params
from .runner import mean_half_width, report_to


@dataclass(frozen=True)
class ScalingInstance:
    """A one-type WAIT instance of Theorem 1 (see the module docstring). Units: tokens, s, 1/s."""

    name: str
    threshold: int
    capacity_tokens: int
    prefill: int = 1
    decode: int = 1
    rate: float = 1.0
    d0_s: float = 1.25
    d1_s_per_token: float = 0.125
    expected_slope: float = -1.0

    @property
    def tokens_per_request(self) -> int:
        """l' + 1: throughput tokens of one completed request (eq. (8))."""
        return self.decode + 1

    @property
    def fluid_throughput(self) -> float:
        """lambda (l' + 1), tokens/s."""
        return self.rate * self.tokens_per_request


SCALING_INSTANCES = (
    ScalingInstance("equality", threshold=2, capacity_tokens=6, expected_slope=-0.5),
    ScalingInstance("strict", threshold=3, capacity_tokens=9, expected_slope=-1.0),
)
SCALING_T = (250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0)
SCALING_T_QUICK = (100.0, 200.0, 400.0, 800.0)


def _arrivals_by(cfg: KVConfig, params: KVParams, seed: int, horizon: float, rate: float) -> int:
    """Number of accepted arrivals with a_i <= horizon in run `seed` (the engine's own stream)."""
    n = int(rate * horizon + 8 * math.sqrt(rate * horizon) + 32)
    s = arrival_stream(cfg, params, seed, n)
    t = s["t_hi"].astype(np.float64) + s["t_lo"].astype(np.float64)
    require(bool(t[-1] > horizon), "n_candidates", "enough candidates to pass the horizon", n)
    return int(np.sum(s["accepted"] & (t <= horizon)))


def scaling_point(inst: ScalingInstance, horizon: float, seeds: Sequence[int]) -> dict:
    """Throughput gap and latency of WAIT on `inst` over horizon T (s), per seed, summarised.

    gap per seed = (l' + 1) A(T) / T - thr (tokens/s), A(T) the arrivals by T: its mean is
    throughput* - E[thr] (E[A(T)] = lambda T) and it has the variance of the backlog only.
    """
    cfg = KVConfig(
        prefill_tokens=(inst.prefill,),
        decode_tokens=(inst.decode,),
        policy="wait",
        num_requests=None,
        horizon_s=float(horizon),
        table_size=1 << max(8, int(math.ceil(math.log2(8 * math.sqrt(horizon) + 64)))),
        max_steps=int(3 * horizon / inst.d0_s) + 4096,
        arrivals_per_step=8,
    )
    params = make_params(
        cfg,
        rates=(inst.rate,),
        d0_s=inst.d0_s,
        d1_s_per_token=inst.d1_s_per_token,
        capacity_tokens=inst.capacity_tokens,
        thresholds=(inst.threshold,),
    )
    seeds = list(seeds)
    res = simulate(cfg, params, seeds, block_steps=min(cfg.max_steps, 2048))
    thr = res.metrics["throughput_tokens_per_s"]
    arrived = np.array([_arrivals_by(cfg, params, s, horizon, inst.rate) for s in seeds])
    gap = inst.tokens_per_request * arrived / horizon - thr
    row = dict(instance=inst.name, T=float(horizon), seeds=len(seeds), fluid_throughput=inst.fluid_throughput)
    row["gap"], row["gap_ci"] = mean_half_width(gap)
    row["gap_raw"], row["gap_raw_ci"] = mean_half_width(inst.fluid_throughput - thr)
    row["latency_mean"], row["latency_mean_ci"] = mean_half_width(res.metrics["latency_mean_s"])
    row["in_system"], row["in_system_ci"] = mean_half_width(res.metrics["num_in_system"])
    row["wall_s"] = res.wall_s
    return row


def run_scaling(
    *,
    quick: bool = False,
    seeds: int | None = None,
    horizons: Sequence[float] | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[dict], list[dict]]:
    """Theorem 1 sweep: (rows per (instance, T), fits per instance with slope of the gap and of
    the mean latency against T, 95% CI, and the expected gap slope).
    progress: a `jaxsched.progress.Progress` bar, or a callable given one line per finished
    point (None: silent)."""
    require_bool(quick, "quick")
    n_seeds = require_int(seeds if seeds is not None else (32 if quick else 128), "seeds", lo=2, hi=4096)
    if horizons is not None:
        # A slope needs two horizons at least.
        require(
            isinstance(horizons, (list, tuple, np.ndarray)) and len(horizons) >= 2,
            "horizons",
            "a sequence of at least two horizons T > 0 (s)",
            horizons,
        )
        for T in horizons:
            require_float(T, "horizons", lo=0.0, lo_open=True)
    grid = tuple(horizons) if horizons is not None else (SCALING_T_QUICK if quick else SCALING_T)
    rows = []
    report = report_to(progress, len(SCALING_INSTANCES) * len(grid))
    for inst in SCALING_INSTANCES:
        for T in grid:
            rows.append(scaling_point(inst, T, range(n_seeds)))
            report(f"scaling {inst.name} T={T:g}: gap {rows[-1]['gap']:.4g} tok/s ({rows[-1]['wall_s']:.1f} s)")
    fits = []
    for inst in SCALING_INSTANCES:
        sub = [r for r in rows if r["instance"] == inst.name]
        Ts = [r["T"] for r in sub]
        slope, ci, n = loglog_slope(Ts, [r["gap"] for r in sub])
        lslope, lci, _ = loglog_slope(Ts, [r["latency_mean"] for r in sub])
        fits.append(
            dict(
                instance=inst.name,
                threshold=inst.threshold,
                capacity_tokens=inst.capacity_tokens,
                expected_slope=inst.expected_slope,
                gap_slope=slope,
                gap_slope_ci=ci,
                points=n,
                latency_slope=lslope,
                latency_slope_ci=lci,
                expected_latency_slope=0.5 if inst.expected_slope == -0.5 else 0.0,
            )
        )
    return rows, fits
