"""The network engine: K token-budget engines that requests visit (paper 004 §4).

Events (docs/network-semantics.md §3): the end of an agent's batch (its leaving tasks exit or
move to their next agent), an arrival (routed), or an agent's decision (a budget-engine batch:
`jaxsched.budget.core`'s policies and batch time), processed in the order of (time, class,
agent), so work reaching an agent at time t is visible to its decision at t. One scan step
processes up to ARRIVALS_PER_STEP arrivals, then a batch end, then its agent's decision, each
only when it is the next event (a recording step processes one event, a trajectory row each):
most batch ends are followed by their agent's decision, so a step takes about one batch and
the arrivals before it, while the [K, Q] rings are read and written once per step. Pure
functions in the gymnax style; seeds are vmapped by jaxsched.run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

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
from ..kernels import all_computed, ordered_sum, prefix_by_id
from ..run import Results, trajectory_rows
from ..tables import grow_ring
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
# Arrivals a step without a record may take before its batch end (`step`): the events are the
# same whatever this is, only the count of scan steps changes. Two: on the speed table's cases
# (about 1.4 arrivals between batch ends) one left more steps and three were no faster.
ARRIVALS_PER_STEP = 2


def stage_seed(seed, stage: int):
    """uint32 seed of the sizes of stage `stage` (docs §1): the run seed for stage 0."""
    seed = jnp.asarray(seed, jnp.uint32)
    return seed if stage == 0 else rng.hash3(seed, jnp.uint32(stage), rng.STREAM_STAGE)


def stage_lengths(config: NetworkConfig, seed, ids, types, stages) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(v_p, v_d) int32 (shape of ids) of the tasks of requests `ids` with types `types` at
    stages `stages`: law workload[z][s] drawn at the request id with the stage seed."""
    vp = jnp.zeros(jnp.shape(ids), jnp.int32)
    vd = jnp.zeros(jnp.shape(ids), jnp.int32)
    drawn = []  # (stage, law, (p, d)): types sharing a stage's law share its draw
    for z, laws in enumerate(config.workload):
        for s, law in enumerate(laws):
            same = [pd for s2, law2, pd in drawn if s2 == s and _same_law(law2, law)]
            p, d = same[0] if same else law.sample(stage_seed(seed, s), ids)
            drawn.append((s, law, (p, d)))
            here = (types == z) & (stages == s)
            vp = jnp.where(here, p, vp)
            vd = jnp.where(here, d, vd)
    return vp, vd


def _same_law(a, b) -> bool:
    """Whether two length laws are the same law (equal fields: the same draws at the same
    seed and ids)."""
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):  # fields that do not compare to one bool (arrays)
        return False


def _next_agent(config: NetworkConfig) -> np.ndarray:
    """int32 [m, S + 1]: the agent of stage s + 1 of type z, _EXIT after the last stage."""
    out = np.full((config.m, config.num_stages + 1), _EXIT, np.int32)
    if config.routes is not None:
        for z, route in enumerate(config.routes):
            out[z, : len(route) - 1] = route[1:]
    return out


def _successors(config: NetworkConfig) -> np.ndarray | None:
    """int32 [K, D]: the agents that the tasks leaving each agent of a `routes` network can
    move to (ascending, padded with K, an agent that takes none), when every agent has fewer
    than K of them (D = the most of any agent); None otherwise. A flush then enters its tasks
    in D passes with a traced target instead of K passes, one per agent (the Rybko-Stolyar
    network: one each). The passes touch distinct agents, so their order changes nothing."""
    K, nxt = config.K, _next_agent(config)
    succ = [set() for _ in range(K)]
    for z, route in enumerate(config.routes):
        for s, agent in enumerate(route):
            if nxt[z, s] != _EXIT:
                succ[agent].add(int(nxt[z, s]))
    D = max(len(x) for x in succ)
    if D >= K:
        return None
    out = np.full((K, D), K, np.int32)
    for agent, x in enumerate(succ):
        out[agent, : len(x)] = sorted(x)
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


def _set(a: jnp.ndarray, k, v) -> jnp.ndarray:
    """a with a[k] = v for a [K] array and an agent k (traced or static): one select over the
    K entries, which fuses with its neighbours (a scatter per seed is a kernel of its own and
    a copy of `a`)."""
    return jnp.where(jnp.arange(a.shape[0]) == k, v, a)


def _bits(x) -> jnp.ndarray:
    """int32 bits of an int32, float32 or bool array (bool as 0 or 1)."""
    if x.dtype == jnp.bool_ or jnp.issubdtype(x.dtype, jnp.integer):
        return x.astype(jnp.int32)
    return jax.lax.bitcast_convert_type(x, jnp.int32)


