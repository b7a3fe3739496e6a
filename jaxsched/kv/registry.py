"""The kv engine's registry: its batch policies, with their docs and the Config / Params fields
each reads (KVConfig and make_params validate an option only for the policies that name it),
the WAIT paper's experiments and capacity rules, make_params' default hardware and the
sweepable fields; free of JAX (`jaxsched.registry`).

The policy signature of the kv family is `policy(config, params, view) -> (member bool[Q],
preempt bool[Q], chunk int32[Q])` (`jaxsched/kv/policies.py`). Adding a built-in policy: the
function in `policies.py`, one `builtin(...)` line here, its plain-Python version in
`tests/reference/kv.py`. From user code: `jaxsched.registry.register_policy("kv", ...)`.
"""

from __future__ import annotations

from ..registry import Registry, builtin

POLICIES = Registry("kv", "policy")
_P = "jaxsched.kv.policies:"
builtin(POLICIES, "wait", _P + "wait", "WAIT (Alg. 1): per-type thresholds on the stage-0 queues", ("thresholds",))
builtin(
    POLICIES,
    "nested_wait",
    _P + "nested_wait",
    "Nested WAIT (Alg. 2): per-segment thresholds, memory check",
    ("thresholds", "segment_bounds"),
)
builtin(POLICIES, "fcfs", _P + "fcfs", "FCFS: the longest prefix by arrival that fits in C")
builtin(
    POLICIES,
    "vllm",
    _P + "vllm",
    "vLLM-style: prefill first, batch and token caps, block watermark",
    ("batch_size_cap", "max_tokens_in_batch", "block_size", "watermark", "block_rules"),
)
builtin(
    POLICIES,
    "sarathi",
    _P + "sarathi",
    "Sarathi-style: decodes first, chunked prefills in a token budget",
    ("batch_size_cap", "block_size", "watermark", "chunk_size"),
)

# KVConfig.block_rules, how the vllm policy counts KV blocks (docs/kv-semantics.md §6): "kv",
# the blocks each running request's next token needs; "vidur", the two rules of Vidur's vLLM
# scheduler (the blocks held at admission, one free block at each decode's turn).
BLOCK_RULES = ("kv", "vidur")

# Default hardware of make_params (`jaxsched.kv.config` reads these): the WAIT paper's
# experiments (notes/001.md section 4).
DEFAULT_D0_S = 0.01
DEFAULT_D1_S_PER_TOKEN = 1e-6
DEFAULT_CAPACITY_TOKENS = 110_000

# `jaxsched kv experiment NAME`: E1-E4 (`jaxsched.kv.experiments.EXPERIMENTS`, each run by
# `run_experiment(name)`) and Theorem 1's scaling (`run_scaling`).
EXPERIMENTS = Registry("kv", "experiment")
_X = "jaxsched.kv.experiments:"
builtin(EXPERIMENTS, "e1", _X + "run_experiment", "E1 (Fig. 7): WAIT, low demand")
builtin(EXPERIMENTS, "e2", _X + "run_experiment", "E2 (Fig. 8): WAIT, high demand")
builtin(EXPERIMENTS, "e3", _X + "run_experiment", "E3 (Fig. 11): Nested WAIT, synthetic")
builtin(EXPERIMENTS, "e4", _X + "run_experiment", "E4 (Figs. 12-13): Nested WAIT, clustered real lengths")
builtin(EXPERIMENTS, "scaling", _X + "run_scaling", "Theorem 1: the throughput gap and latency against the horizon T")

# The rules for the KV capacity C of an experiment's point (`capacity_for(exp, load, rule)`;
# `jaxsched.kv.experiments.CAPACITY_RULES` is {name: doc} of these).
CAPACITY_RULES = Registry("kv", "capacity rule")
_C = "jaxsched.kv.experiments:capacity_for"
builtin(CAPACITY_RULES, "mstar", _C, "C = f M*, the fluid memory (6) times capacity_factor f")
builtin(
    CAPACITY_RULES,
    "mpi",
    _C,
    "C = M^pi of the featured policy's thresholds (its memory at the threshold rule with no bound on C)",
)
builtin(
    CAPACITY_RULES,
    "hardware",
    _C,
    f"C = the hardware's capacity_tokens ({DEFAULT_CAPACITY_TOKENS:,}), whatever the load",
)

# What a sweep may vary (`jaxsched sweep --help`): the kv engine's `config_fields()` and
# `params_fields()`, which a test checks against these.
CONFIG_FIELDS = (
    "prefill_tokens",
    "decode_tokens",
    "policy",
    "num_requests",
    "horizon_s",
    "end_mode",
    "table_size",
    "arrivals_per_step",
    "max_steps",
    "hist_octave_bits",
    "segment_bounds",
    "prefill_price",
    "block_rules",
    "grow_table",
)
PARAMS_FIELDS = (
    "rates",
    "d0_s",
    "d1_s_per_token",
    "capacity_tokens",
    "thresholds",
    "period_s",
    "check_stability",
    "batch_limit",
    "token_limit",
    "d1_prefill_s_per_token",
    "burn_in_requests",
    "batch_size_cap",
    "max_tokens_in_batch",
    "block_size",
    "watermark",
    "chunk_size",
)
# Config fields renamed, {old name: new name}: the command line still accepts the old name in
# --set, --axis and --config files (`jaxsched.cli.sweep`); results keys hash the new one.
RENAMED = {"max_epochs": "max_steps"}
