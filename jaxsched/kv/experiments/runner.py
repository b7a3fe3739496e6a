"""Runner of the WAIT paper's experiments E1-E4 on the kv engine (docs/kv-semantics.md).

Every experiment (`setups.EXPERIMENTS`) runs for each registered policy (`jaxsched.kv.POLICIES`,
in `POLICY_ORDER` first, then any other) at several loads and returns tidy rows: one per
(policy, load) with the mean and 95% CI half-width over seeds of each metric. Measured results:
docs/kv-experiments.md.

Requests: N per seed (finite, "drain" end mode, notes/001.md §7 item 7); the throughput is the
engine's (sum of l'_j + 1 over completed requests over the last completion time), so it
includes the end-of-run drain: it falls short of the fluid throughput* (8) by about
(drain time) / (N / Lambda). `throughput_ratio` reports thr / throughput*.
"""
from __future__ import annotations

import dataclasses
import math
import time
import warnings
from typing import Callable, Sequence

import numpy as np

from ...errors import require, require_float, require_int
from ...fluid import FluidTypes, equilibrium
from ...run import simulate
from ...stats import mean_ci
from ..config import INT_LIMIT, KVConfig, make_params
from ..metrics import stability_issues
from ..policies import POLICIES
from .setups import (EXPERIMENTS, HARDWARE, POLICY_LABELS, POLICY_ORDER, Hardware, KVExperiment,
                     thresholds_for)


def registered_policies(requested: Sequence[str] | None = None) -> list[str]:
    """Policies to run: `requested` (each must be registered) or every registered one, in
    POLICY_ORDER first. Raises ConfigError naming an unknown policy."""
    names = [p for p in POLICY_ORDER if p in POLICIES] + sorted(set(POLICIES) - set(POLICY_ORDER))
    if requested is None:
        return names
    for p in requested:
        require(p in POLICIES, "policies", f"names among {tuple(names)}", p)
    return list(requested)


def _sizes(exp: KVExperiment, types: FluidTypes, n_req: int, hw: Hardware) -> dict:
    """Table size Q and max_epochs for a run of n_req requests (generous; overflow is reported)."""
    eq = equilibrium(types)
    in_flight = float(eq.active.sum())
    q = 1 << int(math.ceil(math.log2(max(256.0, 4.0 * in_flight + 64))))
    q = min(q, 1 << 14)
    while q * max(l + d for l, d in zip(exp.prefill, exp.decode)) > 2**30:
        q //= 2
    # The lowest rate of a sweep has the longest arrival span: size for a rate 5x lower.
    span = 5 * n_req / types.total_rate + 20.0 * (max(exp.decode) + 1) * eq.iteration_time
    epochs = int(2 * span / hw.d0_s) + n_req + 4096
    return dict(table_size=q, max_epochs=min(epochs, 2**30 - 1), arrivals_per_step=64)


def mean_half_width(values: np.ndarray) -> tuple[float, float]:
    """(mean, half-width of its 95% CI) of per-seed values [S] (`jaxsched.stats.mean_ci`)."""
    m, _, half, _ = mean_ci(values)
    return m, half


# Largest request table the runner grows to (slots); beyond it a lossy row is marked invalid.
TABLE_LIMIT = 1 << 17

_METRIC_KEYS = tuple(k + suf for k in ("throughput", "latency_mean", "latency_p99", "ttft_mean",
                                         "ttft_p99") for suf in ("", "_ci"))


