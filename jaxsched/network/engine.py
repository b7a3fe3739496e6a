"""The network engine: K token-budget engines that requests visit (paper 004 §4).

One scan step processes one event (docs/network-semantics.md §3): the end of an agent's batch
(its leaving tasks exit or move to their next agent), an arrival (routed), or an agent's
decision (a budget-engine batch: `jaxsched.budget.core`'s policies and batch time). The
event is the smallest by (time, class, agent), so work reaching an agent at time t is visible
to its decision at t. Pure functions in the gymnax style; seeds are vmapped by jaxsched.run.
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from .. import clock, rng
from ..budget.core import KIND_NONE, Window, batch_time, choose_batch, hist_add, run_warnings, trim_trajectories
from ..budget.policies import View
from ..budget.state import Table
from ..clock import DF
from ..engine import Engine
from ..errors import require
from ..kernels import ordered_sum, prefix_by_id
from ..run import Results, trajectory_rows
from ..workload import arrivals
from .config import ROUTE_BITS, NetworkConfig, NetworkParams, NetworkSizes, make_params
from .metrics import METRICS, finalize
from .registry import POLICIES, ROUTERS
from .state import Agents, Joins, NetworkState, NetworkTotals, Tasks

# Event classes, in their order at equal times (docs §3), and the recorded step kinds.
FLUSH, ARRIVAL, DECIDE = 0, 1, 2
# (KIND_NONE = 0: a step of an ended run, as in the budget engine's; `budget.core`.)
KIND_FLUSH, KIND_ARRIVAL, KIND_BATCH, KIND_WAIT, KIND_END = 1, 2, 3, 4, 5
_EXIT = -1


def stage_seed(seed, stage: int):
    """uint32 seed of the sizes of stage `stage` (docs §1): the run seed for stage 0."""
    seed = jnp.asarray(seed, jnp.uint32)
    return seed if stage == 0 else rng.hash3(seed, jnp.uint32(stage), rng.STREAM_STAGE)


def stage_lengths(config: NetworkConfig, seed, ids, types, stages) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(v_p, v_d) int32 (shape of ids) of the tasks of requests `ids` with types `types` at
    stages `stages`: law workload[z][s] drawn at the request id with the stage seed."""
    vp = jnp.zeros(jnp.shape(ids), jnp.int32)
    vd = jnp.zeros(jnp.shape(ids), jnp.int32)
    for z, laws in enumerate(config.workload):
        for s, law in enumerate(laws):
            p, d = law.sample(stage_seed(seed, s), ids)
            here = (types == z) & (stages == s)
            vp = jnp.where(here, p, vp)
            vd = jnp.where(here, d, vd)
    return vp, vd


def _next_agent(config: NetworkConfig) -> np.ndarray:
    """int32 [m, S + 1]: the agent of stage s + 1 of type z, _EXIT after the last stage."""
    out = np.full((config.m, config.num_stages + 1), _EXIT, np.int32)
    if config.routes is not None:
        for z, route in enumerate(config.routes):
            out[z, : len(route) - 1] = route[1:]
    return out


# --------------------------------------------------------------------------- size buckets
# A run padded into a larger config (`NetworkEngine.pad`) carries its own sizes in
# `params.sizes`; the arrays have the config's shapes. Each agent's ring is entry mod the run's
# own Q, so slots from Q on never hold a task; agents from the run's K on (`parallel` only)
# are never routed to, so they never hold a task, are never pending nor ready, and take no
# event. The float sums over a ring (`_flush`'s latency, the budget batch time's) see the
# extra slots as exact zeros after the run's own, which leaves the pairwise `ordered_sum`
# tree's rounding unchanged (x + 0 = x); per-agent float sums are elementwise; the host
# metrics over agents read the run's own agents (`metrics.finalize`).


def run_sizes(config: NetworkConfig, params: NetworkParams):
    """(Q, K) of the run: the config's table_size and agents (Python ints), or the traced int32
    sizes of a run padded into a bucket."""
    if params.sizes is None:
        return config.table_size, config.K
    return params.sizes.table_size, params.sizes.agents


