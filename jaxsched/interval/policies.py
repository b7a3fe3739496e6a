"""The policies of paper 003, as rules the interval engine applies every step.

A policy is a `Rule` (docs/interval-semantics.md, table "Policies"): which estimate E_i of
each job's output the memory check uses, how the waiting jobs are ordered (a key, then a tie
key drawn afresh each step or fixed for the run), the estimate a job starts with, and whether
jobs are promoted after l tokens (A_l). Overflow handling and admission are shared by all
(`engine.py`): only A_min's optimistic estimates can ever overflow.

- hsf: H-SF (Algorithm 3), the hindsight benchmark: true lengths, shortest first.
- amax: A_max (Algorithm 1): every job at its upper bound u_i, never overflows. With one shared
  interval all jobs tie and the per-step random tie-break samples the batch uniformly, as
  Algorithm 1 does; with per-job intervals the default orders by u_i (H-SF run on u, notes
  §5.6), `amax_order="random"` keeps Algorithm 1's random order.
- amin: A_min (Algorithms 2 and 5): starts every job at l_i (its class's lower end), admits the
  shortest estimates first, evicts on overflow and raises the evicted jobs' estimates.
- al: A_l "promote-l" (Algorithm 6): a FIFO queue at estimate l_i; a job that has produced l_i
  tokens without finishing is cancelled, set to u_i and re-queued at the back.
- arandom: A_random (Algorithm 4, an analysis device): true lengths, one random permutation.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp


@dataclass(frozen=True)
class Rule:
    """How one policy estimates and orders (see the module docstring).

    estimate: the field holding E_i: "o" (true), "high" (u_i) or "est" (the running estimate).
    start: the field est_i starts from: "o", "high" or "low" (l_i, moved start_q / 1024 of the
      way towards u_i by the make_params keyword start_fraction: `engine.start`).
    key: the waiting order's primary key: "o", "high", "est", "qkey" or "none" (all tie).
    fixed_tie: ties by one permutation per run (else redrawn every step).
    promote: A_l's promotion after l_i tokens.
    """

    estimate: str
    start: str
    key: str
    fixed_tie: bool = False
    promote: bool = False

    def __call__(self, state, config) -> tuple[jnp.ndarray, jnp.ndarray]:
        """(E int32[n], waiting-order key int32[n]) of the state."""
        key = self.key
        if key == "high" and config.amax_order == "random":
            key = "none"
        order = jnp.zeros_like(state.o) if key == "none" else getattr(state, key)
        return getattr(state, self.estimate), order


# The rules of the registered policies (`jaxsched/interval/registry.py`).
HSF = Rule("o", "o", "o")
AMAX = Rule("high", "high", "high")
AMIN = Rule("est", "low", "est")
AL = Rule("est", "low", "qkey", fixed_tie=True, promote=True)
ARANDOM = Rule("o", "o", "none", fixed_tie=True)
