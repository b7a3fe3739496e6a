"""kv: one inference engine whose KV cache holds at most C tokens (the WAIT paper, seeds/001):
typed requests with Poisson arrivals, iteration time d0 + d1 * tokens, decisions at batch
boundaries.

`KVConfig` (static) and `make_params` (traced `KVParams`; defaults: the paper's hardware and
load 0.5), `simulate` (the shared runner, `jaxsched.run.simulate`; `batches` reads a recorded run's
batches), the policy registry `POLICIES` and the metric table `METRICS`. The exact contract is
docs/kv-semantics.md. The fluid benchmark lives in `jaxsched.fluid`; `experiments` (E1-E4,
Theorem 1's scaling), `relaxed` (a differentiable relaxation) and `tuning` are the drivers.
"""
from __future__ import annotations

from ..run import Results, simulate
from .config import KVConfig, KVParams, default_rates, make_params
from .engine import ENGINE, batches, done, finalize, init, step
from .metrics import METRICS
from .policies import POLICIES

__all__ = ["KVConfig", "KVParams", "make_params", "default_rates", "ENGINE", "simulate", "Results",
           "batches", "init", "step", "done", "finalize", "METRICS", "POLICIES"]
