"""The kv engine: one GPU serving typed requests under a KV-memory limit (WAIT paper).

Pure functions in the gymnax style: `init(config, params, seed) -> state` and
`step(config, params, state) -> (state, out)`; one step is one decision epoch (the GPU is
idle), a run is `lax.scan(step)`, seeds are `vmap`ped (jaxsched.run). The exact semantics
(epoch order, memory accounting, ties) are in docs/kv-semantics.md.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Mapping, NamedTuple

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .. import clock
from ..buckets import DEFAULT_MAX_WASTE
from ..clock import DF
from ..engine import Engine
from ..errors import ConfigError, require, require_float, require_int
from ..histogram import bit_bins
from ..kernels import all_computed, fused_sums, ordered_sum, written_after
from ..run import Results, trajectory_rows
from ..tables import grow_ring, overflow_advice
from ..timing import iteration_time_s, priced_iteration_time_s
from ..workload import arrivals
from .config import INT_LIMIT, KVConfig, KVParams, KVSizes, make_params
from .metrics import METRICS
from .metrics import finalize as finalize_metrics
from .policies import ONE_HOT_BINS, View, key_counts, lookup, within_limits
from .registry import POLICIES
from .state import KVState, Table, Totals, Window

# Kinds of epoch in the recorded trajectories.
KIND_NONE, KIND_INSERT, KIND_BATCH, KIND_IDLE, KIND_END = 0, 1, 2, 3, 4


# A run padded into a larger config (`KVEngine.pad`) carries its own sizes in `params.sizes`;
# the arrays have the bucket's shapes. Slots q >= Q never hold a request: the ring places id in
# slot id mod Q with the run's Q, so they keep id -1, every policy masks them out with `valid`,
# and the integer prefix sums by id (kernels.ring) read zeros there. The one float sum over the
# table (`ordered_sum` of latencies and TTFTs) meets the run's slots at the same positions and
# exact zeros after them; its pairwise tree adds those zeros at its upper levels only, so it
# gives the unpadded run's bits (tests/kv/test_buckets.py checks every policy).


def ring_size(config: KVConfig, params: KVParams):
    """Q of the run: the config's table_size (a Python int), or the traced int32 size of a
    padded run."""
    return config.table_size if params.sizes is None else params.sizes.table_size


# A padded run also carries its bounds (`KVSizes`): N, T and max_steps are then traced values
# and the bucket config's are only the largest (they fix no shape; max_steps sets the scan
# length). Its N of None is NO_REQUEST_BOUND, a count an int32 counter of arrivals never
# passes, and its T of None is +inf, which every clock reading is below: both are then exactly
# the unbounded run. The arrival stream (`workload.arrivals`) reads N and T from the config it
# is given: a padded run gives it its own traced N and no horizon, and applies its T to the
# stream itself (`_stream`): while a run is live its clock is below T, so a candidate due then
# arrives before T, and T only decides whether the stream is exhausted after the last one.
NO_REQUEST_BOUND = 2**31 - 1


class _StreamBounds(NamedTuple):
    """What `workload.arrivals` reads of a config, for a padded run: its own traced N and no
    horizon (the run applies its T afterwards, `_stream`)."""

    num_requests: jnp.ndarray
    horizon_s: None = None


def request_bound(config: KVConfig, params: KVParams):
    """N of the run: the config's (an int, or None: no bound), or a padded run's traced int32
    (NO_REQUEST_BOUND: none)."""
    return config.num_requests if params.sizes is None else params.sizes.num_requests


def horizon(config: KVConfig, params: KVParams) -> DF | None:
    """T of the run as a double-float: the config's (None: no horizon), or a padded run's traced
    one (+inf: none)."""
    if params.sizes is None:
        return None if config.horizon_s is None else DF.from_float64(config.horizon_s)
    return DF(params.sizes.horizon_hi, params.sizes.horizon_lo)


def step_bound(config: KVConfig, params: KVParams):
    """The run's bound on epochs: config.max_steps, or a padded run's traced int32."""
    return config.max_steps if params.sizes is None else params.sizes.max_steps


def _stream_config(config: KVConfig, params: KVParams):
    """The config the arrival stream reads (see `_StreamBounds`)."""
    return config if params.sizes is None else _StreamBounds(params.sizes.num_requests)


def _stream(config: KVConfig, params: KVParams, gen: arrivals.ArrivalState) -> arrivals.ArrivalState:
    """The stream with a padded run's own horizon applied: exhausted once its next candidate
    arrives after T, as `arrivals.candidate` marks it for a config with that horizon."""
    if params.sizes is None:
        return gen
    late = ~clock.le(gen.time, horizon(config, params))
    return replace(gen, exhausted=gen.exhausted | late)


def horizon_s(sizes: KVSizes) -> np.ndarray:
    """Host float64 T (s) of padded runs, from `KVSizes.horizon_bits` [..., 2] (inf: none)."""
    bits = np.ascontiguousarray(np.asarray(sizes.horizon_bits, np.int32))
    return bits.view(np.float64)[..., 0]


def init(config: KVConfig, params: KVParams, seed) -> KVState:
    """Empty system at t = 0 of run `seed` (uint32 scalar), candidate 0 precomputed."""
    seed = jnp.asarray(seed, jnp.uint32)
    Q, m = config.table_size, config.m
    zi = jnp.zeros((Q,), jnp.int32)
    table = Table(
        zi - 1, zi, zi, DF(jnp.zeros((Q,), jnp.float32), jnp.zeros((Q,), jnp.float32)), zi, jnp.zeros((Q,), bool), zi
    )
    zm = jnp.zeros((m,), jnp.int32)
    return KVState(
        seed,
        DF.zeros(),
        jnp.bool_(False),
        _stream(config, params, arrivals.first(_stream_config(config, params), params, seed)),
        table,
        zm,
        zm,
        Totals.zeros(config.hist_bins),
    )


# --------------------------------------------------------------------------- insertion


def _insert(config, params, state: KVState, active):
    """Step 2 of an epoch: examine up to A due candidates. Returns (gen, table, type_inserted,
    overflow, inserted count, more_due: a due candidate is left for the next epoch, [A] ids of
    the requests inserted (-1: none)).

    `arrivals.collect_due` examines the candidates; one scatter then writes the accepted ones
    to their slots id mod Q (distinct: ids are consecutive and A <= Q). An accepted request
    whose slot is still held by request id - Q is lost (table_overflow). Its per-type sequence
    number counts the requests of its type inserted before it, earlier ones of this step
    included.
    """
    Q = config.table_size
    # A padded run examines its own A candidates and rings over its own Q slots.
    limit = None if params.sizes is None else params.sizes.arrivals_per_step
    gen, buf, more_due = arrivals.collect_due(
        _stream_config(config, params),
        params,
        state.seed,
        state.gen,
        state.clock,
        active,
        config.arrivals_per_step,
        limit,
    )
    gen = _stream(config, params, gen)
    held = state.table.id >= 0
    slot = buf["id"] % ring_size(config, params)
    put = buf["ok"] & ~held[slot]
    typ = buf["type"]
    k = jnp.arange(typ.shape[0])
    earlier = (typ[None, :] == typ[:, None]) & put[None, :] & (k[None, :] < k[:, None])
    seq = state.type_inserted[typ] + jnp.sum(earlier, axis=1, dtype=jnp.int32)
    ti = state.type_inserted.at[typ].add(put.astype(jnp.int32))
    t = state.table
    at = jnp.where(put, slot, Q)
    set_ = lambda a, v: a.at[at].set(v, mode="drop")
    # The fields the batch then updates take the new ids through one scatter into a fresh
    # ring and elementwise selects, which fuse with the batch's updates into one pass that
    # writes the table in place (a scatter into the carried field was followed by a copy of it
    # every step).
    new_id = jnp.full((Q,), -1, jnp.int32).at[at].set(buf["id"], mode="drop")
    new = new_id >= 0
    table = Table(
        jnp.where(new, new_id, t.id),
        set_(t.type, typ),
        set_(t.seq, seq),
        DF(set_(t.arrival.hi, buf["hi"]), set_(t.arrival.lo, buf["lo"])),
        jnp.where(new, 0, t.stage),
        t.resident & ~new,
        jnp.where(new, 0, t.prefilled),
    )
    inserted = jnp.sum(put, dtype=jnp.int32)
    overflow = state.totals.table_overflow + jnp.sum(buf["ok"] & ~put, dtype=jnp.int32)
    return gen, table, ti, overflow, inserted, more_due, jnp.where(put, buf["id"], -1)


# --------------------------------------------------------------------------- metrics helpers


def window_bounds(config: KVConfig, params: KVParams):
    """(lo, mid, hi) int32: requests lo = K .. hi - 1 = N - K - 1 are measured (docs §8); the
    window opens when request lo is inserted, passes its middle at request mid and closes at
    request hi (INT_LIMIT without N: never)."""
    k = params.burn_in_requests
    n = request_bound(config, params)
    if n is None:
        big = jnp.int32(INT_LIMIT)
        return k, big, big
    n = jnp.int32(n)
    mid, hi = k + (n - 2 * k) // 2, n - k
    if params.sizes is None:
        return k, mid, hi
    # A padded run without N (k = 0 then) gets the marks of the unbounded run.
    none = n == NO_REQUEST_BOUND
    return k, jnp.where(none, INT_LIMIT, mid), jnp.where(none, INT_LIMIT, hi)


def _window_insert(window: Window, bounds, prev, now, in_system, ids, t: DF) -> Window:
    """Snapshots of the epoch whose insertion took num_arrived from prev to now: the clock
    where the window opens or closes, and at each mark x passed the requests in the table
    just after request x was inserted (in_system after the insertion step less the ids > x
    inserted after it: the same whatever the number A of insertions per epoch)."""
    marks = jnp.stack(bounds)
    crossed = (prev <= marks) & (now > marks)
    later = jnp.sum(ids[None, :] > marks[:, None], axis=1, dtype=jnp.int32)
    return replace(
        window,
        opened=clock.where(crossed[0], t, window.opened),
        closed=clock.where(crossed[2], t, window.closed),
        in_system=jnp.where(crossed, in_system - later, window.in_system),
    )


class _Sums(NamedTuple):
    """The epoch's integer sums over the table (int32 scalars, `_table_sums`)."""

    members: jnp.ndarray  # requests in the policy's batch
    tokens: jnp.ndarray  # tokens the batch processes (sum of chunks)
    memory: jnp.ndarray  # KV held during the batch (tokens)
    prefill: jnp.ndarray  # tokens processed as prefills (prefill_price only; else 0)
    completed: jnp.ndarray  # members that complete
    decode_tokens: jnp.ndarray  # l'_j of the members that complete
    first_tokens: jnp.ndarray  # measured members that produce their first token
    measured_completed: jnp.ndarray  # measured members that complete
    preempted: jnp.ndarray  # preempted requests (before masking by the batch)
    in_table: jnp.ndarray  # requests in the table after the insertion step
    type_completed: jnp.ndarray  # int32[m] members of each type that complete


