"""The interval engine: n jobs at t = 0 with hidden outputs and predicted intervals (paper 003).

One scan step is one unit time step t = 1, 2, ... of docs/interval-semantics.md:
1. promotion (A_l): a job that has produced its starting estimate's tokens (l_i, or the point
   of [l_i, u_i] that `start_fraction` names) without finishing is cancelled and re-queued at
   u_i;
2. overflow handling: if the active jobs would hold more than M tokens this step, cancel them
   in ascending order of their estimate (random ties) until the rest fits; evicted jobs lose
   their tokens, raise their estimate to what they had generated, and wait from step t + 1;
3. admission: the waiting jobs in the policy's order, a strict prefix, each admitted if the
   running set with it still fits at every future step under the policy's estimates (active
   jobs at max(E_i, a_i + 1), the safe estimate of notes §5.2);
4. every running job generates one token; jobs reaching o_i complete.
The future-memory check is `kernels.future_peak`: peaks of the running set from scratch (the
estimates change every step) by a histogram over completion offsets 0..u_max - 1, then O(n)
per candidate; candidates and evictions are taken one at a time in (key, tie, index) order by
`lex_argmin` rather than by sorting, since a typical step admits or evicts only a few jobs.
Times in the check are relative to t so that its sums stay far from int32 overflow
(`config.check_capacity`).

Event skipping: one scan step runs unit step t and then every following step in which
provably nothing happens but one token for every running job (`quiet_steps`: no completion
before the window's last step, no promotion, no overflow, no candidate that could be first in
the waiting order and fit), pricing each of them as a unit step would, so the final state and
the metrics are bitwise those of unit stepping (tests/interval/test_events.py). A recorded run
(record=True) takes exactly one unit step per scan step (`unit_step`), so its trajectories
have one row per unit step.
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp

from .. import batchmodel, rng
from ..accumulate import WideInt
from ..batchmodel import INT_LIMIT, OfflineParams, quiet_clock, quiet_memory_sum, quiet_window, run_requests, step_clock
from ..clock import DF
from ..engine import Engine
from ..kernels import admit_check, completion_peaks_binned, lex_argmin
from .config import START_STEPS, IntervalConfig, IntervalParams, make_params
from .metrics import METRICS, finalize
from .policies import Rule
from .registry import POLICIES
from .state import IntervalState


def jobs(config: IntervalConfig, seed) -> tuple[jnp.ndarray, ...]:
    """(s, o, l, u) int32[n] of run `seed`: the workload's first n jobs and their intervals."""
    ids = jnp.arange(config.n, dtype=jnp.int32)
    s, o = config.workload.sample(jnp.asarray(seed, jnp.uint32), ids)
    s, o = s.astype(jnp.int32), o.astype(jnp.int32)
    low, high = config.intervals.bounds(o)
    return s, o, low.astype(jnp.int32), high.astype(jnp.int32)


def init(config: IntervalConfig, params: IntervalParams, seed) -> IntervalState:
    """Every job of run `seed` waiting at t = 0 (a padded run's own n jobs only)."""
    return start(*jobs(config, seed), seed, config.policy, run_requests(params), params.start_q)


def start(s, o, low, high, seed, policy: str, n=None, start_q=0) -> IntervalState:
    """The state at t = 0 of the instance (s, o, l, u) (int32[n], tokens, validated by
    `intervals.check_instance`) under `policy`, whose ties hash `seed`. n (int32 scalar or
    None): the run's own jobs when the arrays are padded into a size bucket; jobs i >= n are
    never eligible (elig beyond any step), so they never wait, run, rank or count, and every
    tie hash of a job depends on its index only. start_q (int32 scalar in [0, START_STEPS],
    `config.start_quanta`): a policy that starts at l_i starts at l_i + floor(start_q (u_i -
    l_i) / START_STEPS) instead (0: at l_i)."""
    s, o, low, high = (jnp.asarray(x, jnp.int32) for x in (s, o, low, high))
    rule: Rule = POLICIES[policy].fn
    est = {"o": o, "high": high, "low": low}[rule.start]
    if rule.start == "low":
        # Floored integer arithmetic, exact in int32 (make_params keeps (u - l) START_STEPS
        # below 2^31), so that the plain-Python reference reproduces every estimate.
        est = low + (high - low) * jnp.asarray(start_q, jnp.int32) // START_STEPS
    size = s.shape[0]
    none = jnp.full((size,), -1, jnp.int32)
    zero = jnp.zeros((size,), jnp.int32)
    zf = jnp.zeros((size,), jnp.float32)
    z = jnp.int32(0)
    elig, remaining = jnp.ones((size,), jnp.int32), jnp.int32(size)
    if n is not None:
        ids = jnp.arange(size, dtype=jnp.int32)
        elig = jnp.where(ids < n, elig, jnp.iinfo(jnp.int32).max)
        remaining = jnp.asarray(n, jnp.int32)
    return IntervalState(
        s,
        o,
        low,
        high,
        est,
        none,
        none,
        elig,
        zero,
        zero,
        zero,
        DF(zf, zf),
        jnp.asarray(seed, jnp.uint32),
        z,
        remaining,
        DF.zeros(),
        z,
        WideInt.zeros(),
        z,
    )


