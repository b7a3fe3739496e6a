"""The budget engine's registry: its batch policies, with their docs and the Config / Params
fields each reads, paper 004's experiments and the sweepable fields; free of JAX
(`jaxsched.registry`).

The policy signature of the token-budget family (budget, and every agent of network) is
`policy(config, params, view) -> (dp int32[Q], dd bool[Q])` (`jaxsched/budget/policies.py`).
Adding a built-in policy: the function in `policies.py`, one `builtin(...)` line here, its
plain-Python version in `tests/reference/budget.py`. From user code:
`jaxsched.registry.register_policy("budget", ...)`.
"""

from __future__ import annotations

from ..registry import Registry, builtin

POLICIES = Registry("budget", "policy")
_P = "jaxsched.budget.policies:"
# `admission_cap` (what M caps: one batch's requests, or the started and unfinished ones) is read
# by every policy that serves the queue FCFS across types; `priority` serves by type and leaves
# the cap at "batch" (docs/budget-semantics.md §3).
_CAP = ("admission_cap",)
builtin(POLICIES, "sarathi", _P + "sarathi", "Sarathi-Serve: decode first, chunked prefill (work-conserving)", _CAP)
builtin(
    POLICIES,
    "orca",
    _P + "orca",
    "Orca: prefill first, mixed batches once prefills are loaded (work-conserving)",
    _CAP,
)
builtin(POLICIES, "vllm", _P + "vllm", "vanilla vLLM: prefill first, no mixed batches", ("prefill_cap", *_CAP))
builtin(POLICIES, "ft", _P + "ft", "FasterTransformer: decode first, request-level batching", ("prefill_cap", *_CAP))
builtin(
    POLICIES,
    "wc",
    _P + "wc",
    "generic work-conserving (K_p, K_d)-FCFS",
    ("K_p", "K_d", "phase_first", "inner_order", *_CAP),
)
builtin(POLICIES, "priority", _P + "priority", "strict type priority, sarathi within a type", ("type_order",))

# `jaxsched budget experiment NAME` (`jaxsched check stability` runs `stability`):
# `jaxsched.budget.experiments.EXPERIMENTS`, one function each.
EXPERIMENTS = Registry("budget", "experiment")
_X = "jaxsched.budget.experiments:"
builtin(
    EXPERIMENTS,
    "stability",
    _X + "stability",
    "Fig. 1 and Theorem 1: growth of the tokens in system against the load, per policy",
)
builtin(
    EXPERIMENTS,
    "two_type",
    _X + "two_type",
    "section 4.2 and Prop. 2(a): drain time from a backlog against the fluid model",
)
builtin(
    EXPERIMENTS, "fig9", _X + "fig9", "Fig. 9: Sarathi's token budget against TTFT and end-to-end latency (Azure trace)"
)

# What a sweep may vary (`jaxsched sweep --help`): the budget engine's `config_fields()` and
# `params_fields()`, which a test checks against these.
CONFIG_FIELDS = (
    "workload",
    "policy",
    "horizon_s",
    "burn_in_s",
    "num_requests",
    "table_size",
    "arrivals_per_step",
    "max_steps",
    "hist_octave_bits",
    "snapshots",
    "attention",
    "attention_prefix",
    "phase_first",
    "inner_order",
    "type_order",
    "record_members",
    "initial_requests",
    "drain_fraction",
    "arrival_mode",
    "memory_overhead",
    "batch_time",
    "admission_cap",
    "grow_table",
)
PARAMS_FIELDS = (
    "rates",
    "budget",
    "max_requests",
    "prefill_cap",
    "K_p",
    "K_d",
    "c_s",
    "a_s_per_token",
    "b0",
    "alpha",
    "beta",
    "period_s",
    "rate_scale",
    "kv_limit_tokens",
    "swap_a1_s_per_token",
    "swap_a2_s",
    "recompute_b1_s_per_token2",
    "recompute_b2_s",
    "prefill_s_per_token",
    "decode_s_per_token",
    "context_s_per_token",
)

# `jaxsched budget run --lengths`: the law of each request's prefill and decode tokens around
# --prompt / --decode (`jaxsched.workload` length laws).
LENGTH_LAWS = Registry("budget", "length law")
builtin(LENGTH_LAWS, "constant", "jaxsched.workload:Constant", "every request exactly --prompt / --decode tokens")
builtin(LENGTH_LAWS, "poisson", "jaxsched.workload:Poisson", "Poisson tokens with means --prompt / --decode")