def _progress(config: KVConfig, table: Table, member, chunk, work, bounds):
    """Per-slot effects of the policy's batch on the members (docs §5 step 6), bool[Q] each:
    (advance: the member's chunk completes its work (always, except a partial chunk), first:
    it produces its first token, done: it completes, measured: its id is in [bounds[0],
    bounds[2]) (latency and TTFT count these only)). Slots outside `member` are all False."""
    decode = lookup(np.asarray(config.decode_tokens, np.int32), table.type)
    advance = member & (table.prefilled + chunk >= work)
    first = advance & (table.stage == 0)
    done = advance & (table.stage == decode)  # the new stage is l'_j + 1
    measured = (table.id >= bounds[0]) & (table.id < bounds[2])
    return advance, first, done, measured, decode


def _table_sums(config: KVConfig, table: Table, valid, member, preempt, chunk, work, done, first, measured, decode):
    """Every integer sum of the epoch over the table, in one pass (`fused_sums`, one variadic
    reduce that reads the table once; XLA's CPU backend materializes the operand of each plain
    sum and reduces it in a tree of its own). chunk: int32[Q], 0 outside `member`."""
    holding = table.resident | (table.prefilled > 0)
    # KV held: residents and started chunked prefills (whole prefill), unless preempted, and
    # the members (a prefill's tokens count while it is processed).
    holds = valid & ((holding & ~preempt) | member)
    i32 = lambda x: x.astype(jnp.int32)
    terms = [
        i32(member),
        chunk,
        jnp.where(holds, work, 0),
        i32(done),
        jnp.where(done, decode, 0),
        i32(first & measured),
        i32(done & measured),
        i32(preempt),
        i32(valid),
    ]
    if config.prefill_price:  # prefills (first ones and restarts) at their own price
        terms.append(jnp.where(member & ~table.resident, chunk, 0))
    m = config.m
    by_type = m <= ONE_HOT_BINS
    if by_type:
        terms += [i32(done & (table.type == j)) for j in range(m)]
    sums = fused_sums(terms)
    n = 10 if config.prefill_price else 9
    prefill = sums[9] if config.prefill_price else jnp.int32(0)
    if by_type:
        type_completed = jnp.stack(sums[n:])
    else:
        (type_completed,) = key_counts(table.type, (done,), m)
    return _Sums(*sums[:3], prefill, *sums[3:9], type_completed)