def _cancel(st: IntervalState, mask, a, est, elig) -> IntervalState:
    """Cancel the attempts in `mask`: their a tokens are wasted and they wait again."""
    return replace(
        st,
        p=jnp.where(mask, -1, st.p),
        est=jnp.where(mask, est, st.est),
        elig=jnp.where(mask, elig, st.elig),
        evictions=st.evictions + mask.astype(jnp.int32),
        wasted=st.wasted + jnp.where(mask, a, 0),
    )


def _promote(st: IntervalState, t, a, active):
    """A_l's step 1: jobs still at their starting estimate (below u_i: l_i, or the point of
    [l_i, u_i] that start_q names) that produced that many tokens go back at u_i, re-queued
    behind every job now waiting, and may restart this very step (Algorithm 6). A job's
    estimate is its starting one or u_i, so est < u marks the jobs not yet promoted."""
    hit = active & (st.est < st.high) & (a == st.est)
    st = _cancel(st, hit, a, st.high, t)
    return replace(st, qkey=jnp.where(hit, t, st.qkey)), active & ~hit, hit


def _overflow(config: IntervalConfig, M, st: IntervalState, t, a, active):
    """Step 2: cancel the shortest prefix, by (estimate, random tie), that brings this step's
    memory within M, one job at a time (no sort: overflow is rare, and a step without one costs
    a sum). Returns (state, still active, cancelled, whether any was)."""
    use = jnp.where(active, st.s + a + 1, 0)
    key = st.est if config.eviction_key == "stale" else jnp.maximum(st.est, a)
    idx = jnp.arange(st.s.shape[0], dtype=jnp.int32)

    def body(carry):
        total, cut = carry
        tie = rng.hash_step(st.seed, t, idx, rng.STREAM_TIE_EVICT)
        r = lex_argmin(key, tie, active & ~cut)
        return total - use[r], cut | (idx == r)  # a select, not a scatter (see `_admit`)

    _, cut = jax.lax.while_loop(lambda c: c[0] > M, body, (jnp.sum(use), jnp.zeros_like(active)))
    st = _cancel(st, cut, a, jnp.maximum(st.est, a), t + 1)
    return st, active & ~cut, cut, jnp.any(cut)


def _admit(config: IntervalConfig, M, st: IntervalState, t, a, active):
    """Step 3: the longest fitting prefix of the waiting order, taken one candidate at a time
    (the next one is the smallest (key, tie, index) left: O(n) per candidate, and a step that
    admits nothing costs one candidate). Returns (state, admitted bool[n], prompt tokens
    admitted, the check's view of the running set X after admission: (starts, estimated ends
    relative to t int32[n], X bool[n], peaks int32[n]))."""
    rule: Rule = POLICIES[config.policy].fn
    E, key = rule(st, config)
    prel = jnp.where(active, st.p - t, 0)  # times relative to t
    crel = jnp.where(active, prel + jnp.maximum(E, a + 1), 0)  # in [0, u_max)
    peak = completion_peaks_binned(st.s, prel, crel, active, config.max_upper)
    idx = jnp.arange(st.s.shape[0], dtype=jnp.int32)
    waiting = (st.p < 0) & (st.c < 0) & (st.elig <= t)
    if rule.fixed_tie:
        tie = rng.hash3(st.seed, idx, rng.STREAM_ORDER)
    else:
        tie = rng.hash_step(st.seed, t, idx, rng.STREAM_TIE_ADMIT)
    prel = jnp.where(waiting, -1, prel)  # a candidate's start, if admitted

    # The loop's writes to row r are selects on idx == r, not scatters: vmapped, a scatter
    # writes into a copy of its carry (the lanes that have stopped keep the old one), where a
    # select fuses with that choice and updates the carry in place.
    def body(carry):
        _, left, member, peak, crel, prefill = carry
        r = lex_argmin(key, tie, left)
        c_r = E[r] - 1  # p_r = t - 1, i.e. -1 relative
        ok, raised, own = admit_check(st.s, prel, crel, member, peak, st.s[r], -1, c_r, M)
        is_r = idx == r
        take = ok & is_r
        member = member | take
        peak = jnp.where(ok, jnp.where(is_r, own, raised), peak)
        crel = jnp.where(take, c_r, crel)
        return ok, left & ~is_r, member, peak, crel, prefill + jnp.where(ok, st.s[r], 0)

    init = (jnp.bool_(True), waiting, active, peak, crel, jnp.int32(0))
    _, _, member, peak, crel, prefill = jax.lax.while_loop(lambda c: c[0] & jnp.any(c[1]), body, init)
    admitted = member & ~active
    return replace(st, p=jnp.where(admitted, t - 1, st.p)), admitted, prefill, (prel, crel, member, peak)


