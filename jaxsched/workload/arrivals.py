"""Counter-based Poisson arrivals of typed requests, with thinning (docs/kv-semantics.md §3).

Candidate i of run `seed` has gap e_i = -ln(1 - u_i) / Lambda_max and type draw v_i, both pure
functions of (seed, i): a run never holds an N-length array. Candidate times accumulate in a
double-float; candidate i is accepted iff v_i < Lambda(p(a_i)) / Lambda_max (thinning against
the rate of the period holding a_i), and its type is the first j with v_i < cdf_j.

Any engine with arrivals uses it: `config` needs `num_requests` and `horizon_s` (either may be
None: no bound), `params` needs `inv_rate_max` (s), `type_cdf` (float32[P, m], cumulative rates
over Lambda_max per period), `inv_period_s` and the `fence` word (jaxsched.clock.fence).

Trace replay (docs/budget-semantics.md §1), selected by a static `config.arrival_mode ==
"trace"` (a config without that field is Poisson, so the kv engine compiles the code it always
did): candidate k of run `seed` is trace row r_k = (start(seed) + k) mod n, start(seed) =
hash3(seed, 0, rng.STREAM_TRACE_START) mod n; every candidate is accepted with type 0; a_0 = 0
and a_k = a_{k-1} + fl(g[r_k] * inv_rate_scale), g = `trace_gaps_s` of the trace's times
(float32, the gap across the wrap = the trace's mean gap). `params` then needs `trace_gap_s`
(float32[n]), `inv_rate_scale` (float32 1 / rate_scale) and `fence`; `trace_row` gives the row
whose lengths the engine loads.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import clock, rng
from ..clock import DF
from ..errors import ConfigError, require


class ArrivalState(eqx.Module):
    """The arrival stream: the next candidate (index, time, verdict) is always precomputed.

    index: int32 candidate i. time: DF a_i. accepted: bool. type: int32 (valid if accepted).
    num_arrived: int32 requests accepted so far (= the id of the next one).
    exhausted: bool, no further candidate will be examined (N reached or a_i > T).
    """

    index: jnp.ndarray
    time: DF
    accepted: jnp.ndarray
    type: jnp.ndarray
    num_arrived: jnp.ndarray
    exhausted: jnp.ndarray


def check_rates(rates, m: int) -> np.ndarray:
    """Host: per-type arrival rates as float64 [P, m] (P >= 1 periods), from [m] or [P, m]
    numbers that are finite and > 0 (requests/s); one ConfigError naming `rates` otherwise."""
    allowed = f"an array [m] or [P, m] of numbers with m = {m} (requests/s)"
    # Strings would parse as numbers one by one; ragged nesting does not make an array.
    require(not isinstance(rates, (str, bytes)), "rates", allowed, rates)
    try:
        r = np.asarray(rates, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"rates must be {allowed}, got {rates!r}") from None
    if r.ndim == 1:
        r = r[None, :]
    require(r.ndim == 2 and r.shape[1] == m and r.shape[0] >= 1, "rates", allowed, np.asarray(rates).shape)
    require(bool(np.all(np.isfinite(r)) and np.all(r > 0)), "rates", "finite and > 0 (requests/s)", r.tolist())
    return r


def gap_s(params, seed, index) -> jnp.ndarray:
    """float32 e_i = fl(-log1p(-u_i) * inv_rate_max) (s) of candidates `index` (int32, any shape).

    A multiplication by the host-rounded 1 / Lambda_max, not a division (XLA rewrites a division
    by a broadcast scalar as a reciprocal product anyway), fenced so that the rounded product,
    not an FMA, meets the clock's add. log1p is not correctly rounded (its last bit may depend
    on the backend), so a reference takes these values from `arrival_stream`.
    """
    u = rng.uniform(seed, index, rng.STREAM_KV_GAP)
    return clock.fence(-jnp.log1p(-u) * params.inv_rate_max, params.fence)


def classify(params, seed, index, time: DF) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(accepted bool, type int32) of candidate `index` arriving at `time` (scalars)."""
    v = rng.uniform(seed, index, rng.STREAM_KV_TYPE)
    P = params.type_cdf.shape[0]
    if P == 1:
        cdf = params.type_cdf[0]
    else:
        p = jnp.floor(time.hi * params.inv_period_s).astype(jnp.int32) % P
        cdf = params.type_cdf[p]
    below = v < cdf  # [m], monotone in j
    accepted = below[-1]
    typ = jnp.argmax(below).astype(jnp.int32)  # first j with v < cdf_j
    return accepted, typ