def _from_bits(b, dtype) -> jnp.ndarray:
    """The inverse of `_bits`."""
    if dtype == jnp.bool_:
        return b != 0
    if jnp.issubdtype(dtype, jnp.integer):
        return b.astype(dtype)
    return jax.lax.bitcast_convert_type(b, dtype)


def _rows(arrays: list, k) -> list:
    """[a[k] for a in arrays] (arrays of one shape [K, ...], int32, float32 or bool): per
    array a sum over the agents of the int32 bits masked to agent k's (a sum with one nonzero
    term is exact). A reduce is its own kernel, so the step's writes of the arrays read these
    rows instead of fusing the selection, which reads a[k] at another index than the one it
    writes and so could not write the array in place. One reduce per array, not one variadic
    reduce: a row the step does not use is then never read (tracing drops it), where a
    variadic reduce would read every array whichever of its rows are used."""
    hit = (jnp.arange(arrays[0].shape[0]) == k).reshape((-1,) + (1,) * (arrays[0].ndim - 1))
    rows = [jnp.sum(jnp.where(hit, _bits(a), 0), axis=0, dtype=jnp.int32) for a in arrays]
    return [_from_bits(r, a.dtype) for r, a in zip(rows, arrays)]


def _row(tasks: Tasks, k) -> tuple[Table, jnp.ndarray, jnp.ndarray]:
    """Agent k's ring: (Table [Q], stage [Q], leaving [Q])."""
    leaves, treedef = jax.tree.flatten((tasks.table, tasks.stage, tasks.leaving))
    return jax.tree.unflatten(treedef, _rows(leaves, k))


# --------------------------------------------------------------------------- task writes
# The handlers read the tasks as the step finds them and describe their writes; `_write`
# applies every write of the step at the end, one masked select per field over [K, Q] (or one
# scatter of one element, for the fields only an arrival writes). The events are exclusive, so
# reading the step's input is reading what each handler would see after the others (an
# inactive handler writes nothing), except the slots a flush frees at its own agent, which
# the tasks it moves may take (`_flush` passes that row). XLA's CPU backend orders a step's
# operations by their data only and updates a [K, Q] field in place only when every read of
# it comes before its write in that order (it copies the field every step otherwise): every
# write's mask depends on everything the reads produce (`kernels.all_computed`).


def _fields_of(tasks: Tasks) -> dict:
    """The leaves of `tasks` by name."""
    return dict(_row_fields((tasks.table, tasks.stage, tasks.leaving)), plan_p=tasks.plan_p, plan_d=tasks.plan_d)


def _row_fields(row) -> dict:
    """The leaves of a ring `row` (Table, stage, leaving) by their `_fields_of` names."""
    tb, stage, leaving = row
    return dict(
        entry=tb.entry,
        id=tb.id,
        type=tb.type,
        arrival_hi=tb.arrival.hi,
        arrival_lo=tb.arrival.lo,
        p=tb.p,
        d=tb.d,
        vp=tb.vp,
        vd=tb.vd,
        last_hi=tb.last.hi,
        last_lo=tb.last.lo,
        ttft=tb.ttft,
        stage=stage,
        leaving=leaving,
    )


def _tasks_of(x: dict) -> Tasks:
    """The inverse of `_fields_of`."""
    table, stage, leaving = _row_of(x)
    return Tasks(table, stage, leaving, x["plan_p"], x["plan_d"])


def _row_of(x: dict) -> tuple:
    """The inverse of `_row_fields`."""
    table = Table(
        x["entry"],
        x["id"],
        x["type"],
        DF(x["arrival_hi"], x["arrival_lo"]),
        x["p"],
        x["d"],
        x["vp"],
        x["vd"],
        DF(x["last_hi"], x["last_lo"]),
        x["ttft"],
    )
    return table, x["stage"], x["leaving"]


def _patch_row(config: NetworkConfig, row, r, ones: list):
    """Agent r's ring `row` (Table, stage, leaving) with the step's arrivals `ones` (`_arrive`'s
    writes) that entered it."""
    slot = jnp.arange(config.table_size, dtype=jnp.int32)
    x = _row_fields(row)
    for j, s, ok, vals in ones:
        hit = ok & (j == r) & (slot == s)
        x = {name: jnp.where(hit, vals[name][0], a) for name, a in x.items()}
    return _row_of(x)


