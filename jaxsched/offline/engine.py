"""The offline engine: n requests present at t = 0, one worker, KV limit M (papers 002, 003).

Time runs in unit steps t = 1, 2, ... of the shared Phase-2 executor of notes/002.md §2.1:
1. requests with c_i < t have completed and left (their memory is free);
2. in the policy's order, starting at the head, a candidate r is admitted with p_r = t - 1 if
   the admitted set with r still fits at every future completion time:
   M(X, c_j) = sum_{l in X, c_l >= c_j} (s_l + c_j - p_l) <= M for all j in X (notes §2.0;
   memory only grows between completions, so these times suffice). Admission stops at the
   first candidate that does not fit (strict order, no skipping);
3. every active request generates one token; the step's time comes from the step-time model.
Checking a candidate costs O(n): `peak[j]` holds M(X, c_j) for the admitted set, and adding r
raises it by s_r + c_j - p_r wherever c_j <= c_r.

Event skipping: one scan step runs unit step t and then every following step that provably
changes nothing but the clock and the memory (`quiet_until`: until the next completion, or
the first step at which the blocked candidate could fit), pricing each of them as a unit step
would, so the metrics are bitwise those of unit stepping (tests/offline/test_events.py). A
recorded run (record=True) takes exactly one unit step per scan step, so its trajectories
have one row per unit step.
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from .. import batchmodel, clock
from ..accumulate import WideInt
from ..batchmodel import (
    INT_LIMIT,
    OfflineParams,
    quiet_clock,
    quiet_memory_sum,
    quiet_window,
    run_requests,
    step_duration,
)
from ..clock import DF
from ..engine import Engine
from ..kernels import admit_check, all_computed
from .config import OfflineConfig, make_params
from .metrics import METRICS, finalize
from .policies import Jobs
from .registry import POLICIES
from .state import ActiveTable, OfflineState


def jobs(config: OfflineConfig, seed) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(s, o) int32[n] of run `seed`: the workload's first n requests."""
    ids = jnp.arange(config.n, dtype=jnp.int32)
    s, o = config.workload.sample(jnp.asarray(seed, jnp.uint32), ids)
    return s.astype(jnp.int32), o.astype(jnp.int32)


# A padded request (index >= the run's own n inside a size bucket) has s = 0 and this output:
# s + o exceeds every KV limit (M <= INT_LIMIT / 4), so it never fits, is never put in a batch
# or admitted, and sorts after every real length (<= 2^24 tokens); sums of lengths stay far
# below 2^31.
PAD_OUTPUT = INT_LIMIT


