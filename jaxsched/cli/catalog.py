"""Names and defaults that the command line's help lists, without importing JAX, that are not
yet in a registry: experiments, workloads, kernels, defaults and sweepable fields.

`--help` must answer at once, so the parsers cannot import the engines (which import JAX).
Policy and router names come from the engines' JAX-free registries (`jaxsched/<engine>/
registry.py`); the rest is listed here, and tests/core/test_cli_surface.py checks every entry
against the live modules, so it cannot drift from the engines.
"""
from __future__ import annotations

# kernels.BFIO_VARIANTS (dp's policies: jaxsched.dp.registry)
BFIO_KERNELS = ("vf", "vf_ls", "vf_ls_chain", "ms_ls", "ms_ls_chain", "ms_lf", "round_lpt", "window")
DP_WORKLOADS = ("burstgpt_like", "bivariate_normal")
DP_PREDICTORS = ("oracle", "noisy", "classifier")
DP_SEMANTICS = ("paper", "theory")

# jaxsched.kv.experiments.EXPERIMENTS, jaxsched.kv.config defaults (policies: jaxsched.kv.registry)
KV_EXPERIMENTS = ("e1", "e2", "e3", "e4")
KV_CAPACITY_RULES = ("mstar", "mpi", "hardware")
KV_DEFAULT_CAPACITY_TOKENS = 110_000
KV_DEFAULT_D0_S = 0.01
KV_DEFAULT_D1_S_PER_TOKEN = 1e-6

# jaxsched.offline experiments, workloads.named, compare.STEP_MODELS
OFFLINE_EXPERIMENTS = ("example1", "example2", "lemma1", "opt", "lower_bound", "ec42", "real")
OFFLINE_WORKLOADS = ("uniform", "normal", "binomial", "exponential", "mixed", "lmsys", "arxiv",
                     "mix", "azure")
OFFLINE_STEP_MODELS = ("unit", "linear")

# jaxsched.interval experiments, workloads.NAMES, intervals
INTERVAL_EXPERIMENTS = ("examples", "cor48", "two_point", "geometric", "lower_bound", "section6")
INTERVAL_WORKLOADS = ("lmsys",)
INTERVAL_KINDS = ("shared", "buckets", "relative", "exact")

# jaxsched.budget experiments
BUDGET_EXPERIMENTS = ("stability", "two_type", "fig9")

# jaxsched.network experiments
NETWORK_EXPERIMENTS = ("routing", "fork_join", "rybko_stolyar")

# Sweepable names per engine, for `jaxsched sweep --help` only: (Config fields, make_params
# keywords) of `Engine.config_fields()` and `Engine.params_fields()`. The command itself checks
# names against the live engine, so an engine missing here still sweeps.
SWEEP_FIELDS = {
    "dp": (("num_workers", "slots_per_worker", "pool_size", "horizon", "policy", "semantics",
            "predictor", "num_steps", "burn_in_steps", "workload", "lookahead_decay",
            "bfio_kernel", "delay_bins", "drift"),
           ("step_const_s", "per_token_s", "noise_lo", "noise_hi", "fp_rate", "fn_rate",
            "idle_power_w", "max_power_w", "power_exponent")),
    "kv": (("prefill_tokens", "decode_tokens", "policy", "num_requests", "horizon_s", "end_mode",
            "table_size", "arrivals_per_step", "max_epochs", "hist_octave_bits", "segment_bounds",
            "prefill_price"),
           ("rates", "d0_s", "d1_s_per_token", "capacity_tokens", "thresholds", "period_s",
            "check_stability", "batch_limit", "token_limit", "d1_prefill_s_per_token",
            "burn_in_requests", "batch_size_cap", "max_tokens_in_batch", "block_size",
            "watermark", "chunk_size")),
    "offline": (("workload", "policy", "max_steps", "num_requests", "dp_width", "epsilon",
                 "scale_b", "quantile", "sample_fraction"),
                ("capacity_tokens", "step_const_s", "per_decode_s", "per_prefill_token_s",
                 "per_kv_token_s")),
    "interval": (("workload", "policy", "intervals", "num_requests", "eviction_key", "amax_order",
                  "max_steps"),
                 ("capacity_tokens", "step_const_s", "per_decode_s", "per_prefill_token_s",
                  "per_kv_token_s")),
    "budget": (("workload", "policy", "horizon_s", "burn_in_s", "num_requests", "table_size",
                "arrivals_per_step", "max_steps", "hist_octave_bits", "snapshots", "attention",
                "attention_prefix", "phase_first", "inner_order", "type_order", "record_members",
                "initial_requests", "drain_fraction", "arrival_mode", "memory_overhead"),
               ("rates", "budget", "max_requests", "prefill_cap", "K_p", "K_d", "c_s",
                "a_s_per_token", "b0", "alpha", "beta", "period_s", "rate_scale",
                "kv_limit_tokens", "swap_a1_s_per_token", "swap_a2_s",
                "recompute_b1_s_per_token2", "recompute_b2_s")),
    "network": (("topology", "agents", "workload", "routes", "router", "policy", "type_orders",
                 "phase_first", "inner_order", "horizon_s", "burn_in_s", "num_requests",
                 "table_size", "max_steps", "hist_octave_bits", "snapshots", "record_members"),
                ("rates", "budget", "max_requests", "prefill_cap", "K_p", "K_d", "c_s",
                 "a_s_per_token", "b0", "period_s")),
}