def _ring_entry(config: NetworkConfig, tasks: Tasks, j, ones: list) -> jnp.ndarray:
    """int32 [Q]: the entry numbers in agent j's ring (a static or traced index) after the
    step's arrivals `ones`."""
    slot = jnp.arange(config.table_size, dtype=jnp.int32)
    e = tasks.table.entry[j] if isinstance(j, int) else _take(tasks.table.entry, j)
    for j1, s, ok, vals in ones:
        e = jnp.where(ok & (j1 == j) & (slot == s), vals["entry"][0], e)
    return e


def _new_fields(entry, fields: dict, t: DF) -> dict:
    """The FIELDS of tasks entering at time t with entry numbers `entry` and `fields` (arrays
    of entry's shape, plans with a trailing stage axis): p = v_p, d = v_d, last token time t,
    no TTFT yet, not leaving."""
    shape = entry.shape
    return dict(
        entry=entry,
        id=fields["id"],
        type=fields["type"],
        arrival_hi=fields["arrival"].hi,
        arrival_lo=fields["arrival"].lo,
        p=fields["vp"],
        d=fields["vd"],
        vp=fields["vp"],
        vd=fields["vd"],
        last_hi=jnp.broadcast_to(t.hi, shape),
        last_lo=jnp.broadcast_to(t.lo, shape),
        ttft=jnp.zeros(shape, jnp.float32),
        stage=fields["stage"],
        leaving=jnp.zeros(shape, bool),
        **{name: fields[name] for name in ("plan_p", "plan_d") if name in fields},
    )


def _once(tree):
    """`tree` unchanged, its leaves (int32, float32 or bool arrays) computed once into memory:
    one sum of their int32 bits over a stacked zero (exact: x + 0). XLA fuses cheap
    elementwise producers into every consumer and recomputes them per element of it; a
    reduction is a kernel of its own, so the [Q]- and [K, Q]-wide passes that read these
    leaves load them instead of redoing the step's per-run arithmetic (draws, routing) for
    each slot of each field."""
    leaves, treedef = jax.tree.flatten(tree)
    bits = [jnp.ravel(_bits(jnp.asarray(x))) for x in leaves]
    flat = jnp.concatenate(bits)
    flat = jnp.sum(jnp.stack([flat, jnp.zeros_like(flat)]), axis=0)
    out, at = [], 0
    for x, b in zip(leaves, bits):
        x = jnp.asarray(x)
        out.append(_from_bits(flat[at : at + b.shape[0]].reshape(x.shape), x.dtype))
        at += b.shape[0]
    return jax.tree.unflatten(treedef, out)


def _settled(state: NetworkState, extra):
    """(state, *extra) unchanged, what the next event's handlers read of the state (the
    clock, the stream, the agents, the counts) and `extra` computed once into memory
    (`_once`): each event's handler reads the state the one before left, and fused
    without a break the later events would redo the earlier ones' arithmetic (draws, routing,
    the next-event search) per element, more for each event. The accumulators only added to
    (the histogram, the snapshots: hundreds of words) are left out."""
    tot = state.totals
    read = (state.clock, state.done, state.gen, state.agents, state.joins.waiting, tot.steps, tot.snap_next)
    (clk, done, gen, agents, waiting, steps, snap_next), extra = _once((read, extra))
    state = replace(
        state,
        clock=clk,
        done=done,
        gen=gen,
        agents=agents,
        joins=replace(state.joins, waiting=waiting),
        totals=replace(tot, steps=steps, snap_next=snap_next),
    )
    return (state, *extra)


