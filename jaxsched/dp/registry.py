"""The dp engine's registry: its policies, with their docs and the fields they read; free of
JAX (`jaxsched.registry`).

The policy signature of the dp family is `policy(obs: Observation, config: DPConfig) ->
(worker int32[R], rank int32[R], rr_pointer int32[])` (`jaxsched/dp/policies.py`). Adding a
built-in policy: the function in `policies.py`, one `builtin(...)` line here, its plain-Python
version in `tests/reference/dp.py` (a test checks that the reference implements every registered
policy). From user code: `jaxsched.registry.register_policy("dp", name, fn, doc, options)`.
"""
from __future__ import annotations

from ..registry import Registry, builtin

POLICIES = Registry("dp", "policy")
_P = "jaxsched.dp.policies:"
builtin(POLICIES, "fcfs", _P + "fcfs",
        "queue order fills workers in index order (the BF-IO experiments' FCFS)")
builtin(POLICIES, "fcfs_alg2", _P + "fcfs_alg2",
        "queue order, to the worker with the most free slots (Alg. 2)")
builtin(POLICIES, "jsq_tokens", _P + "jsq_tokens",
        "queue order, to the least token-loaded worker with a free slot")
builtin(POLICIES, "jsq_count", _P + "jsq_count",
        "queue order, to the worker with the fewest active requests")
builtin(POLICIES, "round_robin", _P + "round_robin",
        "queue order, cyclic pointer over workers with a free slot")
builtin(POLICIES, "bfio", _P + "bfio",
        "BF-IO: balance-future integer optimization (H = 0 kernel or lookahead)",
        ("horizon", "bfio_kernel", "lookahead_decay", "predictor", "noise_lo", "noise_hi",
         "fp_rate", "fn_rate"))
builtin(POLICIES, "power_of_two", _P + "power_of_two",
        "power of two choices: two random workers with a free slot, the less token-loaded")
