"""The budget engine: one LLM engine with a token budget per batch (paper 004).

Pure functions in the gymnax style: `init(config, params, seed) -> state` and
`step(config, params, state) -> (state, out)`; one step is one decision epoch (a batch, an
idle jump to the next arrival, or an insert-only step when more arrivals are due than one step
inserts), a run is `lax.scan(step)`, seeds are `vmap`ped (jaxsched.run). The exact semantics
are in docs/budget-semantics.md; the batch model this engine shares with jaxsched.network (the
policy's batch, its duration, the window and histograms) is `core`.
"""

from __future__ import annotations

from dataclasses import replace

import jax.numpy as jnp
import numpy as np

from .. import clock
from ..clock import DF
from ..engine import Engine
from ..kernels import fused_sums, ordered_sum
from ..run import Results, trajectory_rows
from ..tables import grow_ring
from ..workload import arrivals
from .config import BACKLOG_ID, BudgetConfig, BudgetParams, BudgetSizes, make_params
from .core import (
    KIND_NONE,
    Window,
    batch_terms,
    batch_time,
    choose_batch,
    hist_add,
    run_warnings,
    trim_trajectories,
)
from .metrics import METRICS, finalize
from .policies import View
from .registry import POLICIES
from .state import BudgetState, Table, Totals

# Kinds of step in the recorded trajectories (KIND_NONE = 0, a step of an ended run: `core`).
KIND_INSERT, KIND_BATCH, KIND_IDLE, KIND_END = 1, 2, 3, 4


# --------------------------------------------------------------------------- size buckets
# A run padded into a larger config (`BudgetEngine.pad`) carries its own sizes in
# `params.sizes`; the arrays have the config's shapes. Its ring is entry mod its own Q, so the
# slots from Q on are never filled (entry -1): every policy reads them as empty, and the
# integer sums over the table are unchanged. The only float sums over the table are the
# `ordered_sum`s of `_apply`, where the extra slots are exact zeros after the run's own, in
# the same slot order: the pairwise tree then adds only zero halves above the unpadded tree's
# top (x + 0 = x), so the sums round as the unpadded run's do.


def run_sizes(config: BudgetConfig, params: BudgetParams):
    """(Q, A) of the run: the config's table_size and arrivals_per_step (Python ints), or the
    traced int32 sizes of a run padded into a bucket."""
    if params.sizes is None:
        return config.table_size, config.arrivals_per_step
    return params.sizes.table_size, params.sizes.arrivals_per_step


def init(config: BudgetConfig, params: BudgetParams, seed) -> BudgetState:
    """Empty system at t = 0 of run `seed` (uint32 scalar), the first arrival precomputed."""
    seed = jnp.asarray(seed, jnp.uint32)
    table, totals = Table.empty(config.table_size), Totals.zeros(config.hist_bins, config.snapshots)
    n0 = config.backlog
    if n0:
        table, tokens = _backlog(config, seed, table)
        totals = replace(totals, backlog_tokens=tokens)
    return BudgetState(
        seed, DF.zeros(), jnp.bool_(False), arrivals.first(config, params, seed), table, jnp.int32(n0), totals
    )


def _backlog(config: BudgetConfig, seed, table: Table) -> tuple[Table, jnp.ndarray]:
    """The table holding config.initial_requests at t = 0 (entries 0.., type 0's first, ids
    BACKLOG_ID + b), and their unprocessed tokens."""
    n0 = config.backlog
    types = jnp.asarray(np.repeat(np.arange(config.m), config.initial_requests), jnp.int32)
    ids = BACKLOG_ID + jnp.arange(n0, dtype=jnp.int32)
    vp, vd = request_lengths(config, seed, ids, types)
    put = lambda a, v: a.at[:n0].set(v)
    table = replace(
        table,
        entry=put(table.entry, jnp.arange(n0, dtype=jnp.int32)),
        id=put(table.id, ids),
        type=put(table.type, types),
        p=put(table.p, vp),
        d=put(table.d, vd),
        vp=put(table.vp, vp),
        vd=put(table.vd, vd),
    )
    return table, jnp.sum(vp + vd, dtype=jnp.int32)