def init(config: NetworkConfig, params: NetworkParams, seed) -> NetworkState:
    """Empty network at t = 0 of run `seed`, every agent waiting, the first arrival computed."""
    seed = jnp.asarray(seed, jnp.uint32)
    K = config.K
    return NetworkState(
        seed,
        DF.zeros(),
        jnp.bool_(False),
        arrivals.first(config, params.arrival, seed),
        Tasks.empty(K, config.table_size, config.num_stages),
        Agents.idle(K),
        Joins.empty(config.table_size if config.topology == "fork_join" else 1),
        NetworkTotals.zeros(K, config.hist_bins, config.snapshots),
    )


def _next_event(config: NetworkConfig, state: NetworkState):
    """(time DF, class, agent, any) of the smallest pending event by (time, class, agent)."""
    ag, gen = state.agents, state.gen
    cands = [(ag.pending[k], DF(ag.free_at.hi[k], ag.free_at.lo[k]), FLUSH, k) for k in range(config.K)]
    cands.append((~gen.exhausted, gen.time, ARRIVAL, 0))
    cands += [(ag.ready[k], DF(ag.free_at.hi[k], ag.free_at.lo[k]), DECIDE, k) for k in range(config.K)]
    best_t, best_c, best_k, found = DF.zeros(), jnp.int32(0), jnp.int32(0), jnp.bool_(False)
    for valid, t, c, k in cands:
        # Candidates come in (class, agent) order: only a strictly earlier time overtakes.
        take = valid & (~found | ~clock.le(best_t, t))
        best_t = clock.where(take, t, best_t)
        best_c = jnp.where(take, c, best_c)
        best_k = jnp.where(take, k, best_k)
        found = found | valid
    return best_t, best_c, best_k, found


def _take(a: jnp.ndarray, k) -> jnp.ndarray:
    """a[k] for a [K, ...] array and a traced agent k, as a chain of K selects: under vmap a
    dynamic index per seed becomes a gather (and a row write a scatter), element by element on
    CPU, while selects over the K rows vectorize."""
    row = a[0]
    for i in range(1, a.shape[0]):
        row = jnp.where(k == i, a[i], row)
    return row


def _put(a: jnp.ndarray, k, row: jnp.ndarray) -> jnp.ndarray:
    """a with a[k] = row (see `_take`)."""
    hit = (jnp.arange(a.shape[0]) == k).reshape((-1,) + (1,) * (a.ndim - 1))
    return jnp.where(hit, row[None], a)


def _row(tasks: Tasks, k) -> tuple[Table, jnp.ndarray, jnp.ndarray]:
    """Agent k's ring: (Table [Q], stage [Q], leaving [Q])."""
    return (jax.tree.map(lambda a: _take(a, k), tasks.table), _take(tasks.stage, k), _take(tasks.leaving, k))


