"""The interval engine's registry: the policies of paper 003, with their docs and the Config
fields and make_params keywords each reads, the paper's checks and experiments, the job mixes, the interval predictors,
the policies' closed option sets and the sweepable fields; free of JAX (`jaxsched.registry`).

A policy of the interval family is a `Rule` (`jaxsched/interval/policies.py`): which estimate
the memory check uses, the waiting order and its ties, the starting estimate, promotion.
Adding a built-in policy: a `Rule` in `policies.py`, one `builtin(...)` line here, its
plain-Python version in `tests/reference/interval.py`.
"""

from __future__ import annotations

from ..offline.registry import STEP_MODELS as STEP_MODELS  # the batch model's, shared with offline
from ..registry import Registry, builtin

POLICIES = Registry("interval", "policy")
_P = "jaxsched.interval.policies:"
builtin(POLICIES, "hsf", _P + "HSF", "H-SF (hindsight): true lengths, shortest first")
builtin(POLICIES, "amax", _P + "AMAX", "A_max: every job at its upper bound u_i; never overflows", ("amax_order",))
# start_fraction (make_params) moves the starting estimate l_i of A_min and A_l towards u_i.
builtin(
    POLICIES,
    "amin",
    _P + "AMIN",
    "A_min: lower-bound estimates raised on eviction",
    ("eviction_key", "start_fraction"),
)
builtin(
    POLICIES,
    "al",
    _P + "AL",
    "A_l (promote-l): FIFO at l_i; re-queued at u_i after l_i tokens",
    ("start_fraction",),
)
builtin(POLICIES, "arandom", _P + "ARANDOM", "A_random: true lengths, one random permutation")

# A_min's eviction order (`IntervalConfig.eviction_key`): "stale" (the estimate as last updated,
# the paper's literal reading) or "live" (max(estimate, tokens generated)); A_max's waiting
# order with per-job intervals (`amax_order`): "sorted" (ascending u_i) or "random" (Alg. 1).
EVICTION_KEYS = ("stale", "live")
AMAX_ORDERS = ("sorted", "random")

# `jaxsched interval experiment NAME`: `jaxsched.interval.experiments.EXPERIMENTS`, one function each.
EXPERIMENTS = Registry("interval", "experiment")
_X = "jaxsched.interval.experiments:"
for _name, _doc in (
    ("examples", "Examples 3.2 and 8.2 exactly (TEL and schedules)"),
    ("cor48", "Corollary 4.8's lambda_max(A_u, B_u), tr(B_u^-1 A_u) = H_u and Figure 1's fit"),
    ("two_point", "Theorems 5.1 and 5.2 (A_min, A_l on o in {l, u}) beside simulation"),
    ("geometric", "Figure 3 (G(p) and LG(p), Theorem 5.3) beside simulation"),
    ("lower_bound", "Theorem 3.4's construction, its bound, and A_max simulated on it"),
    ("section6", "Experiments 1-3: A_max, A_min, H-SF on LMSYS-like lengths"),
):
    builtin(EXPERIMENTS, _name, _X + _name, _doc)

# Job mixes by name (`IntervalConfig(workload=name)`), each built by
# `jaxsched.interval.workloads.named(name, n)`.
WORKLOADS = Registry("interval", "workload")
builtin(
    WORKLOADS,
    "lmsys",
    "jaxsched.interval.workloads:named",
    "section 6's LMSYS-Chat-1M sample as lognormal marginals (prompts 1-468, outputs 1-883)",
)

# The interval predictors (`IntervalConfig.intervals`, `interval run --intervals`), each its class.
INTERVAL_KINDS = Registry("interval", "interval kind")
_I = "jaxsched.interval.intervals:"
builtin(INTERVAL_KINDS, "shared", _I + "Shared", "one interval [low, high] for every job (Experiment 1)")
builtin(
    INTERVAL_KINDS,
    "buckets",
    _I + "Buckets",
    "disjoint classes; a job gets the class holding its output (Experiment 2)",
)
builtin(INTERVAL_KINDS, "relative", _I + "Relative", "[(1 - x) o, (1 + x) o] (Experiment 3)")
builtin(INTERVAL_KINDS, "exact", _I + "Exact", "l = u = o: a perfect predictor")

# What a sweep may vary (`jaxsched sweep --help`): the interval engine's `config_fields()` and
# `params_fields()`, which a test checks against these.
CONFIG_FIELDS = ("workload", "policy", "intervals", "num_requests", "eviction_key", "amax_order", "max_steps")
PARAMS_FIELDS = (
    "capacity_tokens",
    "step_const_s",
    "per_decode_s",
    "per_prefill_token_s",
    "per_kv_token_s",
    "start_fraction",
)
