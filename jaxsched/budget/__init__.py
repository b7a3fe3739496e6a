"""budget: one LLM engine whose batches carry at most b tokens (paper 004, Li, Dai and Peng):
Sarathi-Serve, Orca, vanilla vLLM, FasterTransformer, the work-conserving (K_p, K_d)-FCFS
family and strict type priority, under Poisson arrivals of typed requests in continuous time
(docs/budget-semantics.md).

`BudgetConfig` (static: the request types' length laws, the policy, the horizon),
`make_params` (traced: rates, budget, caps, batch-time constants), `simulate` (the shared
runner), `request_stream` (the requests of a run, for references), `POLICIES` and `METRICS`.
"""
from __future__ import annotations

from ..run import Results, simulate
from .config import (BudgetConfig, BudgetParams, capacity_tokens_per_s, make_params, mean_lengths,
                     offered_load, rates_for_load)
from .engine import ENGINE, batches, done, init, request_lengths, step
from .metrics import METRICS
from .policies import POLICIES
from .state import BudgetState
from .stream import request_stream

__all__ = ["BudgetConfig", "BudgetParams", "BudgetState", "make_params", "simulate", "Results",
           "ENGINE", "init", "step", "done", "batches", "request_lengths", "request_stream",
           "capacity_tokens_per_s", "mean_lengths", "offered_load", "rates_for_load", "METRICS",
           "POLICIES"]