def _enter(config: NetworkConfig, params: NetworkParams, state: NetworkState, j, mask, rank, fields: dict, t: DF):
    """Tasks `mask` (arrays [L], `rank` their order) enter agent j at time t, taking entry
    numbers entries[j] + rank; the first whose slot is held is rejected and so is every later
    one (a rejected task takes no entry: the next tries the same slot, budget docs §4).
    Returns (tasks, agents, totals)."""
    Q, _ = run_sizes(config, params)
    ag = state.agents
    s0 = ag.entries[j] % Q
    # The candidates would fill the consecutive slots s0, s0 + 1, ... (mod Q) in rank order.
    n_mask = jnp.sum(mask, dtype=jnp.int32)
    if mask.shape[0] == 1:
        held = (_take(state.tasks.table.entry, j)[s0] >= 0) & mask[0]
        n = jnp.where(held, 0, n_mask)
        tasks = _enter_one(config, state.tasks, j, s0, ag.entries[j], n > 0, fields, t)
    else:
        slot = jnp.arange(config.table_size, dtype=jnp.int32)
        r = (slot - s0) % Q
        if params.sizes is not None:
            # Slots past the run's ring get a rank no task reaches (n_mask <= Q of them flush),
            # inside the arrays (Q < config.table_size whenever such a slot exists).
            r = jnp.where(slot < Q, r, config.table_size - 1)
        held = state.tasks.table.entry[j] >= 0
        n = jnp.minimum(n_mask, jnp.min(jnp.where(held & (r < n_mask), r, Q)))
        tasks = _enter_many(config, state.tasks, j, mask & (rank < n), rank, r, n, ag.entries[j] + r, fields, t)
    tok = jnp.sum(jnp.where(mask & (rank < n), fields["vp"] + fields["vd"], 0), dtype=jnp.int32)
    wake = (n > 0) & ~ag.pending[j] & ~ag.ready[j]
    w = Window.of(config)
    waited = w.overlap_s(DF(ag.since.hi[j], ag.since.lo[j]), t)
    K = config.K
    totals = state.totals
    totals = replace(
        totals,
        rejected=totals.rejected + n_mask - n,
        idle_s=totals.idle_s.add(jnp.zeros((K,), jnp.float32).at[j].set(jnp.where(wake, waited, 0.0))),
    )
    free_at = DF(
        ag.free_at.hi.at[j].set(jnp.where(wake, t.hi, ag.free_at.hi[j])),
        ag.free_at.lo.at[j].set(jnp.where(wake, t.lo, ag.free_at.lo[j])),
    )
    agents = replace(
        ag,
        free_at=free_at,
        ready=ag.ready.at[j].set(ag.ready[j] | wake),
        entries=ag.entries.at[j].add(n),
        held=ag.held.at[j].add(n),
        active=ag.active.at[j].add(n),
        tokens=ag.tokens.at[j].add(tok),
    )
    return tasks, agents, totals


def _new_rows(entry, fields: dict, t: DF) -> tuple[Table, jnp.ndarray, jnp.ndarray]:
    """(Table, stage, leaving) rows of tasks entering at time t with entry numbers `entry` and
    `fields` (all arrays of one shape): p = v_p, d = v_d, last token time t, no TTFT yet."""
    at_t = DF(jnp.broadcast_to(t.hi, entry.shape), jnp.broadcast_to(t.lo, entry.shape))
    table = Table(
        entry,
        fields["id"],
        fields["type"],
        fields["arrival"],
        fields["vp"],
        fields["vd"],
        fields["vp"],
        fields["vd"],
        at_t,
        jnp.zeros(entry.shape, jnp.float32),
    )
    return table, fields["stage"], jnp.zeros(entry.shape, bool)


def _enter_one(config: NetworkConfig, tasks: Tasks, j, slot, entry, ok, fields: dict, t: DF) -> Tasks:
    """One task (fields [1]) with entry number `entry` into slot `slot` of agent j (traced)
    when `ok`: a scatter of one element per array."""
    Q, K = config.table_size, config.K
    flat = jnp.where(ok, j * Q + slot, K * Q)
    table, stage, leaving = _new_rows(jnp.reshape(entry, (1,)), fields, t)

    def scatter(a, v):
        return a.reshape((K * Q,) + a.shape[2:]).at[flat].set(v[0], mode="drop").reshape(a.shape)

    return Tasks(
        jax.tree.map(scatter, tasks.table, table),
        scatter(tasks.stage, stage),
        scatter(tasks.leaving, leaving),
        scatter(tasks.plan_p, fields["plan_p"]),
        scatter(tasks.plan_d, fields["plan_d"]),
    )