def _apply_batch(
    config,
    table: Table,
    totals: Totals,
    sums: _Sums,
    member,
    preempt,
    chunk,
    advance,
    first,
    done,
    measured,
    t_end: DF,
    on,
    in_window,
    clear,
    T: DF | None,
):
    """Effects of the batch at its end time t_end (docs §5 step 6), applied where `on` (the
    epoch runs a batch: `member` and its `_progress` are empty otherwise). Latency and TTFT
    count measured requests only; completed tokens count in the window's when `in_window`, in
    the horizon's when t_end <= T (the run's `horizon`, None: always). `clear`: force_clear
    empties the table."""
    preempt = preempt & on
    # Time since arrival (s): the latency of completing members, the TTFT of first tokens.
    # t_end is divided by a run-time 1 (exact): XLA does not fuse a division into consumers that
    # reuse its elements, so t_end's long double-float chain gets a kernel of its own instead of
    # being inlined into the per-slot sums below (ordered_sum), where XLA's CPU LLVM optimizer
    # took minutes at small Q (Q = 64: ~110 s for the whole jitted step, vs ~1 s).
    one = (t_end.hi == t_end.hi).astype(jnp.float32)
    since = clock.sub(
        DF(
            jnp.broadcast_to(t_end.hi / one, table.arrival.hi.shape),
            jnp.broadcast_to(t_end.lo / one, table.arrival.lo.shape),
        ),
        table.arrival,
    )
    m_done, m_first = done & measured, first & measured
    n_done = sums.completed
    dtok = sums.decode_tokens
    tok = dtok + n_done  # the l'_j + 1 of the completed
    in_h = jnp.bool_(True) if T is None else clock.le(t_end, T)
    in_h = in_h.astype(jnp.int32)
    # Both histograms in one scatter over [latency | TTFT] bins: a member that completes has
    # left stage l'_j >= 1, so it does not produce its first token in the same batch.
    nb = config.hist_bins
    bins = bit_bins(since, m_done | m_first, config.hist_octave_bits)
    hist = jnp.concatenate([totals.latency_hist, totals.ttft_hist])
    hist = hist.at[jnp.where(m_first, bins + nb, jnp.where(m_done, bins, 2 * nb))].add(1, mode="drop")
    latency = ordered_sum(jnp.where(m_done, since, 0.0))
    ttft = ordered_sum(jnp.where(m_first, since, 0.0))
    totals = replace(
        totals,
        completed=totals.completed + n_done,
        tokens=totals.tokens.add(tok),
        decode_tokens=totals.decode_tokens.add(dtok),
        horizon_tokens=totals.horizon_tokens.add(in_h * tok),
        horizon_decode_tokens=totals.horizon_decode_tokens.add(in_h * dtok),
        latency_s=totals.latency_s.add(latency),
        ttft_s=totals.ttft_s.add(ttft),
        first_tokens=totals.first_tokens + sums.first_tokens,
        latency_hist=hist[:nb],
        ttft_hist=hist[nb:],
        window=replace(
            totals.window,
            tokens=totals.window.tokens.add(jnp.where(in_window, tok, 0)),
            completed=totals.window.completed + sums.measured_completed,
        ),
        last_completion=clock.where(n_done > 0, t_end, totals.last_completion),
        preemptions=totals.preemptions.add(jnp.where(on, sums.preempted, 0)),
    )
    prefilled = jnp.where(member & ~advance, table.prefilled + chunk, jnp.where(advance | preempt, 0, table.prefilled))
    new = Table(
        jnp.where(done | clear, -1, table.id),
        table.type,
        table.seq,
        table.arrival,
        table.stage + advance.astype(jnp.int32),
        (table.resident & ~preempt) | advance,
        prefilled,
    )
    # Written after every read of the old table (the policy's and the step's sums, which
    # depend on them), so in place (kernels.order).
    return written_after(all_computed(sums), new, table), totals


