"""Configuration of the interval engine: n jobs at t = 0, hidden outputs, predicted intervals.

`IntervalConfig` (static) names the job batch (`workload`, as in the offline engine), the
prediction intervals (`intervals`, `intervals.py`), the policy and its options. The traced
params are `IntervalParams`: the batch model's `OfflineParams` (`jaxsched.batchmodel`: the KV
limit M and the step-time model, shared with the offline engine) and the starting estimate of
A_min and A_l (`start_fraction`, docs/interval-semantics.md), built by `make_params`, which
also proves that every job fits alone at its upper bound (s + u <= M) and that no memory sum
can overflow int32.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax.numpy as jnp

from ..batchmodel import (
    INT_LIMIT,
    LINEAR_STEP_MODEL,
    PAPER_CAPACITY_TOKENS,
    UNIT_STEP_MODEL,
    OfflineParams,
    instance_params,
    resolve_batch,
)
from ..errors import (
    ConfigError,
    changed_fields,
    changed_keywords,
    reads_from,
    refuse_ignored,
    require,
    require_choice,
    require_float,
    require_int,
)
from .intervals import Buckets, Exact, Relative, Shared, output_support, parse
from .registry import AMAX_ORDERS, EVICTION_KEYS, POLICIES
from .workloads import named

MAX_JOBS = 1 << 16
# start_fraction is quantised to multiples of 1/START_STEPS, so that the starting estimate
# l + floor(q (u - l) / START_STEPS) is exact int32 arithmetic that the reference reproduces.
START_STEPS = 1024
__all__ = [
    "IntervalConfig",
    "IntervalParams",
    "make_params",
    "start_quanta",
    "with_start",
    "OfflineParams",
    "LINEAR_STEP_MODEL",
    "UNIT_STEP_MODEL",
    "PAPER_CAPACITY_TOKENS",
]


@dataclass(frozen=True)
class IntervalConfig:
    """Static configuration of an interval run.

    workload: the n jobs of each run: `Batch(base, n)` or a sequential `Trace`, or the name of
      a request mix (`workloads.named`: "lmsys", "two_point", ...), resolved with
      `num_requests` jobs.
    num_requests: n for a workload given by name (default 2,000); given with a Batch, it
      resizes the Batch to n jobs. The size of a size bucket (`batchmodel.pad_into`).
    intervals: the predictor (`Shared`, `Buckets`, `Relative`, `Exact`, or the short forms
      "shared:L:U", "buckets:WIDTH:COUNT", "relative:X", "exact"; default: one shared interval
      [1, largest possible output], the uninformed predictor of Experiment 1).
    policy: "hsf", "amax", "amin", "al" or "arandom" (`POLICIES`).
    eviction_key: A_min's eviction order: "stale" (the estimate o~ as last updated, the paper's
      literal reading; default) or "live" (max(o~, tokens generated)) (notes §5.3).
    amax_order: A_max's waiting order with per-job intervals: "sorted" (ascending u_i, random
      ties; default, notes §5.6) or "random" (Algorithm 1's uniform sample).
    max_steps: the step after which a run is cut (default: 4 n u_max + 64; `done` and the
      runner's check report a cut run).
    """

    workload: Any
    policy: str = "amin"
    intervals: Any = None
    num_requests: int | None = None
    eviction_key: str = "stale"
    amax_order: str = "sorted"
    max_steps: int | None = None

    def __post_init__(self):
        w = resolve_batch(self.workload, self.num_requests, named)
        if w is not self.workload:
            # Normalized in place, as OfflineConfig does (a name or a resize becomes its Batch):
            # configs are built with a name and resized by dataclasses.replace in sweeps.
            object.__setattr__(self, "workload", w)
        require_int(w.num_requests, "workload.num_requests (n)", lo=1, hi=MAX_JOBS)
        require_choice(self.policy, "policy", tuple(POLICIES))
        require_choice(self.eviction_key, "eviction_key", EVICTION_KEYS)
        require_choice(self.amax_order, "amax_order", AMAX_ORDERS)
        # A policy's option set for another policy would change nothing (POLICIES' options).
        options = changed_fields(self, ("eviction_key", "amax_order"))
        refuse_ignored(options, {"policy": self.policy}, reads_from(POLICIES, "policy"))
        if self.intervals is None:
            object.__setattr__(self, "intervals", Shared(1, int(w.max_output)))
        elif isinstance(self.intervals, str):
            object.__setattr__(self, "intervals", parse(self.intervals))
        require(
            isinstance(self.intervals, (Shared, Buckets, Relative, Exact)),
            "intervals",
            "Shared(low, high), Buckets(edges), Relative(x) or Exact()",
            self.intervals,
        )
        self.intervals.check(*output_support(w))
        if self.max_steps is not None:
            require_int(self.max_steps, "max_steps", lo=1, hi=INT_LIMIT)

    @property
    def n(self) -> int:
        return int(self.workload.num_requests)

    @property
    def max_upper(self) -> int:
        """The largest u_i any job can get (tokens)."""
        return int(self.intervals.max_upper(int(self.workload.max_output)))

    @property
    def steps(self) -> int:
        if self.max_steps is not None:
            return self.max_steps
        return min(INT_LIMIT, 4 * self.n * self.max_upper + 64)


def check_capacity(M: int, n: int, need: int) -> int:
    """M validated against the jobs: every job fits alone at its upper bound (need = the
    largest s + u), and n * M < 2^31 keeps every future-memory sum exact in int32."""
    M = require_int(M, "capacity_tokens (M)", lo=2, hi=INT_LIMIT // 4)
    require(
        need <= M,
        "capacity_tokens (M)",
        f"at least the largest s + u ({need}), so that every job fits alone at its upper bound",
        M,
    )
    require(
        (n + 2) * M < 2**31,
        "capacity_tokens (M)",
        f"< 2^31 / (n + 2) = {2**31 // (n + 2)} for n = {n} jobs (future-memory sums stay exact in int32)",
        M,
    )
    return M


class IntervalParams(OfflineParams):
    """Traced params of the interval engine: the batch model's (`OfflineParams`: M, the
    step-time model, a padded run's own size) and start_q, an int32 scalar in [0, START_STEPS]:
    A_min and A_l start job i at l_i + floor(start_q (u_i - l_i) / START_STEPS) tokens
    (`start_fraction` = start_q / START_STEPS; 0 is the paper's l_i). The offline engine keeps
    `OfflineParams`, so its programs and results are untouched."""

    start_q: jnp.ndarray = eqx.field(kw_only=True)


def with_start(params: OfflineParams, start_q: int) -> IntervalParams:
    """`params`' M and step-time model (an `OfflineParams`, e.g. from `instance_params`, or an
    `IntervalParams`) with start_q (int in [0, START_STEPS], from `start_quanta`)."""
    base = {f.name: getattr(params, f.name) for f in dataclasses.fields(OfflineParams)}
    return IntervalParams(**base, start_q=jnp.int32(start_q))


def start_quanta(start_fraction: float, max_upper: int) -> int:
    """q = round(start_fraction * START_STEPS), an int in [0, START_STEPS], for jobs whose upper
    bounds are at most `max_upper` tokens. One ConfigError for a fraction outside [0, 1] (NaN
    included), or, when q > 0, for intervals so wide that (u - l) START_STEPS could reach 2^31
    (the engine computes q (u - l) in int32)."""
    theta = require_float(start_fraction, "start_fraction", lo=0.0, hi=1.0)
    q = round(theta * START_STEPS)
    width = max_upper - 1  # l >= 1: the widest interval [1, u_max]
    require(
        q == 0 or width * START_STEPS < 2**31,
        "start_fraction",
        f"0 for intervals as wide as u - l = {width} tokens (q (u - l) must stay below 2^31 in "
        f"int32, which needs u - l < {2**31 // START_STEPS})",
        start_fraction,
    )
    return q


def make_params(
    config: IntervalConfig,
    *,
    capacity_tokens: int = PAPER_CAPACITY_TOKENS,
    step_const_s: float = 1.0,
    per_decode_s: float = 0.0,
    per_prefill_token_s: float = 0.0,
    per_kv_token_s: float = 0.0,
    start_fraction: float = 0.0,
) -> IntervalParams:
    """Validated params: the KV limit M (tokens; default the paper's 16,492), the step-time
    model of `jaxsched.batchmodel` (keywords step_const_s, per_decode_s, per_prefill_token_s,
    per_kv_token_s; default unit steps) and start_fraction theta in [0, 1]: A_min and A_l start
    each job at l + floor(round(1024 theta) (u - l) / 1024) instead of l (default 0: the
    paper's algorithms; 1: at u, A_max's estimate). start_fraction set for a policy that does
    not read it (the readers are `POLICIES`' options) is refused, as the offline engine
    refuses its solver options."""
    if not isinstance(config, IntervalConfig):
        raise ConfigError(f"config must be an IntervalConfig, got {type(config).__name__}")
    need = int(config.workload.max_prompt) + config.max_upper
    check_capacity(capacity_tokens, config.n, need)
    q = start_quanta(start_fraction, config.max_upper)
    given = changed_keywords(make_params, {"start_fraction": start_fraction})
    refuse_ignored(given, {"policy": config.policy}, reads_from(POLICIES, "policy"))
    base = instance_params(
        capacity_tokens,
        step_const_s=step_const_s,
        per_decode_s=per_decode_s,
        per_prefill_token_s=per_prefill_token_s,
        per_kv_token_s=per_kv_token_s,
    )
    return with_start(base, q)