def _enter_many(config: NetworkConfig, tasks: Tasks, j: int, put, rank, r, n, entry, fields: dict, t: DF) -> Tasks:
    """Tasks `put` (arrays [Q] of the flushing agent, `rank` their order) into the slots
    s0 + rank of agent j (a static index), where r[s] = (s - s0) mod Q is the rank each slot
    receives, entry[s] its entry number and n the number entering. The fields are packed in one int32 matrix
    and moved by
    one compaction scatter and one row gather: per-field scatters of Q elements each cost ten
    times more on CPU."""
    Q = config.table_size
    L = put.shape[0]
    cols = [
        fields["id"],
        fields["type"],
        fields["arrival"].hi,
        fields["arrival"].lo,
        fields["vp"],
        fields["vd"],
        fields["stage"],
    ]
    packed = jnp.concatenate(
        [
            jnp.stack(
                [
                    jax.lax.bitcast_convert_type(c, jnp.int32) if c.dtype == jnp.float32 else c.astype(jnp.int32)
                    for c in cols
                ],
                axis=1,
            ),
            fields["plan_p"],
            fields["plan_d"],
        ],
        axis=1,
    )  # [L, F]
    src = (
        jnp.zeros((Q,), jnp.int32).at[jnp.where(put, rank, Q)].set(jnp.arange(L, dtype=jnp.int32), mode="drop")
    )  # rank -> source
    rows = packed[src[r]]  # [Q, F]
    hit = r < n
    f32 = lambda c: jax.lax.bitcast_convert_type(c, jnp.float32)
    S = config.num_stages
    got = dict(
        id=rows[:, 0],
        type=rows[:, 1],
        arrival=DF(f32(rows[:, 2]), f32(rows[:, 3])),
        vp=rows[:, 4],
        vd=rows[:, 5],
        stage=rows[:, 6],
    )
    table, stage, leaving = _new_rows(entry, got, t)
    sel = lambda new, a: a.at[j].set(jnp.where(hit.reshape((Q,) + (1,) * (a.ndim - 2)), new, a[j]))
    return Tasks(
        jax.tree.map(sel, table, tasks.table),
        sel(stage, tasks.stage),
        sel(leaving, tasks.leaving),
        sel(rows[:, 7 : 7 + S], tasks.plan_p),
        sel(rows[:, 7 + S :], tasks.plan_d),
    )


def _pick(on, new, old):
    """`new` where the scalar `on` holds, else `old` (leaf by leaf; for the small parts of the
    state: the [K, Q] tables change only through masked scatters and row writes)."""
    return jax.tree.map(lambda a, b: jnp.where(on, a, b), new, old)


def _arrive(config: NetworkConfig, params: NetworkParams, state: NetworkState, t: DF, on):
    """If `on`: the next stream candidate at time t; an accepted request enters its first
    agent. Returns (state, the agent)."""
    gen = state.gen
    z = gen.type
    one = lambda x: jnp.reshape(jnp.asarray(x, jnp.int32), (1,))
    ids, types = one(gen.num_arrived), one(z)
    S = config.num_stages
    plan = [stage_lengths(config, state.seed, ids, types, one(s)) for s in range(S)]
    plan_p = jnp.stack([p for p, _ in plan], axis=1)  # [1, S]
    plan_d = jnp.stack([d for _, d in plan], axis=1)
    vp, vd = plan_p[:, 0], plan_d[:, 0]
    if config.topology == "parallel":
        route = ROUTERS[config.router].fn
        j = route(config, params, state.agents, state.seed, gen.num_arrived, run_sizes(config, params)[1])
    elif config.topology == "fork_join":
        j = jnp.int32(0)
    else:
        j = jnp.asarray(np.asarray([r[0] for r in config.routes], np.int32))[z]
    fields = dict(
        id=ids,
        type=types,
        stage=one(0),
        vp=vp,
        vd=vd,
        plan_p=plan_p,
        plan_d=plan_d,
        arrival=DF(jnp.reshape(t.hi, (1,)), jnp.reshape(t.lo, (1,))),
    )
    mask = jnp.reshape(gen.accepted & on, (1,))
    tasks, agents, totals = _enter(config, params, state, j, mask, jnp.zeros((1,), jnp.int32), fields, t)
    gen = _pick(on, arrivals.advance(config, params.arrival, state.seed, gen), gen)
    return replace(state, gen=gen, tasks=tasks, agents=agents, totals=totals), j