# --------------------------------------------------------------------------- step


class _Epoch(eqx.Module):
    """What one epoch decided (scalars unless noted), before its effects are applied."""

    active: jnp.ndarray  # the run was live at the epoch's start
    hit: jnp.ndarray  # t >= T: the run ends
    more_due: jnp.ndarray  # insert-only epoch
    batch: jnp.ndarray  # a batch runs
    idle: jnp.ndarray  # t jumps to the next candidate
    ends: jnp.ndarray  # empty batch and nothing left to wait for: the run ends
    clear: jnp.ndarray  # force_clear drops the table
    draining: jnp.ndarray
    member: jnp.ndarray  # bool[Q]
    preempt: jnp.ndarray  # bool[Q]
    chunk: jnp.ndarray  # int32[Q] tokens each member processes
    work: jnp.ndarray  # int32[Q] l_j + k


def _decide(config: KVConfig, params: KVParams, state: KVState, gen, table, more_due, active, hit):
    """Steps 3-5 of an epoch: the drain flag and the policy's batch. Returns (go: the epoch
    may run a batch, all_in, draining, valid, member, preempt (both bool[Q], within `go`),
    chunk (int32[Q], 0 outside `member`), work: int32[Q] l_j + k)."""
    go = active & ~hit & ~more_due
    n = request_bound(config, params)
    all_in = jnp.bool_(False) if n is None else gen.num_arrived >= n
    draining = all_in & (config.end_mode == "drain")
    valid = table.id >= 0
    work = jnp.where(valid, lookup(np.asarray(config.prefill_tokens, np.int32), table.type) + table.stage, 0)
    view = View(
        table, valid, work, draining, gen.num_arrived % ring_size(config, params), state.type_completed, table.prefilled
    )
    member, preempt, chunk = POLICIES[config.policy].fn(config, params, view)
    member = within_limits(view, member & valid & go, chunk, params)
    return go, all_in, draining, valid, member, preempt & valid & go, jnp.where(member, chunk, 0), work


