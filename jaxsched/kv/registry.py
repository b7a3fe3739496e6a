"""The kv engine's registry: its batch policies, with their docs and the Config / Params fields
each reads (KVConfig and make_params validate an option only for the policies that name it);
free of JAX (`jaxsched.registry`).

The policy signature of the kv family is `policy(config, params, view) -> (member bool[Q],
preempt bool[Q], chunk int32[Q])` (`jaxsched/kv/policies.py`). Adding a built-in policy: the
function in `policies.py`, one `builtin(...)` line here, its plain-Python version in
`tests/reference/kv.py`. From user code: `jaxsched.registry.register_policy("kv", ...)`.
"""
from __future__ import annotations

from ..registry import Registry, builtin

POLICIES = Registry("kv", "policy")
_P = "jaxsched.kv.policies:"
builtin(POLICIES, "wait", _P + "wait",
        "WAIT (Alg. 1): per-type thresholds on the stage-0 queues", ("thresholds",))
builtin(POLICIES, "nested_wait", _P + "nested_wait",
        "Nested WAIT (Alg. 2): per-segment thresholds, memory check",
        ("thresholds", "segment_bounds"))
builtin(POLICIES, "fcfs", _P + "fcfs", "FCFS: the longest prefix by arrival that fits in C")
builtin(POLICIES, "vllm", _P + "vllm",
        "vLLM-style: prefill first, batch and token caps, block watermark",
        ("batch_size_cap", "max_tokens_in_batch", "block_size", "watermark"))
builtin(POLICIES, "sarathi", _P + "sarathi",
        "Sarathi-style: decodes first, chunked prefills in a token budget",
        ("batch_size_cap", "block_size", "watermark", "chunk_size"))
