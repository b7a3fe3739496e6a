"""The offline engine: n requests present at t = 0, one worker, KV limit M (papers 002, 003).

One scan step is one unit time step t = 1, 2, ... of the shared Phase-2 executor of
notes/002.md §2.1:
1. requests with c_i < t have completed and left (their memory is free);
2. in the policy's order, starting at the head, a candidate r is admitted with p_r = t - 1 if
   the admitted set with r still fits at every future completion time:
   M(X, c_j) = sum_{l in X, c_l >= c_j} (s_l + c_j - p_l) <= M for all j in X (notes §2.0;
   memory only grows between completions, so these times suffice). Admission stops at the
   first candidate that does not fit (strict order, no skipping);
3. every active request generates one token; the step's time comes from the step-time model.
Checking a candidate costs O(n): `peak[j]` holds M(X, c_j) for the admitted set, and adding r
raises it by s_r + c_j - p_r wherever c_j <= c_r.
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp

from .. import batchmodel
from ..accumulate import WideInt
from ..batchmodel import INT_LIMIT, OfflineParams, run_requests, step_clock
from ..clock import DF
from ..engine import Engine
from ..kernels import admit_check
from .config import OfflineConfig, make_params
from .metrics import METRICS, finalize
from .policies import Jobs
from .registry import POLICIES
from .state import OfflineState


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
    return start(s, o, POLICIES[config.policy].fn(config, params, Jobs(s, o, seed, M, n)), params)


def start(s: jnp.ndarray, o: jnp.ndarray, order: jnp.ndarray, params: OfflineParams) -> OfflineState:
    """The state at t = 0 of the instance (s, o) (int32[n], tokens) admitted in `order` (a
    permutation of 0..n-1). Requests that cannot fit even alone (s + o > M) are moved behind
    the others, keeping both groups' relative order, and never admitted (`num_dropped`)."""
    s, o, order = (jnp.asarray(x, jnp.int32) for x in (s, o, order))
    fits = (s + o <= params.capacity_tokens)[order]
    order = order[jnp.argsort(~fits, stable=True)]
    n = s.shape[0]
    none = jnp.full((n,), -1, jnp.int32)
    zf = jnp.zeros((n,), jnp.float32)
    z = jnp.int32(0)
    return OfflineState(
        s,
        o,
        order,
        jnp.sum(fits).astype(jnp.int32),
        z,
        none,
        none,
        jnp.zeros((n,), jnp.int32),
        DF(zf, zf),
        z,
        z,
        DF.zeros(),
        z,
        WideInt.zeros(),
    )


def _fits(state: OfflineState, M, r, t) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """(fits, new peak[n], r's own peak) for candidate r starting at p_r = t - 1."""
    active = (state.p >= 0) & (state.c >= t)
    return admit_check(state.s, state.p, state.c, active, state.peak, state.s[r], t - 1, t - 1 + state.o[r], M)


def _admit(state: OfflineState, params: OfflineParams, t) -> tuple[OfflineState, jnp.ndarray]:
    """Step 2: admit the longest fitting prefix of the pending order at step t. Returns the
    state and the prompt tokens admitted (prefilled this step)."""
    M = params.capacity_tokens

    def cond(carry):
        st, _, go = carry
        return go & (st.head < st.live)

    def body(carry):
        st, prefill, _ = carry
        r = st.order[st.head]
        ok, raised, own = _fits(st, M, r, t)
        new = replace(
            st,
            head=st.head + 1,
            p=st.p.at[r].set(t - 1),
            c=st.c.at[r].set(t - 1 + st.o[r]),
            peak=raised.at[r].set(own),
            last=jnp.maximum(st.last, t - 1 + st.o[r]),
        )
        st = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, st)
        return st, prefill + jnp.where(ok, st.s[r], 0), ok

    state, prefill, _ = jax.lax.while_loop(cond, body, (state, jnp.int32(0), jnp.bool_(True)))
    return state, prefill


def done(config: OfflineConfig, state: OfflineState) -> jnp.ndarray:
    """Every servable request admitted and completed."""
    return (state.head >= state.live) & (state.t >= state.last)


def step(config: OfflineConfig, params: OfflineParams, state: OfflineState, record: bool):
    """One unit step t = state.t + 1 (see the module docstring); a no-op once `done`."""
    finished = done(config, state)
    t = state.t + 1
    st, prefill = _admit(state, params, t)
    active = (st.p >= 0) & (st.c >= t)
    decoding = jnp.sum(active).astype(jnp.int32)
    memory = jnp.sum(jnp.where(active, st.s + t - st.p, 0)).astype(jnp.int32)
    now, finish = step_clock(params, st.clock, st.finish, st.c == t, decoding, prefill, memory)
    new = replace(
        st,
        t=t,
        clock=now,
        finish=finish,
        peak_memory=jnp.maximum(st.peak_memory, memory),
        memory_sum=st.memory_sum.add(memory),
    )
    new = jax.tree_util.tree_map(lambda a, b: jnp.where(finished, a, b), state, new)
    out = None
    if record:
        live = ~finished
        out = {
            "memory": jnp.where(live, memory, 0),
            "decoding": jnp.where(live, decoding, 0),
            "prefill_tokens": jnp.where(live, prefill, 0),
            "time_s": now.hi,
            "live": live,
        }
    return new, out


# --------------------------------------------------------------------------- runner hints


def example() -> OfflineConfig:
    from ..workload import Batch, Independent, UniformInt

    return OfflineConfig(Batch(Independent(UniformInt(1, 50), UniformInt(1, 50)), 40))


def max_steps(config: OfflineConfig) -> int:
    return config.steps


def working_set_bytes(config: OfflineConfig) -> int:
    return 4 * 10 * config.n


def peak_bytes(config: OfflineConfig, record: bool) -> int:
    per_seed = 4 * 40 * config.n
    if record:
        per_seed += 20 * min(config.steps, 1 << 20)
    return per_seed


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
    check=check,
    describe=describe,
    **batchmodel.ENGINE_HINTS,
)