def step(config: KVConfig, params: KVParams, state: KVState, record: bool = False):
    """One decision epoch (docs/kv-semantics.md §5). Returns (state, the epoch's trajectory
    row (docs §9) when `record`, else None)."""
    t0 = state.clock
    active = ~state.done & (state.totals.epochs < step_bound(config, params))
    T = horizon(config, params)
    hit = jnp.bool_(False) if T is None else clock.le(T, t0)
    gen, table, type_inserted, ovf, inserted, more_due, ids = _insert(config, params, state, active & ~hit)
    bounds = window_bounds(config, params)
    prev, now = state.gen.num_arrived, gen.num_arrived
    in_window = (now > bounds[0]) & (now <= bounds[2])
    # Requests in the table after the insertion step, by conservation (docs §8): O(1), not O(Q).
    in_table = now - state.totals.completed - state.totals.dropped - ovf
    window = _window_insert(state.totals.window, bounds, prev, now, in_table, ids, t0)
    go, all_in, draining, valid, member, preempt, chunk, work = _decide(
        config, params, state, gen, table, more_due, active, hit
    )
    advance, first, completes, measured, decode = _progress(config, table, member, chunk, work, bounds)
    sums = _table_sums(config, table, valid, member, preempt, chunk, work, completes, first, measured, decode)
    # Step 5: which case applies. `member` is empty unless the epoch runs a batch (`go`), so
    # the batch's per-slot effects need no masking by it.
    has_batch = sums.members > 0
    empty = go & ~has_batch
    clear = empty & (config.end_mode == "force_clear") & all_in
    ends = empty & (clear | gen.exhausted)
    e = _Epoch(
        active, hit, more_due, go & has_batch, empty & ~ends, ends, clear, draining, member, preempt, chunk, work
    )
    batch = e.batch
    # Step 6: the batch (its effects are masked out unless `batch`).
    tokens, memory = sums.tokens, sums.memory
    if config.prefill_price:  # prefills (first ones and restarts) at their own price
        tau = priced_iteration_time_s(
            tokens - sums.prefill,
            sums.prefill,
            params.d0_s,
            params.d1_hi,
            params.d1_lo,
            params.d1_prefill_hi,
            params.d1_prefill_lo,
        )
    else:
        tau = iteration_time_s(tokens, params.d0_s, params.d1_hi, params.d1_lo)  # DF
    t_end = clock.add(t0, tau)
    pre = table
    wbatch = batch & in_window
    table, totals = _apply_batch(
        config,
        table,
        replace(state.totals, table_overflow=ovf, window=window),
        sums,
        member,
        preempt,
        chunk,
        advance,
        first,
        completes,
        measured,
        t_end,
        batch,
        wbatch,
        clear,
        T,
    )
    type_completed = state.type_completed + sums.type_completed
    # Requests left after the batch (before force_clear drops them).
    n_in = sums.in_table - sums.completed
    totals = replace(
        totals,
        peak_memory=jnp.where(wbatch, jnp.maximum(totals.peak_memory, memory), totals.peak_memory),
        memory=totals.memory.add(jnp.where(wbatch, memory, 0)),
        window=replace(totals.window, batches=totals.window.batches + wbatch.astype(jnp.int32)),
        overflows=totals.overflows + (batch & (memory > params.capacity_tokens)).astype(jnp.int32),
        batches=totals.batches + batch.astype(jnp.int32),
        epochs=totals.epochs + active.astype(jnp.int32),
        dropped=totals.dropped + jnp.where(e.clear, n_in, 0),
        stalled=totals.stalled | (e.ends & ~e.clear & e.draining & (n_in > 0)),
        busy=clock.where(batch, clock.add(totals.busy, tau), totals.busy),
    )
    new_clock = clock.where(batch, t_end, clock.where(e.idle, gen.time, t0))
    done = state.done | (active & (hit | e.ends))
    new = KVState(state.seed, new_clock, done, gen, table, type_inserted, type_completed, totals)
    if not record:
        return new, None
    return new, _record(config, e, pre, t0, tau, tokens, memory, completes, inserted, table)


