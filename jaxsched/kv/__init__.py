"""kv: one inference engine whose KV cache holds at most C tokens (the WAIT paper, seeds/001):
typed requests with Poisson arrivals, iteration time d0 + d1 * tokens, decisions at batch
boundaries.

`KVConfig` (static) and `make_params` (traced `KVParams`; defaults: the paper's hardware and
load 0.5), `simulate` (the shared runner, `jaxsched.run.simulate`; `batches` reads a recorded run's
batches), the policy registry `POLICIES` and the metric table `METRICS`. The exact contract is
docs/kv-semantics.md. The fluid benchmark is `fluid`, the figures `plots`; `experiments` (E1-E4,
Theorem 1's scaling), `relaxed` (a differentiable relaxation), `tune` (its optax tuner) and
`tuning` are the drivers. Every name is imported on first use (`jaxsched.kv.registry` is
JAX-free).
"""

from __future__ import annotations

from ..lazy import lazy_exports

_EXPORTS = {
    "KVConfig": ".config:KVConfig",
    "KVParams": ".config:KVParams",
    "make_params": ".config:make_params",
    "default_rates": ".config:default_rates",
    "ENGINE": ".engine:ENGINE",
    "batches": ".engine:batches",
    "init": ".engine:init",
    "step": ".engine:step",
    "done": ".engine:done",
    "finalize": ".metrics:finalize",
    "METRICS": ".metrics:METRICS",
    "POLICIES": ".registry:POLICIES",
    "simulate": "..run:simulate",
    "Results": "..run:Results",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
