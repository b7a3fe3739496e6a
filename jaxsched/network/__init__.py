"""network: K token-budget engines that requests visit (paper 004 §4, Li, Dai and Peng):
engines behind a router (random, fewest requests, fewest tokens; Proposition 1) and agent
networks with fixed routes per request type (the Rybko-Stolyar network of Fig. 8).
Every agent is a `jaxsched.budget` engine: its policies and batch time are reused unchanged
(docs/network-semantics.md).

`NetworkConfig` (static: topology, agents, per-type per-stage length laws, routes or router,
policy), `make_params` (traced: rates and per-agent budget, caps, batch-time constants),
`simulate` (the shared runner), `request_stream` and `stage_lengths` (for references).

Every name is imported on first use (the registry is JAX-free).
"""

from __future__ import annotations

from ..lazy import lazy_exports

_EXPORTS = {
    "Results": "..run:Results",
    "simulate": "..run:simulate",
    "NetworkConfig": ".config:NetworkConfig",
    "NetworkParams": ".config:NetworkParams",
    "agent_loads": ".config:agent_loads",
    "capacities": ".config:capacities",
    "enough_steps": ".config:enough_steps",
    "make_params": ".config:make_params",
    "rates_for_load": ".config:rates_for_load",
    "ENGINE": ".engine:ENGINE",
    "batches": ".engine:batches",
    "done": ".engine:done",
    "init": ".engine:init",
    "stage_lengths": ".engine:stage_lengths",
    "stage_seed": ".engine:stage_seed",
    "step": ".engine:step",
    "METRICS": ".metrics:METRICS",
    "POLICIES": ".registry:POLICIES",
    "ROUTERS": ".registry:ROUTERS",
    "NetworkState": ".state:NetworkState",
    "request_stream": ".stream:request_stream",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