def _record(
    config: KVConfig, e: _Epoch, pre: Table, t0: DF, tau: DF, tokens, memory, completes, inserted, table: Table
) -> dict:
    """The epoch's trajectory row (docs §9): all zeros once the run has ended."""
    kind = jnp.where(
        ~e.active,
        KIND_NONE,
        jnp.where(
            e.hit | e.ends, KIND_END, jnp.where(e.more_due, KIND_INSERT, jnp.where(e.batch, KIND_BATCH, KIND_IDLE))
        ),
    )
    live = kind != KIND_NONE
    z = lambda x: jnp.where(live, x, jnp.zeros_like(x))
    zb = lambda x: jnp.where(e.batch, x, jnp.zeros_like(x))
    counts = (
        jnp.zeros((config.m, config.num_stages), jnp.int32)
        .at[pre.type, pre.stage]
        .add(e.member.astype(jnp.int32), mode="drop")
    )
    return dict(
        kind=kind.astype(jnp.int32),
        t_hi=z(t0.hi),
        t_lo=z(t0.lo),
        tau_hi=zb(tau.hi),
        tau_lo=zb(tau.lo),
        tokens=zb(tokens),
        memory_tokens=zb(memory),
        preempted=zb(jnp.sum(e.preempt, dtype=jnp.int32)),
        completed=zb(jnp.sum(completes, dtype=jnp.int32)),
        inserted=z(inserted),
        in_system=z(jnp.sum(table.id >= 0, dtype=jnp.int32)),
        counts=zb(counts),
    )


def done(config: KVConfig, state: KVState) -> jnp.ndarray:
    """bool (batch shape): the run has ended (docs §5)."""
    return state.done


def batches(results: Results, s: int) -> dict[str, np.ndarray]:
    """The batch epochs (kind 2) of seed index s of a recorded run: trajectory rows plus
    start_s and tau_s (float64 values of the double-floats)."""
    return trajectory_rows(results, s, KIND_BATCH)


# --------------------------------------------------------------------------- runner hints


def example() -> KVConfig:
    return KVConfig(num_requests=40, table_size=64)


def max_steps(config: KVConfig) -> int:
    return config.max_steps


# The ring Q and the candidates per epoch A run padded, for every policy and option: the table
# enters the policies through integer counts and prefix sums only, and the float sums over it
# through `ordered_sum` (see `ring_size`). The number of request types m is not a size: the
# types' lengths are static tuples (prefill_tokens, decode_tokens) that the program holds as
# constants and that fix the stage axis K1 and nested_wait's segments, so configs with
# different m differ in fields that are not sizes and could never share a bucket. (Padding
# with extra types of zero rate would be exact: a type whose cumulative rate equals its
# predecessor's is never drawn, and a threshold >= 1 never fires on an empty queue; but only
# configs whose type lists extend one another would gain, and the lengths would have to become
# traced, changing the unpadded program.)
SIZE_FIELDS = ("table_size", "arrivals_per_step")
# The fields that end a run or bound its epochs: they fix no shape, so a padded run carries its
# own (`KVSizes`) and a bucket holds the largest (`pad_run`, `pad_runs`). They are not
# `SIZE_FIELDS`: `jaxsched.buckets` takes integer sizes only, and N and T may be None.
BOUND_FIELDS = ("num_requests", "horizon_s", "max_steps")


def _own_sizes(config: KVConfig) -> KVSizes:
    """The run's own sizes and bounds as `KVSizes` (N None: NO_REQUEST_BOUND, T None: +inf)."""
    T = math.inf if config.horizon_s is None else config.horizon_s
    df = DF.from_float64(T) if math.isfinite(T) else DF(jnp.float32(np.inf), jnp.float32(0.0))
    return KVSizes(
        table_size=jnp.int32(config.table_size),
        arrivals_per_step=jnp.int32(config.arrivals_per_step),
        num_requests=jnp.int32(NO_REQUEST_BOUND if config.num_requests is None else config.num_requests),
        horizon_hi=df.hi,
        horizon_lo=df.lo,
        horizon_bits=jnp.asarray(np.array(T, np.float64).reshape(1).view(np.int32)),
        max_steps=jnp.int32(config.max_steps),
    )


def pad_into(config: KVConfig, params: KVParams, capacity) -> tuple[KVConfig, KVParams]:
    """(bucket config, params) running `config` inside the validated `capacity` (`Engine.pad`);
    the params carry the run's own sizes and bounds (`KVSizes`)."""
    try:
        bucket = replace(config, **capacity)
    except ConfigError as err:  # e.g. A > Q, or Q * max_len over the int32 headroom
        raise ConfigError(f"capacity {capacity} is not a valid bucket: {err}") from None
    return bucket, replace(params, sizes=_own_sizes(config))


