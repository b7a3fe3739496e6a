"""offline: n requests present at t = 0 on one worker whose KV cache holds M tokens (papers
002 and 003): the Phase-2 executor with its future-peak memory check and strict prefix
admission, over an order chosen by a policy (FCFS, MC-SF, MC-SF2; Sorted-F and the LP orders
plug in as orders).

`OfflineConfig` (static: the request batch, the policy) and `make_params` (traced
`OfflineParams`: M and the step-time model; default unit steps), `simulate` (the shared runner),
`POLICIES` and `METRICS`.

Every name is imported on first use (the registry is JAX-free).
"""

from __future__ import annotations

from ..lazy import lazy_exports

_EXPORTS = {
    "Results": "..run:Results",
    "simulate": "..run:simulate",
    "LINEAR_STEP_MODEL": ".config:LINEAR_STEP_MODEL",
    "PAPER_CAPACITY_TOKENS": ".config:PAPER_CAPACITY_TOKENS",
    "UNIT_STEP_MODEL": ".config:UNIT_STEP_MODEL",
    "OfflineConfig": ".config:OfflineConfig",
    "OfflineParams": ".config:OfflineParams",
    "instance_params": ".config:instance_params",
    "make_params": ".config:make_params",
    "ENGINE": ".engine:ENGINE",
    "done": ".engine:done",
    "init": ".engine:init",
    "jobs": ".engine:jobs",
    "start": ".engine:start",
    "step": ".engine:step",
    "draw": ".instances:draw",
    "execute": ".instances:execute",
    "orders": ".instances:orders",
    "METRICS": ".metrics:METRICS",
    "POLICIES": ".registry:POLICIES",
    "OfflineState": ".state:OfflineState",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
