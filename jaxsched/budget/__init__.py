"""budget: one LLM engine whose batches carry at most b tokens (paper 004, Li, Dai and Peng):
Sarathi-Serve, Orca, vanilla vLLM, FasterTransformer, the work-conserving (K_p, K_d)-FCFS
family and strict type priority, under Poisson arrivals of typed requests or a replayed trace
(`arrival_mode="trace"`: a `read_trace(path, times=True)` trace at a `rate_scale`) in
continuous time (docs/budget-semantics.md).

`BudgetConfig` (static: the request types' length laws, the policy, the horizon),
`make_params` (traced: rates or rate_scale, budget, caps, batch-time constants, the KV limit
and memory-overhead coefficients), `simulate` (the shared runner), `request_stream` (the
requests of a run, for references), `trace_load` (a replay's offered load), `POLICIES` and
`METRICS`.
"""
from __future__ import annotations

from ..run import Results, simulate
from .config import (BudgetConfig, BudgetParams, capacity_tokens_per_s, make_params, mean_lengths,
                     offered_load, rates_for_load, trace_load, trace_token_rate)
from .engine import ENGINE, batches, done, init, request_lengths, step
from .metrics import METRICS
from .policies import POLICIES
from .state import BudgetState
from .stream import request_stream

__all__ = ["BudgetConfig", "BudgetParams", "BudgetState", "make_params", "simulate", "Results",
           "ENGINE", "init", "step", "done", "batches", "request_lengths", "request_stream",
           "capacity_tokens_per_s", "mean_lengths", "offered_load", "rates_for_load", "trace_load",
           "trace_token_rate", "METRICS", "POLICIES"]