def done(config: IntervalConfig, state: IntervalState) -> jnp.ndarray:
    """Every job completed."""
    return state.remaining == 0


def step(config: IntervalConfig, params: OfflineParams, state: IntervalState, record: bool):
    """One event (see the module docstring), or with record=True one unit step and its
    trajectory row; a no-op once `done` or at the step bound (`step_bound`)."""
    cap = step_bound(config, params)
    if record:
        return unit_step(config, params, state, cap)
    return event_step(config, params, state, cap), None


def step_bound(config: IntervalConfig, params: OfflineParams) -> jnp.ndarray:
    """int32 scalar: the step at which a run is cut (state.t never passes it): config.steps;
    a run padded into a size bucket without an explicit max_steps is cut where its own config's
    default cuts it (4 n u_max + 64 with its own n, at most INT_LIMIT), not at the bucket's
    larger one."""
    n = run_requests(params)
    if n is None or config.max_steps is not None:
        return jnp.int32(config.steps)
    u4 = 4 * config.max_upper
    return jnp.where(n > (INT_LIMIT - 64) // u4, INT_LIMIT, n * u4 + 64).astype(jnp.int32)


def _decide(config: IntervalConfig, M, state: IntervalState, t):
    """Steps 1-3 of unit step t: (state with the step's cancellations and admissions, the
    running jobs bool[n], their tokens before the step int32[n] (0 for the jobs admitted at t),
    prompt tokens admitted, jobs cancelled bool[n], whether overflow handling cancelled any,
    `_admit`'s view of the running set)."""
    active = (state.p >= 0) & (state.c < 0)
    a = jnp.where(active, t - 1 - state.p, 0)  # tokens generated before step t
    st, cancelled = state, jnp.zeros_like(active)
    if POLICIES[config.policy].fn.promote:
        st, active, cancelled = _promote(st, t, a, active)
    st, active, cut, over = _overflow(config, M, st, t, a, active)
    st, admitted, prefill, check = _admit(config, M, st, t, a, active)
    return st, active | admitted, jnp.where(admitted, 0, a), prefill, cancelled | cut, over, check


def unit_step(config: IntervalConfig, params: OfflineParams, state: IntervalState, cap):
    """Unit step t = state.t + 1 (see the module docstring); a no-op once `done` or at t = cap
    (int32 scalar). Returns (state, the step's trajectory row)."""
    finished = done(config, state) | (state.t >= cap)
    t = state.t + 1
    st, running, a, prefill, cancelled, over, _ = _decide(config, params.capacity_tokens, state, t)
    decoding = jnp.sum(running).astype(jnp.int32)
    memory = jnp.sum(jnp.where(running, st.s + a + 1, 0)).astype(jnp.int32)
    ends = running & (a + 1 == st.o)
    now, finish = step_clock(params, st.clock, st.finish, ends, decoding, prefill, memory)
    new = replace(
        st,
        t=t,
        c=jnp.where(ends, t, st.c),
        clock=now,
        finish=finish,
        remaining=st.remaining - jnp.sum(ends).astype(jnp.int32),
        peak_memory=jnp.maximum(st.peak_memory, memory),
        memory_sum=st.memory_sum.add(memory),
        overflow_steps=st.overflow_steps + over.astype(jnp.int32),
    )
    new = jax.tree_util.tree_map(lambda x, y: jnp.where(finished, x, y), state, new)
    live = ~finished
    out = {
        "memory": jnp.where(live, memory, 0),
        "decoding": jnp.where(live, decoding, 0),
        "prefill_tokens": jnp.where(live, prefill, 0),
        "evicted": jnp.where(live, jnp.sum(cancelled), 0).astype(jnp.int32),
        "time_s": now.hi,
        "live": live,
    }
    return new, out


def event_step(config: IntervalConfig, params: OfflineParams, state: IntervalState, cap) -> IntervalState:
    """Unit step t = state.t + 1 together with the quiet steps after it (`quiet_steps`), up to
    `last` <= cap (int32 scalar); a no-op once `done` or at t = cap. The steps t .. last hold
    the running set of step t, the first one prefilling the prompts admitted at t, each next
    one `decoding` KV tokens more; they are priced one at a time as unit stepping prices them,
    or at once where that is exact (`batchmodel.quiet_window`, `quiet_clock`), and the
    jobs completing at `last` are stamped with its clock."""
    finished = done(config, state) | (state.t >= cap)
    t = state.t + 1
    M = params.capacity_tokens
    st, running, a, prefill, _, over, check = _decide(config, M, state, t)
    decoding = jnp.sum(running).astype(jnp.int32)
    memory = jnp.sum(jnp.where(running, st.s + a + 1, 0)).astype(jnp.int32)  # at step t
    q = quiet_steps(config, M, st, t, running, decoding, memory, check)
    last, exact = quiet_window(params, st.clock, t, t + jnp.minimum(q, cap - t))
    k = last - t + 1
    now = quiet_clock(params, st.clock, exact, k, decoding, prefill, memory)
    ends = running & (st.p + st.o == last)
    new = replace(
        st,
        t=last,
        c=jnp.where(ends, last, st.c),
        clock=now,
        finish=DF(jnp.where(ends, now.hi, st.finish.hi), jnp.where(ends, now.lo, st.finish.lo)),
        remaining=st.remaining - jnp.sum(ends).astype(jnp.int32),
        peak_memory=jnp.maximum(st.peak_memory, memory + decoding * (last - t)),  # the window's last
        memory_sum=quiet_memory_sum(st.memory_sum, k, decoding, memory),
        overflow_steps=st.overflow_steps + over.astype(jnp.int32),
    )
    return jax.tree_util.tree_map(lambda x, y: jnp.where(finished, x, y), state, new)


# Quiet steps one scan step may take at most: the window's memory sum adds k (first + last) / 2
# by `WideInt.add_product`, exact for a factor k below 2^24.
MAX_QUIET = (1 << 24) - 2


def quiet_steps(config: IntervalConfig, M, st: IntervalState, t, running, decoding, memory, check) -> jnp.ndarray:
    """int32 q >= 0: the steps t + 1 .. t + q after unit step t in which nothing happens but one
    token for every running job. st: the state after step t's cancellations and admissions
    (p, est, elig as at step t + 1); running: the running set X (bool[n]); decoding = |X|;
    memory: X's KV tokens at step t; check: `_admit`'s view of X at step t. With X fixed, step
    tau holds memory + |X| (tau - t) tokens and the check of step tau ends j in X at
    max(C_j, tau), C_j = p_j + E_j (E_j, the policy's estimate, changes only when j is
    cancelled). Nothing happens at tau when
    - no job of X completes before tau (tau <= min p_j + o_j: the last step of the window may
      complete jobs, which changes nothing within it);
    - no job of X at est < u reaches est tokens (A_l's promotion at step p_j + est_j + 1);
    - memory + |X| (tau - t) <= M (no overflow);
    - the first candidate does not fit. Every waiting job is eligible from t + 1 on
      (promotion sets elig = t, eviction t + 1; padding is never eligible) and no key changes,
      so the possible first candidates F are the same at every step of the window: the one
      smallest (key, tie, index) when ties are fixed for the run, else every job of the least
      key (its tie is redrawn at each step). Each of F must fail.
    Candidate r tried at tau (p_r = tau - 1, c_r = tau - 1 + E_r) fails when one of its terms
    exceeds M, and each term that fails at tau = t (r checked against X, as if it were tried
    then) stays failed for a while:
    - a member j with max(C_j, tau) <= c_r (it stays covered): while tau < C_j its term
      peak_j + s_r + C_j - tau + 1 falls by one per step (peak_j = sum_{C_l >= C_j} (s_l + C_j
      - p_l) is fixed); from tau >= C_j on, j is due at tau, its peak is all of X's memory at
      tau, so its term memory(tau) + s_r + 1 grows and is at least that falling line (the
      memory at tau >= C_j holds every term of peak_j, each as large). So the largest member
      term R fails until t + R - M;
    - r's own term P(c_r) + s_r + E_r, P(e) = sum_{l in X, max(C_l, tau) >= e} (s_l + e - p_l):
      with E_r = 1, c_r = tau and P(tau) is X's memory at tau, which only grows: it fails
      throughout the window. With E_r >= 2, c_r > tau, so P(c_r) = sum_{C_l >= c_r} ... does not
      depend on tau and grows with c_r until c_r passes the next C_l >= c_r, c*: it fails while
      c_r <= c* (as in `offline.engine.quiet_until`). Then the job l ending at c* is a covered
      member, whose term, as above, is at least P(c*) + s_r + c* - tau + 1 >= own(t) - E_r +
      c* - tau + 1 (P(c*) >= P(c_r) at t): it fails until c* + 1 - E_r + own(t) - M.
    r can fit only once every failed term holds (`_fit_after`), so the window ends before the
    earliest such step over F. When every job of F has the same estimate (fixed ties, or a key
    that is the estimate: every policy but A_max in random order) their terms differ by s_r
    only and grow with it, so the job of F with the fewest prompt tokens fits first: its terms
    cost O(n) (`_fit_one`). Else a histogram of X over its ends gives every candidate's terms
    at once in O(n + u_max) (`_fit_each`).
    """
    rule: Rule = POLICIES[config.policy].fn
    big = jnp.int32(INT_LIMIT)
    E, key = rule(st, config)
    idx = jnp.arange(st.s.shape[0], dtype=jnp.int32)
    waiting = (st.p < 0) & (st.c < 0) & (st.elig <= t + 1)
    if rule.fixed_tie:
        cand = waiting & (idx == lex_argmin(key, rng.hash3(st.seed, idx, rng.STREAM_ORDER), waiting))
    else:
        cand = waiting & (key == jnp.min(jnp.where(waiting, key, big)))
    # Rule.__call__ orders A_max by no key ("none") when amax_order is "random".
    random_amax = rule.key == "high" and config.amax_order == "random"
    if rule.fixed_tie or (rule.key == rule.estimate and not random_amax):
        r = jnp.argmin(jnp.where(cand, st.s, big))
        q_admit = jnp.where(jnp.any(cand), _fit_one(M, check, st.s, st.s[r], E[r]) - 1, big)
    else:
        q_admit = jnp.min(jnp.where(cand, _fit_each(config.max_upper, M, check, st.s, E) - 1, big))
    q_done = jnp.min(jnp.where(running, st.p + st.o - t, big))
    q_fit = (M - memory) // jnp.maximum(decoding, 1)
    q = jnp.minimum(jnp.minimum(q_admit, q_done), jnp.minimum(q_fit, MAX_QUIET))
    if rule.promote:
        due = running & (st.est < st.high)
        q = jnp.minimum(q, jnp.min(jnp.where(due, st.p + st.est - t, big)))
    return jnp.where(decoding > 0, jnp.maximum(q, 0), 0)


def _fit_after(M, E, own, raised, c_next):
    """Steps after t at which a candidate with estimate E can fit at the earliest (0: it fits
    at t), from its terms checked at t against X (relative to t): its own term, its largest
    member term `raised` and c_next, the next end of a member at or after its own (INT_LIMIT:
    none); the bounds of `quiet_steps`."""
    member = jnp.where(raised > M, raised - M, 0)
    again = jnp.where((E == 1) | (c_next >= INT_LIMIT), INT_LIMIT, c_next + 1 - E + own - M)
    return jnp.maximum(member, jnp.where(own > M, again, 0))


def _fit_one(M, check, s, s_r, E_r):
    """`_fit_after` of one candidate (prompt s_r, estimate E_r: int32 scalars) against X at
    step t (`_admit`'s view: starts and ends relative to t, membership, peaks; s int32[n] the
    prompts): O(n)."""
    prel, crel, member, peak = check
    c_r = E_r - 1  # p_r = t - 1
    later = member & (crel >= c_r)
    own = jnp.sum(jnp.where(later, s + c_r - prel, 0)) + s_r + E_r
    raised = jnp.max(jnp.where(member & (crel <= c_r), peak + crel, -INT_LIMIT)) + s_r + 1
    c_next = jnp.min(jnp.where(later, crel, INT_LIMIT))
    return _fit_after(M, E_r, own, raised, c_next)


def _fit_each(width: int, M, check, s, E):
    """int32[n]: `_fit_after` of every job as a candidate (prompt s, estimate E: int32[n])
    against X at step t (`_admit`'s view; X's ends relative to t in [0, width)), by one
    histogram of X over its ends: suffix sums give P at every end, a prefix maximum of
    peak_j + c_j the largest member term, a suffix minimum of the filled bins the next end.
    O(n + width)."""
    prel, crel, member, peak = check
    bins = jnp.arange(width + 1, dtype=jnp.int32)
    b = jnp.where(member, crel, width)  # others land in the spare bin
    w = jnp.zeros((width + 1,), jnp.int32).at[b].add(jnp.where(member, s - prel, 0))
    count = jnp.zeros((width + 1,), jnp.int32).at[b].add(member.astype(jnp.int32))
    profile = jnp.cumsum(w[::-1])[::-1] + bins * jnp.cumsum(count[::-1])[::-1]  # P(t + e)
    top = jnp.full((width + 1,), -INT_LIMIT).at[b].max(jnp.where(member, peak + crel, -INT_LIMIT))
    top = jax.lax.cummax(top)  # over the members ending at or before each bin
    c_next = jax.lax.cummin(jnp.where((count > 0) & (bins < width), bins, INT_LIMIT), reverse=True)
    e = jnp.clip(E - 1, 0, width - 1)  # the candidates' ends
    return _fit_after(M, E, profile[e] + s + E, top[e] + s + 1, c_next[e])


# --------------------------------------------------------------------------- runner hints


def example() -> IntervalConfig:
    from ..workload import Batch, Independent, UniformInt

    return IntervalConfig(Batch(Independent(UniformInt(1, 50), UniformInt(1, 50)), 40))


def max_steps(config: IntervalConfig) -> int:
    """Scan steps that finish any run: each one runs at least one unit step, and t never
    passes config.steps (`step_bound`)."""
    return config.steps


# Words per job that one run stands for in a CPU seed chunk (`working_set_bytes`).
CHUNK_WORDS_PER_JOB = 512


def working_set_bytes(config: IntervalConfig) -> int:
    """Bytes one run stands for in a CPU seed chunk (`run.default_seed_chunk` fits
    CPU_CHUNK_BYTES of them): CHUNK_WORDS_PER_JOB int32 words per job, far more than its state
    (16 per job), because a vmapped chunk runs the admission loop (and the overflow loop) of
    every step as many times as its busiest lane needs, each time over every lane's per-job
    arrays. On n = 200 A_min runs (bucket intervals, M = 4096) a lane's own admissions take
    444 candidate passes per run, but 1550 in chunks of 16, 2498 in chunks of 64 and 3842 in
    chunks of 342 (what the state alone, 16 words per job, would give), with the chunk's arrays
    then out of the caches: 1024 instances ran at about 300 instances/s in chunks of 8 or 16,
    175-230 in chunks of 32 or 64 and 55-90 in chunks of 342 (2 shared cores, load 4 to 7).
    512 words per job make chunks of 15 at n = 200; proportional to n, so bucket plans
    (`buckets.plan_buckets`, which compares this across sizes) are unchanged."""
    return 4 * CHUNK_WORDS_PER_JOB * config.n


def peak_bytes(config: IntervalConfig, record: bool) -> int:
    per_seed = 4 * 48 * config.n
    if record:
        per_seed += 24 * min(config.steps, 1 << 20)
    return per_seed


def check(config: IntervalConfig, metrics) -> list[str]:
    cut = int((metrics["done"] == 0).sum())
    if cut:
        return [f"interval: {cut} seeds did not finish within max_steps (raise it)"]
    return []


def describe(config: IntervalConfig) -> dict:
    return dict(
        policy=config.policy, workload=config.workload.name, num_requests=config.n, intervals=config.intervals.name
    )


# n jobs at t = 0 with predicted output intervals, on one worker with a KV limit (paper 003): a
# batch engine on the batch model it shares with the offline engine (`jaxsched.batchmodel`):
# the same params, step clock, size buckets over n (the number of jobs) and runner hints.
ENGINE: Engine[IntervalConfig, IntervalParams, IntervalState] = Engine(
    name="interval",
    Config=IntervalConfig,
    Params=IntervalParams,
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
    check=check,
    describe=describe,
    **batchmodel.ENGINE_HINTS,
)
