"""The kv engine: one GPU serving typed requests under a KV-memory limit (WAIT paper).

Pure functions in the gymnax style: `init(config, params, seed) -> state` and
`step(config, params, state) -> (state, out)`; one step is one decision epoch (the GPU is
idle), a run is `lax.scan(step)`, seeds are `vmap`ped (jaxsched.run). The exact semantics
(epoch order, memory accounting, ties) are in docs/kv-semantics.md.
"""

from __future__ import annotations

from dataclasses import replace

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .. import clock
from ..clock import DF
from ..engine import Engine
from ..errors import ConfigError
from ..histogram import bit_bins
from ..kernels import ordered_sum
from ..run import Results, trajectory_rows
from ..timing import iteration_time_s, priced_iteration_time_s
from ..workload import arrivals
from .config import INT_LIMIT, KVConfig, KVParams, KVSizes, make_params
from .metrics import METRICS, finalize
from .policies import View, within_limits
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
        arrivals.first(config, params, seed),
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
        config, params, state.seed, state.gen, state.clock, active, config.arrivals_per_step, limit
    )
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
    table = Table(
        set_(t.id, buf["id"]),
        set_(t.type, typ),
        set_(t.seq, seq),
        DF(set_(t.arrival.hi, buf["hi"]), set_(t.arrival.lo, buf["lo"])),
        set_(t.stage, 0),
        set_(t.resident, False),
        set_(t.prefilled, 0),
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
    if config.num_requests is None:
        big = jnp.int32(INT_LIMIT)
        return k, big, big
    n = jnp.int32(config.num_requests)
    return k, k + (n - 2 * k) // 2, n - k


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


def _apply_batch(config, table: Table, totals: Totals, member, preempt, chunk, work, t_end: DF, on, in_window, bounds):
    """Effects of a batch at its end time t_end (docs §5 step 6), applied where `on`. A member
    advances a stage when its chunk completes its work (always, except a partial chunk).
    Latency and TTFT count measured requests (ids in [bounds[0], bounds[2])) only; completed
    tokens count in the window's when `in_window`."""
    member = member & on
    preempt = preempt & on
    decode = jnp.asarray(config.decode_tokens, jnp.int32)[table.type]
    advance = member & (table.prefilled + chunk >= work)
    new_stage = table.stage + advance.astype(jnp.int32)
    first = advance & (table.stage == 0)
    done = advance & (new_stage == decode + 1)
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
    measured = (table.id >= bounds[0]) & (table.id < bounds[2])
    m_done, m_first = done & measured, first & measured
    n_done = jnp.sum(done, dtype=jnp.int32)
    tok = jnp.sum(jnp.where(done, decode + 1, 0), dtype=jnp.int32)
    dtok = jnp.sum(jnp.where(done, decode, 0), dtype=jnp.int32)
    in_h = jnp.bool_(True) if config.horizon_s is None else clock.le(t_end, DF.from_float64(config.horizon_s))
    in_h = in_h.astype(jnp.int32)
    totals = replace(
        totals,
        completed=totals.completed + n_done,
        tokens=totals.tokens.add(tok),
        decode_tokens=totals.decode_tokens.add(dtok),
        horizon_tokens=totals.horizon_tokens.add(in_h * tok),
        horizon_decode_tokens=totals.horizon_decode_tokens.add(in_h * dtok),
        latency_s=totals.latency_s.add(ordered_sum(jnp.where(m_done, since, 0.0))),
        ttft_s=totals.ttft_s.add(ordered_sum(jnp.where(m_first, since, 0.0))),
        first_tokens=totals.first_tokens + jnp.sum(m_first, dtype=jnp.int32),
        latency_hist=totals.latency_hist.at[bit_bins(since, m_done, config.hist_octave_bits)].add(1, mode="drop"),
        ttft_hist=totals.ttft_hist.at[bit_bins(since, m_first, config.hist_octave_bits)].add(1, mode="drop"),
        window=replace(
            totals.window,
            tokens=totals.window.tokens.add(jnp.where(in_window, tok, 0)),
            completed=totals.window.completed + jnp.sum(m_done, dtype=jnp.int32),
        ),
        last_completion=clock.where(n_done > 0, t_end, totals.last_completion),
        preemptions=totals.preemptions.add(jnp.sum(preempt, dtype=jnp.int32)),
    )
    prefilled = jnp.where(member & ~advance, table.prefilled + chunk, jnp.where(advance | preempt, 0, table.prefilled))
    table = Table(
        jnp.where(done, -1, table.id),
        table.type,
        table.seq,
        table.arrival,
        new_stage,
        (table.resident & ~preempt) | advance,
        prefilled,
    )
    return table, totals, done


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


def _decide(config: KVConfig, params: KVParams, state: KVState, gen, table, more_due, active, hit) -> _Epoch:
    """Steps 3-5 of an epoch: the drain flag, the policy's batch, and which case applies."""
    go = active & ~hit & ~more_due
    all_in = jnp.bool_(False) if config.num_requests is None else gen.num_arrived >= config.num_requests
    draining = all_in & (config.end_mode == "drain")
    valid = table.id >= 0
    work = jnp.where(valid, jnp.asarray(config.prefill_tokens, jnp.int32)[table.type] + table.stage, 0)
    view = View(
        table, valid, work, draining, gen.num_arrived % ring_size(config, params), state.type_completed, table.prefilled
    )
    member, preempt, chunk = POLICIES[config.policy].fn(config, params, view)
    member = within_limits(view, member & valid & go, chunk, params)
    has_batch = jnp.any(member)
    empty = go & ~has_batch
    clear = empty & (config.end_mode == "force_clear") & all_in
    ends = empty & (clear | gen.exhausted)
    return _Epoch(
        active,
        hit,
        more_due,
        go & has_batch,
        empty & ~ends,
        ends,
        clear,
        draining,
        member,
        preempt & valid & go,
        jnp.where(member, chunk, 0),
        work,
    )


def step(config: KVConfig, params: KVParams, state: KVState, record: bool = False):
    """One decision epoch (docs/kv-semantics.md §5). Returns (state, the epoch's trajectory
    row (docs §9) when `record`, else None)."""
    t0 = state.clock
    active = ~state.done & (state.totals.epochs < config.max_steps)
    hit = jnp.bool_(False) if config.horizon_s is None else clock.le(DF.from_float64(config.horizon_s), t0)
    gen, table, type_inserted, ovf, inserted, more_due, ids = _insert(config, params, state, active & ~hit)
    bounds = window_bounds(config, params)
    prev, now = state.gen.num_arrived, gen.num_arrived
    in_window = (now > bounds[0]) & (now <= bounds[2])
    # Requests in the table after the insertion step, by conservation (docs §8): O(1), not O(Q).
    in_table = now - state.totals.completed - state.totals.dropped - ovf
    window = _window_insert(state.totals.window, bounds, prev, now, in_table, ids, t0)
    e = _decide(config, params, state, gen, table, more_due, active, hit)
    batch = e.batch
    # Step 6: the batch (its effects are masked out unless `batch`).
    tokens = jnp.sum(e.chunk, dtype=jnp.int32)
    # KV held: residents and started chunked prefills (whole prefill), unless preempted, and
    # the members (a prefill's tokens count while it is processed).
    holding = table.resident | (table.prefilled > 0)
    holds = (table.id >= 0) & ((holding & ~e.preempt) | e.member)
    memory = jnp.sum(jnp.where(holds, e.work, 0), dtype=jnp.int32)
    if config.prefill_price:  # prefills (first ones and restarts) at their own price
        prefill = jnp.sum(jnp.where(e.member & ~table.resident, e.chunk, 0), dtype=jnp.int32)
        tau = priced_iteration_time_s(
            tokens - prefill,
            prefill,
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
    table, totals, completes = _apply_batch(
        config,
        table,
        replace(state.totals, table_overflow=ovf, window=window),
        e.member,
        e.preempt,
        e.chunk,
        e.work,
        t_end,
        batch,
        wbatch,
        bounds,
    )
    type_completed = state.type_completed.at[pre.type].add(completes.astype(jnp.int32))
    n_in = jnp.sum(table.id >= 0, dtype=jnp.int32)
    table = replace(table, id=jnp.where(e.clear, -1, table.id))
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


def pad_into(config: KVConfig, params: KVParams, capacity) -> tuple[KVConfig, KVParams]:
    """(bucket config, params) running `config` inside the validated `capacity` (`Engine.pad`);
    the params carry the run's own sizes (`KVSizes`)."""
    try:
        bucket = replace(config, **capacity)
    except ConfigError as err:  # e.g. A > Q, or Q * max_len over the int32 headroom
        raise ConfigError(f"capacity {capacity} is not a valid bucket: {err}") from None
    sizes = KVSizes(*(jnp.int32(getattr(config, f)) for f in SIZE_FIELDS))
    return bucket, replace(params, sizes=sizes)


def trajectory_length(config: KVConfig, metrics) -> int:
    # The longest run over the seeds: independent of the chunking and the block size.
    return int(np.max(metrics["num_epochs"]))


def working_set_bytes(config: KVConfig) -> int:
    # About 32 bytes per table slot (id, type, seq, arrival, stage, flags, prefill) and the
    # two histograms; the policies' prefix sums touch the table a few times per epoch. The
    # insertion step's same-type matrix over the A candidates is A^2 bytes, and its
    # buffers about 32 bytes per candidate. Monotone in Q and A (the bucket rule reads it).
    A = config.arrivals_per_step
    return 4 * 32 * config.table_size + 8 * config.hist_bins + A * A + 32 * A


def peak_bytes(config: KVConfig, record: bool) -> int:
    A = config.arrivals_per_step
    per_seed = 16 * 32 * config.table_size + 8 * config.hist_bins + 4 * (A * A + 32 * A)
    if record:
        per_seed += config.max_steps * (64 + 4 * config.m * config.num_stages)
    return per_seed


def check(config: KVConfig, metrics) -> list[str]:
    out = []
    lost = int(metrics["table_overflow"].sum())
    if lost:
        out.append(
            f"kv: {lost} arrivals found the request table full and were dropped "
            "(raise table_size Q); metrics exclude them"
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
    size_fields=SIZE_FIELDS,
    pad_into=pad_into,
)
