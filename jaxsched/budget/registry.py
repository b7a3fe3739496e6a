"""The budget engine's registry: its batch policies, with their docs and the Config / Params
fields each reads; free of JAX (`jaxsched.registry`).

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
builtin(POLICIES, "sarathi", _P + "sarathi",
        "Sarathi-Serve: decode first, chunked prefill (work-conserving)")
builtin(POLICIES, "orca", _P + "orca",
        "Orca: prefill first, mixed batches once prefills are loaded (work-conserving)")
builtin(POLICIES, "vllm", _P + "vllm", "vanilla vLLM: prefill first, no mixed batches",
        ("prefill_cap",))
builtin(POLICIES, "ft", _P + "ft", "FasterTransformer: decode first, request-level batching",
        ("prefill_cap",))
builtin(POLICIES, "wc", _P + "wc", "generic work-conserving (K_p, K_d)-FCFS",
        ("K_p", "K_d", "phase_first", "inner_order"))
builtin(POLICIES, "priority", _P + "priority", "strict type priority, sarathi within a type",
        ("type_order",))