def _write(config: NetworkConfig, tasks: Tasks, k, own: dict, rows: list, ones: list, ready) -> Tasks:
    """`tasks` with the step's writes, in this order: `ones` [(j, slot, ok, {field: [1]})] the
    arriving tasks (one slot each, distinct); `own` {field: row [Q]} the new rows of agent k
    (the flushing or deciding agent: they hold the arrivals that entered it); `rows`
    [(j, hit [Q], {field: row [Q]})] tasks entering the slots `hit` of agent j (after `own`,
    since tasks moved from agent k may enter it again; a field a row leaves out keeps its old
    values there). ready: the
    `all_computed` of everything the step read from `tasks` (True), in every write's mask."""
    K, Q = config.K, config.table_size
    k, ready, places = _once((k, ready, [one[:3] for one in ones]))
    ones = [(j, slot, ok & ready, one[3]) for (j, slot, ok), one in zip(places, ones)]
    agent = jnp.arange(K, dtype=jnp.int32)[:, None]
    slot_of = jnp.arange(Q, dtype=jnp.int32)[None, :]
    hits = [(agent == j) & (slot_of == slot) & ok for j, slot, ok, _ in ones]
    out = {}
    for name, a in _fields_of(tasks).items():
        extra = (1,) * (a.ndim - 2)
        if config.num_stages == 1 and name in ("plan_p", "plan_d"):
            # One stage: a task's only sizes are its v_p, v_d, and nothing reads the plans
            # (they stay zeros); writing them would cost a copy of each per step.
            out[name] = a
            continue
        into = [(j, hit, vals) for j, hit, vals in rows if name in vals]
        if ones and name not in own and not into:
            # Only the arrivals write this field: one element each, scattered in place.
            # On the flat array (the plans' [K, Q, S] too: a trailing stage axis of one would
            # otherwise get a layout of its own and a copy).
            S = int(np.prod(a.shape[2:], dtype=np.int64))
            lane = jnp.arange(S, dtype=jnp.int32)
            flat = jnp.concatenate([jnp.where(ok, (j * Q + slot) * S, K * Q * S) + lane for j, slot, ok, _ in ones])
            v = jnp.concatenate([jnp.reshape(vals[name][0], (S,)) for *_, vals in ones])
            out[name] = a.reshape(-1).at[flat].set(v, mode="drop").reshape(a.shape)
            continue
        new = a
        for hit, (*_, vals) in zip(hits, ones):
            new = jnp.where(hit.reshape((K, Q) + extra), vals[name][0], new)
        if name in own:
            new = jnp.where(((agent == k) & ready).reshape((K, 1) + extra), own[name][None], new)
        for j, hit, vals in into:
            new = jnp.where(((agent == j) & hit[None, :] & ready).reshape((K, Q) + extra), vals[name][None], new)
        out[name] = new
    return _tasks_of(out)


def _enter(config: NetworkConfig, params: NetworkParams, state: NetworkState, j, mask, rank, fields: dict, t: DF, held):
    """Tasks `mask` (arrays [L], `rank` their order) enter agent j at time t, taking entry
    numbers entries[j] + rank; the first whose slot is held is rejected and so is every later
    one (a rejected task takes no entry: the next tries the same slot, budget docs §4).
    held: bool [Q], the slots of agent j that are held (L > 1), or bool, whether the slot the
    one task would take is held (L = 1). Returns (write, agents, totals): the `_write` entry
    of the tasks, (j, slot, ok, fields [1]) for L = 1 or (j, hit [Q], fields [Q]) for L > 1."""
    Q, _ = run_sizes(config, params)
    ag = state.agents
    entries_j = _take(ag.entries, j)
    s0 = entries_j % Q
    # The candidates would fill the consecutive slots s0, s0 + 1, ... (mod Q) in rank order.
    n_mask = jnp.sum(mask, dtype=jnp.int32)
    if mask.shape[0] == 1:
        n = jnp.where(held & mask[0], 0, n_mask)
        write = (j, s0, n > 0, _new_fields(jnp.reshape(entries_j, (1,)), fields, t))
    else:
        slot = jnp.arange(config.table_size, dtype=jnp.int32)
        r = (slot - s0) % Q
        if params.sizes is not None:
            # Slots past the run's ring get a rank no task reaches (n_mask <= Q of them flush),
            # inside the arrays (Q < config.table_size whenever such a slot exists).
            r = jnp.where(slot < Q, r, config.table_size - 1)
        n = jnp.minimum(n_mask, jnp.min(jnp.where(held & (r < n_mask), r, Q)))
        write = _enter_many(config, j, mask & (rank < n), rank, r, n, entries_j + r, fields, t)
    tok = jnp.sum(jnp.where(mask & (rank < n), fields["vp"] + fields["vd"], 0), dtype=jnp.int32)
    pending_j, ready_j = _take(ag.pending, j), _take(ag.ready, j)
    wake = (n > 0) & ~pending_j & ~ready_j
    w = Window.of(config)
    waited = w.overlap_s(DF(_take(ag.since.hi, j), _take(ag.since.lo, j)), t)
    totals = state.totals
    totals = replace(
        totals,
        rejected=totals.rejected + n_mask - n,
        idle_s=totals.idle_s.add_where(jnp.broadcast_to(waited, (config.K,)), (jnp.arange(config.K) == j) & wake),
    )
    free_at = DF(
        _set(ag.free_at.hi, j, jnp.where(wake, t.hi, _take(ag.free_at.hi, j))),
        _set(ag.free_at.lo, j, jnp.where(wake, t.lo, _take(ag.free_at.lo, j))),
    )
    agents = replace(
        ag,
        free_at=free_at,
        ready=_set(ag.ready, j, ready_j | wake),
        entries=_set(ag.entries, j, entries_j + n),
        held=_set(ag.held, j, _take(ag.held, j) + n),
        active=_set(ag.active, j, _take(ag.active, j) + n),
        tokens=_set(ag.tokens, j, _take(ag.tokens, j) + tok),
    )
    return write, agents, totals


