"""The offline engine's registry: its admission orders, with their docs and the Config fields
(solver options) each reads, paper 002's experiments, the named request mixes, the step-time
models and the sweepable fields; free of JAX (`jaxsched.registry`).

The policy signature of the offline family is `fn(config, params, view) -> int32[n]`, a
permutation of the request indices, where `view` is a `jaxsched.offline.policies.Jobs` (s, o
int32[n], the run's seed, the KV limit M, n: the run's own number of requests when padded,
else None; `jaxsched/offline/policies.py`). Adding a built-in order: the function in
`policies.py`, one `builtin(...)` line here, its plain-Python version in
`tests/reference/offline.py`. From user code: `jaxsched.registry.register_policy("offline",
...)`.
"""

from __future__ import annotations

from ..registry import Registry, builtin

POLICIES = Registry("offline", "policy")
_P = "jaxsched.offline.policies:"
builtin(POLICIES, "fcfs", _P + "fcfs", "arrival order: a random permutation per run")
builtin(POLICIES, "mcsf", _P + "mcsf", "MC-SF: shortest output first")
builtin(POLICIES, "mcsf2", _P + "mcsf2", "MC-SF2: smallest s + o first (paper 002, EC.1)")
builtin(POLICIES, "sorted_f_swap", _P + "sorted_f_swap", "Sorted-F, Phase 1 by local swap search (paper 002)")
builtin(POLICIES, "sorted_f_dp", _P + "sorted_f_dp", "Sorted-F, Phase 1 by the exact DP (paper 002)", ("dp_width",))
builtin(
    POLICIES,
    "sorted_f_scaled",
    _P + "sorted_f_scaled",
    "Sorted-F, Phase 1 by the scaled DP (paper 002, Algorithm 3)",
    ("epsilon", "scale_b"),
)
builtin(
    POLICIES,
    "sorted_f_quantile",
    _P + "sorted_f_quantile",
    "Sorted-F, Phase 1 by quantile greedy (paper 002, Algorithm 5)",
    ("quantile", "sample_fraction"),
)

# `jaxsched offline experiment NAME`: `jaxsched.offline.experiments.EXPERIMENTS`, one function each.
EXPERIMENTS = Registry("offline", "experiment")
_X = "jaxsched.offline.experiments:"
for _name, _doc in (
    ("example1", "Example 1 exactly (MC-SF TEL 64, Sorted-F 45) for every algorithm, with OPT"),
    ("example2", "Example 2's ordering rule over a grid of two-batch instances"),
    ("lemma1", "Lemma 1 on every batch of the exact DP, and Theorem 4, on a random family"),
    ("opt", "every algorithm against the exact IP optimum on small instances (bound: 48)"),
    ("lower_bound", "the MC-SF / MC-SF2 lower-bound families of Theorems 1 and EC.1"),
    ("ec42", "section EC.4.2's synthetic experiment beside Table EC.1"),
    ("real", "section 7's real-data experiment (LMSYS/arXiv-like mix, Azure trace)"),
):
    builtin(EXPERIMENTS, _name, _X + _name, _doc)

# Request mixes by name (`OfflineConfig(workload=name)`, `offline run --workload`), each built
# by `jaxsched.offline.workloads.named(name, n)`.
WORKLOADS = Registry("offline", "workload")
_W = "jaxsched.offline.workloads:named"
for _name, _doc in (
    ("uniform", "EC.4.2: s, o uniform on {1..50}; n = 100, M = 100"),
    ("normal", "EC.4.2: s, o rounded normal(25, 8.33) on [1, 50]; n = 100, M = 100"),
    ("binomial", "EC.4.2: s, o binomial(49, 0.5) + 1; n = 100, M = 100"),
    ("exponential", "EC.4.2: s, o rounded exponential(mean 5) on [1, 50]; n = 100, M = 100"),
    ("mixed", "EC.4.2: s an exponential / lognormal mixture, o exponential; n = 200, M = 100"),
    ("lmsys", "section 7: LMSYS-Chat-like lengths (lognormal fitted to the quoted statistics)"),
    ("arxiv", "section 7: arXiv-summarization-like lengths"),
    ("mix", "section 7: 0.8 LMSYS-like and 0.2 arXiv-like requests (the paper's mix)"),
    ("azure", "the Azure LLM inference 2023 conversation trace (a file, not shipped)"),
):
    builtin(WORKLOADS, _name, _W, _doc)

# Step-time models of make_params (`jaxsched.offline.compare.STEP_MODELS`; the interval engine
# shares them): keyword dicts of `jaxsched.batchmodel`.
STEP_MODELS = Registry("offline", "step model")
builtin(
    STEP_MODELS, "unit", "jaxsched.batchmodel:UNIT_STEP_MODEL", "unit steps (the papers' model): times are step counts"
)
builtin(
    STEP_MODELS,
    "linear",
    "jaxsched.batchmodel:LINEAR_STEP_MODEL",
    "a linear step-time model with assumed coefficients (70B model on two A100s)",
)

# What a sweep may vary (`jaxsched sweep --help`): the offline engine's `config_fields()` and
# `params_fields()`, which a test checks against these.
CONFIG_FIELDS = (
    "workload",
    "policy",
    "max_steps",
    "num_requests",
    "dp_width",
    "epsilon",
    "scale_b",
    "quantile",
    "sample_fraction",
    "slots",
)
PARAMS_FIELDS = ("capacity_tokens", "step_const_s", "per_decode_s", "per_prefill_token_s", "per_kv_token_s")