def _flush(config: NetworkConfig, params: NetworkParams, state: NetworkState, k, t: DF, on):
    """If `on`: the end of agent k's batch at time t; its leaving tasks exit the network or
    move on (their next agent, the fork, or the join), in their entry order at k; agent k's
    decision is then due at t."""
    table, stage, leaving = _row(state.tasks, k)
    leaving = leaving & on
    if config.topology == "routes":
        nxt = jnp.asarray(_next_agent(config))[table.type, stage]
        exits = leaving & (nxt == _EXIT)
    elif config.topology == "fork_join":
        exits = leaving & (k == config.K - 1)
    else:
        exits = leaving
    w = Window.of(config)
    end = DF(jnp.broadcast_to(t.hi, table.p.shape), jnp.broadcast_to(t.lo, table.p.shape))
    since = clock.sub(end, table.arrival)
    counted = exits & w.contains(t)
    tot = state.totals
    tot = replace(
        tot,
        exits=tot.exits + jnp.sum(counted, dtype=jnp.int32),
        latency_s=tot.latency_s.add(ordered_sum(jnp.where(counted, since, 0.0))),
        latency_hist=hist_add(tot.latency_hist, since, counted, config.hist_octave_bits),
    )
    n_left = jnp.sum(leaving, dtype=jnp.int32)
    ag = state.agents
    ag = replace(
        ag,
        pending=ag.pending.at[k].set(ag.pending[k] & ~on),
        ready=ag.ready.at[k].set(ag.ready[k] | on),
        held=ag.held.at[k].add(-n_left),
    )
    # Only the fields that change are written back (a row write costs K Q per field).
    tasks = state.tasks
    tasks = replace(
        tasks,
        table=replace(tasks.table, entry=_put(tasks.table.entry, k, jnp.where(leaving, -1, table.entry))),
        leaving=_put(tasks.leaving, k, _take(tasks.leaving, k) & ~on),
    )
    state = replace(state, tasks=tasks, agents=ag, totals=tot)
    if config.topology == "parallel":
        return state
    Q, _ = run_sizes(config, params)
    base = state.agents.entries[k] % Q
    if config.topology == "routes":
        moves = [(j, leaving & (nxt == j), stage + 1) for j in range(config.K)]
    else:
        forked = leaving & (k == 0)
        state, joined = _join(config, state, leaving & ((k == 1) | (k == 2)), table.id, base, Q)
        moves = [(1, forked, 1), (2, forked, 2), (3, joined, 3)]
    plan_p, plan_d = _take(state.tasks.plan_p, k), _take(state.tasks.plan_d, k)
    for j, mask, st in moves:
        at = jnp.broadcast_to(jnp.minimum(st, config.num_stages - 1), stage.shape)[:, None]
        fields = dict(
            id=table.id,
            type=table.type,
            stage=jnp.broadcast_to(st, stage.shape),
            vp=jnp.take_along_axis(plan_p, at, axis=1)[:, 0],
            vd=jnp.take_along_axis(plan_d, at, axis=1)[:, 0],
            plan_p=plan_p,
            plan_d=plan_d,
            arrival=table.arrival,
        )
        rank = prefix_by_id(mask.astype(jnp.int32), base)
        tasks, agents, totals = _enter(config, params, state, j, mask, rank, fields, t)
        state = replace(state, tasks=tasks, agents=agents, totals=totals)
    return state


