"""Batch policies of the kv engine, looked up by name (docs/kv-semantics.md §6).

Every policy has one signature: `policy(config, params, view) -> (member, preempt, chunk)`:
member (bool[Q]) marks the requests processed by this batch, preempt (bool[Q]) the requests
that lose their KV now (restart), chunk (int32[Q]) the tokens each member processes (its whole
work l_j + k except for a chunked prefill, sarathi). Orders are by request id, never by table
slot, so every policy is deterministic and independent of where requests sit in the table. Adding a policy: write the
function here and register it in `jaxsched/kv/registry.py` with the options it reads. The
engine then applies the batch limits shared by every policy (`within_limits`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import equinox as eqx
import jax.numpy as jnp

from ..kernels import fused_sums, prefix_by_id, prefix_max_by_id, suffix_sums
from .state import Table

if TYPE_CHECKING:  # the config validates policy names (registry.POLICIES)
    from .config import KVConfig, KVParams


class View(eqx.Module):
    """What a policy sees at an epoch.

    table: the request table (a ring: id order is slot order rotated by `base`).
    valid: bool[Q] occupied slots. work: int32[Q] l_j + k, the tokens a request costs when
    processed now (0 for empty slots). draining: bool scalar, all N requests have arrived and
    end_mode is "drain". base: int32 slot of the oldest id that can be in the table.
    type_completed: int32[m] requests of each type completed so far.
    prefilled: int32[Q] tokens of a partially done (chunked) prefill, 0 otherwise.
    """

    table: Table
    valid: jnp.ndarray
    work: jnp.ndarray
    draining: jnp.ndarray
    base: jnp.ndarray
    type_completed: jnp.ndarray
    prefilled: jnp.ndarray


# A count of the table's slots by a small key (request type, stage, or both) is one pass of
# compares summed in one variadic reduce (`fused_sums`) for up to ONE_HOT_BINS keys: a
# scatter-add, as XLA's CPU backend runs it under vmap, builds a (seed, key) index per slot and
# adds the slots one at a time (4x slower for 42 keys, 40x for 2 keys over [1024, 4096]).
ONE_HOT_BINS = 64
# A per-slot lookup in a table of up to SELECT_MAX entries (per-type lengths, thresholds) is a
# chain of selects, not a gather (5x faster for m = 2 over [1024, 4096]).
SELECT_MAX = 8


def key_counts(key: jnp.ndarray, masks, bins: int) -> tuple[jnp.ndarray, ...]:
    """int32[bins] per mask of `masks` (bool[Q] each): the masked slots with key == b, for b in
    [0, bins); key: int32[Q], in [0, bins) wherever a mask is set. All in one pass over the
    table for up to ONE_HOT_BINS keys, else one scatter-add per mask. Integer counts: the two
    forms agree exactly."""
    masks = tuple(masks)
    if bins > ONE_HOT_BINS:
        return tuple(jnp.zeros((bins,), jnp.int32).at[key].add(x.astype(jnp.int32)) for x in masks)
    sums = fused_sums([(x & (key == b)).astype(jnp.int32) for x in masks for b in range(bins)])
    return tuple(jnp.stack(sums[i * bins : (i + 1) * bins]) for i in range(len(masks)))


def lookup(values, key: jnp.ndarray) -> jnp.ndarray:
    """values[key] (values: [n], int32 or a host array; key: int32[Q] in [0, n)): a chain of
    selects for n <= SELECT_MAX, else a gather. The same integers either way."""
    values = jnp.asarray(values)
    n = values.shape[0]
    if n > SELECT_MAX:
        return values[key]
    out = jnp.broadcast_to(values[n - 1], key.shape)
    for b in range(n - 2, -1, -1):
        out = jnp.where(key == b, values[b], out)
    return out


def type_stage_counts(config: KVConfig, view: View) -> jnp.ndarray:
    """int32[m, K1]: the requests in the system of each type j at each stage k."""
    t = view.table
    m, K1 = config.m, config.num_stages
    (count,) = key_counts(t.type * K1 + t.stage, (view.valid,), m * K1)
    return count.reshape(m, K1)


def stage_counts(config: KVConfig, view: View) -> jnp.ndarray:
    """int32[K1]: the requests in the system at each stage k."""
    (count,) = key_counts(view.table.stage, (view.valid,), config.num_stages)
    return count


def wait_rank(config: KVConfig, view: View, count: jnp.ndarray | None = None) -> jnp.ndarray:
    """int32[Q] rank within (type, stage) by id, in O(Q + m K1).

    Requests of one type complete in arrival order and never overtake each other, so the older
    requests of type j still in the system are those with a smaller `seq` (there are
    seq - completed_j of them), and the ones at a stage above k are all older than any at k:
    rank = seq - completed_j - #(type j at stages > k). count: `type_stage_counts` (None:
    computed here).
    """
    t = view.table
    K1 = config.num_stages
    count = type_stage_counts(config, view) if count is None else count
    above = suffix_sums(count)
    return t.seq - lookup(view.type_completed, t.type) - above[t.type, jnp.clip(t.stage, 0, K1 - 1)]


def stage_rank(config: KVConfig, view: View, count: jnp.ndarray | None = None) -> jnp.ndarray:
    """int32[Q] rank within stage (any type) by id, in O(Q + K1): requests at higher stages
    are all older (no overtaking), so rank = #(older in system) - #(at stages > k). count:
    `stage_counts` (None: computed here)."""
    t = view.table
    K1 = config.num_stages
    older = prefix_by_id(view.valid.astype(jnp.int32), view.base)
    count = stage_counts(config, view) if count is None else count
    return older - suffix_sums(count)[jnp.clip(t.stage, 0, K1 - 1)]


def fits_prefix(view: View, mask: jnp.ndarray, capacity) -> jnp.ndarray:
    """bool[Q]: the longest prefix by id of the `mask`ed requests whose total work is <= capacity
    (dropping the fewest newest ones until the rest fits gives the same set)."""
    w = jnp.where(mask, view.work, 0)
    return mask & (prefix_by_id(w, view.base) + w <= capacity)


def within_limits(view: View, member: jnp.ndarray, chunk: jnp.ndarray, params: KVParams) -> jnp.ndarray:
    """bool[Q]: the longest prefix by id of the members with at most `batch_limit` requests and
    `token_limit` tokens processed (sum of chunks). The engine applies it to every policy's
    batch; members it leaves out simply wait (a resident one keeps its KV)."""
    count = prefix_by_id(member.astype(jnp.int32), view.base) + 1
    tokens = jnp.where(member, chunk, 0)
    return member & (count <= params.batch_limit) & (prefix_by_id(tokens, view.base) + tokens <= params.token_limit)


def wait(config: KVConfig, params: KVParams, view: View):
    """WAIT (Alg. 1): types whose stage-0 queue reached n_j run the first n_j of every stage."""
    t = view.table
    n = params.thresholds  # [m]
    # One pass counts the table by (type, stage): the stage-0 queues and the types present
    # are its column 0 and its row sums.
    count = type_stage_counts(config, view)
    waiting = count[:, 0]
    present = jnp.sum(count, axis=1)
    fire = jnp.where(view.draining, present > 0, waiting >= n)  # [m]
    member = view.valid & lookup(fire, t.type) & (wait_rank(config, view, count) < lookup(n, t.type))
    return member, jnp.zeros_like(member), view.work


def nested_wait(config: KVConfig, params: KVParams, view: View):
    """Nested WAIT (Alg. 2): a prefix of segments whose entry queues reached n_i runs; the first
    n_i of each of their stages (any type). On memory overflow, paused residents restart
    (newest first), then the newest batch members leave the batch (restarting if resident)."""
    t = view.table
    K1 = config.num_stages
    entry = jnp.asarray(config.segment_entry())  # [L]
    n = params.thresholds  # [L]
    S = stage_counts(config, view)
    ok = S[entry] >= n
    n_active = jnp.where(view.draining, ok.shape[0], jnp.sum(jnp.cumprod(ok.astype(jnp.int32))))
    stage = jnp.clip(t.stage, 0, K1 - 1)
    bounds = config.segment_bounds
    if len(bounds) <= SELECT_MAX:  # stage_segment() as compares: the bounds below the stage
        seg = sum((stage > b).astype(jnp.int32) for b in bounds)
    else:
        seg = jnp.asarray(config.stage_segment())[stage]
    member0 = view.valid & (seg < n_active) & (stage_rank(config, view, S) < lookup(n, seg))
    paused = view.valid & t.resident & ~member0
    C = params.capacity_tokens
    # Members rank before paused residents: the oldest member always fits (C >= max l + l'),
    # so a non-empty B0 never becomes an empty batch and the run cannot livelock.
    keep_m = fits_prefix(view, member0, C)
    kept = jnp.sum(jnp.where(keep_m, view.work, 0))
    all_m = jnp.all(keep_m == member0)
    keep_p = paused & all_m & fits_prefix(view, paused, C - kept)
    return keep_m, paused & ~keep_p | (member0 & ~keep_m & t.resident), view.work


def fcfs(config: KVConfig, params: KVParams, view: View):
    """FCFS: the longest prefix by arrival that fits in C runs; residents outside it restart."""
    member = fits_prefix(view, view.valid, params.capacity_tokens)
    return member, view.valid & view.table.resident & ~member, view.work


def vllm(config: KVConfig, params: KVParams, view: View):
    """vLLM-like (notes §3.3, upstream Vidur): prefill first. Waiting requests are admitted in
    arrival order while the running count stays <= batch_size_cap, admitted * max(prefill
    tokens) <= max_tokens_in_batch and the free KV blocks stay >= the watermark; a batch with
    an admission is prefill-only. Otherwise every running request decodes; when their blocks
    exceed the pool, the newest restart. config.block_rules "vidur" counts blocks as Vidur's
    vLLM scheduler does (docs/kv-semantics.md §6): admission sees the blocks a running request
    holds, ceil((w - 1) / b), and a decode needs one free block at its turn."""
    t = view.table
    bs = params.block_size
    blocks = (view.work + bs - 1) // bs  # ceil((l + k) / block)
    running = view.valid & t.resident
    waiting = view.valid & ~t.resident
    vidur = config.block_rules == "vidur"
    # A running request's KV holds w - 1 tokens until its next decode writes the w-th (w >= 2).
    held = (view.work + bs - 2) // bs if vidur else blocks
    used = jnp.sum(jnp.where(running, held, 0))
    pos = prefix_by_id(waiting.astype(jnp.int32), view.base) + 1  # 1-based among waiting
    w_blocks = jnp.where(waiting, blocks, 0)
    admit = (
        waiting
        & (jnp.sum(running) + pos <= params.batch_size_cap)
        & (pos * prefix_max_by_id(jnp.where(waiting, view.work, 0), view.base) <= params.max_tokens_in_batch)
        & (used + prefix_by_id(w_blocks, view.base) + w_blocks <= params.num_blocks - params.watermark_blocks)
    )
    r_blocks = jnp.where(running, blocks, 0)
    if vidur:  # the older kept ones after their growth, this one before it, one block free
        decode = running & (prefix_by_id(r_blocks, view.base) + held <= params.num_blocks - 1)
    else:
        decode = running & (prefix_by_id(r_blocks, view.base) + r_blocks <= params.num_blocks)
    prefill = jnp.any(admit)
    member = jnp.where(prefill, admit, decode)
    return member, jnp.where(prefill, False, running & ~decode), view.work


def sarathi(config: KVConfig, params: KVParams, view: View):
    """Sarathi-like (notes §3.3): decodes first, then continuing chunked prefills, then new
    requests, the prefill chunks filling a token budget of chunk_size (each decode takes one
    token of it); KV blocks are allocated for a whole prefill when it starts; on a block
    shortage the newest holders restart. See docs/kv-semantics.md §6."""
    t = view.table
    bs = params.block_size
    blocks = (view.work + bs - 1) // bs
    decoding = view.valid & t.resident
    partial = view.valid & ~t.resident & (view.prefilled > 0)
    holding = decoding | partial
    h_blocks = jnp.where(holding, blocks, 0)
    keep = holding & (prefix_by_id(h_blocks, view.base) + h_blocks <= params.num_blocks)
    dec, par = decoding & keep, partial & keep
    budget = jnp.maximum(params.chunk_size - jnp.sum(dec), 0)
    rem = jnp.where(par, view.work - view.prefilled, 0)
    c_par = jnp.clip(budget - prefix_by_id(rem, view.base), 0, rem)
    budget = budget - jnp.sum(c_par)
    new = view.valid & ~t.resident & (view.prefilled == 0)
    pos = prefix_by_id(new.astype(jnp.int32), view.base) + 1
    w_new = jnp.where(new, view.work, 0)
    before = prefix_by_id(w_new, view.base)
    b_new = jnp.where(new, blocks, 0)
    used = jnp.sum(jnp.where(keep, blocks, 0))
    admit = (
        new
        & (before < budget)
        & (jnp.sum(keep) + pos <= params.batch_size_cap)
        & (used + prefix_by_id(b_new, view.base) + b_new <= params.num_blocks - params.watermark_blocks)
    )
    member = dec | (par & (c_par > 0)) | admit
    chunk = jnp.where(dec, view.work, jnp.where(par, c_par, jnp.clip(budget - before, 0, w_new)))
    return member, holding & ~keep, jnp.where(member, chunk, 0)