def _enter_many(config: NetworkConfig, j, put, rank, r, n, entry, fields: dict, t: DF):
    """The write (j, hit [Q], fields [Q]) of tasks `put` (arrays [Q] of the flushing agent,
    `rank` their order) into the slots s0 + rank of agent j, where r[s] =
    (s - s0) mod Q is the rank each slot receives, entry[s] its entry number and n the number
    entering. One compaction scatter maps each rank to its source slot, and one gather of rows
    [Q, F] of every field's int32 bits (plans too, when `fields` has them) moves the tasks: on
    CPU a gather or scatter costs per index, so per-field gathers cost about F times more, and
    per-field scatters ten times more again."""
    Q = config.table_size
    L = put.shape[0]
    src = (
        jnp.zeros((Q,), jnp.int32).at[jnp.where(put, rank, Q)].set(jnp.arange(L, dtype=jnp.int32), mode="drop")
    )  # rank -> source
    at = src[r]  # [Q]: the source slot of the task each slot receives
    cols = dict(fields, arrival_hi=fields["arrival"].hi, arrival_lo=fields["arrival"].lo)
    names = ["id", "type", "arrival_hi", "arrival_lo", "vp", "vd", "stage"]
    plans = [name for name in ("plan_p", "plan_d") if name in fields]
    packed = jnp.concatenate(
        [jnp.stack([_bits(jnp.broadcast_to(cols[name], put.shape)) for name in names], axis=1)]
        + [_bits(fields[name]) for name in plans],
        axis=1,
    )[at]  # [Q, 7 (+ 2 S with the plans)]
    got = {name: _from_bits(packed[:, i], cols[name].dtype) for i, name in enumerate(names)}
    got["arrival"] = DF(got.pop("arrival_hi"), got.pop("arrival_lo"))
    for i, name in enumerate(plans):
        S = fields[name].shape[1]
        got[name] = packed[:, len(names) + i * S : len(names) + (i + 1) * S]
    return (j, r < n, _new_fields(entry, got, t))


def _pick(on, new, old):
    """`new` where the scalar `on` holds, else `old` (leaf by leaf)."""
    return jax.tree.map(lambda a, b: jnp.where(on, a, b), new, old)


def _arrive(config: NetworkConfig, params: NetworkParams, state: NetworkState, t: DF, on, ones: list):
    """If `on`: the next stream candidate at time t; an accepted request enters its first
    agent. ones: the `_write` entries of the step's earlier arrivals (not yet in
    state.tasks). Returns (state, the agent, the task's `_write` entry)."""
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
        firsts = [r[0] for r in config.routes]
        j = jnp.int32(firsts[0])
        for zz in range(1, config.m):
            j = jnp.where(z == zz, firsts[zz], j)
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
    Q, _ = run_sizes(config, params)
    slot = _take(state.agents.entries, j) % Q
    held = _take(state.tasks.table.entry, j)[slot] >= 0
    for j1, s1, ok1, _ in ones:
        held = held | (ok1 & (j1 == j) & (s1 == slot))
    write, agents, totals = _enter(config, params, state, j, mask, jnp.zeros((1,), jnp.int32), fields, t, held)
    gen = _pick(on, arrivals.advance(config, params.arrival, state.seed, gen), gen)
    return replace(state, gen=gen, agents=agents, totals=totals), j, write