def pad_jobs(s: jnp.ndarray, o: jnp.ndarray, n) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(s, o) int32[config.n] with the entries i >= n (the run's own requests, int32 scalar)
    replaced by padding that never fits (s = 0, o = PAD_OUTPUT). Entries i < n are unchanged:
    every length is a pure function of (seed, index), so the bucket's draw starts with the
    run's own."""
    pad = jnp.arange(s.shape[0], dtype=jnp.int32) >= n
    return jnp.where(pad, 0, s), jnp.where(pad, PAD_OUTPUT, o)


def init(config: OfflineConfig, params: OfflineParams, seed) -> OfflineState:
    """Every request of run `seed` pending at t = 0, in the policy's order (`fn(config,
    params, Jobs(s, o, seed, M, n))`, M = params.capacity_tokens)."""
    seed = jnp.asarray(seed, jnp.uint32)
    s, o = jobs(config, seed)
    M, n = params.capacity_tokens, run_requests(params)
    if n is not None:
        # The padding never fits, so `start` counts only the run's own requests as servable.
        s, o = pad_jobs(s, o, n)
    order = POLICIES[config.policy].fn(config, params, Jobs(s, o, seed, M, n))
    return start(s, o, order, params, table_rows(config))


# Rows of the table of running requests by default: paper 002's real mix at M = 16,492 runs
# about 35 requests at once (at most 66 in 32 runs of n = 200 and 1000), so runs seldom outgrow
# 96 rows; a run that does runs again with twice the rows.
DEFAULT_SLOTS = 96


def table_rows(config: OfflineConfig) -> int:
    """A, the rows of the table of running requests: config.slots, or DEFAULT_SLOTS, at most
    n. A run that needs more stops with `overflow` and runs again with twice the rows
    (`regrow`), so A never changes a result."""
    return min(config.n, config.slots or DEFAULT_SLOTS)


def start(s, o, order, params: OfflineParams, rows: int | None = None) -> OfflineState:
    """The state at t = 0 of the instance (s, o) (int32[n], tokens) admitted in `order` (a
    permutation of 0..n-1), with a table of `rows` running requests (default n: never
    overflows). Requests that cannot fit even alone (s + o > M) are moved behind the others,
    keeping both groups' relative order, and never admitted (`num_dropped`)."""
    s, o, order = (jnp.asarray(x, jnp.int32) for x in (s, o, order))
    fits = (s + o <= params.capacity_tokens)[order]
    order = order[jnp.argsort(~fits, stable=True)]
    n = s.shape[0]
    A = n if rows is None else rows
    none = jnp.full((n,), -1, jnp.int32)
    zf = jnp.zeros((n,), jnp.float32)
    z = jnp.int32(0)
    empty = jnp.full((A,), -1, jnp.int32)
    table = ActiveTable(empty, jnp.zeros((A,), jnp.int32), empty, empty, jnp.zeros((A,), jnp.int32))
    return OfflineState(
        s,
        o,
        order,
        jnp.sum(fits).astype(jnp.int32),
        z,
        none,
        none,
        table,
        DF(zf, zf),
        z,
        z,
        DF.zeros(),
        z,
        WideInt.zeros(),
        z,
        jnp.bool_(False),
    )


def _candidate(st: OfflineState, M, t):
    """The next candidate r = order[head] tried at step t (p_r = t - 1): (whether there is one,
    r, s_r, o_r, c_r, the running rows bool[A], admit_check's (fits, raised, own), the first
    free row, whether a row is free)."""
    tab = st.table
    running = tab.c >= t
    blocked = st.head < st.live
    r = st.order[jnp.minimum(st.head, st.s.shape[0] - 1)]
    s_r, o_r = st.s[r], st.o[r]
    c_r = t - 1 + o_r
    check = admit_check(tab.s, tab.p, tab.c, running, tab.peak, s_r, t - 1, c_r, M)
    row = jnp.argmin(running)
    return blocked, r, s_r, o_r, c_r, running, check, row, ~running[row]


def _take(st: OfflineState, admit, r, s_r, c_r, t, raised, own, row) -> OfflineState:
    """st with r admitted at step t into table row `row` where `admit` (a scalar)."""
    tab = st.table
    put = lambda a, v: a.at[row].set(jnp.where(admit, v, a[row]))
    table = ActiveTable(
        put(tab.id, r),
        put(tab.s, s_r),
        put(tab.p, t - 1),
        put(tab.c, c_r),
        jnp.where(admit, raised.at[row].set(own), tab.peak),
    )
    return replace(
        st,
        head=st.head + admit.astype(jnp.int32),
        p=st.p.at[r].set(jnp.where(admit, t - 1, st.p[r])),
        c=st.c.at[r].set(jnp.where(admit, c_r, st.c[r])),
        table=table,
        last=jnp.where(admit, jnp.maximum(st.last, c_r), st.last),
    )


def _stamp(finish: DF, table: ActiveTable, ends, now: DF) -> DF:
    """finish with the requests of the table rows `ends` (bool[A]) stamped with `now`."""
    at = jnp.where(ends, table.id, finish.hi.shape[0])  # rows not ending write out of range
    return DF(finish.hi.at[at].set(now.hi, mode="drop"), finish.lo.at[at].set(now.lo, mode="drop"))


def _admit(state: OfflineState, params: OfflineParams, t) -> tuple[OfflineState, jnp.ndarray]:
    """Step 2: admit the longest fitting prefix of the pending order at step t. Returns the
    state and the prompt tokens admitted (prefilled this step)."""
    M = params.capacity_tokens

    def cond(carry):
        st, _, go = carry
        return go & (st.head < st.live) & ~st.overflow

    def body(carry):
        st, prefill, _ = carry
        _, r, s_r, _, c_r, _, (ok, raised, own), row, room = _candidate(st, M, t)
        st = _take(st, ok & room, r, s_r, c_r, t, raised, own, row)
        st = replace(st, overflow=ok & ~room)
        return st, prefill + jnp.where(ok & room, s_r, 0), ok & room

    state, prefill, _ = jax.lax.while_loop(cond, body, (state, jnp.int32(0), jnp.bool_(True)))
    return state, prefill


def done(config: OfflineConfig, state: OfflineState) -> jnp.ndarray:
    """Every servable request admitted and completed, or the table overflowed (the run stops
    and runs again with more rows: `regrow`)."""
    return (state.head >= state.live) & (state.t >= state.last) | state.overflow


def step(config: OfflineConfig, params: OfflineParams, state: OfflineState, record: bool):
    """One event (see the module docstring), or with record=True one unit step; a no-op once
    `done` or at t = config.steps."""
    return advance(params, state, record, config.steps)


def advance(params: OfflineParams, state: OfflineState, record: bool, cap):
    """`step` with the step bound `cap` (int32 scalar: state.t never passes it) as a value:
    explicit instances (`instances.execute`) give their own. record=True: unit step t =
    state.t + 1 (`unit_step`), one trajectory row. Else one event (`event_step`)."""
    if record:
        return unit_step(params, state, cap)
    return event_step(params, state, cap), None


def unit_step(params: OfflineParams, state: OfflineState, cap):
    """Unit step t = state.t + 1: every admission that fits, then one token for every active
    request. Returns (state, the step's trajectory row)."""
    finished = done(None, state) | (state.t >= cap)
    t = state.t + 1
    st, prefill = _admit(state, params, t)
    running = st.table.c >= t
    decoding = jnp.sum(running).astype(jnp.int32)
    memory = jnp.sum(jnp.where(running, st.table.s + t - st.table.p, 0)).astype(jnp.int32)
    now = clock.add_f32(st.clock, step_duration(params, decoding, prefill, memory))
    finish = _stamp(st.finish, st.table, st.table.c == t, now)
    new = replace(
        st,
        t=t,
        clock=now,
        finish=finish,
        peak_memory=jnp.maximum(st.peak_memory, memory),
        memory_sum=st.memory_sum.add(memory),
    )
    new = jax.tree_util.tree_map(lambda a, b: jnp.where(finished, a, b), state, new)
    live = ~finished
    out = {
        "memory": jnp.where(live, memory, 0),
        "decoding": jnp.where(live, decoding, 0),
        "prefill_tokens": jnp.where(live, prefill, 0),
        "time_s": now.hi,
        "live": live,
    }
    return new, out


def event_step(params: OfflineParams, state: OfflineState, cap) -> OfflineState:
    """One event of unit step t = state.t + 1: the next candidate r = order[head] is admitted
    if it fits (t does not move: the step's admissions go on at the next call; its prompt
    tokens add to `state.prefill`); otherwise the step's admissions are over and the step
    closes together with the quiet steps after it (`quiet_until`), each priced by the
    step-time model as a unit step would be. Every call costs O(A) once, whatever it does,
    so vmapped runs never wait for one that admits many requests in one step. A candidate that
    fits when every table row is taken sets `overflow` (the run stops; `regrow`)."""
    finished = done(None, state) | (state.t >= cap)
    st, tab = state, state.table
    t = st.t + 1
    M = params.capacity_tokens
    blocked, r, s_r, o_r, c_r, running, (fits, raised, own), row, room = _candidate(st, M, t)
    admit = blocked & fits & room & ~finished
    overflow = blocked & fits & ~room & ~finished
    close = ~(blocked & fits) & ~finished
    # Closing: steps t .. last hold the running set, the first one prefilling st.prefill tokens.
    decoding = jnp.sum(running).astype(jnp.int32)
    memory = jnp.sum(jnp.where(running, tab.s + t - tab.p, 0)).astype(jnp.int32)
    last = quiet_until(tab, M, t, running, blocked, c_r, o_r, raised, own)
    last, exact = quiet_window(params, st.clock, t, jnp.minimum(last, cap))
    k = last - t + 1
    now = quiet_clock(params, st.clock, exact, k, decoding, st.prefill, memory)
    top = memory + decoding * (last - t)  # the memory of step `last`, the largest of the window
    finish = _stamp(st.finish, tab, close & (tab.c == last), now)
    # The admission's writes come after every read of the state (kernels.order): in place.
    ready = all_computed((finished, finish, top, now, raised, running, row))
    st = _take(st, admit & ready, r, s_r, c_r, t, raised, own, row)
    return replace(
        st,
        prefill=jnp.where(admit, st.prefill + s_r, jnp.where(close, 0, st.prefill)),
        t=jnp.where(close, last, st.t),
        clock=_where(close, now, st.clock),
        finish=finish,
        peak_memory=jnp.where(close, jnp.maximum(st.peak_memory, top), st.peak_memory),
        memory_sum=_where(close, quiet_memory_sum(st.memory_sum, k, decoding, memory), st.memory_sum),
        overflow=st.overflow | overflow,
    )


def _where(cond, a, b):
    return jax.tree_util.tree_map(lambda x, y: jnp.where(cond, x, y), a, b)


def quiet_until(tab: ActiveTable, M, t, active, blocked, c_r, o_r, raised, own) -> jnp.ndarray:
    """int32 T >= t: the last step of the window t .. T in which nothing changes after step
    t's admissions but the clock and the memory: the running set X (the table rows `active`,
    bool[A]) stays (T
    <= c_min, the earliest completion in X: its request leaves after step c_min) and the
    candidate r = order[head], when `blocked` (it did not fit at step t: `admit_check` gave
    `raised` and `own` for p_r = t - 1, c_r = p_r + o_r), cannot fit at any step t + 1 .. T.

    Why r cannot fit: each of its terms that failed at step t stays failed for a while as the
    step tau grows with X fixed:
    - a member j with c_j <= c_r: its term raised_j = peak_j + s_r + c_j - (tau - 1) falls by
      one per step (j stays covered, since c_r grows), so it holds again from
      tau = t + raised_j - M;
    - r's own peak M(X, e) + s_r + o_r at e = c_r: M(X, e) = sum_{c_j >= e} (s_j + e - p_j)
      only grows with e until e passes the next member completion c* >= e, which takes until
      tau = c* + 2 - o_r (with no such member the term holds: s_r + o_r <= M).
    r can fit only once all of its failed terms hold, so not before the largest of their
    bounds. With every request admitted there is no candidate, and the window runs to c_min.
    (benchmarks/numpy_offline.py skips with the same rule.)
    """
    big = jnp.int32(INT_LIMIT)
    c_min = jnp.min(jnp.where(active, tab.c, big))
    member_bound = jnp.where(active & (tab.c <= c_r) & (raised > M), t + raised - M, t + 1)
    c_star = jnp.min(jnp.where(active & (tab.c >= c_r), tab.c, big))
    own_bound = jnp.where(own > M, c_star + 2 - o_r, t + 1)
    fit_from = jnp.where(blocked, jnp.maximum(jnp.max(member_bound), own_bound), big)
    return jnp.where(jnp.any(active), jnp.minimum(c_min, fit_from - 1), t)


# --------------------------------------------------------------------------- runner hints


def example() -> OfflineConfig:
    from ..workload import Batch, Independent, UniformInt

    return OfflineConfig(Batch(Independent(UniformInt(1, 50), UniformInt(1, 50)), 40))


def max_steps(config: OfflineConfig) -> int:
    """Scan steps that finish any run: each event admits one of the n requests or moves t
    forward (never past config.steps)."""
    return config.steps + config.n


def working_set_bytes(config: OfflineConfig) -> int:
    return 4 * 10 * config.n


def peak_bytes(config: OfflineConfig, record: bool) -> int:
    per_seed = 4 * 40 * config.n
    if record:
        per_seed += 20 * min(config.steps, 1 << 20)
    return per_seed


def regrow(
    config: OfflineConfig, params: OfflineParams, metrics
) -> tuple[OfflineConfig, OfflineParams, np.ndarray] | None:
    """(config with twice the table rows, the same params, the runs whose table overflowed) or
    None: the runner repeats those runs with it (`Engine.regrow`)."""
    again = np.asarray(metrics["_overflow"]) > 0
    if not again.any():
        return None
    return replace(config, slots=min(config.n, 2 * table_rows(config))), params, again


def check(config: OfflineConfig, metrics) -> list[str]:
    out = []
    dropped = int(metrics["num_dropped"].sum())
    if dropped:
        out.append(
            f"offline: {dropped} requests had s + o > M and could never start; they "
            "were dropped (metrics cover the others)"
        )
    cut = int((metrics["done"] == 0).sum())
    if cut:
        out.append(f"offline: {cut} seeds did not finish within max_steps (raise it)")
    return out


def describe(config: OfflineConfig) -> dict:
    return dict(policy=config.policy, workload=config.workload.name, num_requests=config.n)


# n requests at t = 0 on one worker with a KV limit (papers 002, 003). Size buckets over n, the
# number of requests, come from the batch model it shares with the interval engine.
ENGINE: Engine[OfflineConfig, OfflineParams, OfflineState] = Engine(
    name="offline",
    Config=OfflineConfig,
    Params=OfflineParams,
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
    example=example,
    regrow=regrow,
    check=check,
    describe=describe,
    **batchmodel.ENGINE_HINTS,
)