def run_point(exp: KVExperiment, policy: str, load: float, seeds: Sequence[int], n_req: int,
              hw: Hardware = HARDWARE, size_load: float | None = None,
              table_limit: int = TABLE_LIMIT, batch_limit: int | None = None,
              prefill_price: float | None = None) -> dict:
    """One (policy, load) point over `seeds`: a tidy row (means and 95% CI half-widths).
    size_load: the load the table size and epoch bound are first sized for (default `load`; a
    sweep passes its largest load so that every point shares one compiled config per policy).
    The table then grows while arrivals find it full (`_run_growing_table`, up to
    `table_limit` slots). `status` is "ok", "infeasible" (the policy has no thresholds that
    meet its memory condition here: no run) or "invalid" (arrivals were lost or a seed did not
    end: the metrics do not describe the configuration); `issues` says why.
    batch_limit: requests per batch for every policy (None: uncapped); the Vidur policies' own
    request cap `batch_size_cap` follows it, so the limit is the same for all.
    prefill_price: a prefill token (first prefills and restarts) costs this many times d1
    (KVConfig.prefill_price); None: eq. (1), every token at d1."""
    types = exp.types(load, hw)
    eq = equilibrium(types)
    th, rule = thresholds_for(exp, policy, types)
    row = dict(experiment=exp.name, policy=policy, label=POLICY_LABELS.get(policy, policy),
               load=load, rate_total_req_s=float(types.total_rate), num_requests=n_req,
               batch_limit="none" if batch_limit is None else batch_limit,
               prefill_price="eq1" if prefill_price is None else prefill_price,
               seeds=len(seeds), thresholds=" ".join(map(str, th)) if th else "-", rule=rule,
               fluid_throughput=eq.throughput, fluid_memory_tokens=eq.memory)
    if th is None and "thresholds" in POLICIES[policy].options:
        # Not runnable here (e.g. WAIT's M^pi > C for every integer threshold): a row of nans.
        nan = math.nan
        row.update({k: nan for k in _METRIC_KEYS}, throughput_ratio=nan, peak_memory_tokens=nan,
                   mean_memory_tokens=nan, capacity_tokens=hw.capacity_tokens,
                   preemptions=nan, overflows=nan, incomplete=nan, table_size=0,
                   dropped_arrivals=0.0, status="infeasible", issues=rule, wall_s=0.0)
        return row
    cfg = KVConfig(prefill_tokens=exp.prefill, decode_tokens=exp.decode, policy=policy,
                   num_requests=n_req, prefill_price=prefill_price is not None,
                   **_sizes(exp, exp.types(size_load or load, hw), n_req, hw))
    caps = dict(batch_limit=batch_limit)
    if prefill_price is not None:
        caps["d1_prefill_s_per_token"] = require_float(prefill_price, "prefill_price", lo=0.0) \
            * hw.d1_s_per_token
    if "batch_size_cap" in POLICIES[policy].options:
        caps["batch_size_cap"] = INT_LIMIT if batch_limit is None else batch_limit
    params = make_params(cfg, rates=types.rates, d0_s=hw.d0_s, d1_s_per_token=hw.d1_s_per_token,
                         capacity_tokens=hw.capacity_tokens, thresholds=th, **caps)
    t0 = time.perf_counter()
    cfg, met = _run_growing_table(cfg, params, list(seeds), table_limit)
    wall = time.perf_counter() - t0
    for key, col in (("throughput", "throughput_tokens_per_s"), ("latency_mean", "latency_mean_s"),
                     ("latency_p99", "latency_p99_s"), ("ttft_mean", "ttft_mean_s"),
                     ("ttft_p99", "ttft_p99_s")):
        row[key], row[key + "_ci"] = mean_half_width(met[col])
    row["throughput_ratio"] = row["throughput"] / eq.throughput
    row["peak_memory_tokens"] = float(met["peak_memory_tokens"].max())
    row["mean_memory_tokens"] = float(met["mean_memory_tokens"].mean())
    row["capacity_tokens"] = hw.capacity_tokens
    row["preemptions"] = float(met["preemption_count"].mean())
    row["overflows"] = float(met["overflow_count"].mean())
    row["incomplete"] = float((met["num_arrived"] - met["num_completed"]).sum()
                              + met["table_overflow"].sum())
    row["table_size"] = cfg.table_size
    row["dropped_arrivals"] = float(met["table_overflow"].sum())
    row["issues"] = "; ".join(stability_issues(met, n_req))
    row["status"] = "invalid" if row["issues"] else "ok"
    row["wall_s"] = wall
    return row


def _run_growing_table(cfg: KVConfig, params, seeds: list[int], table_limit: int):
    """Run, and while arrivals find the request table full, double the table and run again (up
    to `table_limit` slots and the int32 bound on Q * max footprint): the table is sized from
    the policy's real occupancy, not the fluid estimate. Returns (config run, metrics); a run
    that still loses arrivals at the limit is returned as it is (its row is marked invalid)."""
    while True:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)   # reported in the row instead
            met = simulate(cfg, params, seeds).metrics
        bigger = 2 * cfg.table_size
        if (not met["table_overflow"].any() or bigger > table_limit
                or bigger * cfg.max_len > 2**30):
            return cfg, met
        cfg = dataclasses.replace(cfg, table_size=bigger)


def run_experiment(name: str, *, quick: bool = False, seeds: int | None = None,
                   policies: Sequence[str] | None = None, hw: Hardware = HARDWARE,
                   loads: Sequence[float] | None = None, num_requests: int | None = None,
                   batch_limits: Sequence[int | None] | None = None,
                   prefill_price: float | None = None,
                   progress: Callable[[str], None] | None = None) -> list[dict]:
    """Rows of experiment `name` ("e1".."e4"), one per (policy, load), policies as
    `registered_policies(policies)`, at every batch limit of `batch_limits` (default the
    experiment's). quick: the reduced load grid, batch limits, N and seeds. prefill_price: see
    `run_point`.
    progress: called with one line of text per finished point (None: silent)."""
    require(name in EXPERIMENTS, "experiment", f"one of {tuple(EXPERIMENTS)}", name)
    exp = EXPERIMENTS[name]
    pols = registered_policies(policies)
    n_seeds = require_int(seeds if seeds is not None else
                          (exp.quick_seeds if quick else exp.seeds), "seeds", lo=1, hi=4096)
    n_req = require_int(num_requests if num_requests is not None else
                        (exp.quick_requests if quick else exp.num_requests), "num_requests", lo=1)
    grid = tuple(loads) if loads is not None else (exp.quick_loads if quick else exp.loads)
    if prefill_price is not None:
        require_float(prefill_price, "prefill_price", lo=0.0)
    limits = (tuple(batch_limits) if batch_limits is not None
              else (exp.quick_batch_limits if quick else exp.batch_limits))
    for b in limits:
        if b is not None:
            require_int(b, "batch_limits", lo=1)
    rows = []
    for load in grid:
        for b in limits:
            for pol in pols:
                rows.append(run_point(exp, pol, load, range(n_seeds), n_req, hw, max(grid),
                                      batch_limit=b, prefill_price=prefill_price))
                if progress is not None:
                    r = rows[-1]
                    progress(f"{name} {pol} rho={load} B={r['batch_limit']}: thr "
                             f"{r['throughput']:.4g} tok/s, latency {r['latency_mean']:.4g} s "
                             f"({r['wall_s']:.1f} s)")
    return rows