def _flush(config: NetworkConfig, params: NetworkParams, state: NetworkState, k, t: DF, on, row, ring_entry):
    """If `on`: the end of agent k's batch at time t; its leaving tasks exit the network or
    move on (their next agent, the fork, or the join), in their entry order at k; agent k's
    decision is then due at t. row: agent k's (Table, stage, leaving) as the flush finds it;
    ring_entry(j): int32 [Q] the entry numbers of agent j's ring as it finds
    them. Returns (state, agent k's new entry row, the `_write` entries of the moved tasks)."""
    table, stage, leaving = row
    leaving = leaving & on
    S = config.num_stages
    if config.topology == "routes":
        # nxt[s] = the agent of the next stage of the slot's type (_EXIT after the last).
        table_next = _next_agent(config)
        nxt = jnp.full(stage.shape, _EXIT, jnp.int32)
        for zz in range(config.m):
            for ss in range(S + 1):
                if table_next[zz, ss] != _EXIT:
                    nxt = jnp.where((table.type == zz) & (stage == ss), int(table_next[zz, ss]), nxt)
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
        latency_s=tot.latency_s.add_where(ordered_sum(jnp.where(counted, since, 0.0)), on),
        latency_hist=hist_add(tot.latency_hist, since, counted, config.hist_octave_bits),
    )
    n_left = jnp.sum(leaving, dtype=jnp.int32)
    ag = state.agents
    ag = replace(
        ag,
        pending=_set(ag.pending, k, _take(ag.pending, k) & ~on),
        ready=_set(ag.ready, k, _take(ag.ready, k) | on),
        held=_set(ag.held, k, _take(ag.held, k) - n_left),
    )
    entry_k = jnp.where(leaving, -1, table.entry)
    state = replace(state, agents=ag, totals=tot)
    if config.topology == "parallel":
        return state, entry_k, []
    Q, _ = run_sizes(config, params)
    base = _take(state.agents.entries, k) % Q
    if config.topology == "routes":
        succ = _successors(config)
        targets = range(config.K) if succ is None else [_take(jnp.asarray(c), k) for c in succ.T]
        moves = [(j, leaving & (nxt == j), stage + 1) for j in targets]
    else:
        forked = leaving & (k == 0)
        state, joined = _join(config, state, leaving & ((k == 1) | (k == 2)), table.id, base, Q)
        moves = [(1, forked, 1), (2, forked, 2), (3, joined, 3)]
    plan_p, plan_d = _rows([state.tasks.plan_p, state.tasks.plan_d], k)
    # Routes of at most two agents: every moved task enters its last stage, and nothing reads
    # a task's plans after its last move (only `_flush` reads them, for the next stage's
    # sizes), so its plans are not moved with it (the slot keeps stale ones, never read).
    last_stage = config.topology == "routes" and max(len(route) for route in config.routes) <= 2
    writes = []
    for j, mask, st in moves:
        at = jnp.broadcast_to(jnp.minimum(st, S - 1), stage.shape)
        vp, vd = plan_p[:, 0], plan_d[:, 0]
        for ss in range(1, S):
            vp = jnp.where(at == ss, plan_p[:, ss], vp)
            vd = jnp.where(at == ss, plan_d[:, ss], vd)
        fields = dict(
            id=table.id,
            type=table.type,
            stage=jnp.broadcast_to(st, stage.shape),
            vp=vp,
            vd=vd,
            arrival=table.arrival,
        )
        if not last_stage:
            fields.update(plan_p=plan_p, plan_d=plan_d)
        rank = prefix_by_id(mask.astype(jnp.int32), base)
        # Agent j's ring as the moved tasks find it: agent k's has lost its leaving tasks.
        held = jnp.where(k == j, entry_k, ring_entry(j)) >= 0
        write, agents, totals = _enter(config, params, state, j, mask, rank, fields, t, held)
        writes.append(write)
        state = replace(state, agents=agents, totals=totals)
    return state, entry_k, writes


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


def _decide(config: NetworkConfig, params: NetworkParams, state: NetworkState, k, t: DF, on, row):
    """If `on`: agent k's decision at time t (budget docs §2 steps 3-6) on its ring `row`
    (Table, stage, leaving at the step's start: no other event of the step touches it).
    Returns (state, dp, dd, load, tau, the loaded table, the departing slots), zeros and the
    unchanged table when off."""
    table, _, _ = row
    pk = jax.tree.map(lambda a: _take(a, k), params.agent)
    options = config.batch_options()
    valid = table.valid
    base = _take(state.agents.entries, k) % run_sizes(config, params)[0]
    rank_k = _take(params.rank, k)
    # rank_k[type] as selects over the m types (a gather per slot under vmap).
    ranked = jnp.broadcast_to(rank_k[0], table.type.shape)
    for zz in range(1, rank_k.shape[0]):
        ranked = jnp.where(table.type == zz, rank_k[zz], ranked)
    view = View(valid, table.p, ranked, table.entry, base)
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
    zk = jnp.zeros((config.K,), jnp.int32)
    one = lambda x: _set(zk, k, x.astype(jnp.int32))
    tot = replace(
        tot,
        batches=tot.batches + one(batch),
        window_batches=tot.window_batches + one(starts_in),
        partial=tot.partial + one(starts_in & (load < pk.budget) & (available >= pk.budget)),
        stalled=tot.stalled | (on & ~batch & (_take(ag.held, k) > 0)),
    )
    free_at = DF(
        _set(ag.free_at.hi, k, jnp.where(batch, t_end.hi, _take(ag.free_at.hi, k))),
        _set(ag.free_at.lo, k, jnp.where(batch, t_end.lo, _take(ag.free_at.lo, k))),
    )
    waits = on & ~batch
    since = DF(
        _set(ag.since.hi, k, jnp.where(waits, t.hi, _take(ag.since.hi, k))),
        _set(ag.since.lo, k, jnp.where(waits, t.lo, _take(ag.since.lo, k))),
    )
    ag = replace(
        ag,
        free_at=free_at,
        since=since,
        pending=_set(ag.pending, k, jnp.where(on, batch, _take(ag.pending, k))),
        ready=_set(ag.ready, k, _take(ag.ready, k) & ~on),
        tokens=_set(ag.tokens, k, _take(ag.tokens, k) - load),
        active=_set(ag.active, k, _take(ag.active, k) - jnp.sum(depart, dtype=jnp.int32)),
    )
    state = replace(state, agents=ag, totals=tot)
    tau = DF(jnp.where(on, tau.hi, 0.0), jnp.where(on, tau.lo, 0.0))
    return state, dp, dd, load, tau, new, depart


