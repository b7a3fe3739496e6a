"""offline: n requests present at t = 0 on one worker whose KV cache holds M tokens (papers
002 and 003): the Phase-2 executor with its future-peak memory check and strict prefix
admission, over an order chosen by a policy (FCFS, MC-SF, MC-SF2; Sorted-F and the LP orders
plug in as orders).

`OfflineConfig` (static: the request batch, the policy) and `make_params` (traced
`OfflineParams`: M and the step-time model; default unit steps), `simulate` (the shared runner),
`POLICIES` and `METRICS`.
"""
from __future__ import annotations

from ..run import Results, simulate
from .config import (LINEAR_STEP_MODEL, PAPER_CAPACITY_TOKENS, UNIT_STEP_MODEL, OfflineConfig,
                     OfflineParams, instance_params, make_params)
from .engine import ENGINE, done, init, jobs, start, step
from .instances import draw, execute, orders
from .metrics import METRICS
from .policies import POLICIES
from .state import OfflineState

__all__ = ["OfflineConfig", "OfflineParams", "OfflineState", "make_params", "simulate", "Results",
           "ENGINE", "init", "start", "step", "done", "jobs", "instance_params", "draw", "orders",
           "execute", "METRICS", "POLICIES", "LINEAR_STEP_MODEL",
           "UNIT_STEP_MODEL", "PAPER_CAPACITY_TOKENS"]