def _bound_capacity(config: KVConfig, field: str, value):
    """The validated capacity of one bound: at least the run's own; None (no bound) for N and T
    is the largest, and the only one for a run without that bound."""
    own = getattr(config, field)
    what = f"capacity {field}"
    if field == "max_steps":
        return require_int(value, what, lo=own, hi=INT_LIMIT)
    if value is None or own is None:
        require(value is None, what, "None (no bound), as the run's own", value)
        return None
    if field == "num_requests":
        return require_int(value, what, lo=own, hi=INT_LIMIT)
    return require_float(value, what, lo=own)


def pad_run(config: KVConfig, params: KVParams, capacity: Mapping) -> tuple[KVConfig, KVParams]:
    """`ENGINE.pad` with the run's bounds too: (bucket config, params) running `config` inside
    `capacity`, {field: value} over SIZE_FIELDS (integers >= the config's, as for `ENGINE.pad`)
    and BOUND_FIELDS: num_requests and horizon_s None (no bound) or at least the config's (a
    run without the bound needs None), max_steps an integer >= the config's. Fields left out
    keep the config's value. The run's metrics and trajectories are bitwise its unpadded
    run's. One ConfigError naming the field for a bad capacity, before anything compiles."""
    require(isinstance(capacity, Mapping), "capacity", "a mapping {size or bound field: value}", capacity)
    require(isinstance(config, KVConfig), "config", "a KVConfig", type(config).__name__)
    bounds = {f: _bound_capacity(config, f, capacity[f]) for f in BOUND_FIELDS if f in capacity}
    bucket, padded = ENGINE.pad(config, params, {f: v for f, v in capacity.items() if f not in BOUND_FIELDS})
    try:
        bucket = replace(bucket, **bounds)
    except ConfigError as err:  # e.g. N and T both None
        raise ConfigError(f"capacity {dict(capacity)} is not a valid bucket: {err}") from None
    return bucket, padded


def pad_runs(
    runs, max_waste: float | None = DEFAULT_MAX_WASTE, max_steps: int | None = None
) -> list[tuple[KVConfig, KVParams]]:
    """Every (config, params) of `runs` as the (bucket config, params) of the bucket it shares,
    for `jaxsched.buckets.simulate_buckets(..., max_waste=None)`, which then compiles one
    program per distinct bucket config. Runs whose configs agree on everything but their sizes
    and bounds (and on whether they have an N) form a group, whose tables are bucketed by
    `jaxsched.buckets.plan_buckets` (`max_waste`; None: runs of different Q or A never share
    a bucket).

    A bucket's bounds do not depend on which runs it holds, so that calls that follow one
    another (an experiment's rounds of runs) meet the same bucket configs and their compiled
    programs: N is the largest a config takes (INT_LIMIT) and there is no horizon; for runs
    without N (then with a horizon), no N and the largest horizon of the bucket's runs.
    max_steps is the largest of the runs' and of `max_steps` (the caller's bound over all its
    calls); a run cut by its own max_steps idles, in steps that change nothing, until the
    bucket's. A run whose config is its bucket's runs unpadded."""
    from ..buckets import plan_buckets

    require(
        isinstance(runs, (list, tuple)) and all(isinstance(r, tuple) and len(r) == 2 for r in runs),
        "runs",
        "a list of (KVConfig, KVParams) pairs",
        runs,
    )
    floor = 1 if max_steps is None else require_int(max_steps, "max_steps", lo=1, hi=INT_LIMIT)
    groups: dict[tuple, list[int]] = {}
    for i, (c, _) in enumerate(runs):
        require(isinstance(c, KVConfig), f"runs[{i}]", "a (KVConfig, KVParams) pair", type(c).__name__)
        key = tuple((f.name, getattr(c, f.name)) for f in fields(c) if f.name not in SIZE_FIELDS + BOUND_FIELDS)
        groups.setdefault(key + (c.num_requests is None,), []).append(i)
    out: list = [None] * len(runs)
    for idx in groups.values():
        configs = [runs[i][0] for i in idx]
        # The plan compares sizes: every config of the group at the same (its first's) bounds.
        same = {f: getattr(configs[0], f) for f in BOUND_FIELDS}
        for bucket in plan_buckets(ENGINE, [replace(c, **same) for c in configs], max_waste):
            members = [idx[j] for j in bucket.members]
            own = [runs[i][0] for i in members]
            with_n = own[0].num_requests is not None
            cap = {f: getattr(bucket.config, f) for f in SIZE_FIELDS}
            cap.update(
                num_requests=INT_LIMIT if with_n else None,
                horizon_s=None if with_n else max(c.horizon_s for c in own),
                max_steps=max([floor] + [c.max_steps for c in own]),
            )
            alone = all(c == replace(bucket.config, **cap) for c in own)
            for i in members:
                out[i] = runs[i] if alone else pad_run(*runs[i], cap)
    return out


