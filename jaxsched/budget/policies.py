"""Batch policies of the budget engine, looked up by name (docs/budget-semantics.md §3).

Every policy has one signature: `policy(config, params, view) -> (dp, dd)`: dp (int32[Q]) the
prefill tokens each request loads in this batch, dd (bool[Q]) whether it loads one decode
token. FCFS orders are by entry number, computed on the ring with `kernels.prefix_by_id` (O(Q),
no sort); only `wc` with inner_order="srpt" sorts. Policies are built from four phase
primitives (`decode_phase`, `chunk_phase`, `srpt_chunk_phase`, `whole_phase`) that consume a
remaining budget and request count, so adding a policy takes a function here and one line in
`jaxsched/budget/registry.py` naming
the options it reads. `admitted` applies the option `admission_cap` (what M caps: the requests
of one batch, or the requests started and unfinished) to the prefilling requests a policy may
serve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..kernels import prefix_by_id

if TYPE_CHECKING:  # the config validates policy names (registry.POLICIES)
    from .config import BudgetConfig, BudgetParams

_BIG = np.int32(2**31 - 1)


class View(eqx.Module):
    """What a policy sees at a decision epoch (arrays [Q] over the ring's slots).

    valid: bool, occupied slots. p: int32 prefill tokens not yet loaded. type: int32 z_i.
    entry: int32 entry numbers (FCFS order). base: int32 slot of the oldest possible entry.
    started: bool, the slot's request has loaded some of its prefill (p < v_p; read on valid
    slots only), or None where the engine does not say: then only admission_cap "batch" runs
    (`admitted`).
    """

    valid: jnp.ndarray
    p: jnp.ndarray
    type: jnp.ndarray
    entry: jnp.ndarray
    base: jnp.ndarray
    started: jnp.ndarray | None = None

    @property
    def decoding(self) -> jnp.ndarray:
        return self.valid & (self.p == 0)

    @property
    def prefilling(self) -> jnp.ndarray:
        return self.valid & (self.p > 0)

    def older(self, mask: jnp.ndarray) -> jnp.ndarray:
        """int32[Q]: how many `mask`ed requests entered before each slot's request."""
        return prefix_by_id(mask.astype(jnp.int32), self.base)


class Left(eqx.Module):
    """What the phases before have left of the batch: tokens (budget) and requests (M)."""

    tokens: jnp.ndarray
    requests: jnp.ndarray


def decode_phase(view: View, eligible: jnp.ndarray, left: Left, limit=_BIG):
    """One decode token for each of the oldest `eligible` requests, at most min(tokens,
    requests, limit) of them. Returns (dd bool[Q], what is left)."""
    k = jnp.minimum(jnp.minimum(left.tokens, left.requests), limit)
    dd = eligible & (view.older(eligible) < k)
    n = jnp.sum(dd, dtype=jnp.int32)
    return dd, Left(left.tokens - n, left.requests - n)


def _taken(dp: jnp.ndarray, left: Left) -> Left:
    return Left(left.tokens - jnp.sum(dp, dtype=jnp.int32), left.requests - jnp.sum(dp > 0, dtype=jnp.int32))


def chunk_phase(view: View, eligible: jnp.ndarray, left: Left):
    """Prefill chunks FCFS over the `eligible` requests: each takes min(p_i, tokens left after
    the older ones), the last one chunked; at most `left.requests` requests take tokens.
    Returns (dp int32[Q], what is left)."""
    rem = jnp.where(eligible, view.p, 0)
    dp = jnp.clip(left.tokens - prefix_by_id(rem, view.base), 0, rem)
    take = dp > 0
    dp = jnp.where(take & (view.older(take) < left.requests), dp, 0)
    return dp, _taken(dp, left)


def srpt_chunk_phase(view: View, eligible: jnp.ndarray, left: Left):
    """As `chunk_phase` in ascending remaining prefill p_i (ties by entry): one sort."""
    Q = view.p.shape[0]
    key = jnp.where(eligible, view.p, _BIG)
    tie = jnp.where(eligible, view.entry, _BIG)
    ks, _, slot = jax.lax.sort((key, tie, jnp.arange(Q, dtype=jnp.int32)), num_keys=2)
    rem = jnp.where(ks < _BIG, ks, 0)
    dp_s = jnp.clip(left.tokens - (jnp.cumsum(rem) - rem), 0, rem)
    take = dp_s > 0
    dp_s = jnp.where(take & (jnp.cumsum(take) - take < left.requests), dp_s, 0)
    dp = jnp.zeros((Q,), jnp.int32).at[slot].set(dp_s)
    return dp, _taken(dp, left)


def whole_phase(view: View, eligible: jnp.ndarray, cap, count):
    """Whole prompts FCFS over the `eligible` requests while their running sum stays <= cap
    and at most `count` requests (stopping at the first that does not fit). dp int32[Q]."""
    rem = jnp.where(eligible, view.p, 0)
    fit = eligible & (prefix_by_id(rem, view.base) + rem <= cap) & (view.older(eligible) < count)
    return jnp.where(fit, view.p, 0)


