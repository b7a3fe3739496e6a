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

Every name is imported on first use (the registry is JAX-free).
"""

from __future__ import annotations

from ..lazy import lazy_exports

_EXPORTS = {
    "Results": "..run:Results",
    "simulate": "..run:simulate",
    "BudgetConfig": ".config:BudgetConfig",
    "BudgetParams": ".config:BudgetParams",
    "capacity_tokens_per_s": ".config:capacity_tokens_per_s",
    "make_params": ".config:make_params",
    "mean_lengths": ".config:mean_lengths",
    "offered_load": ".config:offered_load",
    "rates_for_load": ".config:rates_for_load",
    "trace_load": ".config:trace_load",
    "trace_token_rate": ".config:trace_token_rate",
    "ENGINE": ".engine:ENGINE",
    "batches": ".engine:batches",
    "done": ".engine:done",
    "init": ".engine:init",
    "request_lengths": ".engine:request_lengths",
    "step": ".engine:step",
    "METRICS": ".metrics:METRICS",
    "POLICIES": ".registry:POLICIES",
    "BudgetState": ".state:BudgetState",
    "request_stream": ".stream:request_stream",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
