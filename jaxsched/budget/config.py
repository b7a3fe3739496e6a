"""Validated configuration of the budget engine: static `BudgetConfig` and traced `BudgetParams`.

`BudgetConfig` fixes shapes and code paths (changing it recompiles): the request types' length
laws, the policy and its static options, the horizon, the table size, the arrival mode (Poisson
or a replayed trace), the batch-time model (eq. (2.3) or linear) and the terms switched on.
`BudgetParams` holds the numbers a sweep may vary without recompiling: arrival rates or the
trace's rate_scale (and the trace's arrays), the token budget b, the caps M and prefill_cap,
K_p and K_d, and the batch-time constants (c, a, b0 or the linear model's per-token
coefficients, alpha, beta, the KV limit and the A.2 overhead coefficients). Every invalid
value raises one `ConfigError` naming the field and the allowed range, before anything
compiles. Semantics: docs/budget-semantics.md.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..clock import split12
from ..errors import (
    ConfigError,
    Reads,
    changed_fields,
    changed_keywords,
    reads_from,
    refuse_ignored,
    require,
    require_bool,
    require_choice,
    require_float,
    require_int,
)
from ..histogram import bit_num_bins
from ..tables import check_growable, largest_table
from ..workload import BivariateNormal, BurstGPTLike, Constant, Independent, Trace
from ..workload.arrivals import check_rates, trace_gaps_s, trace_max_arrivals
from .registry import POLICIES

# Paper 004's batch-time constants (notes/004.md sections 1 and 6): c = 45.5 ms and b0 = 64
# tokens are the paper's Llama-3-70B fit; a = 0.18 ms/token is assumed (the paper's 0.30 puts
# Fig. 1's load above capacity for every budget; 0.18 gives rho = 0.85 at b = 512, 14.3 qps).
DEFAULT_C_S = 0.0455
DEFAULT_A_S_PER_TOKEN = 0.00018
DEFAULT_B0 = 64
DEFAULT_BUDGET = 512
# vLLM's max_num_seqs, the suggested M of notes/004.md section 6 (the paper gives none).
DEFAULT_MAX_REQUESTS = 256
# Default offered load rho = lambda (m_p + m_d) t_b / b of `default_rates` (assumed).
DEFAULT_LOAD = 0.85
# Fig. 1's requests: 129 prefill and 112 decode tokens (notes/004.md section 5).
FIG1_WORKLOAD = Independent(Constant(129), Constant(112), name="fig1")
MAX_BUDGET = 2**15
# Request ids of the initial backlog start here (the arrival stream's ids start at 0).
BACKLOG_ID = 2**30
# int32 headroom for sums over the table (tokens in system, attention sums).
INT_LIMIT = 2**30
PHASES = ("decode", "prefill")
INNER_ORDERS = ("fcfs", "srpt")
# What M (max_requests) caps (docs §3): the requests of one batch, or the requests started
# (some prefill loaded) and not finished, as Vidur's replica schedulers cap their allocation map.
ADMISSION_CAPS = ("batch", "running")
ARRIVAL_MODES = ("poisson", "trace")
MEMORY_OVERHEADS = ("off", "swap", "recompute")
# The batch-time models (docs §2 step 5): eq. (2.3), or linear in prefill, decode and context.
BATCH_TIMES = ("paper", "linear")
# make_params' coefficients of the linear model (s/token), in the order they are added.
LINEAR_COEFS = ("prefill_s_per_token", "decode_s_per_token", "context_s_per_token")
# The batch-time keywords each model reads: the other model's, given away from their defaults,
# would change nothing, so make_params refuses them (`errors.refuse_ignored`).
BATCH_TIME_READS = {
    **{k: (Reads("batch_time", ("paper",)),) for k in ("a_s_per_token", "b0")},
    **{k: (Reads("batch_time", ("linear",)),) for k in LINEAR_COEFS},
}
# recompute's x_i^2 is an int32 (docs §2 step 5): requests may hold at most this many tokens.
MAX_RECOMPUTE_LEN = 46340
# Bounds of the trace's time scale (arrival times are divided by it).
RATE_SCALE_RANGE = (1e-6, 1e6)
_LAWS = (Independent, BivariateNormal, BurstGPTLike, Trace)


def _trace_law(workload) -> tuple:
    """The one timed `Trace` a trace-mode config replays, as a 1-tuple: >= 2 rows whose
    timestamps span > 0 s (the replay's mean gap must be > 0, or every arrival would fall at
    t = 0)."""
    law = workload[0] if isinstance(workload, tuple) and len(workload) == 1 else workload
    require(
        isinstance(law, Trace) and law.arrival_s is not None,
        "workload",
        "a Trace with arrival times (read_trace(path, times=True)) when arrival_mode is 'trace'",
        workload if not isinstance(law, Trace) else f"Trace {law.name} without arrival_s",
    )
    t = law.arrival_s
    require(
        t.size >= 2 and t[-1] > t[0],
        "workload",
        "a Trace with >= 2 rows whose arrival "
        "times span > 0 s when arrival_mode is 'trace' (its mean gap sets the wrap-around)",
        f"Trace {law.name}: {t.size} rows spanning {t[-1] - t[0] if t.size else 0.0} s",
    )
    return (law,)


def length_laws(workload) -> tuple:
    """The per-type length laws of a Poisson-mode workload as a validated tuple (one law: one
    type); also the per-stage laws of each type of a `jaxsched.network` workload."""
    laws = workload if isinstance(workload, tuple) else (workload,)
    require(len(laws) >= 1, "workload", "a length law or a non-empty tuple of them (one per type)", workload)
    for j, law in enumerate(laws):
        require(
            isinstance(law, _LAWS) and not (isinstance(law, Trace) and law.order != "resample"),
            f"workload[{j}]",
            "a length law: Independent, BivariateNormal, BurstGPTLike or a Trace with order='resample'",
            law,
        )
    return laws


@dataclass(frozen=True)
class BudgetConfig:
    """Static configuration of a budget run (docs/budget-semantics.md).

    workload: a length law per request type (a single law: one type); type j's requests draw
    (v_p, v_d) from workload[j] at their request id. policy: a name in
    jaxsched.budget.registry.POLICIES. horizon_s: the run ends at the first epoch at or after it
    (s). burn_in_s: metrics cover [burn_in_s, horizon_s). num_requests: optional cap on the
    arrivals. table_size Q: ring slots (docs §4). arrivals_per_step: arrivals inserted per scan
    step. max_steps: bound on the scan steps (make_params checks it suffices for the horizon).
    hist_octave_bits: latency histograms with 2^b bins per octave. snapshots G: grid points of
    the growth-rate fit. attention, attention_prefix: the (A.1) long-context term and its
    chunk-against-earlier-chunks extension. phase_first, inner_order: `wc` only.
    type_order: `priority` only, the types from highest to lowest priority (None: 0, 1, ...).
    record_members: recorded trajectories also hold the per-slot batch (tests).
    initial_requests: a backlog, (n_j) requests of each type present at t = 0 (entry order:
    type 0's first; lengths drawn at ids BACKLOG_ID + b), for the fluid drain time; None: none.
    drain_fraction: the run is "drained" at the first deciding epoch whose unprocessed tokens
    are <= this fraction of the backlog's (metric drain_time_s).
    arrival_mode: "poisson" (the typed Poisson stream at make_params' rates) or "trace" (replay
    the timestamps of the one law in `workload`, a `Trace` read with times=True, at
    make_params' rate_scale; each request's lengths are its row's; docs §1). One type, no
    backlog.
    memory_overhead: the KV-memory overhead term of (A.2) in the batch time (docs §2 step 5):
    "off", "swap" (a1 x + a2 per request over the limit) or "recompute" (b1 x^2 + b2).
    batch_time: the base model of the batch time (docs §2 step 5): "paper" (eq. (2.3), c + a
    max(0, b' - b0)) or "linear" (c + a_p prefill + a_d decode + a_c context, the form a
    profile-based predictor reduces to; coefficients from make_params).
    admission_cap: what make_params' max_requests M caps (docs §3): "batch" (the requests of one
    batch) or "running" (also the requests started, i.e. with some prefill loaded, and not
    finished: a waiting request starts only while fewer than M are; Vidur's semantics).
    sarathi, orca, vllm, ft and wc read it.
    grow_table: table_size (a power of two) is the starting size: a run that rejects an arrival
    at a full ring slot runs again with twice the slots, until none is rejected or Q reaches
    `max_table_size()`; its metrics are bitwise those of any larger table (`jaxsched.tables`).
    Not with record_members (its per-slot rows have the table's width). False (default): the
    ring is the config's, and a full slot rejects arrivals (counted in num_rejected, warned).
    """

    workload: tuple = (FIG1_WORKLOAD,)
    policy: str = "sarathi"
    horizon_s: float = 600.0
    burn_in_s: float = 0.0
    num_requests: int | None = None
    table_size: int = 4096
    arrivals_per_step: int = 8
    max_steps: int = 200_000
    hist_octave_bits: int = 4
    snapshots: int = 32
    attention: bool = False
    attention_prefix: bool = False
    phase_first: str = "decode"
    inner_order: str = "fcfs"
    type_order: tuple[int, ...] | None = None
    record_members: bool = False
    initial_requests: tuple[int, ...] | None = None
    drain_fraction: float = 0.02
    arrival_mode: str = "poisson"
    memory_overhead: str = "off"
    batch_time: str = "paper"
    admission_cap: str = "batch"
    grow_table: bool = False

    def __post_init__(self):
        require_choice(self.arrival_mode, "arrival_mode", ARRIVAL_MODES)
        require_choice(self.memory_overhead, "memory_overhead", MEMORY_OVERHEADS)
        require_choice(self.batch_time, "batch_time", BATCH_TIMES)
        laws = _trace_law(self.workload) if self.trace else length_laws(self.workload)
        object.__setattr__(self, "workload", laws)
        require_choice(self.policy, "policy", POLICIES)
        h = require_float(self.horizon_s, "horizon_s", lo=0.0, hi=1e7, lo_open=True)
        object.__setattr__(self, "horizon_s", h)
        burn = require_float(self.burn_in_s, "burn_in_s", lo=0.0)
        require(burn < h, "burn_in_s", f"in [0, horizon_s = {h:g}) s", self.burn_in_s)
        object.__setattr__(self, "burn_in_s", burn)
        if self.num_requests is not None:
            require_int(self.num_requests, "num_requests", lo=1, hi=INT_LIMIT)
        Q = require_int(self.table_size, "table_size (Q)", lo=1, hi=2**20)
        check_growable(Q, self.grow_table)
        require_int(self.arrivals_per_step, "arrivals_per_step", lo=1, hi=min(4096, Q))
        require_int(self.max_steps, "max_steps", lo=1, hi=INT_LIMIT)
        require_int(self.hist_octave_bits, "hist_octave_bits", lo=0, hi=8)
        require_int(self.snapshots, "snapshots", lo=2, hi=4096)
        for f in ("attention", "attention_prefix", "record_members"):
            require_bool(getattr(self, f), f)
        # A run grown to a larger ring records wider per-slot rows than the runs beside it.
        require(
            not (self.grow_table and self.record_members),
            "grow_table",
            "False when record_members is set (its per-slot rows have the table's Q columns)",
            self.grow_table,
        )
        require(
            self.attention or not self.attention_prefix,
            "attention_prefix",
            "False unless attention is True",
            self.attention_prefix,
        )
        require_choice(self.phase_first, "phase_first", PHASES)
        require_choice(self.inner_order, "inner_order", INNER_ORDERS)
        require_choice(self.admission_cap, "admission_cap", ADMISSION_CAPS)
        self._check_type_order()
        # A policy's option set for another policy would change nothing (POLICIES' options);
        # the identity order is type_order's default.
        options = changed_fields(self, ("phase_first", "inner_order", "admission_cap"))
        options += ["type_order"] if self.type_order != tuple(range(self.m)) else []
        refuse_ignored(options, {"policy": self.policy}, reads_from(POLICIES, "policy"))
        require(
            not (self.trace and self.initial_requests is not None),
            "initial_requests",
            "None when arrival_mode is 'trace' (the replay is the only source of requests)",
            self.initial_requests,
        )
        if self.initial_requests is not None:
            n = self.initial_requests
            require(
                isinstance(n, (tuple, list)) and len(n) == self.m,
                "initial_requests",
                f"None or a tuple of m = {self.m} request counts",
                n,
            )
            n = tuple(require_int(x, f"initial_requests[{j}]", lo=0, hi=Q) for j, x in enumerate(n))
            require(sum(n) <= Q, "initial_requests", f"summing to <= table_size = {Q}", n)
            object.__setattr__(self, "initial_requests", n)
        require_float(self.drain_fraction, "drain_fraction", lo=0.0, hi=1.0, lo_open=True)
        if Q * self.max_len > INT_LIMIT:
            raise ConfigError(
                f"table_size (Q) * max (prefill + decode) = {Q} * {self.max_len} could overflow "
                f"int32 token sums; it must be <= {INT_LIMIT}"
            )

    def _check_type_order(self) -> None:
        m = self.m
        if self.type_order is None:
            object.__setattr__(self, "type_order", tuple(range(m)))
        order = self.type_order
        allowed = f"a permutation of the types 0..{m - 1}"
        require(isinstance(order, (tuple, list)), "type_order", allowed, order)
        # Integers only: 1.0 or True would pass the permutation test and be cut to an int.
        order = tuple(require_int(j, f"type_order[{i}]") for i, j in enumerate(order))
        require(sorted(order) == list(range(m)), "type_order", allowed, self.type_order)
        object.__setattr__(self, "type_order", order)

    @property
    def m(self) -> int:
        """Number of request types."""
        return len(self.workload)

    @property
    def trace(self) -> bool:
        """Arrivals replay a trace's timestamps (arrival_mode "trace")."""
        return self.arrival_mode == "trace"

    @property
    def max_prompt(self) -> int:
        return max(law.max_prompt for law in self.workload)

    @property
    def max_decode(self) -> int:
        return max(law.max_output for law in self.workload)

    @property
    def max_len(self) -> int:
        """Largest v_p + v_d any law can produce (tokens)."""
        return self.max_prompt + self.max_decode

    @property
    def hist_bins(self) -> int:
        return bit_num_bins(self.hist_octave_bits)

    def max_table_size(self) -> int:
        """The most slots `grow_table` grows Q to: the largest power of two within table_size's
        bound (2^20) and the int32 headroom of the sums over the table (Q * max_len <=
        INT_LIMIT)."""
        return largest_table(min(2**20, INT_LIMIT // self.max_len))

    @property
    def backlog(self) -> int:
        """Requests present at t = 0."""
        return 0 if self.initial_requests is None else sum(self.initial_requests)

    def snapshot_times(self) -> np.ndarray:
        """float64[G]: the snapshot grid g_k = burn_in + k (horizon - burn_in) / G (s)."""
        G = self.snapshots
        return self.burn_in_s + np.arange(G) * (self.horizon_s - self.burn_in_s) / G


class BudgetSizes(eqx.Module):
    """The sizes of one run padded into a larger config (a size bucket), as traced int32
    scalars: table_size Q <= config.table_size (ring slots), arrivals_per_step A <=
    config.arrivals_per_step (arrival buffer rows). Slots q >= Q and rows a >= A exist in the
    arrays but never hold a request (the ring is entry mod Q, the run's own Q) and enter no
    metric, so the run's metrics are bitwise those of the unpadded run (`BudgetEngine.pad`,
    tests/budget/test_buckets.py)."""

    table_size: jnp.ndarray
    arrivals_per_step: jnp.ndarray


class BudgetParams(eqx.Module):
    """Traced parameters of a budget run (build with `make_params`, which validates them).

    budget: int32 b (tokens per batch). max_requests: int32 M. prefill_cap: int32 tokens of a
    whole-prompt batch (vllm, ft). K_p, K_d: int32 FCFS windows of `wc` (INT_LIMIT: none).
    c_s: float32 c (s); a_hi + a_lo: a (s/token) in 12-bit halves (jaxsched.clock.split12);
    b0: int32 tokens. prefill_s_per_token, decode_s_per_token, context_s_per_token: float32
    a_p, a_d, a_c (s/token) of the linear model (0 under eq. (2.3)). alpha, beta: float32
    (s/token^2) of the attention term (A.1).
    rate_max, inv_rate_max, type_cdf [P, m], period_s, inv_period_s: the arrival stream
    (jaxsched.workload.arrivals). fence: int32 -1 (jaxsched.clock.fence).
    rate_scale, inv_rate_scale: float32 time scale of a replayed trace and its reciprocal (1 in
    Poisson mode). trace_gap_s: float32[n] replay gaps (s, `arrivals.trace_gaps_s`);
    trace_prompt, trace_output: int32[n] the rows' lengths (tokens); [1] zeros in Poisson mode.
    kv_limit: int32 KV tokens the batch may hold before (A.2) charges (INT_LIMIT when off).
    mem_c1, mem_c2: float32 coefficients of the selected overhead, swap (a1 s/token, a2 s) or
    recompute (b1 s/token^2, b2 s); 0 when off.
    sizes: the run's sizes inside a size bucket (`BudgetSizes`), or None.
    """

    budget: jnp.ndarray
    max_requests: jnp.ndarray
    prefill_cap: jnp.ndarray
    K_p: jnp.ndarray
    K_d: jnp.ndarray
    c_s: jnp.ndarray
    a_hi: jnp.ndarray
    a_lo: jnp.ndarray
    b0: jnp.ndarray
    alpha: jnp.ndarray
    beta: jnp.ndarray
    rate_max: jnp.ndarray
    inv_rate_max: jnp.ndarray
    type_cdf: jnp.ndarray
    period_s: jnp.ndarray
    inv_period_s: jnp.ndarray
    fence: jnp.ndarray
    rate_scale: jnp.ndarray
    inv_rate_scale: jnp.ndarray
    trace_gap_s: jnp.ndarray
    trace_prompt: jnp.ndarray
    trace_output: jnp.ndarray
    kv_limit: jnp.ndarray
    mem_c1: jnp.ndarray
    mem_c2: jnp.ndarray
    prefill_s_per_token: jnp.ndarray
    decode_s_per_token: jnp.ndarray
    context_s_per_token: jnp.ndarray
    # The run's own sizes when it runs padded inside a size bucket (`BudgetEngine.pad`); None:
    # the config's shapes are the run's sizes. Not part of a results key: the point's config is.
    sizes: BudgetSizes | None = eqx.field(default=None, metadata={"identity": False})


def _marginal_mean(m) -> float | None:
    """Exact mean of a length marginal when it has a closed form or a pmf."""
    if isinstance(m, Constant):
        return float(m.value)
    if hasattr(m, "pmf") and hasattr(m, "lower"):
        p = m.pmf()
        return float(np.dot(p, m.lower + np.arange(p.size)))
    return None


def mean_lengths(config: BudgetConfig) -> np.ndarray:
    """float64[m, 2]: (m_p, m_d) per type, exact for Constant / Poisson / tabled marginals of an
    `Independent` law and for a replayed trace (its row means), else the mean of 2^16 draws
    (seed 0) of the law."""
    out = np.zeros((config.m, 2))
    if config.trace:
        # The replay visits every row once per period: the row means are exact.
        law = config.workload[0]
        out[0] = [float(np.mean(law.prompt, dtype=np.float64)), float(np.mean(law.output, dtype=np.float64))]
        return out
    for j, law in enumerate(config.workload):
        exact = (
            [_marginal_mean(law.prompt), _marginal_mean(law.output)] if isinstance(law, Independent) else [None, None]
        )
        if None in exact:
            ids = jnp.arange(2**16, dtype=jnp.int32)
            p, d = law.sample(jnp.uint32(0), ids)
            drawn = [float(np.mean(np.asarray(p, np.float64))), float(np.mean(np.asarray(d, np.float64)))]
            exact = [e if e is not None else s for e, s in zip(exact, drawn)]
        out[j] = exact
    return out


def batch_time_s(tokens: float, c_s: float, a_s_per_token: float, b0: int) -> float:
    """Host float64 t(b') = c + a max(0, b' - b0) (eq. (2.3)), s."""
    return c_s + a_s_per_token * max(0.0, tokens - b0)


def capacity_tokens_per_s(
    budget: int, c_s: float = DEFAULT_C_S, a_s_per_token: float = DEFAULT_A_S_PER_TOKEN, b0: int = DEFAULT_B0
) -> float:
    """The token capacity b / t_b (tokens/s) of one engine (notes/004.md section 1)."""
    return budget / batch_time_s(budget, c_s, a_s_per_token, b0)


def rates_for_load(
    config: BudgetConfig,
    load: float,
    budget: int = DEFAULT_BUDGET,
    c_s: float = DEFAULT_C_S,
    a_s_per_token: float = DEFAULT_A_S_PER_TOKEN,
    b0: int = DEFAULT_B0,
    weights=None,
) -> np.ndarray:
    """(m,) requests/s at offered load rho = sum_j lambda_j (m_p^j + m_d^j) t_b / b = `load`,
    split over the types by `weights` (default equal)."""
    w = np.full(config.m, 1.0 / config.m) if weights is None else np.asarray(weights, float)
    work = float(np.dot(w, mean_lengths(config).sum(axis=1)))
    return w * load * capacity_tokens_per_s(budget, c_s, a_s_per_token, b0) / work


def offered_load(config: BudgetConfig, rates, budget: int, c_s: float, a_s_per_token: float, b0: int) -> float:
    """rho = sum_j mean lambda_j (m_p^j + m_d^j) / (b / t_b) at the time-averaged rates."""
    r = np.atleast_2d(np.asarray(rates, float)).mean(axis=0)
    work = float(np.dot(r, mean_lengths(config).sum(axis=1)))
    return work / capacity_tokens_per_s(budget, c_s, a_s_per_token, b0)


def _rates(config: BudgetConfig, rates) -> np.ndarray:
    return check_rates(rates, config.m)


def trace_token_rate(config: BudgetConfig, rate_scale: float = 1.0) -> float:
    """Offered tokens/s of a replayed trace: sum over rows of (v_p + v_d) per replay period
    (n mean gaps of trace time), times rate_scale."""
    law = config.workload[0]
    period = float(trace_gaps_s(law.arrival_s).sum())
    work = float(np.sum(law.prompt, dtype=np.float64) + np.sum(law.output, dtype=np.float64))
    return rate_scale * work / period


def trace_load(
    config: BudgetConfig,
    rate_scale: float,
    budget: int = DEFAULT_BUDGET,
    c_s: float = DEFAULT_C_S,
    a_s_per_token: float = DEFAULT_A_S_PER_TOKEN,
    b0: int = DEFAULT_B0,
) -> float:
    """rho = offered tokens/s / (b / t_b) of a replayed trace at `rate_scale` (eq. (2.3) only:
    the attention and memory terms make the real capacity smaller)."""
    capacity = capacity_tokens_per_s(budget, c_s, a_s_per_token, b0)
    return trace_token_rate(config, rate_scale) / capacity


def _check_rate_scale(config: BudgetConfig, rate_scale) -> float:
    """rate_scale as a float: in RATE_SCALE_RANGE in trace mode (None: 1), None otherwise."""
    if not config.trace:
        require(
            rate_scale is None,
            "rate_scale",
            "None unless BudgetConfig.arrival_mode is 'trace' (Poisson arrivals are set by rates)",
            rate_scale,
        )
        return 1.0
    if rate_scale is None:
        return 1.0
    lo, hi = RATE_SCALE_RANGE
    return require_float(rate_scale, "rate_scale", lo=lo, hi=hi)


def _trace_arrivals(config: BudgetConfig, rate_scale: float) -> int:
    """The most requests a replay at rate_scale can bring within the horizon (any seed)."""
    n = trace_max_arrivals(config.workload[0].arrival_s, config.horizon_s * rate_scale)
    return n if config.num_requests is None else min(n, config.num_requests)


def steps_needed(config: BudgetConfig, mean_rate: float, min_batch_s: float) -> int:
    """Scan steps a run may need to reach its horizon (docs §5): horizon / t(1) batches plus two
    steps per expected arrival, with a 10% margin."""
    arrivals = mean_rate * config.horizon_s
    if config.num_requests is not None:
        arrivals = min(arrivals, config.num_requests)
    return int(math.ceil(1.1 * (config.horizon_s / min_batch_s + 2 * arrivals) + 16))


def min_batch_s(c_s: float, a_s_per_token: float, b0: int) -> float:
    """t(1) (s), the shortest batch; ConfigError unless it is > 0 (a batch must take time)."""
    t1 = batch_time_s(1, c_s, a_s_per_token, b0)
    require(t1 > 0, "c_s", "> 0, or a_s_per_token > 0 with b0 = 0 (a batch must take time)", c_s)
    return t1


def linear_min_batch_s(c_s: float, prefill_s_per_token: float, decode_s_per_token: float) -> float:
    """The shortest batch of the linear model (s): one token, c + min(a_p, a_d) (its context
    term is >= 0); ConfigError unless it is > 0 (a batch must take time)."""
    t1 = c_s + min(prefill_s_per_token, decode_s_per_token)
    require(t1 > 0, "c_s", "> 0, or prefill_s_per_token and decode_s_per_token > 0 (a batch must take time)", c_s)
    return t1


def _shortest_batch_s(config: BudgetConfig, c_s: float, a_s_per_token: float, b0: int, linear: tuple) -> float:
    """t(1) (s) of the config's batch-time model: `min_batch_s` (eq. (2.3)) or
    `linear_min_batch_s` with linear = (a_p, a_d, a_c) (s/token)."""
    if config.batch_time == "linear":
        return linear_min_batch_s(c_s, linear[0], linear[1])
    return min_batch_s(c_s, a_s_per_token, b0)


def enough_steps(
    config: BudgetConfig,
    rates=None,
    c_s: float = DEFAULT_C_S,
    a_s_per_token: float = DEFAULT_A_S_PER_TOKEN,
    b0: int = DEFAULT_B0,
    rate_scale: float | None = None,
    prefill_s_per_token: float = 0.0,
    decode_s_per_token: float = 0.0,
) -> BudgetConfig:
    """`config` with max_steps = `steps_needed` at the time-averaged total rate of `rates`
    ([m] or [P, m] requests/s), or in trace mode at the most arrivals a replay at
    `rate_scale` (None: 1) can bring within the horizon: the smallest bound make_params
    accepts. The shortest batch is eq. (2.3)'s (c_s, a_s_per_token, b0), or under
    batch_time "linear" c_s + min(prefill_s_per_token, decode_s_per_token)."""
    t1 = _shortest_batch_s(config, c_s, a_s_per_token, b0, (prefill_s_per_token, decode_s_per_token))
    if config.trace:
        require(
            rates is None,
            "rates",
            "None when arrival_mode is 'trace' (the trace's timestamps set the arrivals; scale them with rate_scale)",
            rates,
        )
        arrivals = _trace_arrivals(config, _check_rate_scale(config, rate_scale))
        need = steps_needed(config, arrivals / config.horizon_s, t1)
    else:
        r = _rates(config, rates)
        need = steps_needed(config, float(r.sum(axis=1).mean()), t1)
    return dataclasses.replace(config, max_steps=need)


def keywords_read_by(policy: str, keywords: Mapping[str, Any]) -> dict[str, Any]:
    """The make_params `keywords` that a run of `policy` reads: the other policies' own
    (`POLICIES`' options: prefill_cap of vllm and ft, K_p and K_d of wc) left out. For settings
    written once for several policies on purpose (paper 004's Fig. 1 constants,
    `experiments.FIG1`), which make_params refuses for a policy that ignores them."""
    reads = reads_from(POLICIES, "policy")
    return {k: v for k, v in keywords.items() if all(policy in r.values for r in reads.get(k, ()))}


def make_params(
    config: BudgetConfig,
    *,
    rates=None,
    budget: int = DEFAULT_BUDGET,
    max_requests: int = DEFAULT_MAX_REQUESTS,
    prefill_cap: int | None = None,
    K_p: int | None = None,
    K_d: int | None = None,
    c_s: float = DEFAULT_C_S,
    a_s_per_token: float = DEFAULT_A_S_PER_TOKEN,
    b0: int = DEFAULT_B0,
    alpha: float = 0.0,
    beta: float = 0.0,
    period_s: float = 1.0,
    rate_scale: float | None = None,
    kv_limit_tokens: int | None = None,
    swap_a1_s_per_token: float = 0.0,
    swap_a2_s: float = 0.0,
    recompute_b1_s_per_token2: float = 0.0,
    recompute_b2_s: float = 0.0,
    prefill_s_per_token: float = 0.0,
    decode_s_per_token: float = 0.0,
    context_s_per_token: float = 0.0,
) -> BudgetParams:
    """Validated BudgetParams (docs/budget-semantics.md §5).

    rates: [m] or [P, m] requests/s (P periods of period_s seconds, cyclic); None: equal rates
    at load DEFAULT_LOAD = 0.85 of b / t_b (`rates_for_load`). budget: b tokens per batch.
    max_requests: M requests per batch. prefill_cap: tokens of a whole-prompt batch (vllm, ft;
    None: b). K_p, K_d: `wc`'s FCFS windows (None: unlimited). c_s (s), a_s_per_token
    (s/token), b0 (tokens): eq. (2.3), defaults c = 45.5 ms, a = 0.18 ms/token (assumed),
    b0 = 64. alpha, beta (s/token^2): the attention term (A.1), used when config.attention.
    rate_scale: trace mode only (None: 1): the trace's arrival times are divided by it (2.0 =
    twice the trace's rate); rates must then be None.
    kv_limit_tokens: the KV memory limit L (tokens) of (A.2), required when
    config.memory_overhead is "swap" or "recompute" (None otherwise). swap_a1_s_per_token,
    swap_a2_s: o(x) = a1 x + a2 ("swap"); recompute_b1_s_per_token2, recompute_b2_s:
    o(x) = b1 x^2 + b2 ("recompute"); the other mode's coefficients must stay 0.
    prefill_s_per_token, decode_s_per_token, context_s_per_token (s/token, >= 0, default 0):
    a_p, a_d, a_c of the linear model c + a_p prefill + a_d decode + a_c context, read when
    config.batch_time is "linear" (then a_s_per_token and b0 are not read, and rates must be
    given in Poisson mode: the default rates come from eq. (2.3)'s capacity).

    A policy's own keyword given for a policy that does not read it (prefill_cap with sarathi,
    K_p with vllm; the readers are `POLICIES`' options) is refused here, with one ConfigError
    naming it and its readers; the network engine's agents are checked the same way. Inside
    `errors.as_one_grid` (a sweep's points) the grid refuses only a keyword that none of its
    points reads; `keywords_read_by` hands each policy its own of one set of settings.
    """
    require(
        isinstance(config, BudgetConfig),
        "config",
        "a BudgetConfig (budget.make_params builds the budget engine's params)",
        type(config).__name__,
    )
    b = require_int(budget, "budget", lo=1, hi=MAX_BUDGET)
    M = require_int(max_requests, "max_requests", lo=1, hi=INT_LIMIT)
    c = require_float(c_s, "c_s", lo=0.0)
    a = require_float(a_s_per_token, "a_s_per_token", lo=0.0)
    b0 = require_int(b0, "b0", lo=0, hi=INT_LIMIT)
    linear = dict(
        prefill_s_per_token=prefill_s_per_token,
        decode_s_per_token=decode_s_per_token,
        context_s_per_token=context_s_per_token,
    )
    lin = tuple(require_float(v, k, lo=0.0) for k, v in linear.items())
    given = changed_keywords(make_params, dict(a_s_per_token=a, b0=b0, **linear))
    refuse_ignored(given, {"batch_time": config.batch_time}, BATCH_TIME_READS)
    t1 = _shortest_batch_s(config, c, a, b0, lin)
    cap = b if prefill_cap is None else require_int(prefill_cap, "prefill_cap", lo=1, hi=INT_LIMIT)
    if config.policy in ("vllm", "ft"):
        require(
            cap >= config.max_prompt,
            "prefill_cap",
            f">= the largest prompt the workload can produce ({config.max_prompt} tokens), or "
            f"such a prompt could never start under {config.policy}",
            cap,
        )
    kp = INT_LIMIT if K_p is None else require_int(K_p, "K_p", lo=1, hi=INT_LIMIT)
    kd = INT_LIMIT if K_d is None else require_int(K_d, "K_d", lo=1, hi=INT_LIMIT)
    reads = reads_from(POLICIES, "policy")
    given = changed_keywords(make_params, dict(prefill_cap=prefill_cap, K_p=K_p, K_d=K_d))
    refuse_ignored([k for k in given if k in reads], {"policy": config.policy}, reads)
    al = require_float(alpha, "alpha", lo=0.0)
    be = require_float(beta, "beta", lo=0.0)
    require(
        config.attention or (al == 0.0 and be == 0.0),
        "alpha",
        "0 (and beta 0) unless BudgetConfig.attention is True",
        (alpha, beta),
    )
    if config.attention:
        # Attention sums in int32: sum dp^2 <= b^2, sum (P + D) dd <= min(b, M) max_len.
        need = max(b * b, min(b, M) * config.max_len, b * config.max_prompt)
        require(
            need <= INT_LIMIT, "budget", f"with b^2 and min(b, M) * max length <= {INT_LIMIT} (int32 attention sums)", b
        )
    period = require_float(period_s, "period_s", lo=0.0, lo_open=True)
    scale = _check_rate_scale(config, rate_scale)
    kv_limit, mem_c1, mem_c2 = _memory_params(
        config, b, M, kv_limit_tokens, swap_a1_s_per_token, swap_a2_s, recompute_b1_s_per_token2, recompute_b2_s
    )
    if config.trace:
        require(
            rates is None,
            "rates",
            "None when arrival_mode is 'trace' (the trace's timestamps set the arrivals; scale them with rate_scale)",
            rates,
        )
        arrivals = _trace_arrivals(config, scale)
        require(
            arrivals <= INT_LIMIT / 2,
            "horizon_s",
            f"such that the replay brings <= "
            f"{INT_LIMIT // 2} requests (int32 counter), got {arrivals} at rate_scale "
            f"{scale:g}",
            config.horizon_s,
        )
        # The stream's Poisson fields are unused; they hold the replay's worst-case mean rate.
        cum = np.array([[max(arrivals, 1) / config.horizon_s]])
        law = config.workload[0]
        trace_arrays = (trace_gaps_s(law.arrival_s).astype(np.float32), law.prompt, law.output)
    else:
        require(
            rates is not None or config.batch_time == "paper",
            "rates",
            "[m] or [P, m] requests/s when batch_time is 'linear' (the default rates are set by eq. (2.3)'s capacity)",
            rates,
        )
        r = _rates(config, rates_for_load(config, DEFAULT_LOAD, b, c, a, b0) if rates is None else rates)
        cum = np.cumsum(r, axis=1, dtype=np.float64)
        trace_arrays = (np.zeros(1, np.float32), np.zeros(1, np.int32), np.zeros(1, np.int32))
    lam_max = float(cum[:, -1].max())
    require(
        config.horizon_s * lam_max <= INT_LIMIT / 2,
        "horizon_s",
        f"<= {INT_LIMIT / 2 / lam_max:.6g} s (int32 candidate counter at {lam_max:.6g}/s)",
        config.horizon_s,
    )
    need = steps_needed(config, float(cum[:, -1].mean()), t1)
    require(
        config.max_steps >= need,
        "max_steps",
        f">= {need} (horizon_s / t(1) = {config.horizon_s / t1:.0f} batches plus two steps per "
        f"expected arrival, +10%), or the run cannot reach its horizon",
        config.max_steps,
    )
    a_hi, a_lo = split12(a)
    i32 = lambda v: jnp.int32(v)
    return BudgetParams(
        budget=i32(b),
        max_requests=i32(M),
        prefill_cap=i32(cap),
        K_p=i32(kp),
        K_d=i32(kd),
        c_s=jnp.float32(c),
        a_hi=jnp.float32(a_hi),
        a_lo=jnp.float32(a_lo),
        b0=i32(b0),
        alpha=jnp.float32(al),
        beta=jnp.float32(be),
        rate_max=jnp.float32(lam_max),
        inv_rate_max=jnp.float32(1.0 / lam_max),
        type_cdf=jnp.asarray((cum / lam_max).astype(np.float32)),
        period_s=jnp.float32(period),
        inv_period_s=jnp.float32(1.0 / period),
        fence=jnp.int32(-1),
        rate_scale=jnp.float32(scale),
        inv_rate_scale=jnp.float32(1.0 / scale),
        trace_gap_s=jnp.asarray(trace_arrays[0], jnp.float32),
        trace_prompt=jnp.asarray(trace_arrays[1], jnp.int32),
        trace_output=jnp.asarray(trace_arrays[2], jnp.int32),
        kv_limit=i32(kv_limit),
        mem_c1=jnp.float32(mem_c1),
        mem_c2=jnp.float32(mem_c2),
        prefill_s_per_token=jnp.float32(lin[0]),
        decode_s_per_token=jnp.float32(lin[1]),
        context_s_per_token=jnp.float32(lin[2]),
    )


def _memory_params(config: BudgetConfig, b: int, M: int, kv_limit_tokens, a1, a2, b1, b2) -> tuple[int, float, float]:
    """(kv_limit, c1, c2) of the (A.2) overhead selected by config.memory_overhead, validated:
    the limit is required when the term is on and None when off; the coefficients of the mode
    not selected must be 0; the int32 sums of docs §2 step 5 must not overflow."""
    mode = config.memory_overhead
    coef = {"swap_a1_s_per_token": a1, "swap_a2_s": a2, "recompute_b1_s_per_token2": b1, "recompute_b2_s": b2}
    mine = {
        "swap": ("swap_a1_s_per_token", "swap_a2_s"),
        "recompute": ("recompute_b1_s_per_token2", "recompute_b2_s"),
    }.get(mode, ())
    vals = {}
    for name, v in coef.items():
        x = require_float(v, name, lo=0.0)
        require(
            name in mine or x == 0.0,
            name,
            f"0 unless BudgetConfig.memory_overhead is '{name.split('_')[0]}' (it is {mode!r})",
            v,
        )
        vals[name] = x
    if mode == "off":
        require(
            kv_limit_tokens is None,
            "kv_limit_tokens",
            "None unless BudgetConfig.memory_overhead is 'swap' or 'recompute'",
            kv_limit_tokens,
        )
        return INT_LIMIT, 0.0, 0.0
    require(
        kv_limit_tokens is not None,
        "kv_limit_tokens",
        f"an integer >= 0 (the KV memory limit, tokens) when BudgetConfig.memory_overhead is {mode!r}",
        kv_limit_tokens,
    )
    L = require_int(kv_limit_tokens, "kv_limit_tokens", lo=0, hi=INT_LIMIT)
    # The batch's KV sum and the charged x_i are int32: min(b, M) members of <= max_len each.
    require(
        min(b, M) * config.max_len <= INT_LIMIT,
        "budget",
        f"with min(b, M) * max length <= {INT_LIMIT} (int32 KV sums of memory_overhead)",
        b,
    )
    if mode == "recompute":
        require(
            config.max_len <= MAX_RECOMPUTE_LEN,
            "memory_overhead",
            f"'swap' or 'off' when "
            f"a request can hold more than {MAX_RECOMPUTE_LEN} tokens (recompute's x^2 is "
            f"an int32)",
            f"recompute with max length {config.max_len}",
        )
    c1, c2 = (vals[k] for k in mine)
    return L, c1, c2