def admitted(config, params: BudgetParams, view: View, prefilling: jnp.ndarray) -> jnp.ndarray:
    """bool[Q]: the `prefilling` requests a policy may give prefill tokens under
    `config.admission_cap` (docs/budget-semantics.md §3). "batch": all of them (M caps only the
    requests of one batch). "running": the started ones, and of the others only the oldest
    M - S, S = the requests started and not finished (decoding ones included), so that at
    most M are ever started and unfinished (Vidur's cap on its allocation map)."""
    if config.admission_cap == "batch":
        return prefilling
    if view.started is None:
        raise ValueError("admission_cap 'running' needs View.started (the engine passes p < v_p)")
    S = jnp.sum(view.valid & view.started, dtype=jnp.int32)
    new = prefilling & ~view.started
    return (prefilling & view.started) | (new & (view.older(new) < params.max_requests - S))


def _start(params: BudgetParams) -> Left:
    return Left(params.budget, params.max_requests)


def _no_decode(view: View) -> jnp.ndarray:
    return jnp.zeros_like(view.valid)


def sarathi(config: BudgetConfig, params: BudgetParams, view: View):
    """Sarathi-Serve: one decode token per decoding request (FCFS, up to b and M), then
    prefill chunks FCFS in what is left (over the `admitted` prefilling requests)."""
    dd, left = decode_phase(view, view.decoding, _start(params))
    dp, _ = chunk_phase(view, admitted(config, params, view, view.prefilling), left)
    return dp, dd


def orca(config: BudgetConfig, params: BudgetParams, view: View):
    """Orca: prefill chunks FCFS first; decode tokens only once every prefilling request is
    loaded completely in this batch (every `admitted` one: a request the cap keeps waiting
    does not hold the decodes back)."""
    pre = admitted(config, params, view, view.prefilling)
    dp, left = chunk_phase(view, pre, _start(params))
    gate = jnp.sum(dp) == jnp.sum(jnp.where(pre, view.p, 0))
    dd, _ = decode_phase(view, view.decoding & gate, left)
    return dp, dd


def _decode_only(params: BudgetParams, view: View):
    return decode_phase(view, view.decoding, _start(params))[0]


def vllm(config: BudgetConfig, params: BudgetParams, view: View):
    """Vanilla vLLM: a prefill-only batch of whole prompts (FCFS, <= prefill_cap tokens and M
    requests) whenever a request is prefilling (and `admitted`), else a decode-only batch of
    min(M, b)."""
    pre = admitted(config, params, view, view.prefilling)
    any_pre = jnp.any(pre)
    dp = whole_phase(view, pre, params.prefill_cap, params.max_requests)
    dd = _decode_only(params, view) & ~any_pre
    return jnp.where(any_pre, dp, 0), dd


def ft(config: BudgetConfig, params: BudgetParams, view: View):
    """FasterTransformer: a decode-only batch of min(M, b) whenever a request is decoding,
    else a prefill-only batch of whole prompts (request-level batching)."""
    any_dec = jnp.any(view.decoding)
    pre = admitted(config, params, view, view.prefilling)
    dp = whole_phase(view, pre, params.prefill_cap, params.max_requests)
    return jnp.where(any_dec, 0, dp), _decode_only(params, view)


def wc(config: BudgetConfig, params: BudgetParams, view: View):
    """Work-conserving (K_p, K_d)-FCFS: the decode phase serves the K_d oldest decoding
    requests, the prefill phase chunks over the K_p oldest prefilling ones (those `admitted`)
    in `inner_order`; phases in the order `phase_first`."""
    dec, pre = view.decoding, view.prefilling
    dec = dec & (view.older(dec) < params.K_d)
    pre = admitted(config, params, view, pre & (view.older(pre) < params.K_p))
    prefill = srpt_chunk_phase if config.inner_order == "srpt" else chunk_phase
    left = _start(params)
    if config.phase_first == "decode":
        dd, left = decode_phase(view, dec, left)
        dp, _ = prefill(view, pre, left)
    else:
        dp, left = prefill(view, pre, left)
        dd, _ = decode_phase(view, dec, left)
    return dp, dd


def priority(config: BudgetConfig, params: BudgetParams, view: View):
    """Strict type priority (the Rybko-Stolyar agents): types in `type_order`, each served as
    sarathi restricted to it (decode first, then FCFS chunks) with what earlier types left."""
    left = _start(params)
    dp = jnp.zeros_like(view.p)
    dd = _no_decode(view)
    for j in config.type_order:
        mine = view.type == j
        d_j, left = decode_phase(view, view.decoding & mine, left)
        p_j, left = chunk_phase(view, view.prefilling & mine, left)
        dp, dd = dp + p_j, dd | d_j
    return dp, dd
