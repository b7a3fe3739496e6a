"""The network engine's registry: every agent's batch policy (the token-budget family's, from
`jaxsched.budget.registry`, with the per-type option named `type_orders` here) and the routers
of the parallel topology; free of JAX (`jaxsched.registry`).

Router signature: `router(config, agents, seed, request_id, num_agents) -> int32 agent`
(`jaxsched/network/routers.py`). Adding a router: the function in `routers.py`, one
`builtin(...)` line in ROUTERS here, its plain-Python version in `tests/reference/network.py`.
"""
from __future__ import annotations

from ..budget.registry import POLICIES as BUDGET_POLICIES
from ..registry import Registry, builtin

# Options a budget policy reads under another name in NetworkConfig (one order per agent).
OPTION_NAMES = {"type_order": "type_orders"}

POLICIES = Registry("network", "policy")
for _name, _entry in BUDGET_POLICIES.items():
    builtin(POLICIES, _name, _entry.target, _entry.doc,
            tuple(OPTION_NAMES.get(o, o) for o in _entry.options))

ROUTERS = Registry("network", "router")
_R = "jaxsched.network.routers:"
builtin(ROUTERS, "random", _R + "random", "a uniformly random agent per request")
builtin(ROUTERS, "fewest_requests", _R + "fewest_requests",
        "the agent with the fewest tasks not leaving (ties: lowest index)")
builtin(ROUTERS, "fewest_tokens", _R + "fewest_tokens",
        "the agent with the fewest unprocessed tokens (ties: lowest index)")