def finalize(config: KVConfig, params: KVParams, state: KVState) -> dict[str, np.ndarray]:
    """`jaxsched.kv.metrics.finalize`, with a padded run's throughputs over its own horizon T:
    the bucket's T is the largest, or None when some run has none (then the metric's T-free
    formula is every run's without a horizon)."""
    out = finalize_metrics(config, params, state)
    if params.sizes is None:
        return out
    T = horizon_s(params.sizes)
    own = np.isfinite(T)
    if own.any():
        T = np.where(own, T, 1.0)
        t = state.totals
        for key, tokens in (
            ("throughput_tokens_per_s", t.horizon_tokens),
            ("decode_throughput_tokens_per_s", t.horizon_decode_tokens),
        ):
            out[key] = np.where(own, tokens.to_numpy() / T, out[key])
    return out


def trajectory_length(config: KVConfig, metrics) -> int:
    # The longest run over the seeds: independent of the chunking and the block size.
    return int(np.max(metrics["num_epochs"]))


def working_set_bytes(config: KVConfig) -> int:
    # About 32 bytes per table slot (id, type, seq, arrival, stage, flags, prefill), the two
    # histograms, the insertion step's same-type matrix over the A candidates (A^2 bytes) and
    # its buffers (about 32 bytes per candidate): the bytes a step reads, each counted once as
    # the dp engine's are. Counting the table 4 times (its prefix sums pass over it a few
    # times) gave CPU chunks 10-15% slower at 1024 seeds (docs/benchmarks.md, "CPU chunks of the
    # kv and budget engines"). Monotone in Q and A (the bucket rule reads it).
    A = config.arrivals_per_step
    return 32 * config.table_size + 8 * config.hist_bins + A * A + 32 * A


def peak_bytes(config: KVConfig, record: bool) -> int:
    A = config.arrivals_per_step
    per_seed = 16 * 32 * config.table_size + 8 * config.hist_bins + 4 * (A * A + 32 * A)
    if record:
        per_seed += config.max_steps * (64 + 4 * config.m * config.num_stages)
    return per_seed


def regrow(config: KVConfig, params: KVParams, metrics) -> tuple[KVConfig, KVParams, np.ndarray] | None:
    """With `grow_table`: the runs that lost arrivals to a full table, to run again with twice
    the slots (`jaxsched.tables.grow_ring`); None otherwise."""
    return grow_ring(config, params, np.asarray(metrics["table_overflow"]) > 0, config.max_table_size())


def check(config: KVConfig, metrics) -> list[str]:
    out = []
    lost = int(metrics["table_overflow"].sum())
    if lost:
        out.append(
            f"kv: {lost} arrivals found the request table full and were dropped "
            f"({overflow_advice(config)}); metrics exclude them"
        )
    open_ = int((metrics["done"] == 0).sum())
    if open_:
        out.append(
            f"kv: {open_} seeds did not finish within max_steps (raise max_steps); their metrics cover the epochs run"
        )
    stalled = int(metrics["stalled"].sum())
    if stalled:
        out.append(f"kv: {stalled} seeds stalled with requests left (no batch fits)")
    return out


def describe(config: KVConfig) -> dict:
    join = lambda t: "/".join(map(str, t))
    return dict(
        policy=config.policy,
        prefill_tokens=join(config.prefill_tokens),
        decode_tokens=join(config.decode_tokens),
        num_requests=config.num_requests,
        horizon_s=config.horizon_s,
        end_mode=config.end_mode,
        table_size=config.table_size,
        max_steps=config.max_steps,
    )


# One engine under a KV-memory limit (the WAIT paper); see the module docstring.
ENGINE: Engine[KVConfig, KVParams, KVState] = Engine(
    name="kv",
    Config=KVConfig,
    Params=KVParams,
    METRICS=METRICS,
    POLICIES=POLICIES,
    make_params=make_params,
    init=init,
    step=step,
    done=done,
    finalize=finalize,
    max_steps=max_steps,
    working_set_bytes=working_set_bytes,
    peak_bytes=peak_bytes,
    step_unit="epoch",
    # Runs end at very different epochs and an epoch costs O(Q): skip finished chunks.
    skip_done_in_block=True,
    trajectory_length=trajectory_length,
    example=example,
    check=check,
    describe=describe,
    regrow=regrow,
    size_fields=SIZE_FIELDS,
    pad_into=pad_into,
)