def _snapshots(config: NetworkConfig, totals: NetworkTotals, n, x, t: DF, all_, on=True):
    """If `on`: record the grid points g_j <= t (all of them when `all_`) not yet recorded with
    the current (pre-event) tasks n and tokens x in the network: the state on [g_j, t) is
    constant."""
    g = config.snapshot_times()
    g_hi = g.astype(np.float32)
    g_lo = (g - g_hi.astype(np.float64)).astype(np.float32)
    passed = (clock.le(DF(jnp.asarray(g_hi), jnp.asarray(g_lo)), t) | all_) & on
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


class _Event(NamedTuple):
    """The next event as one phase of a step finds it (`_event`)."""

    t: DF  # its time
    cls: jnp.ndarray  # int32 class (FLUSH, ARRIVAL, DECIDE)
    k: jnp.ndarray  # int32 agent (0 for an arrival)
    take: jnp.ndarray  # bool: this phase processes it (an END included)
    go: jnp.ndarray  # bool: taken and before the horizon (its handler runs)
    ends: jnp.ndarray  # bool: taken, and the run ends there (no event before the horizon)
    requests: jnp.ndarray  # int32 tasks in the network before it
    tokens: jnp.ndarray  # int32 their unprocessed tokens


def _event(config: NetworkConfig, state: NetworkState, allowed, steps0, single: bool):
    """The next event (docs §3) and whether this phase of a step takes it: the run is live
    (not ended, fewer than max_steps events processed) and the event is allowed(cls, agent) or
    the run ends at it (none left before the horizon); with `single`, only as the step's first
    event (steps0: the events processed before the step). A taken event is counted, records
    the snapshot grid points it passes, and moves the clock; the caller runs its handler.
    Returns (state, `_Event`)."""
    live = ~state.done & (state.totals.steps < config.max_steps)
    if single:
        live = live & (state.totals.steps == steps0)
    t, cls, k, found = _next_event(config, state)
    over = ~found | clock.le(DF.from_float64(config.horizon_s), t)
    take = live & (over | allowed(cls, k))
    ends, go = take & over, take & ~over
    n_pre = in_network(state)
    x_pre = jnp.sum(state.agents.tokens, dtype=jnp.int32)
    totals = _snapshots(config, state.totals, n_pre, x_pre, t, ends, take)
    totals = replace(totals, steps=totals.steps + take.astype(jnp.int32))
    state = replace(state, totals=totals, clock=clock.where(go, t, state.clock), done=state.done | ends)
    return state, _Event(t, cls, k, take, go, ends, n_pre, x_pre)


def step(config: NetworkConfig, params: NetworkParams, state: NetworkState, record: bool = False):
    """Process the next events (docs §3): `step_events` with ARRIVALS_PER_STEP arrivals, or
    with `record` one event. Returns (state, the step's trajectory row when `record`)."""
    return step_events(config, params, state, 1 if record else ARRIVALS_PER_STEP, record)