def request_lengths(
    config: BudgetConfig, seed, ids, types, params: BudgetParams | None = None
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(v_p, v_d) int32 (shape of ids) of requests `ids` of types `types`: type j's law drawn at
    the request id, or in trace mode the lengths of the replayed row of each id
    (`arrivals.trace_row`; needs `params`) (docs §1)."""
    if config.trace:
        if params is None:
            raise TypeError("request_lengths: trace mode reads the lengths from params")
        row = arrivals.trace_row(params, seed, ids)
        return params.trace_prompt[row], params.trace_output[row]
    vp = jnp.zeros(jnp.shape(ids), jnp.int32)
    vd = jnp.zeros(jnp.shape(ids), jnp.int32)
    for j, law in enumerate(config.workload):
        p, d = law.sample(seed, ids)
        vp = jnp.where(types == j, p, vp)
        vd = jnp.where(types == j, d, vd)
    return vp, vd


def _insert(config: BudgetConfig, params: BudgetParams, state: BudgetState, active):
    """Insert the due arrivals (up to arrivals_per_step). Returns (gen, table, entries, rejected
    now, more_due, inserted now). Accepted arrivals take consecutive entry numbers; the first
    whose slot is still held is rejected, and so is every later one of this step (each would
    try the same slot, and nothing departs within a step: docs §4)."""
    Q, A = run_sizes(config, params)
    gen, buf, more_due = arrivals.collect_due(
        config,
        params,
        state.seed,
        state.gen,
        state.clock,
        active,
        config.arrivals_per_step,
        None if params.sizes is None else A,
    )
    ok = buf["ok"]
    oki = ok.astype(jnp.int32)
    entry = state.entries + jnp.cumsum(oki) - oki  # entry number of each accepted row
    slot = entry % Q
    t = state.table
    bad = ok & (t.entry[slot] >= 0)
    put = ok & (jnp.cumsum(bad.astype(jnp.int32)) == 0)
    n_put, rejected = fused_sums((put.astype(jnp.int32), (ok & ~put).astype(jnp.int32)))
    vp, vd = request_lengths(config, state.seed, buf["id"], buf["type"], params)
    at = jnp.where(put, slot, config.table_size)  # the config's Q: dropped
    s = lambda a, v: a.at[at].set(v, mode="drop")
    arrival = DF(s(t.arrival.hi, buf["hi"]), s(t.arrival.lo, buf["lo"]))
    last = DF(s(t.last.hi, buf["hi"]), s(t.last.lo, buf["lo"]))
    table = Table(
        s(t.entry, entry),
        s(t.id, buf["id"]),
        s(t.type, buf["type"]),
        arrival,
        s(t.p, vp),
        s(t.d, vd),
        s(t.vp, vp),
        s(t.vd, vd),
        last,
        s(t.ttft, 0.0),
    )
    return gen, table, state.entries + n_put, rejected, more_due, n_put


def _snapshots(config: BudgetConfig, totals: Totals, t0: DF, now, fill, n_in, x_pre) -> Totals:
    """Record the snapshots whose grid time g_k <= t0 at a deciding step (`now`), and (g_k, 0,
    0) for every later one when the run ends early with an empty system (`fill`)."""
    G = config.snapshots
    g = config.snapshot_times()
    g_hi = g.astype(np.float32)
    g_lo = (g - g_hi.astype(np.float64)).astype(np.float32)
    passed = clock.le(DF(jnp.asarray(g_hi), jnp.asarray(g_lo)), t0)
    k = jnp.arange(G, dtype=jnp.int32)
    new = now & passed & (k >= totals.snap_next)
    nxt = jnp.where(now, jnp.maximum(totals.snap_next, jnp.sum(passed, dtype=jnp.int32)), totals.snap_next)
    rest = fill & (k >= nxt)
    snap_t = jnp.where(new, clock.to_f32(t0), jnp.where(rest, jnp.asarray(g_hi), totals.snap_t))
    snap_n = jnp.where(new, n_in, jnp.where(rest, 0, totals.snap_n))
    snap_x = jnp.where(new, x_pre, jnp.where(rest, 0, totals.snap_x))
    return replace(totals, snap_t=snap_t, snap_n=snap_n, snap_x=snap_x, snap_next=jnp.where(fill, G, nxt))


def step(config: BudgetConfig, params: BudgetParams, state: BudgetState, record: bool = False):
    """One decision epoch (docs/budget-semantics.md §2). Returns (state, the step's trajectory
    row when `record`, else None)."""
    w = Window.of(config)
    t0 = state.clock
    active = ~state.done
    hit = clock.le(w.end, t0)
    # Arrivals due at the clock join even at the end epoch (they are in the end state).
    gen, table, entries, rejected, more_due, inserted = _insert(config, params, state, active)
    settled = active & ~more_due
    hit = hit & settled
    decide = settled & ~hit
    valid = table.valid
    view = View(valid, table.p, table.type, table.entry, entries % run_sizes(config, params)[0], table.p < table.vp)
    dp, dd = choose_batch(config, params, view)
    dp = jnp.where(decide & valid, jnp.minimum(dp, table.p), 0)
    dd = decide & valid & dd & (table.p == 0)
    depart = dd & (table.d == 1)  # the request's last decode token
    # Every integer sum over the table in one pass (`fused_sums`), before anything writes it.
    terms = batch_terms(config, table, dp, dd)
    sums = fused_sums(
        (
            valid.astype(jnp.int32),
            jnp.where(valid, table.p + table.d, 0),
            jnp.where(valid, table.p, 0),
            (valid & (table.p == 0)).astype(jnp.int32),
            dp,
            dd.astype(jnp.int32),
            depart.astype(jnp.int32),
            jnp.where(depart, table.vp + table.vd, 0),
            *terms.values(),
        )
    )
    n_in, x_pre, available_p, available_d, prefill, decode, departs, depart_tokens = sums[:8]
    load = prefill + decode
    batch = decide & (load > 0)
    # A batch that loads nothing changes nothing (dp and dd are zeros then). Masking them with
    # `batch` puts the sums above before every write of the table in data order: XLA updates
    # a field in place only when each of its reads comes before its write, and copies the
    # field every step otherwise (benchmarks/step_cost.py counts the copies).
    dp = jnp.where(batch, dp, 0)
    dd = dd & batch
    empty = decide & (load == 0)
    idle = empty & (n_in == 0) & ~gen.exhausted
    ends = hit | (empty & ~idle)
    tau = batch_time(config, params, table, dp, dd, load, dict(zip(terms, sums[8:])))
    t_end = clock.add(t0, tau)
    new_table, totals = _apply(config, table, state.totals, dp, dd, batch, t_end, w, departs, depart_tokens, decode)
    available = available_p + available_d
    starts_in = batch & w.contains(t0)
    span = w.overlap_s(t0, t_end)
    quiet_until = clock.where(idle, gen.time, w.end)
    totals = replace(
        totals,
        area_requests=totals.area_requests.add(jnp.where(batch, n_in.astype(jnp.float32) * span, 0.0)),
        area_tokens=totals.area_tokens.add(jnp.where(batch, (x_pre - load).astype(jnp.float32) * span, 0.0)),
        idle_s=totals.idle_s.add(jnp.where((idle | (ends & ~hit & (n_in == 0))), w.overlap_s(t0, quiet_until), 0.0)),
        batches=totals.batches + batch.astype(jnp.int32),
        window_batches=totals.window_batches + starts_in.astype(jnp.int32),
        partial=totals.partial + (starts_in & (load < params.budget) & (available >= params.budget)).astype(jnp.int32),
        rejected=totals.rejected + rejected,
        stalled=totals.stalled | (empty & (n_in > 0)),
        steps=totals.steps + active.astype(jnp.int32),
    )
    drains = (
        decide
        & ~totals.drained
        & (totals.backlog_tokens > 0)
        & (x_pre.astype(jnp.float32) <= np.float32(config.drain_fraction) * totals.backlog_tokens.astype(jnp.float32))
    )
    totals = replace(totals, drained=totals.drained | drains, drain_s=clock.where(drains, t0, totals.drain_s))
    totals = _snapshots(config, totals, t0, decide | hit, ends & ~hit & (n_in == 0), n_in, x_pre)
    new_clock = clock.where(batch, t_end, clock.where(idle, gen.time, t0))
    new = BudgetState(state.seed, new_clock, state.done | ends, gen, new_table, entries, totals)
    if not record:
        return new, None
    kind = jnp.where(
        ~active,
        KIND_NONE,
        jnp.where(ends, KIND_END, jnp.where(more_due, KIND_INSERT, jnp.where(batch, KIND_BATCH, KIND_IDLE))),
    )
    zb = lambda x: jnp.where(batch, x, jnp.zeros_like(x))
    row = dict(
        kind=kind.astype(jnp.int32),
        t_hi=t0.hi,
        t_lo=t0.lo,
        tau_hi=zb(tau.hi),
        tau_lo=zb(tau.lo),
        load=zb(load),
        prefill=zb(prefill),
        decode=zb(decode),
        requests=n_in,
        tokens=x_pre - load,
        available=available.astype(jnp.int32),
        inserted=inserted,
    )
    if config.record_members:
        row.update(entry=table.entry, id=table.id, dp=dp, dd=dd.astype(jnp.int32))
    return new, row


def _apply(
    config: BudgetConfig,
    table: Table,
    totals: Totals,
    dp,
    dd,
    batch,
    t_end: DF,
    w: Window,
    departs,
    depart_tokens,
    decode,
) -> tuple[Table, Totals]:
    """Load the batch (p -= dp, d -= dd) and record its completions at t_end (docs §2 step 6):
    first tokens, decode tokens (TBT) and departures, counted when t_end is in the window.
    departs, depart_tokens, decode: int32 sums over the batch of its departures, their
    v_p + v_d, and its decode tokens (the caller's one pass over the table)."""
    p = table.p - dp
    d = table.d - dd.astype(jnp.int32)
    first = (dp > 0) & (p == 0)
    depart = dd & (d == 0)
    end = DF(jnp.broadcast_to(t_end.hi, table.arrival.hi.shape), jnp.broadcast_to(t_end.lo, table.arrival.lo.shape))
    since = clock.sub(end, table.arrival)
    gap = clock.sub(end, table.last)
    ttft = jnp.where(first, since, table.ttft)
    counted = batch & w.contains(t_end)
    m_dep = depart & counted
    m_tok = dd & counted
    # The three float sums as one pairwise tree over [3, Q]: each row rounds as alone.
    latency, ttft_sum, tbt = ordered_sum(
        jnp.stack([jnp.where(m_dep, since, 0.0), jnp.where(m_dep, ttft, 0.0), jnp.where(m_tok, gap, 0.0)])
    )
    totals = replace(
        totals,
        departed=totals.departed + jnp.where(counted, departs, 0),
        departed_tokens=totals.departed_tokens.add(jnp.where(counted, depart_tokens, 0)),
        latency_s=totals.latency_s.add(latency),
        ttft_s=totals.ttft_s.add(ttft_sum),
        tbt_s=totals.tbt_s.add(tbt),
        tbt_count=totals.tbt_count + jnp.where(counted, decode, 0),
        latency_hist=hist_add(totals.latency_hist, since, m_dep, config.hist_octave_bits),
        ttft_hist=hist_add(totals.ttft_hist, ttft, m_dep, config.hist_octave_bits),
        tbt_hist=hist_add(totals.tbt_hist, gap, m_tok, config.hist_octave_bits),
    )
    new = replace(
        table,
        entry=jnp.where(depart, -1, table.entry),
        p=p,
        d=d,
        last=clock.where(first | dd, end, table.last),
        ttft=ttft,
    )
    return new, totals


def done(config: BudgetConfig, state: BudgetState) -> jnp.ndarray:
    """bool (batch shape): the run has ended."""
    return state.done


def batches(results: Results, s: int) -> dict[str, np.ndarray]:
    """The batch steps of seed index s of a recorded run: trajectory rows plus start_s and
    tau_s (float64 values of the double-floats)."""
    return trajectory_rows(results, s, KIND_BATCH)


# --------------------------------------------------------------------------- runner hints


def example() -> BudgetConfig:
    return BudgetConfig(horizon_s=10.0, table_size=256)


def max_steps(config: BudgetConfig) -> int:
    return config.max_steps


def trajectory_length(config: BudgetConfig, metrics) -> int:
    return int(np.max(metrics["num_steps"]))


# The ring and the arrival buffer: every policy and option runs padded. The padded slots are
# empty ring slots and the padded buffer rows empty arrivals, which every policy (the srpt sort
# included: their keys are the largest, and they take 0 tokens) and every batch-time term reads
# as absent.
SIZE_FIELDS = ("table_size", "arrivals_per_step")


def pad_into(config: BudgetConfig, params: BudgetParams, capacity) -> tuple[BudgetConfig, BudgetParams]:
    """(bucket config, params) running `config` inside the validated table_size and
    arrivals_per_step of `capacity` (`Engine.pad`): the params carry the run's own sizes
    (`BudgetSizes`), and its metrics are bitwise those of the unpadded run. Recorded per-slot
    rows (record_members) have the bucket's Q columns, the run's first."""
    sizes = BudgetSizes(*(jnp.int32(getattr(config, f)) for f in SIZE_FIELDS))
    return replace(config, **capacity), replace(params, sizes=sizes)


def trim(config: BudgetConfig, trajectories) -> dict:
    return trim_trajectories(config.table_size, trajectories)


def working_set_bytes(config: BudgetConfig) -> int:
    # About 44 bytes per slot (entry, id, type, arrival, p, d, vp, vd, last, ttft) and three
    # histograms: the bytes a step reads, each counted once as the dp engine's are (the
    # policies' prefix sums pass over the table a few times, but counting it 4 times gave
    # CPU chunks 10-15% slower at 1024 seeds: docs/benchmarks.md, "CPU chunks of the kv and
    # budget engines"). The arrival buffer, 20 bytes per row of arrivals_per_step <= Q, is
    # small beside them.
    return 44 * config.table_size + 12 * config.hist_bins


def peak_bytes(config: BudgetConfig, record: bool) -> int:
    per_seed = 16 * 44 * config.table_size + 12 * config.hist_bins
    if record:
        per_seed += config.max_steps * (48 + (16 * config.table_size if config.record_members else 0))
    return per_seed


def regrow(config: BudgetConfig, params: BudgetParams, metrics) -> tuple[BudgetConfig, BudgetParams, np.ndarray] | None:
    """With `grow_table`: the runs that rejected an arrival at a full ring slot (num_rejected,
    the only cause of a rejection: docs §4), to run again with twice the slots
    (`jaxsched.tables.grow_ring`); None otherwise."""
    return grow_ring(config, params, np.asarray(metrics["num_rejected"]) > 0, config.max_table_size())


def check(config: BudgetConfig, metrics) -> list[str]:
    return run_warnings("budget", "arrivals", "", config, metrics)


def describe(config: BudgetConfig) -> dict:
    return dict(
        policy=config.policy,
        workload="/".join(getattr(w, "name", type(w).__name__) for w in config.workload),
        horizon_s=config.horizon_s,
        burn_in_s=config.burn_in_s,
        table_size=config.table_size,
        attention=config.attention,
    )


# One engine with a token budget per batch (paper 004); see the module docstring.
ENGINE: Engine[BudgetConfig, BudgetParams, BudgetState] = Engine(
    name="budget",
    Config=BudgetConfig,
    Params=BudgetParams,
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
    # Runs end at different steps (an unstable run has more batches per second of horizon).
    skip_done_in_block=True,
    trajectory_length=trajectory_length,
    example=example,
    check=check,
    describe=describe,
    regrow=regrow,
    size_fields=SIZE_FIELDS,
    pad_into=pad_into,
    trim=trim,
)
