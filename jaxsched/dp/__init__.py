"""dp: G data-parallel decode workers with B sticky slots each, behind a per-step barrier (the
BF-IO paper, seeds/000). Every step lasts as long as the most loaded worker.

`DPConfig` (static) and `make_params` (traced `DPParams`, the paper's defaults), `simulate`
(the shared runner, `jaxsched.run.simulate`), the policy registry `POLICIES`, the metric table
`METRICS`. The exact contract is docs/dp-semantics.md; `experiments` and `theorems` are the
drivers of the paper's tables, figures and theorem checks.
"""

from __future__ import annotations

from ..lazy import lazy_exports

_EXPORTS = {
    "DPConfig": ".config:DPConfig",
    "DPParams": ".config:DPParams",
    "make_params": ".config:make_params",
    "ENGINE": ".engine:ENGINE",
    "init": ".engine:init",
    "step": ".engine:step",
    "done": ".engine:done",
    "projected_loads": ".engine:projected_loads",
    "METRICS": ".metrics:METRICS",
    "finalize": ".metrics:finalize",
    "Observation": ".policies:Observation",
    "POLICIES": ".registry:POLICIES",
    "DPState": ".state:DPState",
    "Pool": ".state:Pool",
    "Slots": ".state:Slots",
    "simulate": "..run:simulate",
    "Results": "..run:Results",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