def trace_mode(config) -> bool:
    """Static: the config replays a trace (`arrival_mode == "trace"`) instead of Poisson."""
    return getattr(config, "arrival_mode", "poisson") == "trace"


def trace_gaps_s(arrival_s) -> np.ndarray:
    """Host float64[n] replay gaps of trace times t (s, nondecreasing, n >= 2): g[r] = t[r] -
    t[r - 1] for r >= 1, and g[0] = (t[n-1] - t[0]) / (n - 1), the trace's mean gap, which
    the replay uses when it wraps from the last row to the first."""
    t = np.asarray(arrival_s, np.float64)
    g = np.empty_like(t)
    g[1:] = np.diff(t)
    g[0] = (t[-1] - t[0]) / (t.size - 1)
    return g


def trace_max_arrivals(arrival_s, window_s: float) -> int:
    """Host: the most replayed rows any run can have in [0, window_s] (s of trace time, i.e.
    simulated time * rate_scale), over every starting row: a bound for scan steps."""
    g = trace_gaps_s(arrival_s)
    n = g.size
    # The replay repeats every n rows, one period P = sum(g) later: a window W holds
    # floor(W / P) whole periods (n rows each) plus what its remainder W' < P holds. The
    # 1e-6 margin covers the float32 rounding of the gaps and of 1 / rate_scale.
    W = float(window_s) * (1 + 1e-6)
    period = float(g.sum())
    full = int(W // period)
    rest = W - full * period
    # Replay times from row 0 over three periods; a run starting at row r < n arrives at
    # T[r + k] - T[r], k >= 0.
    T = np.concatenate([[0.0], np.cumsum(np.tile(np.roll(g, -1), 3))])[: 3 * n]
    ends = np.searchsorted(T, T[:n] + rest, side="right")
    return full * n + int((ends - np.arange(n)).max())


def trace_row(params, seed, index) -> jnp.ndarray:
    """int32 trace row (start(seed) + index) mod n of replayed requests `index` (int32 >= 0,
    any shape; make_params keeps start + index below 2^31)."""
    n = params.trace_gap_s.shape[-1]
    start = (rng.hash3(seed, jnp.uint32(0), rng.STREAM_TRACE_START) % np.uint32(n)).astype(jnp.int32)
    return (start + jnp.asarray(index, jnp.int32)) % np.int32(n)


def trace_gap_s(params, seed, index) -> jnp.ndarray:
    """float32 gap of replayed candidate `index` (s): fl(g[row] * inv_rate_scale), fenced like
    `gap_s` so a NumPy float32 reference reproduces it; 0 for candidate 0 (a_0 = 0)."""
    g = params.trace_gap_s[trace_row(params, seed, index)]
    g = clock.fence(g * params.inv_rate_scale, params.fence)
    return jnp.where(jnp.asarray(index) == 0, np.float32(0.0), g)


def candidate(config, params, seed, index, prev: DF, num_arrived):
    """The stream positioned at candidate `index`, whose predecessor arrived at `prev`."""
    if trace_mode(config):
        t = clock.add_f32(prev, trace_gap_s(params, seed, index))
        accepted, typ = jnp.bool_(True), jnp.int32(0)
    else:
        t = clock.add_f32(prev, gap_s(params, seed, index))
        accepted, typ = classify(params, seed, index, t)
    exhausted = jnp.bool_(False)
    if config.num_requests is not None:
        exhausted = num_arrived >= config.num_requests
    if config.horizon_s is not None:
        exhausted = exhausted | ~clock.le(t, DF.from_float64(config.horizon_s))
    return ArrivalState(jnp.asarray(index, jnp.int32), t, accepted, typ, jnp.asarray(num_arrived, jnp.int32), exhausted)


def first(config, params, seed) -> ArrivalState:
    """The generator before any candidate was examined (candidate 0, a_{-1} = 0)."""
    return candidate(config, params, seed, jnp.int32(0), DF.zeros(), jnp.int32(0))


def advance(config, params, seed, gen: ArrivalState) -> ArrivalState:
    """The generator after candidate gen.index was examined (accepted or not)."""
    n = gen.num_arrived + gen.accepted.astype(jnp.int32)
    return candidate(config, params, seed, gen.index + 1, gen.time, n)


def collect_due(config, params, seed, gen: ArrivalState, now: DF, active, max_take: int, limit=None):
    """Examine the due candidates (a_i <= now) in order, up to `max_take` of them.

    Returns (gen after them, buf, more_due): buf {"ok": bool, "id", "type": int32, "hi", "lo":
    float32} arrays [max_take], one row per examined candidate (ok: accepted; id: its request
    id = num_arrived before it), rows past the examined ones with ok False; more_due: a due
    candidate is left for the next step. The loop carries only the generator and these [A]
    buffers; engines place the accepted rows in their own tables.
    limit: None (examine up to max_take), or a traced int32 <= max_take, the run's own
    arrivals per step when it runs padded in a size bucket (rows from limit on stay empty).
    """
    A = max_take if limit is None else limit
    due = lambda g: active & ~g.exhausted & clock.le(g.time, now)

    def cond(c):
        return (c[1] < A) & due(c[0])

    rows = jnp.arange(max_take, dtype=jnp.int32)

    def body(c):
        g, k, buf = c
        row = dict(ok=g.accepted, id=g.num_arrived, type=g.type, hi=g.time.hi, lo=g.time.lo)
        # A select on the row, not a scatter: vmapped, the loop keeps a run's old buffers once
        # its loop has ended, and a scatter would write into a copy of them at every pass.
        buf = {key: jnp.where(rows == k, v, buf[key]) for key, v in row.items()}
        return advance(config, params, seed, g), k + 1, buf

    zi = jnp.zeros((max_take,), jnp.int32)
    zf = jnp.zeros((max_take,), jnp.float32)
    buf = dict(ok=jnp.zeros((max_take,), bool), id=zi, type=zi, hi=zf, lo=zf)
    gen, _, buf = jax.lax.while_loop(cond, body, (gen, jnp.int32(0), buf))
    return gen, buf, due(gen)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _stream(config, params, seed, n: int):
    gap = trace_gap_s if trace_mode(config) else gap_s

    def body(gen, _):
        out = (gen.index, gap(params, seed, gen.index), gen.time.hi, gen.time.lo, gen.accepted, gen.type, gen.exhausted)
        return advance(config, params, seed, gen), out

    return jax.lax.scan(body, first(config, params, seed), None, length=n)[1]


def arrival_stream(config, params, seed: int, n_candidates: int) -> dict:
    """The first n_candidates candidates of run `seed` as host numpy arrays [n].

    Keys: index, gap_s (float32 e_i; the scaled trace gap in trace mode), t_hi, t_lo
    (float32 a_i), accepted, type, exhausted
    (the stream had ended before this candidate: it is never examined). Computed by the same
    jitted functions as the engine.
    """
    out = _stream(config, params, jnp.uint32(seed), int(n_candidates))
    keys = ("index", "gap_s", "t_hi", "t_lo", "accepted", "type", "exhausted")
    return {k: np.asarray(v) for k, v in zip(keys, out)}