def _join(config: NetworkConfig, state: NetworkState, joining, ids, base, Q):
    """The join of `fork_join` (docs §3) for the tasks `joining` (one agent's flush, [Q]):
    a task whose request waits in its slot (id mod J) completes the join and is returned in
    the mask; a task finding the slot free waits there (the oldest by entry among those
    wanting one slot gets it); a task finding the slot held by another request (as read
    before this flush), or losing that race, is rejected. Q: the run's table size, the join's
    ring (int, or traced in a size bucket). Returns (state, joined [Q])."""
    J = state.joins.id.shape[0]
    slot = ids % Q
    cur = state.joins.id[slot]
    joined = joining & (cur == ids)
    want = joining & (cur == -1)
    rank = prefix_by_id(want.astype(jnp.int32), base)
    best = jnp.full((J,), jnp.iinfo(jnp.int32).max, jnp.int32).at[jnp.where(want, slot, J)].min(rank, mode="drop")
    claim = want & (best[slot] == rank)
    lost = joining & ~joined & ~claim
    jid = state.joins.id.at[jnp.where(joined, slot, J)].set(-1, mode="drop")
    jid = jid.at[jnp.where(claim, slot, J)].set(ids, mode="drop")
    waiting = state.joins.waiting + jnp.sum(claim, dtype=jnp.int32) - jnp.sum(joined, dtype=jnp.int32)
    tot = replace(state.totals, rejected=state.totals.rejected + jnp.sum(lost, dtype=jnp.int32))
    return replace(state, joins=Joins(jid, waiting), totals=tot), joined


def _decide(config: NetworkConfig, params: NetworkParams, state: NetworkState, k, t: DF, on):
    """If `on`: agent k's decision at time t (budget docs §2 steps 3-6). Returns (state, dp,
    dd, load, tau), zeros when off."""
    table, stage, leaving = _row(state.tasks, k)
    pk = jax.tree.map(lambda a: a[k], params.agent)
    options = config.batch_options()
    valid = table.valid
    base = state.agents.entries[k] % run_sizes(config, params)[0]
    view = View(valid, table.p, params.rank[k][table.type], table.entry, base)
    dp, dd = choose_batch(options, pk, view)
    dp = jnp.where(valid & on, jnp.minimum(dp, table.p), 0)
    dd = valid & dd & (table.p == 0) & on
    n_pre = jnp.sum(dp, dtype=jnp.int32)
    load = n_pre + jnp.sum(dd, dtype=jnp.int32)
    batch = load > 0
    tau = batch_time(options, pk, table, dp, dd, load)
    t_end = clock.add(t, tau)
    p = table.p - dp
    d = table.d - dd.astype(jnp.int32)
    depart = dd & (d == 0)
    new = replace(table, p=p, d=d)
    available = jnp.sum(jnp.where(valid, table.p, 0)) + jnp.sum(valid & (table.p == 0))
    w = Window.of(config)
    starts_in = batch & w.contains(t)
    ag, tot = state.agents, state.totals
    one = lambda x: jnp.zeros((config.K,), jnp.int32).at[k].set(x.astype(jnp.int32))
    tot = replace(
        tot,
        batches=tot.batches + one(batch),
        window_batches=tot.window_batches + one(starts_in),
        partial=tot.partial + one(starts_in & (load < pk.budget) & (available >= pk.budget)),
        stalled=tot.stalled | (on & ~batch & (ag.held[k] > 0)),
    )
    free_at = DF(
        ag.free_at.hi.at[k].set(jnp.where(batch, t_end.hi, ag.free_at.hi[k])),
        ag.free_at.lo.at[k].set(jnp.where(batch, t_end.lo, ag.free_at.lo[k])),
    )
    waits = on & ~batch
    since = DF(
        ag.since.hi.at[k].set(jnp.where(waits, t.hi, ag.since.hi[k])),
        ag.since.lo.at[k].set(jnp.where(waits, t.lo, ag.since.lo[k])),
    )
    ag = replace(
        ag,
        free_at=free_at,
        since=since,
        pending=ag.pending.at[k].set(jnp.where(on, batch, ag.pending[k])),
        ready=ag.ready.at[k].set(ag.ready[k] & ~on),
        tokens=ag.tokens.at[k].add(-load),
        active=ag.active.at[k].add(-jnp.sum(depart, dtype=jnp.int32)),
    )
    tasks = state.tasks
    tasks = replace(
        tasks,
        table=replace(tasks.table, p=_put(tasks.table.p, k, new.p), d=_put(tasks.table.d, k, new.d)),
        leaving=_put(tasks.leaving, k, jnp.where(on, depart, leaving)),
    )
    state = replace(state, tasks=tasks, agents=ag, totals=tot)
    return state, dp, dd, load, DF(jnp.where(on, tau.hi, 0.0), jnp.where(on, tau.lo, 0.0))


