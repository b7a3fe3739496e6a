"""The interval engine: n jobs at t = 0 with hidden outputs and predicted intervals (paper 003).

One scan step is one unit time step t = 1, 2, ... of docs/interval-semantics.md:
1. promotion (A_l): a job that has produced l_i tokens without finishing is cancelled and
   re-queued at u_i;
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
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp

from .. import batchmodel, rng
from ..accumulate import WideInt
from ..batchmodel import INT_LIMIT, OfflineParams, run_requests, step_clock
from ..clock import DF
from ..engine import Engine
from ..kernels import admit_check, completion_peaks_binned, lex_argmin
from .config import IntervalConfig, make_params
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


def init(config: IntervalConfig, params: OfflineParams, seed) -> IntervalState:
    """Every job of run `seed` waiting at t = 0 (a padded run's own n jobs only)."""
    return start(*jobs(config, seed), seed, config.policy, run_requests(params))


def start(s, o, low, high, seed, policy: str, n=None) -> IntervalState:
    """The state at t = 0 of the instance (s, o, l, u) (int32[n], tokens, validated by
    `intervals.check_instance`) under `policy`, whose ties hash `seed`. n (int32 scalar or
    None): the run's own jobs when the arrays are padded into a size bucket; jobs i >= n are
    never eligible (elig beyond any step), so they never wait, run, rank or count, and every
    tie hash of a job depends on its index only."""
    s, o, low, high = (jnp.asarray(x, jnp.int32) for x in (s, o, low, high))
    rule: Rule = POLICIES[policy].fn
    est = {"o": o, "high": high, "low": low}[rule.start]
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
    """A_l's step 1: jobs at estimate l_i that produced l_i tokens go back at u_i, re-queued
    behind every job now waiting, and may restart this very step (Algorithm 6)."""
    hit = active & (st.est == st.low) & (st.low < st.high) & (a == st.low)
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
        return total - use[r], cut.at[r].set(True)

    _, cut = jax.lax.while_loop(lambda c: c[0] > M, body, (jnp.sum(use), jnp.zeros_like(active)))
    st = _cancel(st, cut, a, jnp.maximum(st.est, a), t + 1)
    return st, active & ~cut, cut, jnp.any(cut)


def _admit(config: IntervalConfig, M, st: IntervalState, t, a, active):
    """Step 3: the longest fitting prefix of the waiting order, taken one candidate at a time
    (the next one is the smallest (key, tie, index) left: O(n) per candidate, and a step that
    admits nothing costs one candidate). Returns (state, admitted bool[n], prompt tokens
    admitted)."""
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

    def body(carry):
        _, left, member, peak, crel, prefill = carry
        r = lex_argmin(key, tie, left)
        c_r = E[r] - 1  # p_r = t - 1, i.e. -1 relative
        ok, raised, own = admit_check(st.s, prel, crel, member, peak, st.s[r], -1, c_r, M)
        member = member.at[r].set(member[r] | ok)
        peak = jnp.where(ok, raised.at[r].set(own), peak)
        crel = crel.at[r].set(jnp.where(ok, c_r, crel[r]))
        return ok, left.at[r].set(False), member, peak, crel, prefill + jnp.where(ok, st.s[r], 0)

    init = (jnp.bool_(True), waiting, active, peak, crel, jnp.int32(0))
    _, _, member, _, _, prefill = jax.lax.while_loop(lambda c: c[0] & jnp.any(c[1]), body, init)
    admitted = member & ~active
    return replace(st, p=jnp.where(admitted, t - 1, st.p)), admitted, prefill


def done(config: IntervalConfig, state: IntervalState) -> jnp.ndarray:
    """Every job completed."""
    return state.remaining == 0


def step(config: IntervalConfig, params: OfflineParams, state: IntervalState, record: bool):
    """One unit step t = state.t + 1 (see the module docstring); a no-op once `done`."""
    finished = done(config, state)
    n = run_requests(params)
    if n is not None and config.max_steps is None:
        # A padded run is cut where its own config's default max_steps cuts it (4 n u_max + 64,
        # at most INT_LIMIT), not at the bucket's larger one.
        u4 = 4 * config.max_upper
        own = jnp.where(n > (INT_LIMIT - 64) // u4, INT_LIMIT, n * u4 + 64)
        finished = finished | (state.t >= own)
    t = state.t + 1
    M = params.capacity_tokens
    active = (state.p >= 0) & (state.c < 0)
    a = jnp.where(active, t - 1 - state.p, 0)  # tokens generated before step t
    st, cancelled = state, jnp.zeros_like(active)
    if POLICIES[config.policy].fn.promote:
        st, active, cancelled = _promote(st, t, a, active)
    st, active, cut, over = _overflow(config, M, st, t, a, active)
    st, admitted, prefill = _admit(config, M, st, t, a, active)
    running = active | admitted
    a = jnp.where(admitted, 0, a)
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
    out = None
    if record:
        live = ~finished
        out = {
            "memory": jnp.where(live, memory, 0),
            "decoding": jnp.where(live, decoding, 0),
            "prefill_tokens": jnp.where(live, prefill, 0),
            "evicted": jnp.where(live, jnp.sum(cancelled | cut), 0).astype(jnp.int32),
            "time_s": now.hi,
            "live": live,
        }
    return new, out


# --------------------------------------------------------------------------- runner hints


def example() -> IntervalConfig:
    from ..workload import Batch, Independent, UniformInt

    return IntervalConfig(Batch(Independent(UniformInt(1, 50), UniformInt(1, 50)), 40))


def max_steps(config: IntervalConfig) -> int:
    return config.steps


def working_set_bytes(config: IntervalConfig) -> int:
    return 4 * 16 * config.n


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
ENGINE: Engine[IntervalConfig, OfflineParams, IntervalState] = Engine(
    name="interval",
    Config=IntervalConfig,
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
    check=check,
    describe=describe,
    **batchmodel.ENGINE_HINTS,
)
