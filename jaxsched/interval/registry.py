"""The interval engine's registry: the policies of paper 003, with their docs and the Config
fields each reads; free of JAX (`jaxsched.registry`).

A policy of the interval family is a `Rule` (`jaxsched/interval/policies.py`): which estimate
the memory check uses, the waiting order and its ties, the starting estimate, promotion.
Adding a built-in policy: a `Rule` in `policies.py`, one `builtin(...)` line here, its
plain-Python version in `tests/reference/interval.py`.
"""
from __future__ import annotations

from ..registry import Registry, builtin

POLICIES = Registry("interval", "policy")
_P = "jaxsched.interval.policies:"
builtin(POLICIES, "hsf", _P + "HSF", "H-SF (hindsight): true lengths, shortest first")
builtin(POLICIES, "amax", _P + "AMAX", "A_max: every job at its upper bound u_i; never overflows",
        ("amax_order",))
builtin(POLICIES, "amin", _P + "AMIN", "A_min: lower-bound estimates raised on eviction",
        ("eviction_key",))
builtin(POLICIES, "al", _P + "AL", "A_l (promote-l): FIFO at l_i; re-queued at u_i after l_i tokens")
builtin(POLICIES, "arandom", _P + "ARANDOM", "A_random: true lengths, one random permutation")
