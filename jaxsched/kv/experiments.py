"""Experiments E1-E4 of the WAIT paper (Ao, Luo, Simchi-Levi, Wang 2025) and Theorem 1's scaling.

Reading guide: notes/001.md §4 (the table of E1-E6), §5 (Theorem 1) and §7 (resolutions).
Every experiment runs the kv engine (docs/kv-semantics.md) for each registered policy
(`jaxsched.kv.POLICIES`, in `POLICY_ORDER` first, then any other) at several arrival rates and
returns tidy rows: one per (policy, rate) with the mean and 95% CI over seeds of each metric.

What the paper leaves out, and the choices made here (all fit-free, stated once):

- Iteration time and memory (notes §7 item 1): `HARDWARE`, an order-of-magnitude Llama-2-7B on
  one A100-80GB: d0 = 10 ms (one forward pass reads ~13.5 GB of fp16 weights at ~1.5 TB/s,
  about 9 ms, rounded up for launch overheads), d1 = 1 us per KV token (a decode context token
  costs ~0.35 us to read, 0.5 MiB at ~1.5 TB/s; a prefill token ~45 us of compute, 14 GFLOP at
  ~300 TFLOP/s; at E1-E4's prefill shares the mix is of the order of 1 us), C = 110,000 tokens
  (80 GB minus 13.5 GB of weights, minus a 10% margin, at 0.5 MiB per token).
- Arrival rates (notes §7 item 10): the paper's rates (10^3-10^4 requests/s) are ratios. A sweep
  point is a load rho = d1 * A (A = sum_j lambda_j (l'_j + 1)(l_j + l'_j / 2) tokens/s, the KV
  tokens batched per second in the fluid equilibrium); the rates are the ratios scaled so that
  d1 * A = rho. rho < 1 is the stability region (Prop. 1); the fluid memory M* = d0 rho /
  (d1 (1 - rho)) stays below C for rho <= 0.9 with `HARDWARE`.
- Thresholds (notes §7 items 5-6): WAIT uses the fluid form n_j = ceil(c lambda_j) with
  c = (1 + slack) dT*, capped at C / A so that M^pi <= C (strict (9) when the cap does not bind);
  Nested WAIT uses n_i = ceil(c Lambda_i (1 + margin)^(i-1)), the tail-rate ratios of the paper
  (15:14:12:8 in E3, 66:43:...:1 in E4) made strict by `margin`, with c = (1 + slack) c_min.
  Other policies get `make_params`' defaults (thresholds None).
- Requests: N per seed (finite, "drain" end mode, notes §7 item 7); the throughput is
  the engine's (sum of l'_j + 1 over completed requests over the last completion time), so it
  includes the end-of-run drain: it falls short of the fluid throughput* (8) by about
  (drain time) / (N / Lambda). `throughput_ratio` reports thr / throughput*.

Theorem 1's scaling (`scaling`): a one-type WAIT instance (l = 1, l' = 1, lambda = 1/s) with
d0 = 1.25 s, d1 = 0.125 s/token (all dyadic, so float32 is exact): dT* = 2 s, M* = 6 tokens.
"equality": n = lambda dT* = 2, C = M* = 6: dT(n) = 2 s = n / lambda, (9) holds with equality.
"strict": n = 3, C = 9: dT(n) = 2.375 s < 3 s. Over a horizon T the throughput gap
throughput* - E[thr] should scale as T^(-1/2) (equality) and 1/T (strict); fitted slopes of
log gap against log T come with 95% CIs (`jaxsched.dp.theorems.ols`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import require, require_float, require_int
from ..stats import loglog_slope, mean_ci
from .config import KVConfig, make_params
from ..fluid import (FluidTypes, equilibrium, nested_segments, nested_thresholds, stage_work,
                    wait_check)
from .policies import POLICIES
from .run import simulate

# Known policies first, in this order; policies registered later (e.g. "vllm", "sarathi")
# join automatically, after these.
POLICY_ORDER = ("wait", "nested_wait", "vllm", "sarathi", "fcfs")
POLICY_LABELS = {"wait": "WAIT", "nested_wait": "Nested WAIT", "vllm": "vLLM-style",
                 "sarathi": "Sarathi-style", "fcfs": "FCFS"}


@dataclass(frozen=True)
class Hardware:
    """Eq. (1) constants and KV capacity: d0_s (s), d1_s_per_token (s/token), capacity_tokens."""
    d0_s: float = 0.010
    d1_s_per_token: float = 1.0e-6
    capacity_tokens: int = 110_000


HARDWARE = Hardware()


@dataclass(frozen=True)
class KVExperiment:
    """One experiment of notes §4: request types, rate ratios, the load sweep and run sizes.

    prefill, decode: (m,) tokens per type; rate_ratio: (m,) relative Poisson rates.
    loads / quick_loads: rho = d1 A of each sweep point. num_requests / quick_requests: N per
    seed. wait_slack: WAIT c = (1 + slack) dT*. nested_slack, nested_margin: Nested WAIT c and
    strictness margin (see the module docstring). claim: the paper's reported outcome.
    """
    name: str
    title: str
    figure: str
    prefill: tuple[int, ...]
    decode: tuple[int, ...]
    rate_ratio: tuple[float, ...]
    claim: str
    loads: tuple[float, ...] = (0.3, 0.5, 0.7, 0.8, 0.9)
    quick_loads: tuple[float, ...] = (0.5, 0.8)
    num_requests: int = 10_000
    quick_requests: int = 1_000
    wait_slack: float = 0.1
    nested_slack: float = 0.1
    nested_margin: float = 0.02
    seeds: int = 5
    quick_seeds: int = 2

    def work_per_unit(self) -> float:
        """sum_j ratio_j (l'_j + 1)(l_j + l'_j / 2): A per unit of rate scale, tokens."""
        return float(np.dot(self.rate_ratio, stage_work(self.prefill, self.decode)))

    def rates(self, load: float, hw: Hardware = HARDWARE) -> np.ndarray:
        """(m,) requests/s with d1 * A = load."""
        load = require_float(load, "load (rho)", lo=0.0, lo_open=True)
        require(load < 1.0, "load (rho)", "< 1 (the stable region, Prop. 1)", load)
        scale = load / (hw.d1_s_per_token * self.work_per_unit())
        return scale * np.asarray(self.rate_ratio, np.float64)

    def types(self, load: float, hw: Hardware = HARDWARE) -> FluidTypes:
        return FluidTypes(prefill=np.asarray(self.prefill, float), decode=np.asarray(self.decode),
                          rates=self.rates(load, hw), d0=hw.d0_s, d1=hw.d1_s_per_token,
                          capacity=float(hw.capacity_tokens))


EXPERIMENTS: dict[str, KVExperiment] = {
    "e1": KVExperiment(
        "e1", "WAIT, low demand", "Fig. 7", prefill=(10, 10), decode=(10, 20),
        rate_ratio=(1.0, 1.0),
        claim="WAIT throughput > vLLM, Sarathi at all rates; latency within acceptable limits",
        num_requests=20_000, quick_requests=2_000),
    "e2": KVExperiment(
        "e2", "WAIT, high demand", "Fig. 8", prefill=(20, 20, 20), decode=(100, 200, 300),
        rate_ratio=(6.0, 4.0, 2.0),
        claim="WAIT throughput > vLLM, Sarathi at all rates; latency within acceptable limits",
        num_requests=5_000, quick_requests=400),
    "e3": KVExperiment(
        "e3", "Nested WAIT, synthetic", "Fig. 11", prefill=(10, 10, 10, 10),
        decode=(20, 40, 80, 160), rate_ratio=(20.0, 40.0, 80.0, 160.0),
        claim="Nested WAIT: better throughput AND latency than vLLM, Sarathi",
        num_requests=10_000, quick_requests=1_000),
    "e4": KVExperiment(
        "e4", "Nested WAIT, clustered real lengths", "Figs. 12-13", prefill=(60,) * 10,
        decode=tuple(range(50, 501, 50)),
        rate_ratio=(23.0, 11.0, 8.0, 7.0, 6.0, 4.0, 3.0, 2.0, 1.0, 1.0),
        claim="Nested WAIT beats the baselines in throughput and latency",
        num_requests=5_000, quick_requests=500),
}


def registered_policies(requested: Sequence[str] | None = None) -> list[str]:
    """Policies to run: `requested` (each must be registered) or every registered one, in
    POLICY_ORDER first. Raises ConfigError naming an unknown policy."""
    names = [p for p in POLICY_ORDER if p in POLICIES] + sorted(set(POLICIES) - set(POLICY_ORDER))
    if requested is None:
        return names
    for p in requested:
        require(p in POLICIES, "policies", f"names among {tuple(names)}", p)
    return list(requested)


# --------------------------------------------------------------------------- thresholds

def _scales(lo: float, hi: float, n: int = 200) -> np.ndarray:
    """Candidate scales c (s) from lo to hi, geometric; just lo when hi <= lo."""
    return np.array([lo]) if hi <= lo else np.geomspace(lo, hi, n)


def wait_rule(types: FluidTypes, slack: float) -> tuple[np.ndarray | None, str]:
    """WAIT thresholds n_j = ceil(c lambda_j) for the smallest c >= (1 + slack) dT* whose
    rounded thresholds meet (9) strictly within C (M^pi <= C); failing that, the smallest c
    meeting (9) at all, failing that the largest c that fits C (then (9) is "violated": the
    rounding to integers >= 1 makes (9) infeasible at these rates). None when even n_j = 1
    overflows C (WAIT has no memory check). Returns ((m,) int64 or None, verdict)."""
    eq = equilibrium(types)
    c_hi = types.capacity / types.work
    cands = []
    for c in _scales((1.0 + slack) * eq.iteration_time, max(c_hi, (1.0 + slack) * eq.iteration_time)):
        n = np.maximum(np.ceil(c * types.rates * (1 - 1e-12)), 1).astype(np.int64)
        chk = wait_check(types, n)
        if chk.fits:
            cands.append((n, chk))
    ones = np.ones(types.m, np.int64)
    if not cands and wait_check(types, ones).fits:
        cands = [(ones, wait_check(types, ones))]
    if not cands:
        return None, f"infeasible: M^pi(n = 1) = {wait_check(types, ones).memory:.0f} > C"
    for test, verdict in ((lambda k: k.strict.all(), "strict"), (lambda k: k.holds.all(), "equality")):
        for n, chk in cands:
            if test(chk):
                return n, verdict
    return cands[-1][0], "violated"


def nested_rule(types: FluidTypes, slack: float, margin: float) -> tuple[np.ndarray, str]:
    """Nested WAIT thresholds ceil(c Lambda_i (1 + margin)^(i-1)), one segment per type, for
    the smallest c >= (1 + slack) c_min whose rounded thresholds keep (10) strict (first line
    and ratios n_{i+1} / n_i > p_i) with M^pi <= C; else c = (1 + slack) c_min ("boundary" or
    "violated" ratios). Returns ((L,) int64, verdict)."""
    from ..fluid import nested_check
    seg = nested_segments(types)
    base = nested_thresholds(seg, margin=margin)       # c_min * shape
    first = None
    for f in _scales(1.0 + slack, 100.0):
        n = np.maximum(np.ceil(base * f * (1 - 1e-12)), 1).astype(np.int64)
        chk = nested_check(seg, n)
        first = (n, chk) if first is None else first
        if not chk.fits:
            break
        if chk.first_strict and chk.ratios.all():
            return n, "(10) strict"
    n, chk = first
    return n, "(10) first line " + ("ok" if chk.first else "violated") + ", ratios " + (
        "strict" if chk.ratios.all() else "not strict")


def thresholds_for(exp: KVExperiment, policy: str, types: FluidTypes):
    """(thresholds or None, description of the rule / verdict) for one policy."""
    if policy == "wait":
        n, v = wait_rule(types, exp.wait_slack)
        return (None if n is None else tuple(int(x) for x in n)), v if n is None else f"(9) {v}"
    if policy == "nested_wait":
        n, v = nested_rule(types, exp.nested_slack, exp.nested_margin)
        return tuple(int(x) for x in n), v
    return None, "-"


# --------------------------------------------------------------------------- running

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


def _summary(values: np.ndarray) -> tuple[float, float]:
    m, _, half, _ = mean_ci(values)
    return m, half


_METRIC_KEYS = tuple(k + suf for k in ("throughput", "latency_mean", "latency_p99", "ttft_mean",
                                         "ttft_p99") for suf in ("", "_ci"))


def run_point(exp: KVExperiment, policy: str, load: float, seeds: Sequence[int], n_req: int,
              hw: Hardware = HARDWARE, size_load: float | None = None) -> dict:
    """One (policy, load) point over `seeds`: a tidy row (means and 95% CI half-widths).
    size_load: the load the table size and epoch bound are sized for (default `load`; a sweep
    passes its largest load so that every point shares one compiled config per policy)."""
    types = exp.types(load, hw)
    eq = equilibrium(types)
    th, rule = thresholds_for(exp, policy, types)
    row = dict(experiment=exp.name, policy=policy, label=POLICY_LABELS.get(policy, policy),
               load=load, rate_total_req_s=float(types.total_rate), num_requests=n_req,
               seeds=len(seeds), thresholds=" ".join(map(str, th)) if th else "-", rule=rule,
               fluid_throughput=eq.throughput, fluid_memory_tokens=eq.memory)
    if th is None and policy in ("wait", "nested_wait"):
        # Not runnable here (e.g. WAIT's M^pi > C for every integer threshold): a row of nans.
        nan = math.nan
        row.update({k: nan for k in _METRIC_KEYS}, throughput_ratio=nan, peak_memory_tokens=nan,
                   preemptions=nan, overflows=nan, incomplete=nan, wall_s=0.0)
        return row
    cfg = KVConfig(prefill_tokens=exp.prefill, decode_tokens=exp.decode, policy=policy,
                   num_requests=n_req, **_sizes(exp, exp.types(size_load or load, hw), n_req, hw))
    params = make_params(cfg, rates=types.rates, d0_s=hw.d0_s, d1_s_per_token=hw.d1_s_per_token,
                         capacity_tokens=hw.capacity_tokens, thresholds=th)
    t0 = time.perf_counter()
    res = simulate(cfg, params, list(seeds))
    wall = time.perf_counter() - t0
    met = res.metrics
    for key, col in (("throughput", "throughput_tokens_per_s"), ("latency_mean", "latency_mean_s"),
                     ("latency_p99", "latency_p99_s"), ("ttft_mean", "ttft_mean_s"),
                     ("ttft_p99", "ttft_p99_s")):
        row[key], row[key + "_ci"] = _summary(met[col])
    row["throughput_ratio"] = row["throughput"] / eq.throughput
    row["peak_memory_tokens"] = float(met["peak_memory_tokens"].max())
    row["preemptions"] = float(met["preemption_count"].mean())
    row["overflows"] = float(met["overflow_count"].mean())
    row["incomplete"] = float((met["num_arrived"] - met["num_completed"]).sum()
                              + met["table_overflow"].sum())
    row["wall_s"] = wall
    return row


def run_experiment(name: str, *, quick: bool = False, seeds: int | None = None,
                   policies: Sequence[str] | None = None, hw: Hardware = HARDWARE,
                   loads: Sequence[float] | None = None, num_requests: int | None = None,
                   progress: Callable[[str], None] | None = None) -> list[dict]:
    """Rows of experiment `name` ("e1".."e4"), one per (policy, load), policies as
    `registered_policies(policies)`. quick: the reduced load grid, N and seeds."""
    require(name in EXPERIMENTS, "experiment", f"one of {tuple(EXPERIMENTS)}", name)
    exp = EXPERIMENTS[name]
    pols = registered_policies(policies)
    n_seeds = require_int(seeds if seeds is not None else
                          (exp.quick_seeds if quick else exp.seeds), "seeds", lo=1, hi=4096)
    n_req = require_int(num_requests if num_requests is not None else
                        (exp.quick_requests if quick else exp.num_requests), "num_requests", lo=1)
    grid = tuple(loads) if loads is not None else (exp.quick_loads if quick else exp.loads)
    rows = []
    for load in grid:
        for pol in pols:
            rows.append(run_point(exp, pol, load, range(n_seeds), n_req, hw, max(grid)))
            if progress is not None:
                r = rows[-1]
                progress(f"{name} {pol} rho={load}: thr {r['throughput']:.4g} tok/s, "
                         f"latency {r['latency_mean']:.4g} s ({r['wall_s']:.1f} s)")
    return rows


# --------------------------------------------------------------------------- Theorem 1 scaling

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


SCALING_INSTANCES = (ScalingInstance("equality", threshold=2, capacity_tokens=6, expected_slope=-0.5),
                     ScalingInstance("strict", threshold=3, capacity_tokens=9, expected_slope=-1.0))
SCALING_T = (250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0)
SCALING_T_QUICK = (100.0, 200.0, 400.0, 800.0)


def _arrivals_by(cfg: KVConfig, params, seed: int, horizon: float, rate: float) -> int:
    """Number of accepted arrivals with a_i <= horizon in run `seed` (the engine's own stream)."""
    from .arrivals import arrival_stream
    n = int(rate * horizon + 8 * math.sqrt(rate * horizon) + 32)
    s = arrival_stream(cfg, params, seed, n)
    t = s["t_hi"].astype(np.float64) + s["t_lo"].astype(np.float64)
    require(bool(t[-1] > horizon), "n_candidates", "enough candidates to pass the horizon", n)
    return int(np.sum(s["accepted"] & (t <= horizon)))


def scaling_point(inst: ScalingInstance, horizon: float, seeds: Sequence[int]) -> dict:
    """Throughput gap and latency of WAIT on `inst` over horizon T, per seed, summarised.

    gap per seed = (l' + 1) A(T) / T - thr, A(T) the arrivals by T: its mean is
    throughput* - E[thr] (E[A(T)] = lambda T) and it has the variance of the backlog only.
    """
    cfg = KVConfig(prefill_tokens=(inst.prefill,), decode_tokens=(inst.decode,), policy="wait",
                   num_requests=None, horizon_s=float(horizon),
                   table_size=1 << max(8, int(math.ceil(math.log2(8 * math.sqrt(horizon) + 64)))),
                   max_epochs=int(3 * horizon / inst.d0_s) + 4096, arrivals_per_step=8)
    params = make_params(cfg, rates=(inst.rate,), d0_s=inst.d0_s,
                         d1_s_per_token=inst.d1_s_per_token, capacity_tokens=inst.capacity_tokens,
                         thresholds=(inst.threshold,))
    seeds = list(seeds)
    res = simulate(cfg, params, seeds, block_epochs=min(cfg.max_epochs, 2048))
    thr = res.metrics["throughput_tokens_per_s"]
    arrived = np.array([_arrivals_by(cfg, params, s, horizon, inst.rate) for s in seeds])
    gap = inst.tokens_per_request * arrived / horizon - thr
    row = dict(instance=inst.name, T=float(horizon), seeds=len(seeds),
               fluid_throughput=inst.fluid_throughput)
    row["gap"], row["gap_ci"] = _summary(gap)
    row["gap_raw"], row["gap_raw_ci"] = _summary(inst.fluid_throughput - thr)
    row["latency_mean"], row["latency_mean_ci"] = _summary(res.metrics["latency_mean_s"])
    row["in_system"], row["in_system_ci"] = _summary(res.metrics["num_in_system"])
    row["wall_s"] = res.wall_s
    return row


def run_scaling(*, quick: bool = False, seeds: int | None = None,
                horizons: Sequence[float] | None = None,
                progress: Callable[[str], None] | None = None) -> tuple[list[dict], list[dict]]:
    """Theorem 1 sweep: (rows per (instance, T), fits per instance with slope of the gap and of
    the mean latency against T, 95% CI, and the expected gap slope)."""
    n_seeds = require_int(seeds if seeds is not None else (32 if quick else 128), "seeds",
                          lo=2, hi=4096)
    grid = tuple(horizons) if horizons is not None else (SCALING_T_QUICK if quick else SCALING_T)
    rows = []
    for inst in SCALING_INSTANCES:
        for T in grid:
            rows.append(scaling_point(inst, T, range(n_seeds)))
            if progress is not None:
                progress(f"scaling {inst.name} T={T:g}: gap {rows[-1]['gap']:.4g} tok/s "
                         f"({rows[-1]['wall_s']:.1f} s)")
    fits = []
    for inst in SCALING_INSTANCES:
        sub = [r for r in rows if r["instance"] == inst.name]
        Ts = [r["T"] for r in sub]
        slope, ci, n = loglog_slope(Ts, [r["gap"] for r in sub])
        lslope, lci, _ = loglog_slope(Ts, [r["latency_mean"] for r in sub])
        fits.append(dict(instance=inst.name, threshold=inst.threshold,
                         capacity_tokens=inst.capacity_tokens, expected_slope=inst.expected_slope,
                         gap_slope=slope, gap_slope_ci=ci, points=n, latency_slope=lslope,
                         latency_slope_ci=lci,
                         expected_latency_slope=0.5 if inst.expected_slope == -0.5 else 0.0))
    return rows, fits


# --------------------------------------------------------------------------- tables

def _pm(m: float, half: float) -> str:
    from ..results import format_value
    return format_value(m) if not math.isfinite(half) else f"{format_value(m)} ± {format_value(half)}"


def experiment_table(rows: Sequence[dict]) -> str:
    """Markdown table of run_experiment rows."""
    from ..results import format_value, markdown_table
    head = ["policy", "rho", "rate (req/s)", "throughput (tok/s)", "thr / fluid", "latency (s)",
            "latency p99 (s)", "TTFT (s)", "TTFT p99 (s)", "peak mem (tok)", "preempt",
            "thresholds"]
    body = [[r["label"], format_value(r["load"]), format_value(r["rate_total_req_s"]),
             _pm(r["throughput"], r["throughput_ci"]), f"{r['throughput_ratio']:.3f}",
             _pm(r["latency_mean"], r["latency_mean_ci"]), format_value(r["latency_p99"]),
             _pm(r["ttft_mean"], r["ttft_mean_ci"]), format_value(r["ttft_p99"]),
             format_value(r["peak_memory_tokens"]), format_value(r["preemptions"]),
             f"{r['thresholds']} ({r['rule']})" if r["thresholds"] != "-" else r["rule"]]
            for r in rows]
    return markdown_table(head, body)


def scaling_tables(rows: Sequence[dict], fits: Sequence[dict]) -> str:
    """Markdown tables of run_scaling rows and fits."""
    from ..results import format_value, markdown_table
    t1 = markdown_table(["instance", "T (s)", "seeds", "gap (tok/s)", "latency (s)", "in system"],
                        [[r["instance"], format_value(r["T"]), str(r["seeds"]),
                          _pm(r["gap"], r["gap_ci"]), _pm(r["latency_mean"], r["latency_mean_ci"]),
                          _pm(r["in_system"], r["in_system_ci"])] for r in rows])
    t2 = markdown_table(["instance", "gap slope", "expected", "latency slope", "expected"],
                        [[f["instance"], _pm(f["gap_slope"], f["gap_slope_ci"]),
                          format_value(f["expected_slope"]),
                          _pm(f["latency_slope"], f["latency_slope_ci"]),
                          format_value(f["expected_latency_slope"])] for f in fits])
    return t1 + "\n\n" + t2
