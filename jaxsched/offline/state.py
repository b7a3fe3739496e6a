"""State of one offline run: per-request arrays (n, dense), the table of running requests
(A rows) and a few scalars.

Request i has prompt s_i and output o_i (tokens). Once admitted at step t it has start
p_i = t - 1 and completion c_i = p_i + o_i (notes/002.md §1: token j is generated at step
p_i + j with memory s_i + j; the request frees its memory after step c_i). A running request's
`peak` is the memory the admitted set will hold at step c_i, M(X, c_i) of notes §2.0, kept up to date as
requests are admitted so that a candidate is checked in O(A) without sorting (A the rows of
the table of running requests, `ActiveTable`).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from ..accumulate import WideInt
from ..clock import DF


class ActiveTable(eqx.Module):
    """The admitted requests that are still running, in A rows (`OfflineConfig.slots`): a row
    is free once its request has completed (c < t), and an admission takes the first free row.
    Every check of a candidate reads the table only, so it costs O(A), not O(n). Arrays [A]."""

    id: jnp.ndarray  # int32 the request in the row (-1: never used)
    s: jnp.ndarray  # int32 its prompt tokens
    p: jnp.ndarray  # int32 its start step
    c: jnp.ndarray  # int32 its completion step (-1: never used, so free)
    peak: jnp.ndarray  # int32 M(X, c) of the admitted set X (valid while the row is active)


class OfflineState(eqx.Module):
    """One run. Arrays are [n] unless noted; -1 marks 'not yet' in p and c."""

    s: jnp.ndarray  # int32 prompt tokens
    o: jnp.ndarray  # int32 output tokens
    order: jnp.ndarray  # int32 the admission order, servable requests first
    live: jnp.ndarray  # int32 scalar: requests in the order that can be served (s + o <= M)
    head: jnp.ndarray  # int32 scalar: requests admitted so far (order[head] is next)
    p: jnp.ndarray  # int32 start step p_i (-1: pending)
    c: jnp.ndarray  # int32 completion step c_i (-1: pending)
    table: ActiveTable  # the running requests, [A] rows
    finish: DF  # [n] time (s) at the end of step c_i
    t: jnp.ndarray  # int32 scalar: steps run
    last: jnp.ndarray  # int32 scalar: the largest c_i so far
    clock: DF  # scalar time (s) at the end of step t
    peak_memory: jnp.ndarray  # int32 scalar: the most KV tokens held at any step
    memory_sum: WideInt  # sum over steps of the KV tokens held (exact)
    prefill: jnp.ndarray  # int32 scalar: prompt tokens admitted so far at step t + 1 (events)
    overflow: jnp.ndarray  # bool scalar: a request fitted but every row of the table was taken
