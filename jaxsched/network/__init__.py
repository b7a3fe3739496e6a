"""network: K token-budget engines that requests visit (paper 004 §4, Li, Dai and Peng):
engines behind a router (random, fewest requests, fewest tokens; Proposition 1) and agent
networks with fixed routes per request type (the Rybko-Stolyar network of Fig. 8).
Every agent is a `jaxsched.budget` engine: its policies and batch time are reused unchanged
(docs/network-semantics.md).

`NetworkConfig` (static: topology, agents, per-type per-stage length laws, routes or router,
policy), `make_params` (traced: rates and per-agent budget, caps, batch-time constants),
`simulate` (the shared runner), `request_stream` and `stage_lengths` (for references).
"""
from __future__ import annotations

from ..run import Results, simulate
from .config import (NetworkConfig, NetworkParams, agent_loads, capacities, enough_steps,
                     make_params, rates_for_load)
from .engine import ENGINE, batches, done, init, stage_lengths, stage_seed, step
from .metrics import METRICS
from .routers import ROUTERS
from .state import NetworkState
from .stream import request_stream

__all__ = ["NetworkConfig", "NetworkParams", "NetworkState", "make_params", "enough_steps",
           "simulate", "Results", "ENGINE", "init", "step", "done", "batches", "stage_lengths",
           "stage_seed", "request_stream", "agent_loads", "capacities", "rates_for_load",
           "METRICS", "ROUTERS"]
