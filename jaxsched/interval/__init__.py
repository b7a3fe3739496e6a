"""interval: n jobs at t = 0 on one worker whose KV cache holds M tokens, with hidden output
lengths and predicted intervals [l_i, u_i] (paper 003): H-SF, A_max, A_min, A_l and A_random
under one step loop with cancellation (docs/interval-semantics.md).

`IntervalConfig` (static: the job batch, the intervals, the policy and its options),
`make_params` (traced `IntervalParams`: M and the step-time model, shared with the offline
engine, and the starting estimate of A_min and A_l), `simulate` (the shared runner),
`execute` (explicit instances), the interval specs, `POLICIES` and `METRICS`; `theory` holds
the paper's formulas.

Every name is imported on first use (the registry is JAX-free).
"""

from __future__ import annotations

from ..lazy import lazy_exports

_EXPORTS = {
    "Results": "..run:Results",
    "simulate": "..run:simulate",
    "IntervalConfig": ".config:IntervalConfig",
    "IntervalParams": ".config:IntervalParams",
    "make_params": ".config:make_params",
    "ENGINE": ".engine:ENGINE",
    "done": ".engine:done",
    "init": ".engine:init",
    "jobs": ".engine:jobs",
    "start": ".engine:start",
    "step": ".engine:step",
    "execute": ".instances:execute",
    "policy_config": ".instances:policy_config",
    "Buckets": ".intervals:Buckets",
    "Exact": ".intervals:Exact",
    "Relative": ".intervals:Relative",
    "Shared": ".intervals:Shared",
    "check_instance": ".intervals:check_instance",
    "METRICS": ".metrics:METRICS",
    "POLICIES": ".registry:POLICIES",
    "IntervalState": ".state:IntervalState",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