def _snapshots(config: NetworkConfig, totals: NetworkTotals, n, x, t: DF, all_):
    """Record the grid points g_j <= t (all of them when `all_`) not yet recorded with the
    current (pre-event) tasks n and tokens x in the network: the state on [g_j, t) is
    constant."""
    g = config.snapshot_times()
    g_hi = g.astype(np.float32)
    g_lo = (g - g_hi.astype(np.float64)).astype(np.float32)
    passed = clock.le(DF(jnp.asarray(g_hi), jnp.asarray(g_lo)), t) | all_
    j = jnp.arange(config.snapshots, dtype=jnp.int32)
    new = passed & (j >= totals.snap_next)
    return replace(
        totals,
        snap_n=jnp.where(new, n, totals.snap_n),
        snap_x=jnp.where(new, x, totals.snap_x),
        snap_next=jnp.maximum(totals.snap_next, jnp.sum(passed, dtype=jnp.int32)),
    )


def in_network(state: NetworkState) -> jnp.ndarray:
    """int32 tasks in the network: held by an agent (leaving ones included) or waiting at the
    join (a forked request counts once per branch)."""
    return jnp.sum(state.agents.held, dtype=jnp.int32) + state.joins.waiting


def step(config: NetworkConfig, params: NetworkParams, state: NetworkState, record: bool = False):
    """Process one event (docs §3). Returns (state, the step's trajectory row when `record`)."""
    active = ~state.done
    t, cls, k, found = _next_event(config, state)
    horizon = DF.from_float64(config.horizon_s)
    ends = active & (~found | clock.le(horizon, t))
    go = active & ~ends
    n_pre = in_network(state)
    x_pre = jnp.sum(state.agents.tokens, dtype=jnp.int32)
    totals = _snapshots(config, state.totals, n_pre, x_pre, t, ends)
    totals = replace(totals, steps=totals.steps + active.astype(jnp.int32))
    state = replace(state, totals=totals)
    # Every event kind runs masked (no lax.switch): under vmap a switch becomes a select of
    # every branch's whole state, copying the [K, Q] tables per step; masked scatters and row
    # writes update them in place.
    new = _flush(config, params, state, k, t, go & (cls == FLUSH))
    new, j = _arrive(config, params, new, t, go & (cls == ARRIVAL))
    new, dp, dd, load, tau = _decide(config, params, new, k, t, go & (cls == DECIDE))
    agent = jnp.where(cls == ARRIVAL, j, k)
    new = replace(new, clock=clock.where(go, t, state.clock), done=state.done | ends)
    if not record:
        return new, None
    kind = jnp.where(
        ~active,
        KIND_NONE,
        jnp.where(
            ends,
            KIND_END,
            jnp.where(
                cls == FLUSH,
                KIND_FLUSH,
                jnp.where(cls == ARRIVAL, KIND_ARRIVAL, jnp.where(load > 0, KIND_BATCH, KIND_WAIT)),
            ),
        ),
    )
    row = dict(
        kind=kind.astype(jnp.int32),
        agent=jnp.asarray(agent, jnp.int32),
        t_hi=t.hi,
        t_lo=t.lo,
        tau_hi=tau.hi,
        tau_lo=tau.lo,
        load=load,
        prefill=jnp.sum(dp, dtype=jnp.int32),
        decode=jnp.sum(dd, dtype=jnp.int32),
        requests=n_pre,
        tokens=x_pre,
    )
    if config.record_members:
        table = jax.tree.map(lambda a: a[k], state.tasks.table)
        row.update(entry=table.entry, id=table.id, dp=dp, dd=dd.astype(jnp.int32))
    return new, row


def done(config: NetworkConfig, state: NetworkState) -> jnp.ndarray:
    """bool (batch shape): the run has ended."""
    return state.done


def batches(results: Results, s: int) -> dict[str, np.ndarray]:
    """The batch steps of seed index s of a recorded run: trajectory rows (agent, load, ...)
    plus start_s and tau_s."""
    return trajectory_rows(results, s, KIND_BATCH)


