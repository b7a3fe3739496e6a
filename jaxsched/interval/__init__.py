"""interval: n jobs at t = 0 on one worker whose KV cache holds M tokens, with hidden output
lengths and predicted intervals [l_i, u_i] (paper 003): H-SF, A_max, A_min, A_l and A_random
under one step loop with cancellation (docs/interval-semantics.md).

`IntervalConfig` (static: the job batch, the intervals, the policy and its options),
`make_params` (traced `OfflineParams`: M and the step-time model, shared with the offline
engine), `simulate` (the shared runner), `execute` (explicit instances), the interval specs,
`POLICIES` and `METRICS`; `theory` holds the paper's formulas.
"""
from __future__ import annotations

from ..run import Results, simulate
from .config import IntervalConfig, make_params
from .engine import ENGINE, done, init, jobs, start, step
from .instances import execute, policy_config
from .intervals import Buckets, Exact, Relative, Shared, check_instance
from .metrics import METRICS
from .policies import POLICIES
from .state import IntervalState

__all__ = ["IntervalConfig", "IntervalState", "make_params", "simulate", "Results", "ENGINE",
           "init", "start", "step", "done", "jobs", "execute", "policy_config", "Buckets",
           "Exact", "Relative", "Shared", "check_instance", "METRICS", "POLICIES"]
