"""The network engine's registry: every agent's batch policy (the token-budget family's, from
`jaxsched.budget.registry`, with the per-type option named `type_orders` here), the routers
of the parallel topology, paper 004 §4's experiments and the sweepable fields; free of JAX
(`jaxsched.registry`).

Router signature: `router(config, params, agents, seed, request_id, num_agents) -> int32
agent` (`jaxsched/network/routers.py`). Adding a router: the function in `routers.py`, one
`builtin(...)` line in ROUTERS here (with the make_params keywords it reads as its options),
its plain-Python version in `tests/reference/network.py`.
"""

from __future__ import annotations

from ..budget.registry import POLICIES as BUDGET_POLICIES
from ..registry import Registry, builtin

# Options a budget policy reads under another name in NetworkConfig (one order per agent), and
# those the network's agents do not have (they cap one batch's requests: admission_cap "batch").
OPTION_NAMES = {"type_order": "type_orders"}
BUDGET_ONLY = ("admission_cap",)

POLICIES = Registry("network", "policy")
for _name, _entry in BUDGET_POLICIES.items():
    _options = tuple(OPTION_NAMES.get(o, o) for o in _entry.options if o not in BUDGET_ONLY)
    builtin(POLICIES, _name, _entry.target, _entry.doc, _options)

# Options read by some topologies only (NetworkConfig refuses them at a non-default value
# elsewhere; make_params its keywords): the router, and the weights of router `weighted`, pick
# the agent of an arrival in the parallel topology.
TOPOLOGY_OPTIONS = {"router": ("parallel",), "router_weights": ("parallel",)}

ROUTERS = Registry("network", "router")
_R = "jaxsched.network.routers:"
builtin(ROUTERS, "random", _R + "random", "a uniformly random agent per request")
builtin(
    ROUTERS,
    "fewest_requests",
    _R + "fewest_requests",
    "the agent with the fewest tasks not leaving (ties: lowest index)",
)
builtin(
    ROUTERS, "fewest_tokens", _R + "fewest_tokens", "the agent with the fewest unprocessed tokens (ties: lowest index)"
)
builtin(
    ROUTERS,
    "weighted",
    _R + "weighted",
    "agent k with probability w_k / sum(w), w = router_weights (default: equal)",
    ("router_weights",),
)

# `jaxsched network experiment NAME`: `jaxsched.network.experiments.EXPERIMENTS`, one function each.
EXPERIMENTS = Registry("network", "experiment")
_X = "jaxsched.network.experiments:"
builtin(EXPERIMENTS, "routing", _X + "routing", "Prop. 1: K engines behind each router, growth against the load")
builtin(
    EXPERIMENTS,
    "fork_join",
    _X + "fork_join",
    "Conjecture 1: the fork-join network below and above its per-agent condition",
)
builtin(
    EXPERIMENTS,
    "rybko_stolyar",
    _X + "rybko_stolyar",
    "Fig. 8: unstable and stable priorities in the Rybko-Stolyar network",
)

# What a sweep may vary (`jaxsched sweep --help`): the network engine's `config_fields()` and
# `params_fields()`, which a test checks against these.
CONFIG_FIELDS = (
    "topology",
    "agents",
    "workload",
    "routes",
    "router",
    "policy",
    "type_orders",
    "phase_first",
    "inner_order",
    "horizon_s",
    "burn_in_s",
    "num_requests",
    "table_size",
    "max_steps",
    "hist_octave_bits",
    "snapshots",
    "record_members",
    "grow_table",
)
PARAMS_FIELDS = (
    "rates",
    "budget",
    "max_requests",
    "prefill_cap",
    "K_p",
    "K_d",
    "c_s",
    "a_s_per_token",
    "b0",
    "period_s",
    "router_weights",
)

# `jaxsched network run --topology`: the two networks the command builds (NetworkConfig's own
# topologies are parallel, routes and fork_join; rs is a `routes` network).
RUN_TOPOLOGIES = Registry("network", "run topology")
builtin(RUN_TOPOLOGIES, "parallel", "jaxsched.network.config:NetworkConfig", "K engines behind --router")
builtin(
    RUN_TOPOLOGIES,
    "rs",
    "jaxsched.network.experiments:rs_config",
    "the Rybko-Stolyar network of Fig. 8 (b = 768, one slot per batch; --load per agent)",
)

# `jaxsched network run --priority` (rs): the agents' type priorities
# (`jaxsched.network.experiments.RS_ORDERS`).
RS_PRIORITIES = Registry("network", "rs priority")
builtin(
    RS_PRIORITIES,
    "unstable",
    "jaxsched.network.experiments:RS_ORDERS",
    "priority to the long exiting class at both agents (the unstable order)",
)
builtin(RS_PRIORITIES, "stable", "jaxsched.network.experiments:RS_ORDERS", "the swapped priorities (stable)")