# --------------------------------------------------------------------------- runner hints


def example() -> NetworkConfig:
    return NetworkConfig(horizon_s=5.0, table_size=256)


def max_steps(config: NetworkConfig) -> int:
    return config.max_steps


# Every agent's ring, and the agents themselves behind a router. Every policy, router and
# topology pads its table; only `parallel` pads its agents (`pad_into`), and configs of other
# topologies never differ in agents alone (their routes name every agent, fork_join has four),
# so a bucket never asks them to.
SIZE_FIELDS = ("table_size", "agents")


def pad_into(config: NetworkConfig, params: NetworkParams, capacity) -> tuple[NetworkConfig, NetworkParams]:
    """(bucket config, params) running `config` inside the validated table_size and agents of
    `capacity` (`Engine.pad`): the params carry the run's own sizes (`NetworkSizes`), and its
    metrics are bitwise those of the unpadded run. More agents need topology `parallel` (the
    routes of `routes` and the stages of `fork_join` name their agents); the extra agents get
    agent 0's constants, the default type priority and the weighted router's last cut, which
    nothing reads (they never hold a task). Recorded per-slot rows (record_members) have the
    bucket's Q columns, the run's first."""
    K, extra = config.K, capacity["agents"] - config.K
    require(
        extra == 0 or config.topology == "parallel",
        "capacity agents",
        f"{K} (the config's) for topology {config.topology!r}, whose routes name their "
        "agents (only 'parallel' runs padded into more agents)",
        capacity["agents"],
    )
    orders = config.type_orders
    if orders is not None and extra:
        orders = orders + (tuple(range(config.m)),) * extra
    bucket = replace(config, **capacity, type_orders=orders)
    grow = lambda a: jnp.concatenate([a, jnp.repeat(a[:1], extra, axis=0)]) if extra else a
    sizes = NetworkSizes(jnp.int32(config.table_size), jnp.int32(K))
    # The weighted router never passes a cut of 2^24 (its draw is < 2^24): no extra agent picked.
    cuts = jnp.concatenate([params.route_cuts, jnp.full((extra,), 2**ROUTE_BITS, jnp.int32)])
    return bucket, replace(
        params, agent=jax.tree.map(grow, params.agent), rank=grow(params.rank), route_cuts=cuts, sizes=sizes
    )


def trajectory_length(config: NetworkConfig, metrics) -> int:
    return int(np.max(metrics["num_steps"]))


def trim(config: NetworkConfig, trajectories) -> dict:
    # The event kinds share KIND_NONE (0) for steps of ended runs with the budget engine.
    return trim_trajectories(config.table_size, trajectories)


def working_set_bytes(config: NetworkConfig) -> int:
    # About 50 bytes per slot per agent (the budget ring plus stage and leaving).
    return 50 * config.K * config.table_size + 4 * config.hist_bins


def peak_bytes(config: NetworkConfig, record: bool) -> int:
    per_seed = 4 * working_set_bytes(config)
    if record:
        per_seed += config.max_steps * (48 + (16 * config.table_size if config.record_members else 0))
    return per_seed


def check(config: NetworkConfig, metrics) -> list[str]:
    return run_warnings("network", "tasks", " at an agent", config, metrics)


def describe(config: NetworkConfig) -> dict:
    return dict(
        topology=config.topology,
        agents=config.K,
        policy=config.policy,
        router=config.router if config.topology == "parallel" else "",
        horizon_s=config.horizon_s,
        table_size=config.table_size,
    )


# K token-budget engines behind a router, or an agent network; see the module docstring.
ENGINE: Engine[NetworkConfig, NetworkParams, NetworkState] = Engine(
    name="network",
    Config=NetworkConfig,
    Params=NetworkParams,
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
    step_unit="event",
    skip_done_in_block=True,
    trajectory_length=trajectory_length,
    example=example,
    check=check,
    describe=describe,
    size_fields=SIZE_FIELDS,
    pad_into=pad_into,
    trim=trim,
)
