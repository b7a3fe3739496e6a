"""dp: G data-parallel decode workers with B sticky slots each, behind a per-step barrier (the
BF-IO paper, seeds/000). Every step lasts as long as the most loaded worker.

`DPConfig` (static) and `make_params` (traced `DPParams`, the paper's defaults), `simulate`
(the shared runner, `jaxsched.run.simulate`), the policy registry `POLICIES`, the metric table
`METRICS`. The exact contract is docs/dp-semantics.md; `experiments` and `theorems` are the
drivers of the paper's tables, figures and theorem checks.
"""
from __future__ import annotations

from ..run import Results, simulate
from .config import DPConfig, DPParams, make_params
from .engine import ENGINE, done, init, projected_loads, step
from .metrics import METRICS, finalize
from .policies import POLICIES, Observation
from .state import DPState, Pool, Slots

__all__ = ["DPConfig", "DPParams", "make_params", "ENGINE", "simulate", "Results", "init", "step",
           "done", "finalize", "projected_loads", "METRICS", "POLICIES", "Observation", "DPState",
           "Pool", "Slots"]
