"""Plain-Python reference simulator of the network engine of paper 004 §4 (test oracle).

It follows `docs/network-semantics.md` literally, one event at a time: K agents, each a budget
engine (docs/budget-semantics.md) whose batch is chosen by `tests.reference.budget.choose`,
with plain lists and dicts for the rings, Python ints for tokens, and the double-float helpers
of `tests/reference/kv.py` for every clock operation, so batch start times and durations are
bitwise those the engine must produce. Written for clarity, not speed.

Entry points: `simulate(requests, ...)` (see its docstring) and `engine_inputs(config, params,
seed, n)`, which lists the requests of a run (ids, arrival words, types, the random router's
draw, per-stage sizes) from `jaxsched.network.request_stream` and `stage_lengths`.

Readings of the contract fixed here (where it leaves a choice):
- Events are keyed (time, class, agent), class flush 0 < arrival 1 < decision 2; the
  arrival's agent is irrelevant (one arrival candidate at a time).
- Ring rule (§2, budget §4): each entering task, in order, tries slot `entries mod Q` of its
  agent; a held slot rejects it and it takes no entry number, so every later task of the same
  insertion tries the same still-held slot and is rejected too.
- Flush of agent k: first its leaving tasks' slots are freed and k's decision becomes due at t
  (so a transfer back into k itself never "wakes" k and may reuse the freed slots); then, in
  their entry order at k, the leaving tasks depart or enter their next agent.
- A decision with an empty queue, or a queue the policy takes nothing from (`stalled`), makes
  the agent wait from t; idle time is the waits' overlap with the window, the waits still open
  at the end counted to the horizon.
- Snapshot j holds (tasks held, leaving ones included; their unprocessed tokens) before the
  first event with time >= g_j; the grid points left at the end get the end state.
- The random router takes agent min(floor(fl32(u * K)), K - 1) (docs §4: floor(u K); the
  float32 product is the engine's).
- The weighted router takes r = u 2^24 (the draw's 24 bits, an integer) and the first agent k
  whose cut floor(2^24 S_k / S) exceeds r, S_k = w_0 + ... + w_k and S = S_{K-1} exact sums of
  the weights' float64 values; r < floor(x) is tested as (r + 1) S <= 2^24 S_k (x = 2^24 S_k / S).
- `num_steps` counts the events processed plus the ending step (the engine's scan steps).
  The input holds the accepted requests, and optionally (`thinned`) the times of the thinned
  candidates (periodic rates): arrival events that change nothing but count as events (steps,
  the end time, max_events; their event rows have agent None). Without them, with periodic
  rates, num_steps, end_time_s and the event rows can differ from the engine's.
- `fork_join` (K = 4, stage s at agent s): every arrival enters agent 0. A flush of agent 0
  sends its leaving tasks, in entry order, first all into agent 1 (stage 1), then all into
  agent 2 (stage 2) (the ring rule applies per target; a branch rejected at its ring does not
  stop its sibling). A flush of agent 1 or 2 sends its leaving tasks to the join, whose table
  (J = table_size, request i at slot i mod J) is read once before the flush: own request in
  the slot -> the join completes (slot freed); slot free -> the first task in entry order
  wanting it waits there, later ones of the same flush are rejected; slot held by another
  request (as read before the flush, so even if this flush completes that request) ->
  rejected. Join rejections are listed in `rejections` with agent JOIN (-1). The completed
  requests then enter agent 3 (stage 3) in the entry order at the flushing agent; a flush of
  agent 3 is a departure. A task waiting at the join counts as one task with no unprocessed
  tokens in the snapshots, the event rows and requests_end; it waits there forever if its
  sibling was rejected (at a ring or at the join).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from tests.reference.budget import _Req, choose
from tests.reference.kv import DF, add, from_float64, hist_quantile, iteration_time, le, sub, to_float64

__all__ = [
    "Request",
    "simulate",
    "weighted_pick",
    "engine_inputs",
    "engine_inputs_checked",
    "FLUSH",
    "ARRIVAL",
    "DECIDE",
    "JOIN",
]

F32 = np.float32
FLUSH, ARRIVAL, DECIDE = 0, 1, 2
# The `agent` of a rejection at the join of `fork_join`.
JOIN = -1
# The routers of the parallel topology this reference implements (`simulate(router=...)`);
# every agent's batch policy is tests.reference.budget's (`choose`).
ROUTERS: tuple[str, ...] = ("random", "fewest_requests", "fewest_tokens", "weighted")
FORK_JOIN_AGENTS = 4
# Kinds of the event log, numbered as the engine's recorded steps (jaxsched.network.engine).
KIND_FLUSH, KIND_ARRIVAL, KIND_BATCH, KIND_WAIT, KIND_END = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class Request:
    """One external request: id, arrival A_i (DF), type z, the random router's draw u
    (float32), and per stage of its route the sizes (v_p, v_d)."""

    id: int
    arrival: DF
    type: int
    route_u: np.float32
    sizes: tuple


class _Task(_Req):
    """A request's task at one agent (budget's _Req: entry, type, p, d, ...) plus its stage."""

    def __init__(self, req: Request, stage: int, entry: int) -> None:
        vp, vd = req.sizes[stage]
        super().__init__(req.id, entry, req.type, req.arrival, int(vp), int(vd))
        self.req = req
        self.stage = stage
        self.leaving = False


@dataclass
class _Agent:
    """Agent k: its ring (slot -> task), queue (entry order, leaving tasks included) and
    status: "wait" (idle since `since`), "busy" (batch until `free_at`) or "ready" (decision
    due at `free_at`)."""

    k: int
    consts: dict
    slots: dict = field(default_factory=dict)
    queue: list = field(default_factory=list)
    entries: int = 0
    status: str = "wait"
    free_at: DF = DF(F32(0.0), F32(0.0))
    since: DF = DF(F32(0.0), F32(0.0))
    idle: float = 0.0
    batches: int = 0
    window_batches: int = 0
    partial: int = 0

    @property
    def active(self) -> list:
        return [r for r in self.queue if not r.leaving]


def _overlap(a: float, b: float, lo: float, hi: float) -> float:
    return max(0.0, min(b, hi) - max(a, lo))


def _key(t: DF, cls: int, k: int) -> tuple:
    # Normalized double-floats order lexicographically by (hi, lo) (kv.le).
    return (float(t.hi), float(t.lo), cls, k)


def simulate(
    requests: Sequence[Request],
    *,
    topology: str,
    K: int,
    agents: Sequence[dict],
    policy: str,
    routes: Sequence[Sequence[int]] | None = None,
    router: str = "random",
    router_weights: Sequence[float] | None = None,
    type_orders: Sequence[Sequence[int]] | None = None,
    phase_first: str = "decode",
    inner_order: str = "fcfs",
    horizon: float,
    burn_in: float = 0.0,
    table_size: int,
    snapshots: int = 32,
    hist_octave_bits: int = 4,
    max_events: int | None = None,
    thinned: Sequence[DF] = (),
) -> dict:
    """Run the network of docs/network-semantics.md on the given requests.

    requests: `Request`s in arrival order (accepted ones only). topology: "parallel", "routes"
    or "fork_join" (K = 4; every request has 4 stage sizes, stage s served by agent s; the
    join table has table_size slots); K agents; routes[z]: the agents type z visits
    (`routes`); router: "random",
    "fewest_requests", "fewest_tokens" or "weighted" (`parallel`); router_weights: K weights
    of "weighted" (None: equal). agents: K dicts of agent constants:
    budget, max_requests, prefill_cap (None: budget), K_p, K_d (None: unlimited), c, a, b0 (the
    batch time c + a max(0, b' - b0), float32). policy, phase_first, inner_order: the budget
    engine's; type_orders[k]: agent k's type priority (`priority`; None: 0, 1, ...).
    horizon, burn_in (s); table_size Q; snapshots G; hist_octave_bits: the latency quantiles'
    histogram (kv reference §8); max_events: stop after that many events. thinned: the times
    of the stream's thinned candidates (docs §3; no two stream candidates at one time).

    Returns a dict:
    - batches: [{agent, t0 DF, tau DF, load, members {id: (dp, dd)}, available, partial}] in
      event order;
    - departures: [(id, time DF)]; rejections: [(id, stage, agent, time DF)] (agent JOIN for
      a branch task rejected at the join of `fork_join`); join_rejections: those at the join
      again as (id, stage, time DF, why), why "held" (its slot held by another request),
      "freed" (held before the flush by a request that this flush completes) or "race" (free
      before the flush, taken by an earlier task of the same flush);
    - events: [(kind, agent, time DF, requests, tokens)] every step (pre-event counts), the
      last one KIND_END (its agent and time: the first event at or past the horizon, or 0 when
      none is left);
    - snapshots: G tuples (requests, tokens); end: {requests, tokens, per_agent [(held,
      unprocessed tokens)], status [K], join {slot: request id waiting}};
    - metrics: float64 dict with the engine's metric names (docs §5).
    """
    Q = int(table_size)
    m = 1 + max((r.type for r in requests), default=0)
    if type_orders is None:
        m_all = m if routes is None else max(m, len(routes))
        type_orders = [tuple(range(m_all))] * K
    assert len(agents) == K and (topology == "routes") == (routes is not None)
    assert topology in ("parallel", "routes", "fork_join"), topology
    if topology == "fork_join":
        assert K == FORK_JOIN_AGENTS
        assert all(len(r.sizes) == FORK_JOIN_AGENTS for r in requests)
    ags = [_Agent(k, dict(agents[k])) for k in range(K)]
    for a in ags:
        c = a.consts
        c.setdefault("max_requests", 256)
        c.setdefault("K_p", None)
        c.setdefault("K_d", None)
        if c.get("prefill_cap") is None:
            c["prefill_cap"] = c["budget"]
    H, B = from_float64(horizon), from_float64(burn_in)
    H64, B64 = to_float64(H), to_float64(B)
    window_s = float(horizon) - float(burn_in)
    G = int(snapshots)
    grid = [float(burn_in) + j * (float(horizon) - float(burn_in)) / G for j in range(G)]
    grid_df = [from_float64(g) for g in grid]
    snaps: list[tuple[int, int] | None] = [None] * G

    def in_window(t: DF) -> bool:
        return le(B, t) and not le(H, t)

    batches: list[dict[str, Any]] = []
    departures: list[tuple[int, DF]] = []
    rejections: list[tuple[int, int, int, DF]] = []
    join_rejections: list[tuple[int, int, DF, str]] = []
    events: list[tuple] = []
    latencies: list[np.float32] = []
    stalled = False
    nxt = 0
    thinned = sorted(thinned, key=lambda t: _key(t, ARRIVAL, 0))
    n_thin = 0
    clock = DF(F32(0.0), F32(0.0))
    processed = 0
    done = False

    # The join of `fork_join`: slot -> id of the request whose first finished branch waits.
    J = Q
    join: dict[int, int] = {}

    def held() -> int:
        # Tasks held by the agents (leaving ones included) plus those waiting at the join.
        return sum(len(a.queue) for a in ags) + len(join)

    def tokens() -> int:
        return sum(r.p + r.d for a in ags for r in a.queue)

    def enter(j: int, task_specs: list, t: DF) -> None:
        """Tasks (request, stage) enter agent j at time t, in order (ring rule of §2)."""
        a = ags[j]
        entered = 0
        for req, stage in task_specs:
            slot = a.entries % Q
            if slot in a.slots:
                rejections.append((req.id, stage, j, t))
                continue
            task = _Task(req, stage, a.entries)
            a.slots[slot] = task
            a.queue.append(task)
            a.entries += 1
            entered += 1
        if entered and a.status == "wait":
            a.idle += _overlap(to_float64(a.since), to_float64(t), B64, H64)
            a.status, a.free_at = "ready", t

    weights = [Fraction(1)] * K if router_weights is None else [Fraction(float(w)) for w in router_weights]
    assert len(weights) == K and min(weights) >= 0 and sum(weights) > 0

    def route(req: Request) -> int:
        if topology == "routes":
            return routes[req.type][0]
        if topology == "fork_join":
            return 0
        if router == "random":
            # docs §4 "floor(u K)", with the product rounded to float32 as the engine does
            # (it can round up to an integer: u = 13981013 / 2^24, K = 6 gives 5, not 4).
            return min(int(F32(req.route_u) * F32(K)), K - 1)
        if router == "weighted":
            return weighted_pick(req.route_u, weights)
        if router == "fewest_requests":
            n = [len(a.active) for a in ags]
        elif router == "fewest_tokens":
            n = [sum(r.p + r.d for r in a.active) for a in ags]
        else:
            raise ValueError(f"router {router!r}")
        return n.index(min(n))

    def flush(k: int, t: DF) -> None:
        a = ags[k]
        leaving = [r for r in a.queue if r.leaving]  # entry order at k
        for r in leaving:
            a.queue.remove(r)
            del a.slots[r.entry % Q]
        a.status, a.free_at = "ready", t
        if topology == "fork_join" and k != FORK_JOIN_AGENTS - 1:
            fork_join_moves(k, leaving, t)
            return
        for r in leaving:
            req = r.req
            if r.stage + 1 == len(req.sizes):
                departures.append((req.id, t))
                if in_window(t):
                    latencies.append(sub(t, req.arrival))
            else:
                enter(routes[req.type][r.stage + 1], [(req, r.stage + 1)], t)

    def fork_join_moves(k: int, leaving: list, t: DF) -> None:
        """`fork_join`, flush of agent 0, 1 or 2 at t: `leaving` (entry order at k) fork into
        agents 1 and 2, or reach the join (docs §3, Join)."""
        if k == 0:
            for target in (1, 2):
                enter(target, [(r.req, target) for r in leaving], t)
            return
        before = dict(join)  # the table is read once, before the flush
        completed, lost = [], []
        for r in leaving:
            i = r.req.id
            slot = i % J
            if before.get(slot) == i:  # its sibling waits: the join completes
                del join[slot]
                completed.append(r.req)
            elif slot not in before and slot not in join:  # free, and no earlier claim
                join[slot] = i
            else:  # held by another request, or race lost
                rejections.append((i, r.stage, JOIN, t))
                lost.append(r)
        for r in lost:
            slot = r.req.id % J
            why = "race" if slot not in before else "freed" if join.get(slot) != before[slot] else "held"
            join_rejections.append((r.req.id, r.stage, t, why))
        enter(3, [(req, 3) for req in completed], t)

    def decide(k: int, t: DF) -> int:
        nonlocal stalled
        a = ags[k]
        c = a.consts
        queue = list(a.queue)
        assert not any(r.leaving for r in queue)
        chosen = (
            choose(
                queue,
                policy,
                budget=int(c["budget"]),
                max_requests=int(c["max_requests"]),
                prefill_cap=int(c["prefill_cap"]),
                K_p=c["K_p"],
                K_d=c["K_d"],
                phase_first=phase_first,
                inner_order=inner_order,
                type_order=tuple(type_orders[k]),
            )
            if queue
            else {}
        )
        if not chosen:
            stalled = stalled or bool(queue)
            a.status, a.free_at, a.since = "wait", t, t
            return 0
        for r, (dp, dd) in chosen.items():
            assert 0 <= dp <= r.p and dd in (0, 1) and (dd == 0 or r.p == 0)
        assert len(chosen) <= int(c["max_requests"])
        available = sum(r.p for r in queue) + sum(1 for r in queue if r.decoding)
        load = sum(dp + dd for dp, dd in chosen.values())
        tau = iteration_time(max(0, load - int(c["b0"])), F32(c["c"]), F32(c["a"]))
        for r, (dp, dd) in chosen.items():
            r.p -= dp
            r.d -= dd
            if dd and r.d == 0:
                r.leaving = True
        b = int(c["budget"])
        partial = load < b and available >= b
        a.batches += 1
        if in_window(t):
            a.window_batches += 1
            a.partial += int(partial)
        batches.append(
            {
                "agent": k,
                "t0": t,
                "tau": tau,
                "load": load,
                "members": {r.req.id: x for r, x in chosen.items()},
                "available": available,
                "partial": partial,
            }
        )
        a.status, a.free_at = "busy", add(t, tau)
        return load

    while True:
        cands = []
        for a in ags:
            if a.status == "busy":
                cands.append((_key(a.free_at, FLUSH, a.k), a.free_at, FLUSH, a.k))
        # The next stream candidate: the next accepted request or thinned candidate.
        t_a = requests[nxt].arrival if nxt < len(requests) else None
        t_x = thinned[n_thin] if n_thin < len(thinned) else None
        if t_x is not None and t_a is not None:
            assert _key(t_x, 0, 0) != _key(t_a, 0, 0), "two stream candidates at one time"
        thin = t_x is not None and (t_a is None or _key(t_x, 0, 0) < _key(t_a, 0, 0))
        if thin:
            t_a = t_x
        if t_a is not None:
            cands.append((_key(t_a, ARRIVAL, 0), t_a, ARRIVAL, 0))
        for a in ags:
            if a.status == "ready":
                cands.append((_key(a.free_at, DECIDE, a.k), a.free_at, DECIDE, a.k))
        n_pre, x_pre = held(), tokens()
        if max_events is not None and processed >= max_events:
            break
        if cands:
            _, t, cls, k = min(cands, key=lambda c: c[0])
        else:
            t, cls, k = DF(F32(0.0), F32(0.0)), -1, 0
        ends = not cands or le(H, t)
        # Snapshots: grid points reached by this event (all of them at the end).
        for j in range(G):
            if snaps[j] is None and (ends or le(grid_df[j], t)):
                snaps[j] = (n_pre, x_pre)
        if ends:
            events.append((KIND_END, k, t, n_pre, x_pre))
            done = True
            break
        processed += 1
        clock = t
        if cls == FLUSH:
            flush(k, t)
            events.append((KIND_FLUSH, k, t, n_pre, x_pre))
        elif cls == ARRIVAL and thin:
            n_thin += 1
            events.append((KIND_ARRIVAL, None, t, n_pre, x_pre))
        elif cls == ARRIVAL:
            req = requests[nxt]
            nxt += 1
            j = route(req)
            enter(j, [(req, 0)], t)
            events.append((KIND_ARRIVAL, j, t, n_pre, x_pre))
        else:
            load = decide(k, t)
            events.append((KIND_BATCH if load else KIND_WAIT, k, t, n_pre, x_pre))

    # Waits still open at the end count to the horizon.
    for a in ags:
        if a.status == "wait":
            a.idle += _overlap(to_float64(a.since), H64, B64, H64)
    filled = [s for s in snaps if s is not None]
    ns = np.array([s[0] for s in filled], np.float64)
    xs = np.array([s[1] for s in filled], np.float64)
    ts = np.array(grid[: len(filled)], np.float64)
    slope = (lambda y: float(np.polyfit(ts, y, 1)[0])) if len(filled) >= 2 else (lambda y: math.nan)
    wb = [a.window_batches for a in ags]
    idle = [a.idle / window_s for a in ags]
    exits = len(latencies)
    metrics = {
        "throughput_requests_per_s": exits / window_s,
        "num_departed": float(exits),
        "latency_mean_s": math.fsum(float(x) for x in latencies) / exits if exits else 0.0,
        "mean_requests_in_system": float(ns.mean()) if len(ns) else 0.0,
        "mean_tokens_in_system": float(xs.mean()) if len(xs) else 0.0,
        "request_growth_per_s": slope(ns),
        "token_growth_per_s": slope(xs),
        "idle_fraction_mean": float(np.mean(idle)),
        "idle_fraction_min": float(np.min(idle)),
        "partial_batch_fraction": sum(a.partial for a in ags) / sum(wb) if sum(wb) else 0.0,
        "num_batches": float(sum(wb)),
        "batch_share_max": max(wb) / sum(wb) if sum(wb) else 0.0,
        "requests_end": float(held()),
        "tokens_end": float(tokens()),
        "num_rejected": float(len(rejections)),
        "overflowed": float(len(rejections) > 0),
        "stalled": float(stalled),
        "done": float(done),
        "num_steps": float(processed + int(done)),
        "end_time_s": to_float64(clock),
    }
    for tag, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        metrics[f"latency_{tag}_s"] = hist_quantile(latencies, q, hist_octave_bits)
    end = {
        "requests": held(),
        "tokens": tokens(),
        "per_agent": [(len(a.queue), sum(r.p + r.d for r in a.queue)) for a in ags],
        "status": [a.status for a in ags],
        "join": dict(join),
    }
    return {
        "batches": batches,
        "departures": departures,
        "rejections": rejections,
        "join_rejections": join_rejections,
        "events": events,
        "snapshots": snaps,
        "end": end,
        "metrics": metrics,
    }


def weighted_pick(u: np.float32, weights: Sequence[Fraction]) -> int:
    """The weighted router's agent for draw u (docs §4): the first k with
    r < floor(2^24 S_k / S), r = u 2^24, tested exactly as (r + 1) S <= 2^24 S_k."""
    r = int(float(u) * 2**24)
    assert float(r) == float(u) * 2**24, u  # u holds 24 bits
    total, acc = sum(weights), Fraction(0)
    for k, w in enumerate(weights):
        acc += w
        if (r + 1) * total <= 2**24 * acc:
            return k
    raise AssertionError("the last cut is 2^24 > r")


def engine_inputs(config, params, seed: int, n_candidates: int) -> list[Request]:
    """The requests of run `seed` of a `jaxsched.network` config (the reference's input), from
    the engine's own functions: `jaxsched.network.request_stream` (arrival words, types, the
    random router's draw) and `stage_lengths` (per-stage sizes).

    request_stream returns arrays of the run's length, and its eager draws recompile for every
    new length (about a second each on a small CPU), so this computes the same numbers with the
    functions request_stream calls (`arrival_stream`, `rng.uniform(seed, id, STREAM_ROUTE)`)
    and `stage_lengths`, jitted at the fixed length n_candidates; `engine_inputs_checked`
    asserts that the two agree. n_candidates must cover the stream up to its end (the horizon
    or num_requests): asserted (the last candidate is past the end)."""
    from jaxsched.workload.arrivals import arrival_stream

    a = arrival_stream(config, params.arrival, seed, n_candidates)
    keep = np.asarray(a["accepted"]) & ~np.asarray(a["exhausted"])
    n = int(keep.sum())
    assert a["exhausted"][-1], "n_candidates does not reach the end of the stream"
    types = np.zeros(n_candidates, np.int32)
    types[:n] = np.asarray(a["type"])[keep]
    u, sizes = _input_fn(config, n_candidates)(np.uint32(seed), types)
    u = np.asarray(u)
    vp = np.asarray([np.asarray(p) for p, _ in sizes])
    vd = np.asarray([np.asarray(d) for _, d in sizes])
    t_hi, t_lo = np.asarray(a["t_hi"])[keep], np.asarray(a["t_lo"])[keep]
    out = []
    for i in range(n):
        z = int(types[i])
        out.append(
            Request(
                i,
                DF(F32(t_hi[i]), F32(t_lo[i])),
                z,
                F32(u[i]),
                tuple((int(vp[st, i]), int(vd[st, i])) for st in range(len(config.workload[z]))),
            )
        )
    return out


def engine_inputs_checked(config, params, seed: int, n_candidates: int) -> list[Request]:
    """`engine_inputs`, asserted equal to `jaxsched.network.request_stream` and
    `stage_lengths` called as documented (slow: eager, at the run's length)."""
    from jaxsched.network import request_stream, stage_lengths

    reqs = engine_inputs(config, params, seed, n_candidates)
    s = request_stream(config, params, seed, n_candidates)
    assert len(reqs) == len(s["id"])
    ids, types = np.asarray(s["id"]), np.asarray(s["type"])
    assert [r.id for r in reqs] == ids.tolist()
    assert [r.type for r in reqs] == types.tolist()
    assert [(r.arrival.hi, r.arrival.lo) for r in reqs] == list(zip(s["t_hi"], s["t_lo"]))
    assert [r.route_u for r in reqs] == list(s["route_u"])
    for st in range(config.num_stages):
        p, d = stage_lengths(config, seed, ids, types, np.full_like(ids, st))
        p, d = np.asarray(p), np.asarray(d)
        for r in reqs:
            if st < len(r.sizes):
                assert r.sizes[st] == (p[r.id], d[r.id]), (r.id, st)
    return reqs


@functools.lru_cache(maxsize=32)
def _input_fn(config, n: int):
    """jit of (seed, types [n]) -> (route_u [n], [(v_p, v_d) [n] per stage]) for ids 0..n-1."""
    import jax
    import jax.numpy as jnp

    from jaxsched import rng
    from jaxsched.network import stage_lengths

    def f(seed, types):
        seed = jnp.asarray(seed, jnp.uint32)
        ids = jnp.arange(n, dtype=jnp.int32)
        u = rng.uniform(seed, ids, rng.STREAM_ROUTE)
        sizes = [
            stage_lengths(config, seed, ids, types, jnp.full((n,), st, jnp.int32)) for st in range(config.num_stages)
        ]
        return u, sizes

    return jax.jit(f)