def step_events(
    config: NetworkConfig, params: NetworkParams, state: NetworkState, max_arrivals: int, record: bool = False
):
    """Process the next events (docs §3): up to `max_arrivals` arrivals, then a batch end, then a
    decision of the agent r whose batch ended (or that is the next event), each only when it is
    the next event; with `record` (and max_arrivals = 1), only the first of them. Whatever
    `max_arrivals`, a run processes the same events in the same order: its metrics are bitwise the
    same. Returns (state, the step's trajectory row when `record`).

    Every handler runs masked (no lax.switch): under vmap a switch becomes a select of every
    branch's whole state, copying the [K, Q] rings per step. The handlers work on the small
    state in event order; the rings are read once (agent r's row, with the step's arrivals
    into it) and written once at the end (`_write`)."""
    tasks0, steps0 = state.tasks, state.totals.steps
    ones, arrived = [], []
    require(
        isinstance(max_arrivals, int) and max_arrivals >= 1 and not (record and max_arrivals > 1),
        "max_arrivals",
        "an integer >= 1 (1 with record)",
        max_arrivals,
    )
    for _ in range(max_arrivals):
        state, ev = _event(config, state, lambda c, k: c == ARRIVAL, steps0, record)
        state, j, one = _arrive(config, params, state, ev.t, ev.go, ones)
        state, j, one = _settled(state, (j, one))
        ones.append(one)
        arrived.append((ev, jnp.where(ev.cls == ARRIVAL, j, ev.k)))
    state, fl = _event(config, state, lambda c, k: c == FLUSH, steps0, record)
    r = fl.k
    row = _patch_row(config, _row(tasks0, r), r, ones)
    entries_r = _take(state.agents.entries, r)
    ring_entry = lambda j: _ring_entry(config, tasks0, j, ones)
    state, entry_r, rows = _flush(config, params, state, r, fl.t, fl.go, row, ring_entry)
    (state,) = _settled(state, ())
    # A decision of r that tasks moved into by the flush would read a ring not in `row`.
    moved_in = _take(state.agents.entries, r) != entries_r
    state, dc = _event(config, state, lambda c, k: (c == DECIDE) & (k == r) & ~moved_in, steps0, record)
    leaving = row[2] & ~fl.go
    flushed = (replace(row[0], entry=entry_r), row[1], leaving)
    state, dp, dd, load, tau, loaded, depart = _decide(config, params, state, r, dc.t, dc.go, flushed)
    own = dict(entry=entry_r, p=loaded.p, d=loaded.d, leaving=jnp.where(dc.go, depart, leaving))
    out = None
    if record:
        decided = jnp.where(load > 0, KIND_BATCH, KIND_WAIT)
        phases = [(ev, KIND_ARRIVAL, j) for ev, j in arrived] + [(fl, KIND_FLUSH, r), (dc, decided, r)]
        out = _record_row(phases, tau, load, dp, dd)
        if config.record_members:
            out.update(entry=row[0].entry, id=row[0].id, dp=dp, dd=dd.astype(jnp.int32))
    # Every write of the tasks after every read of them (see `_write`).
    ready = all_computed((state.agents, state.joins, state.totals, out))
    return replace(state, tasks=_write(config, tasks0, r, own, rows, ones, ready)), out


def _record_row(phases: list, tau: DF, load, dp, dd) -> dict:
    """The trajectory row of a one-event step: the event of the phase [(`_Event`, its kind,
    its agent)] that took it (KIND_END where the run ended, KIND_NONE where none did: an ended
    run), with the decision's batch (zeros unless one was decided)."""
    ev0, _, agent0 = phases[0]
    kind, agent, t, requests, tokens = jnp.int32(KIND_NONE), agent0, ev0.t, ev0.requests, ev0.tokens
    for ev, k_kind, k_agent in phases:
        kind = jnp.where(ev.take, jnp.where(ev.ends, KIND_END, k_kind), kind)
        agent = jnp.where(ev.take, k_agent, agent)
        t = clock.where(ev.take, ev.t, t)
        requests = jnp.where(ev.take, ev.requests, requests)
        tokens = jnp.where(ev.take, ev.tokens, tokens)
    return dict(
        kind=kind.astype(jnp.int32),
        agent=jnp.asarray(agent, jnp.int32),
        t_hi=t.hi,
        t_lo=t.lo,
        tau_hi=tau.hi,
        tau_lo=tau.lo,
        load=load,
        prefill=jnp.sum(dp, dtype=jnp.int32),
        decode=jnp.sum(dd, dtype=jnp.int32),
        requests=requests,
        tokens=tokens,
    )


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


def regrow(
    config: NetworkConfig, params: NetworkParams, metrics
) -> tuple[NetworkConfig, NetworkParams, np.ndarray] | None:
    """With `grow_table`: the runs that rejected a task, to run again with twice the slots
    (`jaxsched.tables.grow_ring`); None otherwise. A rejection (num_rejected) has one cause, a
    held slot of a table of table_size slots: an agent's ring (arrivals and transfers, docs §2)
    or the join's (fork_join, keyed by request id mod Q, docs §3); at twice the slots a run
    that rejected nothing is unchanged, for the join too (ids distinct mod 2Q if mod Q)."""
    return grow_ring(config, params, np.asarray(metrics["num_rejected"]) > 0, config.max_table_size())


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
    regrow=regrow,
    size_fields=SIZE_FIELDS,
    pad_into=pad_into,
    trim=trim,
)
