"""The dp engine's registry: its policies, with their docs and the fields they read, BF-IO's
kernels, the named workloads, semantics, predictors and sweepable fields; free of JAX
(`jaxsched.registry`).

The policy signature of the dp family is `policy(config: DPConfig, params: DPParams, obs:
Observation) -> (worker int32[R], rank int32[R], rr_pointer int32[])` (`jaxsched/dp/policies.py`;
config, params, then the engine's view, as in every engine). Adding a built-in policy: the
function in `policies.py`, one `builtin(...)` line here, its plain-Python version in
`tests/reference/dp.py` (a test checks that the reference implements every registered policy).
From user code: `jaxsched.registry.register_policy("dp", name, fn, doc, options)`.
"""

from __future__ import annotations

from ..registry import Registry, builtin

POLICIES = Registry("dp", "policy")
_P = "jaxsched.dp.policies:"
builtin(POLICIES, "fcfs", _P + "fcfs", "queue order fills workers in index order (the BF-IO experiments' FCFS)")
builtin(POLICIES, "fcfs_alg2", _P + "fcfs_alg2", "queue order, to the worker with the most free slots (Alg. 2)")
builtin(POLICIES, "jsq_tokens", _P + "jsq_tokens", "queue order, to the least token-loaded worker with a free slot")
builtin(POLICIES, "jsq_count", _P + "jsq_count", "queue order, to the worker with the fewest active requests")
builtin(POLICIES, "round_robin", _P + "round_robin", "queue order, cyclic pointer over workers with a free slot")
builtin(
    POLICIES,
    "bfio",
    _P + "bfio",
    "BF-IO: balance-future integer optimization (H = 0 kernel or lookahead)",
    ("lookahead_steps", "bfio_kernel", "lookahead_decay", "predictor", "noise_lo", "noise_hi", "fp_rate", "fn_rate"),
)
builtin(
    POLICIES,
    "power_of_two",
    _P + "power_of_two",
    "power of two choices: two random workers with a free slot, the less token-loaded",
)

# BF-IO's H = 0 assignment kernels (`DPConfig.bfio_kernel`, `jaxsched check theorems --kernel`):
# the names of `kernels.BFIO_VARIANTS`, each with the kernel it runs (a test checks the two agree).
KERNELS = Registry("dp", "kernel")
_K = "jaxsched.kernels:"
builtin(KERNELS, "vf", _K + "valley_fill", "valley fill: the per-step IO program's greedy")
builtin(KERNELS, "vf_ls", _K + "local_search", "valley fill, then local search")
builtin(KERNELS, "vf_ls_chain", _K + "local_search", "valley fill, then local search with chained moves")
builtin(KERNELS, "ms_ls", _K + "multi_start", "multi-start local search")
builtin(KERNELS, "ms_ls_chain", _K + "multi_start", "multi-start local search with chained moves")
builtin(KERNELS, "ms_lf", _K + "multi_start_level", "41 starts and level fills: the most exact and the costliest")
builtin(
    KERNELS,
    "round_lpt",
    _K + "round_lpt",
    "round LPT: a round's largest requests dealt out lightest worker first (Theorem 1)",
)
builtin(
    KERNELS,
    "window",
    _K + "window_fill",
    "window fill: each worker takes exactly its free slots, max - min minimized (Theorems 2, 3)",
)

# Request-length workloads of `jaxsched run --workload` and `sweep --workload` (a DPConfig takes
# any workload instance; these are the named synthetic ones), each its constructor.
WORKLOADS = Registry("dp", "workload")
builtin(
    WORKLOADS,
    "burstgpt_like",
    "jaxsched.workload:BurstGPTLike",
    "a parametric stand-in for the BurstGPT trace (the default)",
)
builtin(
    WORKLOADS,
    "bivariate_normal",
    "jaxsched.workload:BivariateNormal",
    "the BF-IO paper's synthetic (prompt, output) generator (its Fig. 4)",
)

# Small closed sets, fixed by the engine's code (DPConfig validates against them):
# semantics "paper" (the BF-IO paper's experiment simulator) or "theory" (the dynamics of its
# proofs; docs/dp-semantics.md); BF-IO's predictor: "oracle" (true output lengths), "noisy"
# (o * U[1 - noise_lo, 1 + noise_hi]) or "classifier" ("finishes within H", fp_rate, fn_rate).
SEMANTICS = ("paper", "theory")
PREDICTORS = ("oracle", "noisy", "classifier")

# What a sweep may vary (`jaxsched sweep --help`): the dp engine's `config_fields()` and
# `params_fields()`, which a test checks against these.
CONFIG_FIELDS = (
    "num_workers",
    "slots_per_worker",
    "pool_size",
    "lookahead_steps",
    "policy",
    "semantics",
    "predictor",
    "num_steps",
    "burn_in_steps",
    "workload",
    "lookahead_decay",
    "bfio_kernel",
    "delay_bins",
    "drift",
)
PARAMS_FIELDS = (
    "step_const_s",
    "per_token_s",
    "noise_lo",
    "noise_hi",
    "fp_rate",
    "fn_rate",
    "idle_power_w",
    "max_power_w",
    "power_exponent",
)
# Config fields renamed, {old name: new name}: the command line still accepts the old name in
# --set, --axis and --config files (`jaxsched.cli.sweep.renamed_fields`); results keys hash the
# new one. `horizon` was BF-IO's lookahead H in decode steps (not the simulated seconds of the
# other engines' `horizon_s`).
RENAMED = {"horizon": "lookahead_steps"}

# `jaxsched reproduce NAME`: the BF-IO paper's table and figures (`jaxsched.dp.experiments`).
REPRODUCTIONS = Registry("dp", "reproduction")
builtin(
    REPRODUCTIONS,
    "table1",
    "jaxsched.dp.experiments:table1_rows",
    "Table 1 on the BurstGPT sample (--trace burstgpt_8000.csv), one run",
)
builtin(REPRODUCTIONS, "fig4", "jaxsched.dp.experiments:fig4_sweep", "Fig. 4: imbalance against the lookahead H")
builtin(REPRODUCTIONS, "noise", "jaxsched.dp.experiments:noise_sweep", "BF-IO(H) under prediction errors")
