"""The offline engine's registry: its admission orders, with their docs and the Config fields
(solver options) each reads; free of JAX (`jaxsched.registry`).

The policy signature of the offline family is `fn(s, o, seed, M, config, n=None) -> int32[n]`,
a permutation of the request indices (`jaxsched/offline/policies.py`). Adding a built-in
order: the function in `policies.py`, one `builtin(...)` line here, its plain-Python version in
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
builtin(POLICIES, "sorted_f_swap", _P + "sorted_f_swap",
        "Sorted-F, Phase 1 by local swap search (paper 002)")
builtin(POLICIES, "sorted_f_dp", _P + "sorted_f_dp",
        "Sorted-F, Phase 1 by the exact DP (paper 002)", ("dp_width",))
builtin(POLICIES, "sorted_f_scaled", _P + "sorted_f_scaled",
        "Sorted-F, Phase 1 by the scaled DP (paper 002, Algorithm 3)", ("epsilon", "scale_b"))
builtin(POLICIES, "sorted_f_quantile", _P + "sorted_f_quantile",
        "Sorted-F, Phase 1 by quantile greedy (paper 002, Algorithm 5)",
        ("quantile", "sample_fraction"))
